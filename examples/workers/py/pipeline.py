"""The document pipeline's worker, relay and consumer, written correctly against durasim's
protocol (docs/worker-protocol.md). The naive variants under naive/ replace one step each."""

from durasim import DurasimError, Gone


def key(job):
    """buildIdempotencyKey: tenant, document and version, always in that order."""
    return f"{job['tenant']}:{job['document']}:v{job['version']}"


def commit(c, job, output, steps):
    """The result and its outbox event in ONE transaction. A key that has a result already
    gives that result back (a dedupe, or a conflict when the payload differs). A lost race for
    the key (unique_violation) is read again."""
    k = steps.key(job)
    for tries in range(1, 4):
        try:
            with c.store.transaction() as tx:
                existing = tx.get("results", k)
                if existing is not None:
                    return existing
                event = tx.insert("outbox", {"key": k, "job": job["job"], "output": output})["event"]
                tx.insert("results", {"key": k, "job": job["job"], "payload": job["payload"],
                                      "output": output, "event": event})
                return None
        except DurasimError as e:
            if e.code not in ("unique_violation", "serialization_failure") or tries == 3:
                raise


def decide(c, job, error):
    """Every error gets exactly one of three outcomes: retry (transient, attempts left, deadline
    not passed), cancel (deadline passed), or the DLQ."""
    transient = error == "provider_unavailable"
    if transient and c.now > job["deadline_at"]:
        return c.queue.cancel(job, "deadline_exceeded")
    if transient and job["attempt"] < c.config("max_attempts"):
        return c.queue.retry(job, error)
    if transient:
        return c.queue.fail(job, error, "max_attempts_exceeded")
    return c.queue.fail(job, error, "permanent_error")


def finish(c, job, existing):
    """After the commit: ack, or the DLQ for a key whose result has another payload."""
    if existing is not None and existing["payload"] != job["payload"]:
        return c.queue.fail(job, "payload_conflict", "permanent_error")
    return c.queue.ack(job)


def process(c, job, steps):
    """infer (heartbeating) -> commit -> ack."""
    try:
        output = c.model.infer(job)
    except DurasimError as e:
        c.stop_keep_alive()
        return steps.decide(c, job, e.code)
    existing = steps.commit(c, job, output, steps)
    c.stop_keep_alive()
    return steps.finish(c, job, existing)


class Steps:
    key = staticmethod(key)
    commit = staticmethod(commit)
    decide = staticmethod(decide)
    finish = staticmethod(finish)
    process = staticmethod(process)


def worker(c, steps=Steps):
    while True:
        job = c.queue.lease()
        c.keep_alive(job)
        try:
            steps.process(c, job, steps)
        except DurasimError:
            # A refused ack (stale_fence, lease_expired ...) or a failed commit: the queue will
            # hand the job out again; this worker moves on.
            c.stop_keep_alive()


def relay(c):
    every = max(1, c.config("relay_interval_ms"))
    while True:
        c.timer.sleep(every)
        with c.store.transaction() as tx:
            rows = tx.scan("outbox", unpublished=True)
        sent = []
        for row in rows:
            try:
                c.broker.publish(row["event"])
                sent.append(row["event"])
            except DurasimError:
                # The consumer died holding it: the batch stays unmarked and goes out again.
                sent = []
                break
        if sent:
            with c.store.transaction() as tx:
                for event in sent:
                    tx.mark_published(event)


def apply_once(tx, d):
    """Dedupe by event id in the same transaction that applies the effect."""
    if tx.get("consumer_seen", d["event"]) is not None:
        return
    tx.insert("consumer_seen", {"event": d["event"]})
    tx.insert("effects", {"event": d["event"], "key": d["key"], "job": d["job"], "output": d["output"]})


def consumer(c, apply=apply_once):
    while True:
        d = c.broker.receive()
        with c.store.transaction() as tx:
            apply(tx, d)


def run(c, steps=Steps, apply=apply_once):
    """Runs the role durasim started this program in, until durasim goes away."""
    try:
        if c.role == "worker":
            worker(c, steps)
        elif c.role == "relay":
            relay(c)
        else:
            consumer(c, apply)
    except Gone:
        pass

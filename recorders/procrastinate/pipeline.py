"""A small document pipeline on procrastinate 3.10 (PostgreSQL), recorded as a durasim history.

One job per idempotency key; the worker commits the key's result and its outbox row in one
transaction (or finds the key's result and commits nothing); a relay sends each outbox event
to a consumer that dedupes by event id. Every process names itself in application_name, which
the recorder's triggers (recorder.sql) write as the record's worker.

  python pipeline.py worker NAME    a procrastinate worker (heartbeat every 0.5 s)
  python pipeline.py rescuer        procrastinate's stalled-jobs recipe: every 0.25 s, retry the
                                    jobs whose worker missed heartbeats for THRESHOLD s (the
                                    correct variant fails a job whose attempts are used up)
  python pipeline.py relay          the outbox relay and the deduping consumer

The variant (DURASIM_VARIANT): correct; plain-insert (the result row has no unique key, and is
INSERTed whatever the key already has); dual-write (the result is committed alone, and the worker
then publishes the event itself, a broker call of 0.2 to 0.4 s later, with no outbox row: a worker
killed in between leaves a result no event announces, and the retry finds the result and assumes
the event went out); zombie (the harness SIGSTOPs a worker mid-job: nothing
in the pipeline changes, procrastinate's finish by job id lets its late finish through).
"""

import asyncio
import json
import os
import random
import sys
import time

import procrastinate
import psycopg

DSN = os.environ["DURASIM_PG"]  # "host=/socket/dir port=N dbname=postgres user=..."
VARIANT = os.environ.get("DURASIM_VARIANT", "correct")
THRESHOLD = 2.0  # seconds without a heartbeat before the rescuer takes a job back
HEARTBEAT = 0.5
MAX_ATTEMPTS = 3  # procrastinate's RetryStrategy: retried while attempts < 3
RETRY_WAIT = 1  # seconds, exact
FAIL_RATE = float(os.environ.get("DURASIM_FAIL_RATE", "0.1"))
WORK = (0.05, 0.2) if VARIANT != "zombie" else (1.0, 1.5)


def dsn(name):
    return f"{DSN} application_name={name}"


app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=dsn(os.environ.get("DURASIM_NAME", "producer")))
)


@app.task(
    name="extract",
    pass_context=True,
    retry=procrastinate.RetryStrategy(max_attempts=MAX_ATTEMPTS, wait=RETRY_WAIT),
)
def extract(context, tenant, key, content):
    me = os.environ["DURASIM_NAME"]
    job = context.job.id
    time.sleep(random.uniform(*WORK))  # the model call
    if random.random() < FAIL_RATE:
        raise RuntimeError("provider unavailable")
    output = format(random.getrandbits(48), "x")
    # A task never waits without bound for a connection, a statement or a lock: past the
    # timeout it fails and is retried. (A job once left 'doing' for a whole run was not that but
    # procrastinate#1543: see harness.py's producer.)
    bounded = dsn(me) + " connect_timeout=10 options='-c statement_timeout=10000 -c lock_timeout=10000'"
    with psycopg.connect(bounded, autocommit=False) as conn, conn.transaction():
        if VARIANT == "dual-write":
            inserted = conn.execute(
                "INSERT INTO results (key, job, output) VALUES (%s, %s, %s)"
                " ON CONFLICT (key) DO NOTHING RETURNING key",
                (key, job, output),
            ).fetchone()
            if inserted:
                log(conn, "result_committed", job=job, worker=me, key=key, output=output)
            else:
                log(conn, "commit_deduped", job=job, worker=me, key=key, output=output)
        elif VARIANT == "plain-insert":
            conn.execute("INSERT INTO results (key, job, output) VALUES (%s, %s, %s)", (key, job, output))
            inserted = True
        else:
            inserted = conn.execute(
                "INSERT INTO results (key, job, output) VALUES (%s, %s, %s)"
                " ON CONFLICT (key) DO NOTHING RETURNING key",
                (key, job, output),
            ).fetchone()
        if VARIANT == "dual-write":
            pass  # recorded above: no outbox row
        elif inserted:
            (event,) = conn.execute(
                "INSERT INTO outbox (key, job, output) VALUES (%s, %s, %s) RETURNING event",
                (key, job, output),
            ).fetchone()
            conn.execute("UPDATE results SET event = %s WHERE key = %s AND job = %s", (event, key, job))
            log(conn, "result_committed", job=job, worker=me, key=key, output=output, event=event)
        else:
            (existing_event,) = conn.execute("SELECT event FROM results WHERE key = %s", (key,)).fetchone()
            log(conn, "commit_deduped", job=job, worker=me, key=key, output=output, existing_event=existing_event)
    if VARIANT == "dual-write" and inserted:
        time.sleep(random.uniform(0.2, 0.4))  # the broker call, outside the transaction
        with psycopg.connect(bounded, autocommit=False) as conn, conn.transaction():
            (event,) = conn.execute("SELECT nextval('direct_event')").fetchone()
            publish(conn, event, key, job, output, direct=True)


def publish(conn, event, key, job, output, direct=False):
    """One event reaches the consumer, which applies it once per event id."""
    log(conn, "published", event=event, key=key, job=job, output=output, **({"direct": True} if direct else {}))
    new = conn.execute("INSERT INTO applied VALUES (%s) ON CONFLICT DO NOTHING RETURNING event", (event,)).fetchone()
    if new:
        log(conn, "effect_applied", event=event, key=key, job=job, output=output)
    else:
        log(conn, "duplicate_event", event=event, key=key)


def log(conn, type_, **body):
    conn.execute("SELECT durasim_log(%s, %s::jsonb)", (type_, json.dumps(body)))


def schema(conn):
    unique = "" if VARIANT == "plain-insert" else "UNIQUE"
    conn.execute(f"CREATE TABLE results (key text {unique}, job bigint, output text, event bigint)")
    conn.execute(
        "CREATE TABLE outbox (event bigserial PRIMARY KEY, key text, job bigint, output text,"
        " published boolean NOT NULL DEFAULT false)"
    )
    conn.execute("CREATE TABLE applied (event bigint PRIMARY KEY)")
    conn.execute("CREATE SEQUENCE direct_event START 1000000")


def worker(name):
    app.run_worker(
        name=name,
        concurrency=1,
        update_heartbeat_interval=HEARTBEAT,
        stalled_worker_timeout=3600,  # never prune a killed worker's row: the rescuer reads it
        listen_notify=False,
        fetch_job_polling_interval=0.05,
        install_signal_handlers=True,
    )


async def rescue_forever():
    async with app.open_async():
        while True:
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=THRESHOLD)
            for job in stalled:
                try:
                    if VARIANT != "recipe" and job.attempts >= MAX_ATTEMPTS:
                        await app.job_manager.finish_job_by_id_async(
                            job.id, status=procrastinate.jobs.Status.FAILED, delete_job=False
                        )
                    else:
                        await app.job_manager.retry_job(job)
                except Exception as e:  # finished meanwhile
                    print("rescuer:", e, file=sys.stderr)
            await asyncio.sleep(0.25)


def relay():
    with psycopg.connect(dsn("relay"), autocommit=False) as conn:
        while True:
            with conn.transaction():
                rows = conn.execute(
                    "SELECT event, key, job, output FROM outbox WHERE NOT published"
                    " ORDER BY event LIMIT 20 FOR UPDATE SKIP LOCKED"
                ).fetchall()
                for event, key, job, output in rows:
                    publish(conn, event, key, job, output)
                if rows:
                    events = [r[0] for r in rows]
                    conn.execute("UPDATE outbox SET published = true WHERE event = ANY(%s)", (events,))
                    log(conn, "marked_published", events=events)
            if not rows:
                time.sleep(0.05)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "worker":
        worker(sys.argv[2])
    elif role == "rescuer":
        asyncio.run(rescue_forever())
    elif role == "relay":
        relay()
    else:
        sys.exit(f"unknown role {role}")

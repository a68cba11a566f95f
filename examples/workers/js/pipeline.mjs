// The document pipeline's worker, relay and consumer, written correctly against durasim's
// protocol (docs/worker-protocol.md). The naive variants under naive/ replace one step each.

import { DurasimError } from "./durasim.mjs";

// buildIdempotencyKey: tenant, document and version, always in that order.
export function key(job) {
  return `${job.tenant}:${job.document}:v${job.version}`;
}

// The result and its outbox event in ONE transaction. A key that has a result already gives
// that result back (a dedupe, or a conflict when the payload differs). A lost race for the key
// (unique_violation) is read again.
export async function commit(c, job, output, steps) {
  const k = steps.key(job);
  for (let tries = 1; ; tries++) {
    try {
      return await c.store.transaction(async (tx) => {
        const existing = await tx.get("results", k);
        if (existing) return existing;
        const event = (await tx.insert("outbox", { key: k, job: job.job, output })).event;
        await tx.insert("results", {
          key: k, job: job.job, payload: job.payload, output, event,
        });
        return null;
      });
    } catch (e) {
      const raced = e.code === "unique_violation" || e.code === "serialization_failure";
      if (!raced || tries >= 3) throw e;
    }
  }
}

// Every error gets exactly one of three outcomes: retry (transient, attempts left, deadline
// not passed), cancel (deadline passed), or the DLQ.
export async function decide(c, job, error) {
  const transient = error === "provider_unavailable";
  if (transient && c.now > job.deadline_at) return c.queue.cancel(job, "deadline_exceeded");
  if (transient && job.attempt < c.config("max_attempts")) return c.queue.retry(job, error);
  if (transient) return c.queue.fail(job, error, "max_attempts_exceeded");
  return c.queue.fail(job, error, "permanent_error");
}

// After the commit: ack, or the DLQ for a key whose result has another payload.
export async function finish(c, job, existing) {
  if (existing && existing.payload !== job.payload) {
    return c.queue.fail(job, "payload_conflict", "permanent_error");
  }
  return c.queue.ack(job);
}

// lease -> infer (heartbeating) -> commit -> ack.
export async function process(c, job, steps) {
  let output;
  try {
    output = await c.model.infer(job);
  } catch (e) {
    c.stopKeepAlive();
    if (e instanceof DurasimError) return steps.decide(c, job, e.code);
    throw e;
  }
  const existing = await steps.commit(c, job, output, steps);
  c.stopKeepAlive();
  return steps.finish(c, job, existing);
}

export const STEPS = { key, commit, decide, finish, process };

export async function worker(c, steps = STEPS) {
  for (;;) {
    const job = await c.queue.lease();
    c.keepAlive(job);
    try {
      await steps.process(c, job, steps);
    } catch (e) {
      // A refused ack (stale_fence, lease_expired ...) or a failed commit: the queue will
      // hand the job out again; this worker moves on.
      c.stopKeepAlive();
      if (!(e instanceof DurasimError)) throw e;
    }
  }
}

export async function relay(c) {
  const every = Math.max(1, c.config("relay_interval_ms"));
  for (;;) {
    await c.timer.sleep(every);
    const rows = await c.store.transaction((tx) => tx.scan("outbox", { unpublished: true }));
    const sent = [];
    for (const row of rows) {
      try {
        await c.broker.publish(row.event);
        sent.push(row.event);
      } catch (e) {
        // The consumer died holding it: the batch stays unmarked and goes out again.
        if (!(e instanceof DurasimError)) throw e;
        sent.length = 0;
        break;
      }
    }
    if (sent.length > 0) {
      await c.store.transaction(async (tx) => {
        for (const event of sent) await tx.markPublished(event);
      });
    }
  }
}

// Dedupe by event id in the same transaction that applies the effect.
export async function applyOnce(tx, d) {
  if (await tx.get("consumer_seen", d.event)) return;
  await tx.insert("consumer_seen", { event: d.event });
  await tx.insert("effects", { event: d.event, key: d.key, job: d.job, output: d.output });
}

export async function consumer(c, apply = applyOnce) {
  for (;;) {
    const d = await c.broker.receive();
    await c.store.transaction((tx) => apply(tx, d));
  }
}

// Runs the role durasim started this program in.
export async function run(c, steps = STEPS, apply = applyOnce) {
  if (c.role === "worker") return worker(c, steps);
  if (c.role === "relay") return relay(c);
  return consumer(c, apply);
}

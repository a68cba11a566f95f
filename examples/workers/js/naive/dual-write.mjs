// NAIVE: writes the result in one transaction and its outbox event in a second. A crash
// between the two keeps the result and loses the event (the retry finds the result and
// dedupes onto it): the effect never happens. Caught by `event_per_result`.
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

async function commit(c, job, output, steps) {
  const k = steps.key(job);
  const existing = await c.store.transaction((tx) => tx.get("results", k));
  if (existing) return existing;
  await c.store.transaction((tx) =>
    tx.insert("results", { key: k, job: job.job, payload: job.payload, output }),
  );
  // the defect: a second transaction
  await c.store.transaction((tx) => tx.insert("outbox", { key: k, job: job.job, output }));
  return null;
}

await run(await connect(), { ...STEPS, commit });

// NAIVE: the consumer applies every event it receives. The relay republishes an event whose
// mark was lost (a relay crash), and the effect happens twice. Caught by `no_duplicate_effect`.
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

async function apply(tx, d) {
  // the defect: no look-up in consumer_seen
  await tx.insert("effects", { event: d.event, key: d.key, job: d.job, output: d.output });
}

await run(await connect(), STEPS, apply);

// NAIVE: acks the job, then commits the result. A crash between the two loses the effect: the
// queue believes the job done, and no result or event exists. Caught by `acked_with_result`.
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

async function process(c, job, steps) {
  const output = await c.model.infer(job).catch((e) => ({ error: e }));
  if (output.error) {
    c.stopKeepAlive();
    return steps.decide(c, job, output.error.code);
  }
  c.stopKeepAlive();
  await c.queue.ack(job); // the defect: the ack comes first
  await steps.commit(c, job, output, steps);
}

await run(await connect(), { ...STEPS, process });

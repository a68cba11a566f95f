// NAIVE: every error is retried, whatever its class and however many attempts were made.
// Caught by `attempts_bounded` (and `retry_policy_followed` for the permanent ones).
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

const decide = (c, job, error) => c.queue.retry(job, error); // the defect

await run(await connect(), { ...STEPS, decide });

// NAIVE: acks (and heartbeats, retries, fails) without the fencing token. A paused worker whose
// lease expired (a zombie) acks a job another worker now holds, and the queue cannot tell.
// Caught by `fenced_writes`.
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

const c = await connect();
const queue = c.queue;
const unfenced = (l) => ({ ...l, fence: undefined }); // the defect: the token is left out
c.queue = {
  ...queue,
  ack: (l) => queue.ack(unfenced(l)),
  heartbeat: (l) => queue.heartbeat(unfenced(l)),
  retry: (l, e, d) => queue.retry(unfenced(l), e, d),
  fail: (l, e, r) => queue.fail(unfenced(l), e, r),
  cancel: (l, e) => queue.cancel(unfenced(l), e),
};
await run(c, STEPS);

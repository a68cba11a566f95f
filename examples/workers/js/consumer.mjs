// The document pipeline's worker (and relay, and consumer: the role is in durasim's start
// message), written correctly. Run it under durasim:
//   durasim run scenarios/incident-crash-before-ack.toml --worker "node examples/workers/js/worker.mjs"
import { connect } from "./durasim.mjs";
import { run } from "./pipeline.mjs";

await run(await connect());

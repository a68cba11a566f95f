// A do-nothing program for measuring the protocol's overhead (docs/performance.md): it only
// sleeps 1 ms of virtual time, again and again — one message in, one call and `idle` out.
import { connect } from "./durasim.mjs";

const c = await connect();
for (;;) await c.timer.sleep(1);

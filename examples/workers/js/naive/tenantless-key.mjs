// NAIVE: the idempotency key is documentId:vN, without the tenant. Two tenants' documents of
// the same name share one result: one tenant's job finds the other's result and acks with none
// of its own.
import { connect } from "../durasim.mjs";
import { run, STEPS } from "../pipeline.mjs";

const key = (job) => `${job.document}:v${job.version}`; // the defect: no tenant

await run(await connect(), { ...STEPS, key });

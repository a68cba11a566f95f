"""NAIVE: the idempotency key is documentId:vN, without the tenant. Two tenants' documents of the
same name share one result: one tenant's job finds the other's result and acks with none of its
own."""
import _path  # noqa: F401
import durasim
import pipeline


class Steps(pipeline.Steps):
    @staticmethod
    def key(job):
        return f"{job['document']}:v{job['version']}"  # the defect: no tenant


pipeline.run(durasim.connect(), Steps)

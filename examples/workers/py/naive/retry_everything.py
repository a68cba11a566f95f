"""NAIVE: every error is retried, whatever its class and however many attempts were made.
Caught by `retry_policy_followed`."""
import _path  # noqa: F401
import durasim
import pipeline


class Steps(pipeline.Steps):
    @staticmethod
    def decide(c, job, error):
        return c.queue.retry(job, error)  # the defect


pipeline.run(durasim.connect(), Steps)

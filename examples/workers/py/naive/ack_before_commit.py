"""NAIVE: acks the job, then commits the result. A crash between the two loses the effect: the
queue believes the job done, and no result or event exists. Caught by `acked_with_result`."""
import _path  # noqa: F401
import durasim
import pipeline
from durasim import DurasimError


class Steps(pipeline.Steps):
    @staticmethod
    def process(c, job, steps):
        try:
            output = c.model.infer(job)
        except DurasimError as e:
            c.stop_keep_alive()
            return steps.decide(c, job, e.code)
        c.stop_keep_alive()
        c.queue.ack(job)  # the defect: the ack comes first
        steps.commit(c, job, output, steps)


pipeline.run(durasim.connect(), Steps)

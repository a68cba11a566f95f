"""NAIVE: acks (and heartbeats, retries, fails) without the fencing token. A paused worker whose
lease expired (a zombie) acks a job another worker now holds, and the queue cannot tell. Caught
by `fenced_writes`."""
import _path  # noqa: F401
import durasim
import pipeline


class Unfenced(durasim._Queue):
    def ack(self, l):
        return super().ack({**l, "fence": None})  # the defect: the token is left out

    def heartbeat(self, l):
        return super().heartbeat({**l, "fence": None})

    def retry(self, l, error, delay_ms=None):
        return super().retry({**l, "fence": None}, error, delay_ms)

    def fail(self, l, error, reason=None):
        return super().fail({**l, "fence": None}, error, reason)

    def cancel(self, l, error=None):
        return super().cancel({**l, "fence": None}, error)


c = durasim.connect()
c.queue = Unfenced(c)
pipeline.run(c)

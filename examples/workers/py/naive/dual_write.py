"""NAIVE: writes the result in one transaction and its outbox event in a second. A crash
between the two keeps the result and loses the event (the retry finds the result and dedupes
onto it): the effect never happens. Caught by `event_per_result`."""
import _path  # noqa: F401
import durasim
import pipeline


class Steps(pipeline.Steps):
    @staticmethod
    def commit(c, job, output, steps):
        k = steps.key(job)
        with c.store.transaction() as tx:
            existing = tx.get("results", k)
        if existing is not None:
            return existing
        with c.store.transaction() as tx:
            tx.insert("results", {"key": k, "job": job["job"], "payload": job["payload"], "output": output})
        with c.store.transaction() as tx:  # the defect: a second transaction
            tx.insert("outbox", {"key": k, "job": job["job"], "output": output})
        return None


pipeline.run(durasim.connect(), Steps)

"""NAIVE: the consumer applies every event it receives. The relay republishes an event whose
mark was lost (a relay crash), and the effect happens twice. Caught by `no_duplicate_effect`."""
import _path  # noqa: F401
import durasim
import pipeline


def apply(tx, d):
    # the defect: no look-up in consumer_seen
    tx.insert("effects", {"event": d["event"], "key": d["key"], "job": d["job"], "output": d["output"]})


pipeline.run(durasim.connect(), apply=apply)

"""The document pipeline's worker (and relay, and consumer: the role is in durasim's start
message), written correctly. Run it under durasim:
    durasim run scenarios/incident-crash-before-ack.toml --worker "python3 examples/workers/py/worker.py"
"""
import durasim
import pipeline

pipeline.run(durasim.connect())

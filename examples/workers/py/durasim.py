"""The Python client of durasim's worker protocol (docs/worker-protocol.md, version 1).

Standard library only. A program connects, then calls durasim's queue, store, model, timer and
broker as ordinary blocking functions:

    c = connect()
    job = c.queue.lease()
    output = c.model.infer(job)
    with c.store.transaction() as tx: ...
    c.queue.ack(job)

The lockstep is the client's business: a call is sent, and when the program blocks for its
reply the client tells durasim `idle` and handles what comes until that reply. Use durasim's
timer (`c.timer.sleep`), never time.sleep: virtual time is durasim's.
"""

import json
import sys

# The protocol version this client speaks (docs/worker-protocol.md).
PROTOCOL = 1


class DurasimError(Exception):
    """A call that did not work: durasim's error `code` (stale_fence, unique_violation,
    provider_unavailable, ...) and why."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class Gone(Exception):
    """durasim closed the connection (the run is over, or this process is being killed)."""


class Client:
    def __init__(self, inp=sys.stdin, out=sys.stdout):
        self._in = inp
        self._out = out
        self._last_id = 0
        self._replies = {}
        self._ignored = set()
        self._keep_alive = None
        self.now = 0
        self.start = self._recv()
        if self.start.get("protocol") != PROTOCOL:
            sys.exit(f"durasim.py speaks protocol {PROTOCOL}, durasim {self.start.get('protocol')}")
        self.role = self.start["role"]
        self.queue = _Queue(self)
        self.model = _Model(self)
        self.store = _Store(self)
        self.timer = _Timer(self)
        self.broker = _Broker(self)

    def config(self, name):
        return self.start["config"][name]

    def _recv(self):
        line = self._in.readline()
        if not line:
            raise Gone()
        message = json.loads(line)
        self.now = message.get("now", self.now)
        return message

    def _write(self, obj):
        try:
            self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self._out.flush()
        except (BrokenPipeError, OSError):
            raise Gone()

    def _send(self, call, args):
        self._last_id += 1
        args = {k: v for k, v in args.items() if v is not None}
        self._write({"call": call, "id": self._last_id, **args})
        return self._last_id

    def call(self, call, args=None):
        return self._wait(self._send(call, args or {}))

    def _wait(self, call_id):
        """Says idle, then handles each message until call_id's reply comes."""
        while call_id not in self._replies:
            self._write({"call": "idle"})
            message = self._recv()
            rid = message.get("id")
            if rid in self._ignored:
                self._ignored.discard(rid)
                continue
            k = self._keep_alive
            if k is not None and k["timer"] == rid:
                self._ignored.add(self._send("queue.heartbeat", {"job": k["job"], "fence": k["fence"]}))
                k["timer"] = self._send("timer.sleep", {"ms": k["every"]})
                continue
            self._replies[rid] = message
        reply = self._replies.pop(call_id)
        if "error" in reply:
            raise DurasimError(reply["error"]["code"], reply["error"]["message"])
        return reply["ok"]

    def keep_alive(self, lease):
        """Heartbeats for `lease` every heartbeat_ms while the program waits, until
        stop_keep_alive()."""
        every = max(1, self.config("heartbeat_ms"))
        timer = self._send("timer.sleep", {"ms": every})
        self._keep_alive = {"job": lease["job"], "fence": lease["fence"], "every": every, "timer": timer}

    def stop_keep_alive(self):
        if self._keep_alive is not None:
            self._ignored.add(self._keep_alive["timer"])
        self._keep_alive = None

    def log(self, message):
        return self.call("log", {"message": str(message)})


class _Queue:
    def __init__(self, c):
        self._c = c

    def lease(self):
        """Waits until the queue leases this worker a job: a dict with job, fence, attempt,
        tenant, document, version, payload, lease_until, deadline_at."""
        return self._c.call("queue.lease")

    def heartbeat(self, l):
        return self._c.call("queue.heartbeat", {"job": l["job"], "fence": l["fence"]})

    def ack(self, l):
        return self._c.call("queue.ack", {"job": l["job"], "fence": l["fence"]})

    def retry(self, l, error, delay_ms=None):
        return self._c.call("queue.retry", {"job": l["job"], "fence": l["fence"], "error": error, "delay_ms": delay_ms})

    def fail(self, l, error, reason=None):
        return self._c.call("queue.fail", {"job": l["job"], "fence": l["fence"], "error": error, "reason": reason})

    def cancel(self, l, error=None):
        return self._c.call("queue.cancel", {"job": l["job"], "fence": l["fence"], "error": error})


class _Model:
    def __init__(self, c):
        self._c = c

    def infer(self, l):
        """The model's output (16 hex digits); a failure raises DurasimError whose code is the
        error's name (provider_unavailable transient, schema_invalid permanent)."""
        return self._c.call("model.infer", {"job": l["job"]})["output"]


class _Timer:
    def __init__(self, c):
        self._c = c

    def sleep(self, ms):
        return self._c.call("timer.sleep", {"ms": ms})


class _Broker:
    def __init__(self, c):
        self._c = c

    def publish(self, event):
        return self._c.call("broker.publish", {"event": event})

    def receive(self):
        return self._c.call("broker.receive")


class _Store:
    def __init__(self, c):
        self._c = c

    def transaction(self):
        """`with c.store.transaction() as tx:` commits when the block ends, rolls back when it
        raises (a failed write has rolled it back already)."""
        return Tx(self._c)


class Tx:
    def __init__(self, c):
        self._c = c
        self.id = None

    def __enter__(self):
        self.id = self._c.call("store.begin")["tx"]
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self._c.call("store.commit", {"tx": self.id})
        elif kind is not Gone:
            try:
                self._c.call("store.rollback", {"tx": self.id})
            except DurasimError:
                pass
        return False

    def get(self, table, key):
        """The row of `table` under `key` (a key string for results, a number for the others),
        or None."""
        return self._c.call("store.get", {"tx": self.id, "table": table, "key": key})["row"]

    def insert(self, table, row, on_conflict=None):
        """Inserts `row` and returns it as stored (an outbox row with its event)."""
        args = {"tx": self.id, "table": table, "row": row, "on_conflict": on_conflict}
        return self._c.call("store.insert", args)["row"]

    def scan(self, table, unpublished=False, limit=None):
        args = {"tx": self.id, "table": table, "unpublished": unpublished, "limit": limit}
        return self._c.call("store.scan", args)["rows"]

    def mark_published(self, event):
        return self._c.call("store.mark_published", {"tx": self.id, "event": event})["updated"]

    def delete(self, table, key):
        return self._c.call("store.delete", {"tx": self.id, "table": table, "key": key})["deleted"]


def connect():
    """Waits for durasim's start message."""
    return Client()

//! The Rust client of the worker protocol (docs/worker-protocol.md): a program written in Rust
//! calls durasim's queue, store, model, timer and broker as ordinary blocking functions.
//!
//! Owns: [`Client`] over a [`Transport`] (a process's stdin and stdout, [`Stdio`], or durasim's
//! in-process channels), the lockstep on the program's side (a call is sent, then `idle` when
//! the program blocks for its reply; every message durasim delivers is answered by the calls it
//! sets off and one `idle`), heartbeats while the program waits (`keep_alive`), and
//! transactions (`transaction`: begin, the closure's reads and writes, commit; rolled back if
//! the closure fails).
//! Does not: decide anything a worker decides (`reference.rs` holds durasim's own worker,
//! relay and consumer written with it), or know what durasim does with a call.

pub mod reference;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};

/// Where the client's lines go and its messages come from.
pub trait Transport: Send {
    /// The next message from durasim; `None` once durasim is gone (the program was killed).
    fn recv(&mut self) -> Option<Value>;
    /// A line to durasim; false once durasim is gone.
    fn send(&mut self, line: Value) -> bool;
}

/// A program's stdin and stdout.
pub struct Stdio;

impl Transport for Stdio {
    fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => serde_json::from_str(&line).ok(),
        }
    }

    fn send(&mut self, line: Value) -> bool {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
    }
}

/// A call that did not work: durasim's error `code` (`stale_fence`, `unique_violation`,
/// `provider_unavailable`, ...) and why; or durasim went away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    Failed { code: String, message: String },
    Gone,
}

impl CallError {
    pub fn code(&self) -> &str {
        match self {
            CallError::Failed { code, .. } => code,
            CallError::Gone => "gone",
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Failed { code, message } => write!(f, "{code}: {message}"),
            CallError::Gone => f.write_str("durasim went away"),
        }
    }
}

pub type Result<T> = std::result::Result<T, CallError>;

/// A job the queue leased to this worker, as the lease reply says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub job: u64,
    pub fence: u64,
    pub attempt: u64,
    pub tenant: String,
    pub document: String,
    pub version: u64,
    /// The payload's fingerprint (16 hex digits): what "same key, same payload" compares.
    pub payload: String,
    pub lease_until: u64,
    pub deadline_at: u64,
}

/// An event the broker handed the consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub event: u64,
    pub key: String,
    pub job: u64,
    pub output: String,
}

/// Heartbeats while the program waits: every `every_ms`, for `lease`.
struct KeepAlive {
    job: u64,
    fence: u64,
    every_ms: u64,
    /// The sleep whose reply sends the next heartbeat.
    timer: u64,
}

/// A connection to durasim, from the `start` message on.
pub struct Client {
    t: Box<dyn Transport>,
    start: Value,
    now: u64,
    last_id: u64,
    replies: BTreeMap<u64, Value>,
    keep_alive: Option<KeepAlive>,
    /// Replies nobody waits for (heartbeats of the keep-alive): dropped when they come.
    ignored: Vec<u64>,
}

impl Client {
    /// Waits for durasim's `start` message.
    pub fn connect(mut t: Box<dyn Transport>) -> Result<Client> {
        let start = t.recv().ok_or(CallError::Gone)?;
        let now = start["now"].as_u64().unwrap_or(0);
        Ok(Client {
            t,
            start,
            now,
            last_id: 0,
            replies: BTreeMap::new(),
            keep_alive: None,
            ignored: Vec::new(),
        })
    }

    /// The role durasim started this program in: `worker`, `relay` or `consumer`.
    pub fn role(&self) -> &str {
        self.start["role"].as_str().unwrap_or("")
    }

    /// A setting of the run (`lease_ms`, `heartbeat_ms`, `max_attempts`, `relay_interval_ms`..).
    pub fn config(&self, name: &str) -> u64 {
        self.start["config"][name].as_u64().unwrap_or(0)
    }

    /// Virtual time, in ms, as of the last message.
    pub fn now(&self) -> u64 {
        self.now
    }

    fn send_call(&mut self, call: &str, mut args: Value) -> Result<u64> {
        self.last_id += 1;
        args["call"] = json!(call);
        args["id"] = json!(self.last_id);
        if !self.t.send(args) {
            return Err(CallError::Gone);
        }
        Ok(self.last_id)
    }

    fn call(&mut self, call: &str, args: Value) -> Result<Value> {
        let id = self.send_call(call, args)?;
        self.wait(id)
    }

    /// Blocks until call `id` returns: says `idle`, then handles each message durasim delivers
    /// (a heartbeat of the keep-alive goes out on its own) until that reply comes.
    fn wait(&mut self, id: u64) -> Result<Value> {
        loop {
            if let Some(reply) = self.replies.remove(&id) {
                return match reply.get("error") {
                    Some(e) => Err(CallError::Failed {
                        code: e["code"].as_str().unwrap_or("").to_string(),
                        message: e["message"].as_str().unwrap_or("").to_string(),
                    }),
                    None => Ok(reply["ok"].clone()),
                };
            }
            if !self.t.send(json!({"call": "idle"})) {
                return Err(CallError::Gone);
            }
            let message = self.t.recv().ok_or(CallError::Gone)?;
            self.now = message["now"].as_u64().unwrap_or(self.now);
            let rid = message["id"].as_u64().unwrap_or(0);
            if let Some(pos) = self.ignored.iter().position(|&i| i == rid) {
                self.ignored.swap_remove(pos);
                continue;
            }
            match self.keep_alive.as_mut() {
                Some(k) if k.timer == rid => {
                    let (job, fence, every) = (k.job, k.fence, k.every_ms);
                    let hb =
                        self.send_call("queue.heartbeat", json!({"job": job, "fence": fence}))?;
                    self.ignored.push(hb);
                    let timer = self.send_call("timer.sleep", json!({"ms": every}))?;
                    if let Some(k) = self.keep_alive.as_mut() {
                        k.timer = timer;
                    }
                }
                _ => {
                    self.replies.insert(rid, message);
                }
            }
        }
    }

    /// `queue.lease`: waits until the queue leases this worker a job.
    pub fn lease(&mut self) -> Result<Lease> {
        let r = self.call("queue.lease", json!({}))?;
        let n = |k: &str| r[k].as_u64().unwrap_or(0);
        let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
        Ok(Lease {
            job: n("job"),
            fence: n("fence"),
            attempt: n("attempt"),
            tenant: s("tenant"),
            document: s("document"),
            version: n("version"),
            payload: s("payload"),
            lease_until: n("lease_until"),
            deadline_at: n("deadline_at"),
        })
    }

    /// Heartbeats for `lease` every `heartbeat_ms` while the program waits for its calls,
    /// until [`Client::stop_keep_alive`].
    pub fn keep_alive(&mut self, lease: &Lease) -> Result<()> {
        let every_ms = self.config("heartbeat_ms").max(1);
        let timer = self.send_call("timer.sleep", json!({"ms": every_ms}))?;
        self.keep_alive = Some(KeepAlive {
            job: lease.job,
            fence: lease.fence,
            every_ms,
            timer,
        });
        Ok(())
    }

    pub fn stop_keep_alive(&mut self) {
        if let Some(k) = self.keep_alive.take() {
            self.ignored.push(k.timer);
        }
    }

    pub fn heartbeat(&mut self, lease: &Lease) -> Result<u64> {
        let r = self.call(
            "queue.heartbeat",
            json!({"job": lease.job, "fence": lease.fence}),
        )?;
        Ok(r["lease_until"].as_u64().unwrap_or(0))
    }

    pub fn ack(&mut self, lease: &Lease) -> Result<()> {
        self.call("queue.ack", json!({"job": lease.job, "fence": lease.fence}))
            .map(|_| ())
    }

    /// `queue.retry` after `error`, with the queue's backoff; returns when the job is visible.
    pub fn retry(&mut self, lease: &Lease, error: &str) -> Result<u64> {
        let args = json!({"job": lease.job, "fence": lease.fence, "error": error});
        let r = self.call("queue.retry", args)?;
        Ok(r["visible_at"].as_u64().unwrap_or(0))
    }

    /// `queue.fail`: into the DLQ with `reason` (`permanent_error`, `max_attempts_exceeded`).
    pub fn fail(&mut self, lease: &Lease, error: &str, reason: &str) -> Result<()> {
        let args =
            json!({"job": lease.job, "fence": lease.fence, "error": error, "reason": reason});
        self.call("queue.fail", args).map(|_| ())
    }

    pub fn cancel(&mut self, lease: &Lease, error: &str) -> Result<()> {
        let args = json!({"job": lease.job, "fence": lease.fence, "error": error});
        self.call("queue.cancel", args).map(|_| ())
    }

    /// `model.infer`: the model's output (16 hex digits), or its error (its code is the error's
    /// name: `provider_unavailable` is transient, `schema_invalid` permanent).
    pub fn infer(&mut self, lease: &Lease) -> Result<String> {
        let r = self.call("model.infer", json!({"job": lease.job}))?;
        Ok(r["output"].as_str().unwrap_or("").to_string())
    }

    pub fn sleep(&mut self, ms: u64) -> Result<()> {
        self.call("timer.sleep", json!({"ms": ms})).map(|_| ())
    }

    pub fn log(&mut self, message: &str) -> Result<()> {
        self.call("log", json!({"message": message})).map(|_| ())
    }

    /// `broker.publish`: returns once the consumer is done with the event.
    pub fn publish(&mut self, event: u64) -> Result<()> {
        self.call("broker.publish", json!({"event": event}))
            .map(|_| ())
    }

    /// `broker.receive`: the next event (and: done with the one before).
    pub fn receive(&mut self) -> Result<Delivery> {
        let r = self.call("broker.receive", json!({}))?;
        Ok(Delivery {
            event: r["event"].as_u64().unwrap_or(0),
            key: r["key"].as_str().unwrap_or("").to_string(),
            job: r["job"].as_u64().unwrap_or(0),
            output: r["output"].as_str().unwrap_or("").to_string(),
        })
    }

    /// One transaction: `f`'s reads and writes, committed when it returns `Ok`, rolled back
    /// when it fails (a failed write has rolled it back already).
    pub fn transaction<T>(&mut self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let r = self.call("store.begin", json!({}))?;
        let id = r["tx"].as_u64().unwrap_or(0);
        let mut tx = Tx { client: self, id };
        match f(&mut tx) {
            Ok(v) => {
                self.call("store.commit", json!({"tx": id}))?;
                Ok(v)
            }
            Err(e) => {
                if e != CallError::Gone {
                    // Gone already if a write failed; a rollback of nothing is harmless.
                    let _ = self.call("store.rollback", json!({"tx": id}));
                }
                Err(e)
            }
        }
    }
}

/// An open transaction.
pub struct Tx<'c> {
    client: &'c mut Client,
    id: u64,
}

impl Tx<'_> {
    /// The row of `table` under `key` (a key string for `results`, a number for the others).
    pub fn get(&mut self, table: &str, key: Value) -> Result<Option<Value>> {
        let r = self.client.call(
            "store.get",
            json!({"tx": self.id, "table": table, "key": key}),
        )?;
        Ok(Some(r["row"].clone()).filter(|v| !v.is_null()))
    }

    /// Inserts `row`; returns the row as stored (an outbox row with its `event`).
    pub fn insert(&mut self, table: &str, row: Value) -> Result<Value> {
        let args = json!({"tx": self.id, "table": table, "row": row});
        let r = self.client.call("store.insert", args)?;
        Ok(r["row"].clone())
    }

    pub fn scan(&mut self, table: &str, unpublished: bool) -> Result<Vec<Value>> {
        let args = json!({"tx": self.id, "table": table, "unpublished": unpublished});
        let r = self.client.call("store.scan", args)?;
        Ok(r["rows"].as_array().cloned().unwrap_or_default())
    }

    pub fn mark_published(&mut self, event: u64) -> Result<bool> {
        let args = json!({"tx": self.id, "event": event});
        let r = self.client.call("store.mark_published", args)?;
        Ok(r["updated"].as_bool().unwrap_or(false))
    }

    pub fn now(&self) -> u64 {
        self.client.now
    }
}

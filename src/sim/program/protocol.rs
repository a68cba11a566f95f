//! The worker protocol's words (docs/worker-protocol.md, version [`VERSION`]): the calls a
//! program makes, read from the JSON object of one line, and the messages durasim sends it.
//!
//! Owns: the closed list of calls ([`Call`]) with their fields and which role may make each,
//! reading one request (strictly: an unknown call, a missing or unknown field, a value of the
//! wrong kind is an error naming it), and the shape of `start` and `reply` messages and of
//! store rows on the wire.
//! Does not: perform a call (`sim::program`'s handlers do) or read and write lines (the program's
//! driver in `shell::programs` does).

use crate::model::dead_letter::DlqReason;
use crate::model::retry::ErrorKind;
use crate::model::store::{EffectRow, OutboxRow, Pk, ResultRow, Row, Table};
use serde_json::{json, Map, Value};

/// The protocol's version, in every `start` message.
pub const VERSION: u64 = 1;

/// The bytes of a `log` message the history keeps.
pub const LOG_MAX: usize = 1000;

/// The rows a scan returns at most.
pub const SCAN_LIMIT: usize = 10_000;

/// The roles a program can play.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Worker,
    Relay,
    Consumer,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Worker, Role::Relay, Role::Consumer];

    pub fn name(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Relay => "relay",
            Role::Consumer => "consumer",
        }
    }
}

/// One call a program makes, with its arguments.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Call {
    Lease,
    Heartbeat {
        job: u32,
        fence: Option<u64>,
    },
    Ack {
        job: u32,
        fence: Option<u64>,
    },
    Retry {
        job: u32,
        fence: Option<u64>,
        error: ErrorKind,
        delay_ms: Option<u64>,
    },
    Fail {
        job: u32,
        fence: Option<u64>,
        error: ErrorKind,
        reason: Option<DlqReason>,
    },
    Cancel {
        job: u32,
        fence: Option<u64>,
        error: ErrorKind,
    },
    Infer {
        job: u32,
    },
    Begin,
    Get {
        tx: u32,
        table: Table,
        key: Pk,
    },
    /// An outbox or effects row's id is 0 here: the store's sequence gives it.
    Insert {
        tx: u32,
        row: Row,
        skip_existing: bool,
    },
    Scan {
        tx: u32,
        table: Table,
        unpublished: bool,
        limit: usize,
    },
    MarkPublished {
        tx: u32,
        event: u64,
    },
    Delete {
        tx: u32,
        table: Table,
        key: Pk,
    },
    Commit {
        tx: u32,
    },
    Rollback {
        tx: u32,
    },
    Sleep {
        ms: u64,
    },
    Publish {
        event: u64,
    },
    Receive,
    Log {
        message: String,
    },
}

/// A line a program wrote: a call with its id, or `idle` (it has sent every call it had to
/// send after the last message, and waits for the next).
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Line {
    Idle,
    Call { id: u64, call: Call },
}

/// Every call's name, its fields (besides `call` and `id`), and the roles that may make it.
const CALLS: &[(&str, &[&str], &[Role])] = {
    use Role::*;
    &[
        ("queue.lease", &[], &[Worker]),
        ("queue.heartbeat", &["job", "fence"], &[Worker]),
        ("queue.ack", &["job", "fence"], &[Worker]),
        (
            "queue.retry",
            &["job", "fence", "error", "delay_ms"],
            &[Worker],
        ),
        (
            "queue.fail",
            &["job", "fence", "error", "reason"],
            &[Worker],
        ),
        ("queue.cancel", &["job", "fence", "error"], &[Worker]),
        ("model.infer", &["job"], &[Worker]),
        ("store.begin", &[], &[Worker, Relay, Consumer]),
        (
            "store.get",
            &["tx", "table", "key"],
            &[Worker, Relay, Consumer],
        ),
        (
            "store.insert",
            &["tx", "table", "row", "on_conflict"],
            &[Worker, Relay, Consumer],
        ),
        (
            "store.scan",
            &["tx", "table", "unpublished", "limit"],
            &[Worker, Relay, Consumer],
        ),
        (
            "store.mark_published",
            &["tx", "event"],
            &[Worker, Relay, Consumer],
        ),
        (
            "store.delete",
            &["tx", "table", "key"],
            &[Worker, Relay, Consumer],
        ),
        ("store.commit", &["tx"], &[Worker, Relay, Consumer]),
        ("store.rollback", &["tx"], &[Worker, Relay, Consumer]),
        ("timer.sleep", &["ms"], &[Worker, Relay, Consumer]),
        ("broker.publish", &["event"], &[Relay]),
        ("broker.receive", &[], &[Consumer]),
        ("log", &["message"], &[Worker, Relay, Consumer]),
    ]
};

/// Which role may write which table (`store.insert`, `store.mark_published`, `store.delete`):
/// the worker its results and outbox events, the relay the outbox's marks and deletes, the
/// consumer its dedupe table and its effects. Every role may read every table.
pub fn may_write(role: Role, table: Table) -> bool {
    matches!(
        (role, table),
        (Role::Worker, Table::Results | Table::Outbox)
            | (Role::Relay, Table::Outbox)
            | (Role::Consumer, Table::ConsumerSeen | Table::Effects)
    )
}

/// The call's name as a program writes it.
pub fn call_name(call: &Call) -> &'static str {
    match call {
        Call::Lease => "queue.lease",
        Call::Heartbeat { .. } => "queue.heartbeat",
        Call::Ack { .. } => "queue.ack",
        Call::Retry { .. } => "queue.retry",
        Call::Fail { .. } => "queue.fail",
        Call::Cancel { .. } => "queue.cancel",
        Call::Infer { .. } => "model.infer",
        Call::Begin => "store.begin",
        Call::Get { .. } => "store.get",
        Call::Insert { .. } => "store.insert",
        Call::Scan { .. } => "store.scan",
        Call::MarkPublished { .. } => "store.mark_published",
        Call::Delete { .. } => "store.delete",
        Call::Commit { .. } => "store.commit",
        Call::Rollback { .. } => "store.rollback",
        Call::Sleep { .. } => "timer.sleep",
        Call::Publish { .. } => "broker.publish",
        Call::Receive => "broker.receive",
        Call::Log { .. } => "log",
    }
}

/// Whether `role` may make `call` at all.
pub fn allowed(role: Role, call: &Call) -> bool {
    let name = call_name(call);
    CALLS
        .iter()
        .any(|(n, _, roles)| *n == name && roles.contains(&role))
}

const ERRORS: [ErrorKind; 4] = [
    ErrorKind::ProviderUnavailable,
    ErrorKind::SchemaInvalid,
    ErrorKind::PayloadConflict,
    ErrorKind::DeadlineExceeded,
];

/// Reads one request from the JSON value of a line.
pub fn parse(v: &Value) -> Result<Line, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("expected a JSON object, got {}", kind(v)))?;
    let name = match o.get("call") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(format!(
                "field `call`: expected a string, got {}",
                kind(other)
            ))
        }
        None => return Err("missing field `call`".into()),
    };
    if name == "idle" {
        if let Some(k) = o.keys().find(|k| *k != "call") {
            return Err(format!(
                "field `{k}`: unknown field for idle; allowed: call"
            ));
        }
        return Ok(Line::Idle);
    }
    let Some((_, fields, _)) = CALLS.iter().find(|(n, _, _)| *n == name) else {
        let names: Vec<&str> = CALLS.iter().map(|c| c.0).collect();
        return Err(format!(
            "unknown call {name:?}; the calls are idle, {}",
            names.join(", ")
        ));
    };
    for k in o.keys() {
        if k != "call" && k != "id" && !fields.contains(&k.as_str()) {
            let mut allowed = vec!["call", "id"];
            allowed.extend(fields.iter());
            return Err(format!(
                "field `{k}`: unknown field for {name}; allowed: {}",
                allowed.join(", ")
            ));
        }
    }
    let f = Fields { o, name };
    let id = f.int("id")?;
    Ok(Line::Call {
        id,
        call: f.call()?,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The largest integer every JSON reader reads exactly.
const MAX_INT: u64 = (1 << 53) - 1;

struct Fields<'a> {
    o: &'a Map<String, Value>,
    name: &'a str,
}

impl Fields<'_> {
    fn err(&self, field: &str, what: &str) -> String {
        format!("{}: field `{field}`: {what}", self.name)
    }

    fn opt_int(&self, field: &str) -> Result<Option<u64>, String> {
        match self.o.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64().filter(|n| *n <= MAX_INT) {
                Some(n) => Ok(Some(n)),
                None => Err(self.err(
                    field,
                    &format!("expected an integer from 0 to 2^53-1, got {v}"),
                )),
            },
        }
    }

    fn int(&self, field: &str) -> Result<u64, String> {
        self.opt_int(field)?
            .ok_or_else(|| self.err(field, "missing"))
    }

    fn u32(&self, field: &str) -> Result<u32, String> {
        let n = self.int(field)?;
        u32::try_from(n).map_err(|_| self.err(field, &format!("{n} is out of range")))
    }

    fn string(&self, field: &str) -> Result<&str, String> {
        match self.o.get(field) {
            Some(Value::String(s)) => Ok(s),
            None | Some(Value::Null) => Err(self.err(field, "missing")),
            Some(v) => Err(self.err(field, &format!("expected a string, got {}", kind(v)))),
        }
    }

    fn opt_bool(&self, field: &str) -> Result<bool, String> {
        match self.o.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(field, &format!("expected a boolean, got {}", kind(v)))),
        }
    }

    fn error(&self, field: &str) -> Result<Option<ErrorKind>, String> {
        if matches!(self.o.get(field), None | Some(Value::Null)) {
            return Ok(None);
        }
        let s = self.string(field)?;
        ERRORS
            .into_iter()
            .find(|e| e.name() == s)
            .map(Some)
            .ok_or_else(|| {
                let names: Vec<&str> = ERRORS.iter().map(|e| e.name()).collect();
                self.err(field, &format!("{s:?} is not one of {}", names.join(", ")))
            })
    }

    fn table(&self) -> Result<Table, String> {
        let s = self.string("table")?;
        Table::parse(s).ok_or_else(|| {
            let names: Vec<&str> = Table::ALL.iter().map(|t| t.name()).collect();
            self.err(
                "table",
                &format!("{s:?} is not one of {}", names.join(", ")),
            )
        })
    }

    fn key(&self, table: Table) -> Result<Pk, String> {
        if table.text_key() {
            Ok(Pk::Text(self.string("key")?.to_string()))
        } else {
            Ok(Pk::Id(self.int("key")?))
        }
    }

    fn call(&self) -> Result<Call, String> {
        let job = || self.u32("job");
        let fence = || self.opt_int("fence");
        Ok(match self.name {
            "queue.lease" => Call::Lease,
            "queue.heartbeat" => Call::Heartbeat {
                job: job()?,
                fence: fence()?,
            },
            "queue.ack" => Call::Ack {
                job: job()?,
                fence: fence()?,
            },
            "queue.retry" => Call::Retry {
                job: job()?,
                fence: fence()?,
                error: self
                    .error("error")?
                    .ok_or_else(|| self.err("error", "missing"))?,
                delay_ms: self.opt_int("delay_ms")?,
            },
            "queue.fail" => Call::Fail {
                job: job()?,
                fence: fence()?,
                error: self
                    .error("error")?
                    .ok_or_else(|| self.err("error", "missing"))?,
                reason: self.reason()?,
            },
            "queue.cancel" => Call::Cancel {
                job: job()?,
                fence: fence()?,
                error: self.error("error")?.unwrap_or(ErrorKind::DeadlineExceeded),
            },
            "model.infer" => Call::Infer { job: job()? },
            "store.begin" => Call::Begin,
            _ => return self.call_rest(),
        })
    }

    fn call_rest(&self) -> Result<Call, String> {
        let tx = || self.u32("tx");
        Ok(match self.name {
            "store.get" | "store.delete" => {
                let table = self.table()?;
                let key = self.key(table)?;
                match self.name {
                    "store.get" => Call::Get {
                        tx: tx()?,
                        table,
                        key,
                    },
                    _ => Call::Delete {
                        tx: tx()?,
                        table,
                        key,
                    },
                }
            }
            "store.insert" => {
                let skip_existing = match self.o.get("on_conflict") {
                    None | Some(Value::Null) => false,
                    Some(Value::String(s)) if s == "error" => false,
                    Some(Value::String(s)) if s == "nothing" => true,
                    Some(v) => {
                        return Err(self.err(
                            "on_conflict",
                            &format!("expected \"error\" or \"nothing\", got {v}"),
                        ))
                    }
                };
                let table = self.table()?;
                Call::Insert {
                    tx: tx()?,
                    row: self.row(table)?,
                    skip_existing,
                }
            }
            "store.scan" => Call::Scan {
                tx: tx()?,
                table: self.table()?,
                unpublished: self.opt_bool("unpublished")?,
                limit: self
                    .opt_int("limit")?
                    .map_or(SCAN_LIMIT, |n| (n as usize).min(SCAN_LIMIT)),
            },
            "store.mark_published" => Call::MarkPublished {
                tx: tx()?,
                event: self.int("event")?,
            },
            "store.commit" => Call::Commit { tx: tx()? },
            "store.rollback" => Call::Rollback { tx: tx()? },
            "timer.sleep" => Call::Sleep {
                ms: self.int("ms")?,
            },
            "broker.publish" => Call::Publish {
                event: self.int("event")?,
            },
            "broker.receive" => Call::Receive,
            "log" => Call::Log {
                message: self.string("message")?.to_string(),
            },
            other => unreachable!("{other} is in CALLS"),
        })
    }

    fn reason(&self) -> Result<Option<DlqReason>, String> {
        if matches!(self.o.get("reason"), None | Some(Value::Null)) {
            return Ok(None);
        }
        let s = self.string("reason")?;
        DlqReason::ALL
            .into_iter()
            .find(|r| r.code() == s)
            .map(Some)
            .ok_or_else(|| {
                self.err(
                    "reason",
                    &format!("{s:?} is not a DLQ code (permanent_error, max_attempts_exceeded)"),
                )
            })
    }

    fn row(&self, table: Table) -> Result<Row, String> {
        let o = match self.o.get("row") {
            Some(Value::Object(o)) => o,
            Some(v) => return Err(self.err("row", &format!("expected an object, got {}", kind(v)))),
            None => return Err(self.err("row", "missing")),
        };
        let columns: &[&str] = match table {
            Table::Results => &["key", "job", "payload", "output", "event"],
            Table::Outbox => &["key", "job", "output"],
            Table::ConsumerSeen => &["event"],
            Table::Effects => &["event", "key", "job", "output"],
        };
        if let Some(k) = o.keys().find(|k| !columns.contains(&k.as_str())) {
            return Err(self.err(
                "row",
                &format!(
                    "unknown column `{k}` of {}; its columns: {}",
                    table.name(),
                    columns.join(", ")
                ),
            ));
        }
        let r = Fields { o, name: self.name };
        let hex = |c: &str| -> Result<u64, String> {
            let s = r.string(c)?;
            if (1..=16).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(u64::from_str_radix(s, 16).expect("checked hex"))
            } else {
                Err(r.err(c, &format!("{s:?} is not 1 to 16 hex digits")))
            }
        };
        Ok(match table {
            Table::Results => Row::Result(ResultRow {
                key: r.string("key")?.to_string(),
                job: r.u32("job")?,
                payload: hex("payload")?,
                output: hex("output")?,
                event: r.opt_int("event")?,
            }),
            Table::Outbox => Row::Outbox(OutboxRow {
                event: 0,
                key: r.string("key")?.to_string(),
                job: r.u32("job")?,
                output: hex("output")?,
                published: false,
            }),
            Table::ConsumerSeen => Row::Seen(r.int("event")?),
            Table::Effects => Row::Effect(EffectRow {
                id: 0,
                event: r.int("event")?,
                key: r.string("key")?.to_string(),
                job: r.u32("job")?,
                output: hex("output")?,
            }),
        })
    }
}

/// A 64-bit value as a program reads it: 16 lowercase hex digits.
pub fn hex(n: u64) -> String {
    format!("{n:016x}")
}

/// A store row as a program reads it.
pub fn row_json(row: &Row) -> Value {
    match row {
        Row::Result(r) => json!({
            "key": r.key, "job": r.job, "payload": hex(r.payload), "output": hex(r.output),
            "event": r.event,
        }),
        Row::Outbox(r) => json!({
            "event": r.event, "key": r.key, "job": r.job, "output": hex(r.output),
            "published": r.published,
        }),
        Row::Seen(e) => json!({ "event": e }),
        Row::Effect(r) => json!({
            "id": r.id, "event": r.event, "key": r.key, "job": r.job, "output": hex(r.output),
        }),
    }
}

/// A successful reply to call `id` (durasim adds `now` when it delivers it).
pub fn ok(id: u64, result: Value) -> Value {
    json!({ "type": "reply", "id": id, "ok": result })
}

/// A failed call: `code` is one word a program can branch on, `message` says why.
pub fn error(id: u64, code: &str, message: impl Into<String>) -> Value {
    json!({ "type": "reply", "id": id, "error": { "code": code, "message": message.into() } })
}

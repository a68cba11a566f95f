//! The history file format, writing side: a header line, then one record a line (JSON lines).
//!
//! Owns: how a [`Record`] is spelled in a file (`docs/history-format.md` is the specification):
//! keys as `tenant:document:vN`, tenants, documents and operations by name, payload hashes,
//! content fingerprints and model outputs as 16 lowercase hex digits, absent optional fields
//! left out, and the header line that carries the run's configuration; [`HistoryWriter`], the
//! observer that writes each record as the run produces it (`run --trace`: memory bounded by a
//! buffer, not by the history's length).
//! Does not: read files (see `reader`), decide what is recorded (the kernel does) or open files
//! (the shell hands over a writer).

use super::{Event, Observer, Record};
use crate::base::ids::{OperationId, TenantId};
use crate::vocab::config::{RetryFormula, RunConfig};
use crate::vocab::key::{IdempotencyKey, KeyNames};
use serde_json::{json, Map, Value};
use std::io::Write;

/// The `format` field of the header line.
pub const FORMAT: &str = "durasim-history";
/// The format's version; a reader refuses any other.
pub const VERSION: u64 = 1;
/// The version an outside recorder writes to state what its system really does
/// (docs/history-format.md, "Version 2"). The simulator writes version 1.
pub const VERSION_2: u64 = 2;

/// The header line: format, version, time unit, the optional records written, and the
/// configuration (every setting, `null` when off), in that order.
pub fn header_line(config: &RunConfig) -> String {
    let limit = config
        .reprocess_limit
        .map(|l| json!({"max": l.max, "window": l.window}));
    let mut members = vec![
        ("seed", json!(config.seed)),
        ("workers", json!(config.workers)),
        ("lease", json!(config.lease)),
        ("heartbeat", json!(config.heartbeat)),
        ("deadline", json!(config.deadline)),
        ("attempts_max", json!(config.attempts_max)),
    ];
    // A profile's formula is one object; the capped exponential keeps today's three fields, so
    // a header without a profile formula is byte for byte what it always was.
    match &config.retry_formula {
        Some(f) => members.push(("backoff", retry_formula_value(f))),
        None => members.extend([
            ("backoff_base", json!(config.backoff_base)),
            ("backoff_cap", json!(config.backoff_cap)),
            ("jitter", json!(config.jitter.name())),
        ]),
    }
    members.extend([
        ("dlq_capacity", json!(config.dlq_capacity)),
        ("reprocess_limit", json!(limit)),
        ("dedupe_window", json!(config.dedupe_window)),
        ("outbox_retention", json!(config.outbox_retention)),
    ]);
    if config.permanent_errors_retried {
        members.push(("permanent_error", json!("retry")));
    }
    if let Some(r) = config.dlq_retention {
        members.push((
            "dlq_retention",
            json!({"after": r.after, "from": r.from_name()}),
        ));
    }
    if let Some(d) = config.lease_detection {
        let mut v = json!({"kind": d.kind.name()});
        if d.kind != crate::vocab::config::DetectionKind::Timer {
            v["every"] = json!(d.every);
        }
        if d.slack > 0 || d.kind == crate::vocab::config::DetectionKind::Timer {
            v["slack"] = json!(d.slack);
        }
        members.push(("lease_detection", v));
    }
    if config.unique != crate::profile::Unique::Forever {
        use crate::profile::Word;
        members.push(("unique", json!(config.unique.name())));
    }
    let settings = object_text(&members);
    let head = object_text(&[
        ("format", json!(FORMAT)),
        ("version", json!(VERSION)),
        ("time_unit", json!(config.time_unit.name())),
        ("emits", json!(config.emits.names())),
    ]);
    format!("{},\"config\":{settings}}}", &head[..head.len() - 1])
}

/// The header's `backoff` object (docs/history-format.md; its members in name order, as every
/// nested object); `cap` is `null` for an uncapped formula.
fn retry_formula_value(f: &RetryFormula) -> Value {
    use crate::profile::Word;
    let b = &f.backoff;
    json!({
        "formula": b.formula.name(),
        "unit": b.base_ms,
        "cap": (b.cap_ms != u64::MAX).then_some(b.cap_ms),
        "offset": b.offset_ms,
        "index_from": b.index_from,
        "jitter": b.jitter.name(),
        "jitter_pct": b.jitter_pct,
        "jitter_step": b.jitter_step_ms,
        "attempt": f.attempt.name(),
    })
}

/// A JSON object with its members in the given order.
fn object_text(members: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).expect("json"));
        out.push(':');
        out.push_str(&serde_json::to_string(v).expect("json"));
    }
    out.push('}');
    out
}

fn hex(v: &Value) -> Option<Value> {
    v.as_u64().map(|x| Value::String(format!("{x:016x}")))
}

/// A record as its JSON object, names spelled out (the header as the header line's object).
pub fn to_value(record: &Record, names: &KeyNames) -> Value {
    if let Event::RunStarted { config } = &record.event {
        return serde_json::from_str(&header_line(config)).expect("the header is JSON");
    }
    let mut value = serde_json::to_value(record).expect("records serialise");
    let Value::Object(map) = &mut value else {
        unreachable!("a record is an object")
    };
    let mut out = Map::new();
    for (field, v) in std::mem::take(map) {
        if v.is_null() {
            continue;
        }
        let spelled = match field.as_str() {
            "key" => v
                .as_u64()
                .map(|packed| Value::String(names.key(&IdempotencyKey::unpack(packed)))),
            "tenant" => v
                .as_u64()
                .map(|t| Value::String(names.tenants.name(TenantId(t as u16)).to_string())),
            "operation" | "replaced_operation" => v
                .as_u64()
                .map(|o| Value::String(names.operations.name(OperationId(o as u16)).to_string())),
            "payload" | "existing_payload" | "content" | "output" | "replaced_payload"
            | "replaced_content" => hex(&v),
            _ => None,
        };
        out.insert(field, spelled.unwrap_or(v));
    }
    Value::Object(out)
}

/// Renders a record as one JSON line: `at` and `type` first, the other fields in name order,
/// keys, tenants and operations spelled out; the header record as the header line.
pub fn to_json_line(record: &Record, names: &KeyNames) -> String {
    if let Event::RunStarted { config } = &record.event {
        return header_line(config);
    }
    let Value::Object(mut map) = to_value(record, names) else {
        unreachable!("a record is an object")
    };
    let mut members = Vec::with_capacity(map.len());
    for first in ["at", "type"] {
        if let Some(v) = map.remove(first) {
            members.push((first, v));
        }
    }
    let rest: Vec<(String, Value)> = map.into_iter().collect();
    let mut line = object_text(&members);
    for (k, v) in rest {
        line.pop();
        line.push(',');
        line.push_str(&serde_json::to_string(&k).expect("json"));
        line.push(':');
        line.push_str(&serde_json::to_string(&v).expect("json"));
        line.push('}');
    }
    line
}

/// Writes a whole history: the header line (the first record) and one line a record.
pub fn write_history(out: impl Write, records: &[Record], names: &KeyNames) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(out);
    for r in records {
        w.write_all(to_json_line(r, names).as_bytes())?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// Writes a history as it streams past, one line a record, into a writer the shell opened.
/// The bytes are those of [`write_history`] over the same records. The first write error is
/// kept (the run goes on: its verdict does not depend on the file) and returned by
/// [`HistoryWriter::finish`].
pub struct HistoryWriter {
    out: std::io::BufWriter<Box<dyn Write>>,
    names: KeyNames,
    error: Option<std::io::Error>,
}

impl HistoryWriter {
    /// `names` spell keys, tenants and operations; a run's are known before it starts
    /// (`sim::kernel::scenario_names`).
    pub fn new(out: Box<dyn Write>, names: KeyNames) -> HistoryWriter {
        HistoryWriter {
            out: std::io::BufWriter::with_capacity(1 << 16, out),
            names,
            error: None,
        }
    }

    /// Flushes; the first error met while writing, if any.
    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }
}

impl Observer for HistoryWriter {
    fn observe(&mut self, record: &Record) {
        if self.error.is_some() {
            return;
        }
        let line = to_json_line(record, &self.names);
        let written = self.out.write_all(line.as_bytes());
        if let Err(e) = written.and_then(|()| self.out.write_all(b"\n")) {
            self.error = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::{DocumentId, EventId};
    use crate::vocab::key::IdempotencyKey;

    #[test]
    fn keys_and_hex_fields_render_spelled_out_and_absent_fields_are_left_out() {
        let mut names = KeyNames::default();
        let t = names.tenants.register("acme").unwrap();
        let key = IdempotencyKey::new(t, DocumentId(42), 2).unwrap();
        let r = Record {
            at: 5,
            event: Event::DuplicateEvent {
                event: EventId(3),
                key,
            },
        };
        assert_eq!(
            to_json_line(&r, &names),
            r#"{"at":5,"type":"duplicate_event","event":3,"key":"acme:doc-42:v2"}"#
        );
        let r = Record {
            at: 7,
            event: Event::PayloadMutated {
                job: crate::base::ids::JobId(1),
                content: 0xab,
                payload: None,
            },
        };
        assert_eq!(
            to_json_line(&r, &names),
            r#"{"at":7,"type":"payload_mutated","content":"00000000000000ab","job":1}"#
        );
    }

    #[test]
    fn the_header_line_names_the_format_and_every_setting() {
        let line = to_json_line(
            &Record {
                at: 0,
                event: Event::RunStarted {
                    config: Box::default(),
                },
            },
            &KeyNames::default(),
        );
        assert!(line.starts_with(r#"{"format":"durasim-history","version":1,"time_unit":"ms","#));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["format"], FORMAT);
        assert_eq!(v["version"], VERSION);
        for k in [
            "lease",
            "heartbeat",
            "deadline",
            "attempts_max",
            "backoff_base",
            "backoff_cap",
            "jitter",
            "dlq_capacity",
            "reprocess_limit",
            "dedupe_window",
            "outbox_retention",
        ] {
            assert!(v["config"].get(k).is_some(), "{k} missing from {line}");
        }
    }
}

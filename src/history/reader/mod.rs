//! The history file format, reading side: a bounded, strict reader of `--trace` files and of
//! histories recorded outside the simulator (a real queue and database, another language).
//!
//! Owns: turning a file into the same [`Record`]s the simulator produces. External ids (integers,
//! strings, UUIDs) of jobs, workers and outbox events are mapped to dense ids in order of first
//! appearance (integer worker ids below the header's `workers` keep their number, so a history
//! the simulator wrote reads back record for record, and hashes to the same trace hash);
//! tenants, documents and operations are interned by name; keys are parsed from
//! `tenant:document:vN`. Bounds: a file size cap (the shell opens regular files only: `files::open_history`), a line length cap, values
//! below 2^53. Every malformed line, unknown field, unknown type, out-of-order timestamp,
//! reference to a job no earlier line enqueued, undeclared optional record or missing `run_ended`
//! is an error naming the file, the line, the field and what is allowed.
//! Here: the reader itself (lines, limits, the dispatch of the header and each record) and
//! its error; `header.rs` reads the header, `records.rs` each record, `specs.rs` lists the
//! record types and their fields, `fields.rs` reads typed fields, `ids.rs` maps external ids.
//! Does not: judge anything (the checker reads the records this returns) or write files.

mod fields;
mod header;
mod ids;
mod records;
mod specs;
#[cfg(test)]
mod tests;

use fields::{FieldSource, Fields};
pub use ids::ExternalId;
use ids::{IdMap, Ids};
use specs::{specs, types};

use super::format::{FORMAT, VERSION, VERSION_2};
use super::{Event, Op, Record};
use crate::base::ids::{EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use crate::base::messages::{clip, clip_name};
use crate::vocab::codes;
use crate::vocab::config::{
    DetectionKind, DlqRetention, Emits, Jitter, LeaseDetection, ReprocessLimit, RetryFormula,
    RunConfig, TimeUnit,
};
use crate::vocab::key::{IdempotencyKey, KeyNames, MAX_OPERATIONS, MAX_VERSION};
use crate::vocab::payload::PayloadHash;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Read};

/// A JSON value from the file as a message shows it: at most 80 characters, invisible and
/// control characters escaped.
fn shown(v: &Value) -> String {
    clip_name(&v.to_string())
}

/// How much a reader accepts.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes in one line, newline included.
    pub max_line_bytes: usize,
    /// Bytes in the whole file.
    pub max_file_bytes: u64,
    /// Jobs one history may enqueue (`MAX_HISTORY_JOBS`).
    pub max_jobs: u64,
    /// Distinct workers, outbox events and version 2 keys, each (`MAX_HISTORY_IDS`).
    pub max_ids: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: crate::base::limits::MAX_HISTORY_LINE_BYTES,
            max_file_bytes: crate::base::limits::MAX_HISTORY_BYTES,
            max_jobs: crate::base::limits::MAX_HISTORY_JOBS,
            max_ids: crate::base::limits::MAX_HISTORY_IDS,
        }
    }
}

/// The most lines a reorder window may hold at once.
const MAX_HELD: usize = 1 << 20;

/// The largest number a history may hold in a time, a duration, a count or an id: 2^53 - 1, the
/// largest integer every JSON implementation reads exactly. Keeps the checker's sums exact.
pub const MAX_NUMBER: u64 = (1 << 53) - 1;

/// A history that cannot be read: where, which field, and what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct HistoryError {
    pub file: String,
    pub line: Option<u64>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        match &self.field {
            Some(field) => write!(f, ": field `{field}`: {}", self.message),
            None => write!(f, ": {}", self.message),
        }
    }
}

/// A bounded, strict reader of one history.
pub struct HistoryReader<R> {
    file: String,
    input: R,
    limits: Limits,
    bytes_read: u64,
    line: u64,
    buf: Vec<u8>,
    names: KeyNames,
    tenants: HashMap<String, TenantId>,
    jobs: IdMap,
    workers: IdMap,
    events: IdMap,
    config: Option<RunConfig>,
    last_at: SimTime,
    ended: bool,
    /// Version 2, `"fences": "none"`: each job's leases so far, and each worker's latest lease
    /// of each job (its number), by (job, worker).
    lease_counts: Vec<u32>,
    latest: HashMap<(u32, u32), u32>,
    /// Version 2: each opaque key's text and its key (under the tenant that first named it).
    keys: HashMap<Box<str>, IdempotencyKey>,
    /// Version 2: each job's tenant, for a key a record names before any submit did.
    job_tenants: Vec<TenantId>,
    /// Version 2 with a `reorder_window`: lines read but not yet released, by (time, line), and
    /// the latest time read; whether the line `run_ended` was read.
    held: std::collections::BTreeMap<(SimTime, u64), (String, Map<String, Value>)>,
    max_at: SimTime,
    end_read: bool,
    /// The header's `expect` object, as written.
    expect: Option<Map<String, Value>>,
}

impl<R> HistoryReader<R> {
    /// What the header stated beyond version 1 (version 1's defaults before the header).
    pub(super) fn stated(&self) -> crate::vocab::config::Stated {
        self.config.as_ref().map(|c| c.stated).unwrap_or_default()
    }

    fn error(&self, field: Option<&str>, message: impl Into<String>) -> HistoryError {
        HistoryError {
            file: self.file.clone(),
            line: Some(self.line),
            field: field.map(clip_name),
            message: message.into(),
        }
    }
}

impl<R: BufRead> HistoryReader<R> {
    /// Reads from any buffered input (`name` is what errors call it).
    pub fn from_reader(name: &str, input: R, limits: Limits) -> Self {
        HistoryReader {
            file: name.to_string(),
            input,
            limits,
            bytes_read: 0,
            line: 0,
            buf: Vec::new(),
            names: KeyNames::default(),
            tenants: HashMap::new(),
            jobs: IdMap::new(0, 0),
            workers: IdMap::new(0, 0),
            events: IdMap::new(1, 0),
            config: None,
            last_at: 0,
            ended: false,
            lease_counts: Vec::new(),
            latest: HashMap::new(),
            keys: HashMap::new(),
            job_tenants: Vec::new(),
            held: std::collections::BTreeMap::new(),
            max_at: 0,
            end_read: false,
            expect: None,
        }
    }

    /// The names (tenants, documents, operations) the history used so far.
    /// The header's `expect` object (what the recorder says the history shows, in a scenario's
    /// `[expect]` keys), as written; `verify` reads it with `scenario::parse_expectations_json`.
    pub fn header_expect(&self) -> Option<&Map<String, Value>> {
        self.expect.as_ref()
    }

    pub fn names(&self) -> &KeyNames {
        &self.names
    }

    /// The header's configuration, once the header has been read.
    pub fn config(&self) -> Option<&RunConfig> {
        self.config.as_ref()
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// How the file named a job, when that differs from `job-N`.
    pub fn job_label(&self, job: JobId) -> Option<String> {
        let label = self.jobs.label(job.0 as u64)?;
        match label {
            ExternalId::Int(n) if *n == job.0 as u64 => None,
            l => Some(l.to_string()),
        }
    }

    /// A message of the checker with the file's own ids: each `job-N`, `worker-N` and `event-N`
    /// becomes the id the file gave it (an integer id as `job-59`, a string id as `job "a-b"`),
    /// and under `"fences": "none"` each `fence-N` (the reader's numbering of a job's leases)
    /// becomes `lease #N`. A token the file did not name stays as it is.
    pub fn spell(&self, message: &str) -> String {
        let fences = self.stated().fences;
        let mut out = String::with_capacity(message.len());
        let mut rest = message;
        while !rest.is_empty() {
            let at_boundary = out
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || "-_:/.#".contains(c)));
            let token = ["job-", "worker-", "event-", "fence-"]
                .into_iter()
                .find(|p| at_boundary && rest.starts_with(p));
            if let Some(prefix) = token {
                let digits = rest[prefix.len()..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
                let end = prefix.len() + digits;
                let next_ok = !rest[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
                if let (true, Ok(n)) = (
                    digits > 0 && next_ok,
                    rest[prefix.len()..end].parse::<u64>(),
                ) {
                    let kind = &prefix[..prefix.len() - 1];
                    let label = match prefix {
                        "job-" => self.jobs.label(n),
                        "worker-" => self.workers.label(n),
                        "event-" => self.events.label(n),
                        _ => None,
                    };
                    match (prefix, label) {
                        ("fence-", _) if !fences => out.push_str(&format!("lease #{n}")),
                        (_, Some(ExternalId::Int(m))) => out.push_str(&format!("{kind}-{m}")),
                        (_, Some(ExternalId::Str(s))) => {
                            out.push_str(&format!("{kind} {}", clip(s)))
                        }
                        _ => out.push_str(&rest[..end]),
                    }
                    rest = &rest[end..];
                    continue;
                }
            }
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// A record's JSON object (as `format::to_value` renders it) with the file's own ids in
    /// place of the dense ones, so evidence reads as the recorder wrote it.
    pub fn relabel(&self, value: &mut Value) {
        let Value::Object(map) = value else { return };
        if !self.stated().fences {
            // The reader numbered the leases; the file carried no token.
            for field in ["fence", "presented", "held"] {
                map.remove(field);
            }
        }
        for (field, v) in map.iter_mut() {
            let table = match field.as_str() {
                "job" | "existing" | "old_job" | "new_job" | "reprocess_of" => &self.jobs,
                "worker" => &self.workers,
                "event" | "existing_event" => &self.events,
                _ => continue,
            };
            if let Some(label) = v.as_u64().and_then(|n| table.label(n)) {
                *v = match label {
                    ExternalId::Int(n) => Value::from(*n),
                    ExternalId::Str(s) => Value::String(s.to_string()),
                };
            }
        }
    }

    /// Reads the next line into `buf` (without its line ending); false at the end of the file.
    fn read_line(&mut self) -> Result<bool, HistoryError> {
        self.buf.clear();
        let cap = self.limits.max_line_bytes as u64;
        let n = (&mut self.input)
            .take(cap + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| {
                let mut e = self.error(None, format!("cannot read: {e}"));
                e.line = Some(self.line + 1);
                e
            })?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        self.bytes_read += n as u64;
        if self.bytes_read > self.limits.max_file_bytes {
            return Err(self.error(
                None,
                format!(
                    "the file grew past {} bytes while it was read",
                    self.limits.max_file_bytes
                ),
            ));
        }
        if n as u64 > cap {
            return Err(self.error(
                None,
                format!("line longer than {cap} bytes; a history line may have at most {cap}"),
            ));
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        Ok(true)
    }

    fn parse_object(&self) -> Result<Map<String, Value>, HistoryError> {
        let text = std::str::from_utf8(&self.buf)
            .map_err(|_| self.error(None, "not UTF-8 text; every line is one JSON object"))?;
        if text.trim().is_empty() {
            return Err(self.error(None, "blank line; every line is one JSON object"));
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(self.error(None, "not a JSON object; every line is one JSON object")),
            Err(e) => Err(self.error(
                None,
                format!("not JSON ({e}); every line is one JSON object"),
            )),
        }
    }

    /// The next record: the header first (as `run_started` at time 0), `None` after `run_ended`
    /// at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, HistoryError> {
        if self.stated().reorder_window > 0 {
            return self.next_reordered();
        }
        if !self.read_line()? {
            if self.config.is_none() {
                return Err(HistoryError {
                    file: self.file.clone(),
                    line: None,
                    field: None,
                    message: format!(
                        "empty: a history starts with a header line {{\"format\":\"{FORMAT}\",\"version\":{VERSION},...}}"
                    ),
                });
            }
            if !self.ended {
                return Err(self.error(
                    None,
                    "the history ends without a `run_ended` line (was it cut short?)",
                ));
            }
            return Ok(None);
        }
        let mut map = self.parse_object()?;
        if self.config.is_none() {
            // What the recorder expects the history to show: `verify`'s business, not the
            // checker's, so kept aside as written (`Reader::header_expect`).
            match map.remove("expect") {
                None => {}
                Some(Value::Object(e)) => self.expect = Some(e),
                Some(other) => {
                    return Err(self.error(
                        Some("expect"),
                        format!(
                            "{}: an object with the keys of a scenario's [expect] block (`violations`, `sometimes`, the counters)",
                            shown(&other)
                        ),
                    ))
                }
            }
            let config = self.header(map)?;
            self.workers = IdMap::new(0, config.workers.unwrap_or(0) as u64);
            self.config = Some(config.clone());
            return Ok(Some(Record {
                at: 0,
                event: Event::RunStarted {
                    config: Box::new(config),
                },
            }));
        }
        if self.ended {
            return Err(self.error(
                None,
                "a line after `run_ended`; `run_ended` is the last line of a history",
            ));
        }
        let record = self.record(map)?;
        Ok(Some(record))
    }

    /// The next record of a history whose header declares a `reorder_window` W: lines are held
    /// until a line more than W later is read (or the file ends), and released in (time, line)
    /// order; a line more than W before one already read is refused.
    fn next_reordered(&mut self) -> Result<Option<Record>, HistoryError> {
        let window = self.stated().reorder_window;
        loop {
            if let Some((&(at, _), _)) = self.held.first_key_value() {
                if self.end_read || at.saturating_add(window) < self.max_at {
                    let ((at, line), (ty, map)) = self.held.pop_first().expect("a held line");
                    let read = self.line;
                    self.line = line;
                    let r = self.body(ty, at, map);
                    self.line = read;
                    return r.map(Some);
                }
            }
            if self.end_read {
                if !self.read_line()? {
                    return Ok(None);
                }
                return Err(self.error(
                    None,
                    "a line after `run_ended`; `run_ended` is the last line of a history",
                ));
            }
            if !self.read_line()? {
                return Err(self.error(
                    None,
                    "the history ends without a `run_ended` line (was it cut short?)",
                ));
            }
            let mut map = self.parse_object()?;
            let (ty, at) = self.head(&mut map)?;
            if at.saturating_add(window) < self.max_at {
                return Err(self.error(
                    Some("at"),
                    format!(
                        "{at} is more than the reorder window ({window}) before a line already read ({}); lines from different writers may be out of order by at most the header's `reorder_window`",
                        self.max_at
                    ),
                ));
            }
            if ty == "run_ended" {
                if at < self.max_at {
                    return Err(self.error(
                        Some("at"),
                        format!("{at} is before a line already read ({}); `run_ended` is the last record in time too", self.max_at),
                    ));
                }
                self.end_read = true;
            }
            self.max_at = self.max_at.max(at);
            if self.held.len() >= MAX_HELD {
                return Err(self.error(
                    None,
                    format!("more than {MAX_HELD} lines within one reorder window; a smaller `reorder_window` would do"),
                ));
            }
            self.held.insert((at, self.line), (ty, map));
        }
    }

    /// Reads the whole history (for tests and small files; `verify` streams).
    pub fn read_all(mut self) -> Result<(Vec<Record>, KeyNames), HistoryError> {
        let mut out = Vec::new();
        while let Some(r) = self.next_record()? {
            out.push(r);
        }
        Ok((out, self.names))
    }
}

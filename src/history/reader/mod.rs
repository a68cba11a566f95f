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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: crate::base::limits::MAX_HISTORY_LINE_BYTES,
            max_file_bytes: crate::base::limits::MAX_HISTORY_BYTES,
        }
    }
}

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
}

impl<R> HistoryReader<R> {
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
        }
    }

    /// The names (tenants, documents, operations) the history used so far.
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

    /// A record's JSON object (as `format::to_value` renders it) with the file's own ids in
    /// place of the dense ones, so evidence reads as the recorder wrote it.
    pub fn relabel(&self, value: &mut Value) {
        let Value::Object(map) = value else { return };
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
        let map = self.parse_object()?;
        if self.config.is_none() {
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

    /// Reads the whole history (for tests and small files; `verify` streams).
    pub fn read_all(mut self) -> Result<(Vec<Record>, KeyNames), HistoryError> {
        let mut out = Vec::new();
        while let Some(r) = self.next_record()? {
            out.push(r);
        }
        Ok((out, self.names))
    }
}

//! Where a report's history comes from, and replaying it: the records `run --chart` kept in
//! memory, or a history file in the directory — `trace.jsonl` (`run --trace`) or
//! `history.jsonl` (`conform`, `verify --out`) — read back by the library's strict reader.
//!
//! Owns: the order of preference, the unit (a history in µs is replayed with its times and
//! durations in ms, as every other file of a report is) and replaying the history as often as a
//! view needs it (the timeline reads it twice) without holding a file's records in memory.
//! Does not: decide what a view takes from the records (`chart::data`, `timeline`).

use crate::history::reader::Limits;
use crate::history::{Event, Record};
use crate::shell::report::error::ReportError;
use crate::vocab::config::TimeUnit;
use std::path::{Path, PathBuf};

/// The history files a report reads, in order of preference.
pub const FILES: [&str; 2] = ["trace.jsonl", "history.jsonl"];

/// A history to replay.
pub enum HistorySource<'a> {
    Memory(&'a [Record]),
    File(PathBuf),
}

impl<'a> HistorySource<'a> {
    /// The in-memory records when given, else the first history file of `dir`.
    pub fn find(dir: &Path, memory: Option<&'a [Record]>) -> Option<HistorySource<'a>> {
        if let Some(records) = memory {
            return Some(HistorySource::Memory(records));
        }
        FILES
            .iter()
            .map(|f| dir.join(f))
            .find(|p| p.is_file())
            .map(HistorySource::File)
    }

    /// What the report says the history was.
    pub fn describe(&self) -> String {
        match self {
            HistorySource::Memory(_) => "the run's history".into(),
            HistorySource::File(p) => format!(
                "the history in {}",
                p.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into())
            ),
        }
    }

    /// Hands every record to `visit`, in order, with `per_ms` (1 for a history in ms, 1000 for
    /// one in µs: divide a time or a duration by it for ms).
    pub fn replay(&self, visit: &mut dyn FnMut(&Record, u64)) -> Result<(), ReportError> {
        let mut per_ms = 1;
        let mut step = |r: &Record| {
            if let Event::RunStarted { config } = &r.event {
                per_ms = if config.time_unit == TimeUnit::Us {
                    1000
                } else {
                    1
                };
            }
            visit(r, per_ms);
        };
        match self {
            HistorySource::Memory(records) => records.iter().for_each(step),
            HistorySource::File(path) => {
                let mut reader = crate::shell::files::open_history(path, Limits::default())
                    .map_err(|e| ReportError::malformed(path.display(), e.to_string()))?;
                while let Some(r) = reader
                    .next_record()
                    .map_err(|e| ReportError::malformed(path.display(), e.to_string()))?
                {
                    step(&r);
                }
            }
        }
        Ok(())
    }
}

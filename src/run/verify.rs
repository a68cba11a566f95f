//! Judging a recorded history: what `durasim verify FILE` does.
//!
//! Owns: streaming a history through the reader into the judges a run uses (`judges.rs`: the
//! same checker, with the run's metrics alongside, so that the figures `summary.json` would
//! report are cross-checked against the checker's own count, exactly as after a run), and what
//! the history itself says of the run (its header, trace hash, records, end).
//! Does not: read or write files itself (the reader opens the history; the CLI prints).

use super::Judges;
use crate::base::ids::SimTime;
use crate::check::CheckReport;
use crate::history::reader::{HistoryError, HistoryReader};
use crate::history::{Event, TraceHash};
use crate::observe::metrics::Metrics;
use crate::vocab::config::RunConfig;
use std::io::BufRead;

/// What a history said, judged.
pub struct Judged {
    pub check: CheckReport,
    pub metrics: Metrics,
    pub config: RunConfig,
    pub trace_hash: u64,
    pub records: u64,
    /// The time of the last record (`run_ended`).
    pub end: SimTime,
    pub quiescent: bool,
}

/// Reads the whole history and judges it. The reader is left at the end, so its names and id
/// tables can render the verdicts.
pub fn judge<R: BufRead>(reader: &mut HistoryReader<R>) -> Result<Judged, HistoryError> {
    let mut judged: Option<(Judges, RunConfig)> = None;
    let mut hash = TraceHash::default();
    let (mut end, mut quiescent) = (0, false);
    while let Some(r) = reader.next_record()? {
        hash.add(&r);
        // The first record is the header: the judges count its workers.
        let (judges, _) = judged.get_or_insert_with(|| {
            let config = reader.config().cloned().expect("the header is read first");
            (Judges::for_history(config.workers.unwrap_or(0)), config)
        });
        judges.observe_named(&r, reader.names());
        end = r.at;
        if let Event::RunEnded { quiescent: q } = r.event {
            quiescent = q;
        }
    }
    let (judges, config) = judged.expect("a history read to its end has a header");
    let (check, metrics) = judges.verdicts();
    Ok(Judged {
        check,
        metrics,
        config,
        trace_hash: hash.finish(),
        records: hash.records(),
        end,
        quiescent,
    })
}

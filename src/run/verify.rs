//! Judging a recorded history: what `durasim verify FILE` does.
//!
//! Owns: streaming a history through the reader into the same checker a run uses, with the
//! run's metrics alongside so that the figures `summary.json` would report are cross-checked
//! against the checker's own count, exactly as after a run.
//! Does not: read or write files itself (the reader opens the history; the CLI prints).

use crate::base::ids::SimTime;
use crate::check::{CheckReport, Checker};
use crate::history::reader::{HistoryError, HistoryReader};
use crate::history::{Event, Observer, TraceHash};
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
    let mut checker = Checker::new();
    let mut metrics: Option<Metrics> = None;
    let mut hash = TraceHash::default();
    let (mut end, mut quiescent) = (0, false);
    while let Some(r) = reader.next_record()? {
        hash.add(&r);
        checker.observe_named(&r, Some(reader.names()));
        let m = metrics.get_or_insert_with(|| {
            let workers = reader.config().and_then(|c| c.workers).unwrap_or(0);
            Metrics::counts_only(workers)
        });
        m.observe(&r);
        end = r.at;
        if let Event::RunEnded { quiescent: q } = r.event {
            quiescent = q;
        }
    }
    let metrics = metrics.expect("a history read to its end has a header");
    let mut check = checker.finish();
    check.cross_check_figures(&metrics.counts, &metrics.held);
    Ok(Judged {
        check,
        metrics,
        config: reader
            .config()
            .expect("a history read to its end has a header")
            .clone(),
        trace_hash: hash.finish(),
        records: hash.records(),
        end,
        quiescent,
    })
}

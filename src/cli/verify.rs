//! `durasim verify FILE`: a recorded history judged by the same checker a run uses.
//!
//! Owns: opening the history (bounded, streaming), feeding it to the checker and printing the
//! verdict block with the file's own ids.
//! Does not: judge anything itself (`check`), or parse a line (`history::reader`).

use super::{bad, Outcome};
use crate::history::TraceHash;
use crate::report::summary::invariant_summaries;
use std::path::Path;

/// `durasim verify FILE`: reads a history (streaming, bounded), judges it with the checker `run`
/// uses, prints the verdict block. Exit 0 when every invariant holds, 1 on a violation, 2 when
/// the file cannot be read as a history.
pub fn cmd_verify(path: &Path) -> anyhow::Result<Outcome> {
    use crate::history::reader::{HistoryReader, Limits};
    let mut reader =
        HistoryReader::open(path, Limits::default()).map_err(|e| bad(e.to_string()))?;
    let mut checker = crate::check::Checker::new();
    let mut hash = TraceHash::default();
    let (mut end, mut quiescent) = (0, false);
    while let Some(r) = reader.next_record().map_err(|e| bad(e.to_string()))? {
        hash.add(&r);
        checker.observe_record(&r);
        end = r.at;
        if let crate::history::Event::RunEnded { quiescent: q } = r.event {
            quiescent = q;
        }
    }
    let report = checker.finish();
    let config = reader
        .config()
        .expect("a history read to its end has a header")
        .clone();
    let unit = config.time_unit.suffix();
    let mut invariants = invariant_summaries(&report, reader.names());
    for f in invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.evidence.iter_mut().for_each(|e| reader.relabel(e));
    }
    let verdict = if report.holds() { "PASS" } else { "FAIL" };
    println!(
        "{verdict}  {}  trace {}",
        path.display(),
        TraceHash::hex(hash.finish())
    );
    println!(
        "  history    {} records, {end} {unit} recorded{}{}",
        hash.records(),
        config
            .seed
            .map(|s| format!(", seed {s}"))
            .unwrap_or_default(),
        if quiescent { "" } else { ", NOT QUIESCENT" }
    );
    super::print::print_verdicts(&invariants, unit);
    for i in &invariants {
        let job = i.first_violation.as_ref().and_then(|f| f.job);
        if let Some(label) = job.and_then(|j| reader.job_label(crate::ids::JobId(j))) {
            println!(
                "  ids        job-{} is {label} in the file",
                job.unwrap_or(0)
            );
        }
    }
    Ok(if report.holds() {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

//! `durasim verify FILE`: a recorded history judged by the same checker a run uses.
//!
//! Owns: opening the history (bounded, streaming), handing it to `crate::run::verify` (the checker
//! and the metrics a run uses, the summary figures cross-checked) and printing the verdict block
//! with the file's own ids.
//! Does not: judge anything itself (`check`), or parse a line (`history::reader`).

use super::{bad, Outcome};
use crate::history::TraceHash;
use crate::shell::report::summary::invariant_summaries;
use std::path::Path;

/// `durasim verify FILE`: reads a history (streaming, bounded), judges it with the checker `run`
/// uses, prints the verdict block. Exit 0 when every invariant holds, 1 on a violation, 2 when
/// the file cannot be read as a history.
pub fn cmd_verify(path: &Path) -> anyhow::Result<Outcome> {
    use crate::history::reader::Limits;
    let mut reader = crate::shell::files::open_history(path, Limits::default())
        .map_err(|e| bad(e.to_string()))?;
    let judged = crate::run::verify::judge(&mut reader).map_err(|e| bad(e.to_string()))?;
    let (report, config) = (&judged.check, &judged.config);
    let (end, quiescent) = (judged.end, judged.quiescent);
    let unit = config.time_unit.suffix();
    let mut invariants = invariant_summaries(report, reader.names());
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
        TraceHash::hex(judged.trace_hash)
    );
    println!(
        "  history    {} records, {end} {unit} recorded{}{}",
        judged.records,
        config
            .seed
            .map(|s| format!(", seed {s}"))
            .unwrap_or_default(),
        if quiescent { "" } else { ", NOT QUIESCENT" }
    );
    super::print::print_verdicts_spelled(&invariants, unit, &|s| reader.spell(s));
    Ok(if report.holds() {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

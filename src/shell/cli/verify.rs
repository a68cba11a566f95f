//! `durasim verify FILE`: a recorded history judged by the same checker a run uses.
//!
//! Owns: opening the history (bounded, streaming), handing it to `crate::run::verify` (the checker
//! and the metrics a run uses, the summary figures cross-checked) and printing the verdict block
//! with the file's own ids, the counts and the `sometimes` properties reached, and `--expect
//! FILE` (a scenario's `[expect]` keys, read by `scenario::parse_expectations`, checked by
//! `run::check_judged`).
//! Does not: judge anything itself (`check`), or parse a line (`history::reader`).

use super::print::{print_counts, print_expect, print_sometimes, print_verdicts_spelled};
use super::{bad, Outcome};
use crate::history::TraceHash;
use crate::run::check_judged;
use crate::scenario::{parse_expectations, Expectations, Positions};
use crate::shell::report::summary::invariant_summaries;
use std::path::Path;

/// `durasim verify FILE [--expect EXPECT]`: reads a history (streaming, bounded), judges it with
/// the checker `run` uses, prints the counts, the `sometimes` properties and the verdict block.
/// Exit 0 when every invariant holds (with `--expect`: when the history shows what EXPECT says,
/// as a scenario's `[expect]`), 1 when not, 2 when either file cannot be read.
pub fn cmd_verify(path: &Path, expect: Option<&Path>) -> anyhow::Result<Outcome> {
    use crate::history::reader::Limits;
    let expectations = expect.map(read_expectations).transpose()?;
    let expectations_given = expectations.is_some();
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
    let unmet = match &expectations {
        Some(e) => check_judged(e, report, &judged.metrics, judged.trace_hash),
        None => Vec::new(),
    };
    let ok = match expectations {
        Some(_) => unmet.is_empty(),
        None => report.holds(),
    };
    let verdict = if ok { "PASS" } else { "FAIL" };
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
    print_counts(&|c| judged.metrics.counts.get(c));
    print_sometimes(&report.sometimes);
    print_verdicts_spelled(&invariants, unit, &|s| reader.spell(s));
    if expectations_given {
        let unmet: Vec<(&str, &str, &str)> = unmet
            .iter()
            .map(|u| (u.field.as_str(), u.expected.as_str(), u.actual.as_str()))
            .collect();
        print_expect(&unmet);
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// `--expect FILE`: a scenario's `[expect]` keys at the top level, validated as that block is.
/// A history is judged once, as it was recorded: `replay` and `sweep_sometimes` are refused.
fn read_expectations(path: &Path) -> anyhow::Result<Expectations> {
    let text = crate::shell::files::read_capped(
        path,
        crate::base::limits::MAX_SCENARIO_BYTES,
        "expectations file",
    )
    .map_err(|e| bad(e.to_string()))?;
    let file = path.display().to_string();
    let e = parse_expectations(&file, &text).map_err(|e| bad(e.to_string()))?;
    let refused = if e.replay.is_some() {
        Some("replay")
    } else if !e.sweep_sometimes.is_empty() {
        Some("sweep_sometimes")
    } else {
        None
    };
    if let Some(field) = refused {
        let line = Positions::new(&text)
            .line(field)
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        return Err(bad(format!(
            "{file}{line}: field `{field}`: a recorded history is judged once, never re-run or \
             swept; allowed: the counters' keys, violations, sometimes, trace_hash"
        )));
    }
    Ok(e)
}

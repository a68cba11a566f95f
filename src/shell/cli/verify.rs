//! `durasim verify FILE [--out DIR]`: a recorded history judged by the same checker a run uses.
//!
//! Owns: opening the history (bounded, streaming), handing it to `crate::run::verify` (the checker
//! and the metrics a run uses, the summary figures cross-checked), printing the verdict block
//! with the file's own ids, and, with `--out DIR`, the output directory `durasim chart` reads
//! (`summary.json`, the history copied to `history.jsonl`, the CSVs, all in ms whatever the
//! history's unit; written whole or not at all, never over a directory durasim did not write);
//! the counts and the `sometimes` properties reached; `--expect FILE` (a scenario's `[expect]`
//! keys, read by `scenario::parse_expectations`, checked by `run::check_judged`), else the
//! history header's `expect` object (the same keys, `scenario::parse_expectations_json`).
//! Does not: judge anything itself (`check`), or parse a line (`history::reader`).

use super::print::{print_counts, print_expect, print_sometimes, print_verdicts_spelled};
use super::{bad, output_error, report_error, Outcome};
use crate::history::reader::{HistoryReader, Limits};
use crate::history::{Observer, TraceHash};
use crate::observe::metrics::Metrics;
use crate::run::verify::Judged;
use crate::run::{check_judged, RunReport};
use crate::scenario::{parse_expectations, parse_expectations_json, Expectations, Positions};
use crate::shell::report::history_ms::in_ms;
use crate::shell::report::output_dir::{Kind, OutputDir};
use crate::shell::report::run_dir::{attempt_rows, write_verify_outputs};
use crate::shell::report::summary::{invariant_summaries, summarize, RunIdentity};
use crate::sim::RunOutcome;
use crate::vocab::config::TimeUnit;
use std::io::BufReader;
use std::path::Path;

type Reader = HistoryReader<BufReader<std::fs::File>>;

/// `durasim verify FILE`: reads a history (streaming, bounded), judges it with the checker `run`
/// uses, prints the counts, the `sometimes` properties and the verdict block; with `out`, also
/// writes the output directory. Exit 0 when every invariant holds (with `expect`: when the
/// history shows what it says, as a scenario's `[expect]`), 1 when not, 2 when a file cannot be
/// read (or `out` may not be replaced).
pub fn cmd_verify(
    path: &Path,
    out: Option<&Path>,
    expect: Option<&Path>,
) -> anyhow::Result<Outcome> {
    let expectations = expect.map(read_expectations).transpose()?;
    let open = || {
        crate::shell::files::open_history(path, Limits::default()).map_err(|e| bad(e.to_string()))
    };
    let mut reader = open()?;
    let staged = match out {
        Some(dir) => Some(OutputDir::create(dir, Kind::Run).map_err(output_error)?),
        None => None,
    };
    let started = std::time::Instant::now();
    let judged = crate::run::verify::judge(&mut reader).map_err(|e| bad(e.to_string()))?;
    // `--expect FILE` wins over the header's `expect`.
    let expectations = match expectations {
        Some(e) => Some(e),
        None => reader
            .header_expect()
            .map(|m| header_expectations(path, m))
            .transpose()?,
    };
    let written = match staged {
        Some(o) => {
            let wall_s = started.elapsed().as_secs_f64();
            let e = expectations.as_ref();
            write_out(&o, path, &judged, &reader, &mut open()?, wall_s, e)?;
            Some(o.commit().map_err(output_error)?)
        }
        None => None,
    };
    let ok = print_judged(path, &judged, &reader, expectations.as_ref());
    if let Some(dir) = written {
        println!("  outputs    {}", dir.display());
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// Writes `summary.json`, `history.jsonl` and the CSVs. The verdicts are the ones judged on
/// the history as written; the figures come from a second reading in ms (a history in µs is
/// divided, as `conform` does), so every file is in ms like a run's.
fn write_out(
    out: &OutputDir,
    path: &Path,
    judged: &Judged,
    reader: &Reader,
    again: &mut Reader,
    wall_s: f64,
    expectations: Option<&Expectations>,
) -> anyhow::Result<()> {
    let per_ms = if judged.config.time_unit == TimeUnit::Us {
        1000
    } else {
        1
    };
    let rows = attempt_rows(out).map_err(report_error)?;
    let mut metrics = Metrics::for_history(judged.config.workers.unwrap_or(0), Some(rows));
    while let Some(r) = again.next_record().map_err(|e| bad(e.to_string()))? {
        metrics.observe(&in_ms(&r, per_ms));
    }
    metrics
        .finish_rows()
        .map_err(|e| anyhow::anyhow!("cannot write attempts.csv: {e}"))?;
    let report = RunReport {
        outcome: RunOutcome {
            trace_hash: judged.trace_hash,
            records: judged.records,
            heap_events: 0,
            virtual_time_ms: judged.end / per_ms,
            quiescent: judged.quiescent,
            names: reader.names().clone(),
            probes: None,
            over_budget: false,
            program_fault: None,
        },
        check: judged.check.clone(),
        metrics,
        trace: None,
        wall_s,
        replay_hash: None,
        history_written: None,
    };
    let file = path.display().to_string();
    // `expectationsMet` (the report's PASS/FAIL) says what `verify`'s exit status says: the
    // expectations met (`--expect` or the header's), else every invariant held.
    let unmet = match expectations {
        Some(e) => check_judged(e, &judged.check, &judged.metrics, judged.trace_hash),
        None => crate::run::check_expectations(&Default::default(), &report),
    };
    let mut summary = summarize(
        &report,
        &unmet,
        RunIdentity {
            scenario_name: &file,
            scenario_file: &file,
            scenario_text: "",
            jobs_override: None,
            bugs: Vec::new(),
            seed: judged.config.seed.unwrap_or(0),
            reproduce: format!("durasim verify {file}"),
            roles: None,
        },
    );
    // `summary.json` states its first violations in ms (`atMs`), as `run`'s and `conform`'s;
    // the messages and the evidence keep the file's unit, and durasim's ids (job-1, as the
    // messages say; the printed block names the file's own).
    for f in summary
        .invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.at_ms /= per_ms;
    }
    write_verify_outputs(out, &report, &summary, path).map_err(report_error)
}

/// The verdict block of a judged history, with `expectations` checked: whether it passes.
fn print_judged(
    path: &Path,
    judged: &Judged,
    reader: &Reader,
    expectations: Option<&Expectations>,
) -> bool {
    let report = &judged.check;
    let mut invariants = invariant_summaries(report, reader.names());
    for f in invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.evidence.iter_mut().for_each(|e| reader.relabel(e));
    }
    let unit = judged.config.time_unit.suffix();
    let unmet = match expectations {
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
        "  history    {} records, {} {unit} recorded{}{}",
        judged.records,
        judged.end,
        judged
            .config
            .seed
            .map(|s| format!(", seed {s}"))
            .unwrap_or_default(),
        if judged.quiescent {
            ""
        } else {
            ", NOT QUIESCENT"
        }
    );
    print_counts(&|c| judged.metrics.counts.get(c));
    print_sometimes(&report.sometimes);
    print_verdicts_spelled(&invariants, unit, &|s| reader.spell(s));
    if expectations.is_some() {
        let unmet: Vec<(&str, &str, &str)> = unmet
            .iter()
            .map(|u| (u.field.as_str(), u.expected.as_str(), u.actual.as_str()))
            .collect();
        print_expect(&unmet);
    }
    ok
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
    if let Some(field) = never_rerun(&e) {
        let line = Positions::new(&text)
            .line(field)
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        return Err(bad(format!("{file}{line}: field `{field}`: {JUDGED_ONCE}")));
    }
    Ok(e)
}

/// The history header's `expect` object, validated as `--expect FILE` is (line 1, `expect.<key>`).
fn header_expectations(
    path: &Path,
    map: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<Expectations> {
    let file = path.display().to_string();
    let e = parse_expectations_json(&file, map).map_err(|e| bad(e.to_string()))?;
    if let Some(field) = never_rerun(&e) {
        return Err(bad(format!(
            "{file}:1: field `expect.{field}`: {JUDGED_ONCE}"
        )));
    }
    Ok(e)
}

const JUDGED_ONCE: &str = "a recorded history is judged once, never re-run or swept; allowed: \
                           the counters' keys, violations, sometimes, trace_hash";

/// The expectation a recorded history cannot be held to, if any.
fn never_rerun(e: &Expectations) -> Option<&'static str> {
    if e.replay.is_some() {
        Some("replay")
    } else if !e.sweep_sometimes.is_empty() {
        Some("sweep_sometimes")
    } else {
        None
    }
}

//! `durasim verify FILE [--out DIR]`: a recorded history judged by the same checker a run uses.
//!
//! Owns: opening the history (bounded, streaming), handing it to `crate::run::verify` (the checker
//! and the metrics a run uses, the summary figures cross-checked), printing the verdict block
//! with the file's own ids, and, with `--out DIR`, the output directory `durasim chart` reads
//! (`summary.json`, the history copied to `history.jsonl`, the CSVs; written whole or not at
//! all, never over a directory durasim did not write).
//! Does not: judge anything itself (`check`), or parse a line (`history::reader`).

use super::{bad, output_error, report_error, Outcome};
use crate::history::reader::{HistoryReader, Limits};
use crate::history::{Event, TraceHash};
use crate::run::verify::Judged;
use crate::run::RunReport;
use crate::shell::report::output_dir::{Kind, OutputDir};
use crate::shell::report::run_dir::{attempt_rows, write_verify_outputs};
use crate::shell::report::summary::{invariant_summaries, summarize, RunIdentity, Summary};
use crate::sim::RunOutcome;
use crate::vocab::config::TimeUnit;
use std::io::BufReader;
use std::path::Path;

type Reader = HistoryReader<BufReader<std::fs::File>>;

/// `durasim verify FILE`: reads a history (streaming, bounded), judges it with the checker `run`
/// uses, prints the verdict block; with `out`, also writes the output directory. Exit 0 when
/// every invariant holds, 1 on a violation, 2 when the file cannot be read as a history (or,
/// with `out`, is in µs, or `out` may not be replaced).
pub fn cmd_verify(path: &Path, out: Option<&Path>) -> anyhow::Result<Outcome> {
    let open = || {
        crate::shell::files::open_history(path, Limits::default()).map_err(|e| bad(e.to_string()))
    };
    let mut reader = open()?;
    let staged = match out {
        Some(dir) => {
            refuse_microseconds(&mut open()?, path)?;
            Some(OutputDir::create(dir, Kind::Run).map_err(output_error)?)
        }
        None => None,
    };
    let sink = match &staged {
        Some(o) => Some(attempt_rows(o).map_err(report_error)?),
        None => None,
    };
    let started = std::time::Instant::now();
    let judged =
        crate::run::verify::judge_with_rows(&mut reader, sink).map_err(|e| bad(e.to_string()))?;
    let holds = judged.check.holds();
    let written = match staged {
        Some(o) => {
            let summary = write_out(&o, path, judged, &reader, started.elapsed().as_secs_f64())?;
            let dir = o.commit().map_err(output_error)?;
            print_verdict(path, &summary, &reader);
            println!("  outputs    {}", dir.display());
            return Ok(if holds {
                Outcome::Ok
            } else {
                Outcome::Violated
            });
        }
        None => judged,
    };
    print_judged(path, &written, &reader);
    Ok(if holds {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

/// The CSVs are in ms, as a run's are: a history in µs (`conform`'s) is refused for `--out`
/// (its own output directory is already one `durasim chart` reads).
fn refuse_microseconds(reader: &mut Reader, path: &Path) -> anyhow::Result<()> {
    let header = reader.next_record().map_err(|e| bad(e.to_string()))?;
    if let Some(Event::RunStarted { config }) = header.map(|r| r.event) {
        if config.time_unit == TimeUnit::Us {
            return Err(bad(format!(
                "{}: a history in µs; --out writes the CSVs of a history in ms (the output directory \
                 of `durasim conform`, which recorded it, is one `durasim chart` reads)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Writes `summary.json`, `history.jsonl` and the CSVs; returns the summary.
fn write_out(
    out: &OutputDir,
    path: &Path,
    judged: Judged,
    reader: &Reader,
    wall_s: f64,
) -> anyhow::Result<Summary> {
    let Judged {
        check,
        mut metrics,
        config,
        trace_hash,
        records,
        end,
        quiescent,
    } = judged;
    metrics
        .finish_rows()
        .map_err(|e| anyhow::anyhow!("cannot write attempts.csv: {e}"))?;
    let report = RunReport {
        outcome: RunOutcome {
            trace_hash,
            records,
            heap_events: 0,
            virtual_time_ms: end,
            quiescent,
            names: reader.names().clone(),
        },
        check,
        metrics,
        trace: None,
        wall_s,
        replay_hash: None,
        history_written: None,
    };
    let file = path.display().to_string();
    let mut summary = summarize(
        &report,
        &[],
        RunIdentity {
            scenario_name: &file,
            scenario_file: &file,
            scenario_text: "",
            jobs_override: None,
            bugs: Vec::new(),
            seed: config.seed.unwrap_or(0),
            reproduce: format!("durasim verify {file}"),
        },
    );
    for f in summary
        .invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.evidence.iter_mut().for_each(|e| reader.relabel(e));
    }
    write_verify_outputs(out, &report, &summary, path).map_err(report_error)?;
    Ok(summary)
}

/// The verdict block of a judged history (no `--out`).
fn print_judged(path: &Path, judged: &Judged, reader: &Reader) {
    let mut invariants = invariant_summaries(&judged.check, reader.names());
    for f in invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.evidence.iter_mut().for_each(|e| reader.relabel(e));
    }
    let unit = judged.config.time_unit.suffix();
    let verdict = if judged.check.holds() { "PASS" } else { "FAIL" };
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
    super::print::print_verdicts(&invariants, unit);
    print_ids(&invariants, reader);
}

/// The same block from the summary `--out` wrote (a history in ms).
fn print_verdict(path: &Path, s: &Summary, reader: &Reader) {
    let holds = s.invariants.iter().all(|i| i.holds);
    println!(
        "{}  {}  trace {}",
        if holds { "PASS" } else { "FAIL" },
        path.display(),
        s.trace_hash
    );
    let config = reader.config();
    println!(
        "  history    {} records, {} ms recorded{}{}",
        s.events,
        s.virtual_time_ms,
        config
            .and_then(|c| c.seed)
            .map(|s| format!(", seed {s}"))
            .unwrap_or_default(),
        if s.quiescent { "" } else { ", NOT QUIESCENT" }
    );
    super::print::print_verdicts(&s.invariants, "ms");
    print_ids(&s.invariants, reader);
}

fn print_ids(invariants: &[crate::shell::report::summary::InvariantSummary], reader: &Reader) {
    for i in invariants {
        let job = i.first_violation.as_ref().and_then(|f| f.job);
        if let Some(label) = job.and_then(|j| reader.job_label(crate::base::ids::JobId(j))) {
            println!(
                "  ids        job-{} is {label} in the file",
                job.unwrap_or(0)
            );
        }
    }
}

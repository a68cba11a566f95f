//! A run's output directory: the files `durasim run` (and `durasim conform`) write into it.
//!
//! Owns: `summary.json`, `scenario.toml` (the file as read), `depth.csv`, `outbox.csv`, `dlq.csv`,
//! `retries.csv`, `tenants.csv`, `jobs.csv` (unless `--no-rows`), `attempts.csv` and
//! `trace.jsonl` (a history file, `docs/history-format.md`), both streamed while the run goes
//! (or `trace.jsonl` written from a history kept in memory).
//! Does not: decide what goes into them (`summary`, `observe::metrics`, `history::format`) or
//! create the directory (`output_dir`).

use super::error::ReportError;
use super::output_dir::OutputDir;
use super::summary::Summary;
use crate::history::Record;
use crate::run::RunReport;
use crate::vocab::key::KeyNames;
use std::io::{BufWriter, Write};
use std::path::Path;

/// `attempts.csv`, for the metrics to stream rows into while the run goes.
pub fn attempt_rows(out: &OutputDir) -> Result<Box<dyn Write + Send>, ReportError> {
    let f = std::fs::File::create(out.file("attempts.csv"))
        .map_err(ReportError::io("create", "attempts.csv"))?;
    Ok(Box::new(BufWriter::new(f)))
}

/// `trace.jsonl`, for the run to stream its history into (`history::format::HistoryWriter`).
pub fn history_file(out: &OutputDir) -> Result<Box<dyn Write>, ReportError> {
    let f = std::fs::File::create(out.file("trace.jsonl"))
        .map_err(ReportError::io("create", "trace.jsonl"))?;
    Ok(Box::new(f))
}

/// Creates `name` in `out` and fills it with `write`.
fn csv_file<E: Into<std::io::Error>>(
    out: &OutputDir,
    name: &str,
    write: impl FnOnce(BufWriter<std::fs::File>) -> Result<(), E>,
) -> Result<(), ReportError> {
    let f = std::fs::File::create(out.file(name)).map_err(ReportError::io("create", name))?;
    write(BufWriter::new(f)).map_err(|e| ReportError::io("write", name)(e.into()))
}

/// Writes a run's files into `out`. `text` is the scenario file as read.
pub fn write_outputs(
    out: &OutputDir,
    report: &RunReport,
    summary: &Summary,
    text: &str,
    no_rows: bool,
) -> Result<(), ReportError> {
    let names = &report.outcome.names;
    let json = serde_json::to_string_pretty(summary).expect("a summary serializes") + "\n";
    std::fs::write(out.file("summary.json"), json)
        .map_err(ReportError::io("write", "summary.json"))?;
    std::fs::write(out.file("scenario.toml"), text)
        .map_err(ReportError::io("write", "scenario.toml"))?;
    let m = &report.metrics;
    csv_file(out, "depth.csv", |w| m.write_depth_csv(w))?;
    csv_file(out, "outbox.csv", |w| m.write_outbox_csv(w))?;
    csv_file(out, "dlq.csv", |w| m.write_dlq_csv(w))?;
    csv_file(out, "retries.csv", |w| m.write_retries_csv(w))?;
    csv_file(out, "tenants.csv", |w| m.write_tenants_csv(w, names))?;
    if !no_rows {
        csv_file(out, "jobs.csv", |w| m.write_jobs_csv(w, names))?;
    }
    if let Some(trace) = &report.trace {
        write_trace(&out.file("trace.jsonl"), trace, names)
            .map_err(ReportError::io("write", "trace.jsonl"))?;
    }
    Ok(())
}

/// Writes what `verify --out` leaves: `summary.json`, a copy of the history judged
/// (`history.jsonl`), and the CSVs a history recorded elsewhere determines (`depth.csv`,
/// `outbox.csv`, `dlq.csv`, `tenants.csv`, `jobs.csv`; `attempts.csv` is streamed). No
/// `retries.csv`: its windows are indexed by time, which a recorder's history need not keep
/// small (the report counts retries from the history instead), and no `scenario.toml`.
pub fn write_verify_outputs(
    out: &OutputDir,
    report: &RunReport,
    summary: &Summary,
    history: &Path,
) -> Result<(), ReportError> {
    let names = &report.outcome.names;
    let json = serde_json::to_string_pretty(summary).expect("a summary serializes") + "\n";
    std::fs::write(out.file("summary.json"), json)
        .map_err(ReportError::io("write", "summary.json"))?;
    std::fs::copy(history, out.file("history.jsonl"))
        .map_err(ReportError::io("copy", history.display()))?;
    let m = &report.metrics;
    csv_file(out, "depth.csv", |w| m.write_depth_csv(w))?;
    csv_file(out, "outbox.csv", |w| m.write_outbox_csv(w))?;
    csv_file(out, "dlq.csv", |w| m.write_dlq_csv(w))?;
    csv_file(out, "tenants.csv", |w| m.write_tenants_csv(w, names))?;
    csv_file(out, "jobs.csv", |w| m.write_jobs_csv(w, names))
}

/// Writes a trace as a history file (`docs/history-format.md`): the header line, then one
/// record a line.
pub fn write_trace(path: &Path, trace: &[Record], names: &KeyNames) -> std::io::Result<()> {
    crate::history::format::write_history(std::fs::File::create(path)?, trace, names)
}

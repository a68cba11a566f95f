//! A run's history file and the checker's word on one: run a scenario keeping its history file
//! as bytes or lines, judge a history as `durasim verify` does (read back, then checked), and the
//! first violation's message of an invariant.
//! Owns: test helpers only; the one place the tests name the history's writer and reader.

use durasim::check::{CheckReport, Invariant};
use durasim::history::format::write_history;
use durasim::history::reader::{HistoryReader, Limits};
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;
use durasim::vocab::key::KeyNames;

pub use durasim::run::verify::Judged;

/// Runs `s` with its defaults, keeping the trace: the report, and the history file the run
/// writes, as lines.
pub fn run_with_history(s: &Scenario) -> (RunReport, Vec<String>) {
    run_request_with_history(s, RunRequest::for_scenario(s))
}

/// Runs `s` as `request` says, keeping the trace: the report, and the history file the run
/// writes, as lines.
pub fn run_request_with_history(s: &Scenario, mut request: RunRequest) -> (RunReport, Vec<String>) {
    request.keep_trace = true;
    let report = run_once(s, &request, None);
    let lines = String::from_utf8(history_file(&report))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (report, lines)
}

/// The history file of a run that kept its trace (`RunRequest::keep_trace`), as `--trace`
/// writes it.
pub fn history_file(report: &RunReport) -> Vec<u8> {
    let mut file = Vec::new();
    write_history(
        &mut file,
        report
            .trace
            .as_ref()
            .expect("the run kept its trace (keep_trace)"),
        &report.outcome.names,
    )
    .unwrap();
    file
}

/// A history file's bytes read back and judged as `durasim verify` judges it (under the
/// default limits); errors name the file `name`.
pub fn judge_file(name: &str, bytes: &[u8]) -> Result<Judged, String> {
    judge_file_with_names(name, bytes).map(|(judged, _)| judged)
}

/// [`judge_file`], with the names the history gave its keys (to show a verdict's key as text).
pub fn judge_file_with_names(name: &str, bytes: &[u8]) -> Result<(Judged, KeyNames), String> {
    let mut reader = HistoryReader::from_reader(name, bytes, Limits::default());
    let judged = durasim::run::verify::judge(&mut reader).map_err(|e| e.to_string())?;
    Ok((judged, reader.names().clone()))
}

/// The checker's report on `lines`, read back as a history file would be.
pub fn judge(lines: &[String]) -> CheckReport {
    let text = lines.join("\n") + "\n";
    judge_file("h.jsonl", text.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .check
}

/// The message of `i`'s first violation, or "" when it holds.
pub fn first_message(c: &CheckReport, i: Invariant) -> String {
    c.verdict(i)
        .first
        .as_ref()
        .map_or(String::new(), |f| f.message.clone())
}

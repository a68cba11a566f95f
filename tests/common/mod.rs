//! What the history-editing tests share: run a scenario and keep its history file as lines,
//! judge a history given as lines, and the first violation's message of an invariant.
//! Owns: test helpers only.

// Each test binary that includes this module uses only some of its helpers.
#![allow(dead_code)]

use durasim::check::{CheckReport, Invariant};
use durasim::history::format::write_history;
use durasim::history::reader::{HistoryReader, Limits};
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;

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
    let mut file = Vec::new();
    write_history(
        &mut file,
        report.trace.as_ref().unwrap(),
        &report.outcome.names,
    )
    .unwrap();
    let lines = String::from_utf8(file)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (report, lines)
}

/// The checker's report on `lines`, read back as a history file would be.
pub fn judge(lines: &[String]) -> CheckReport {
    let text = lines.join("\n") + "\n";
    let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
    durasim::run::verify::judge(&mut reader)
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

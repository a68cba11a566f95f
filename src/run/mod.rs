//! One run, end to end: scenario in, verdicts, metrics and expectations out.
//!
//! Owns: wiring the kernel to its observers (trace hash, the judges, optional in-memory trace,
//! optional history file streamed as the run goes) and the self-replay that `expect.replay`
//! asks for.
//! Does not: judge (`judges.rs`, shared with `verify.rs`), compare a run with `[expect]`
//! (`expect.rs`) or touch the file system (see `cli` and `report::summary`).

pub mod expect;
pub mod judges;
pub mod observer_thread;
pub mod verify;

pub use expect::{check_expectations, check_judged, Unmet};
pub use judges::{Judges, JudgesSide};

use crate::check::{CheckReport, Checker};
use crate::history::format::HistoryWriter;
use crate::history::{Event, Observer, Record};
use crate::observe::metrics::Metrics;
use crate::observe::progress::Progress;
use crate::scenario::Scenario;
use crate::sim::RunOutcome;
pub use crate::sim::RunRequest;
use std::io::Write;

/// Everything that watches a run's history.
pub struct Observers {
    pub judges: JudgesSide,
    pub trace: Option<Vec<Record>>,
    /// Keep only the records this accepts in `trace` (a sweep keeps only fault evidence).
    pub trace_filter: Option<fn(&Event) -> bool>,
    /// The history written as it happens (`run --trace`), every record.
    pub history: Option<HistoryWriter>,
    pub progress: Option<Progress>,
}

impl Observer for Observers {
    #[inline]
    fn observe(&mut self, r: &Record) {
        match &mut self.judges {
            JudgesSide::Inline(j) => j.observe(r),
            JudgesSide::Thread(j) => j.observe(r),
        }
        if let Some(t) = self.trace.as_mut() {
            if self.trace_filter.is_none_or(|keep| keep(&r.event)) {
                t.push(r.clone());
            }
        }
        if let Some(h) = self.history.as_mut() {
            h.observe(r);
        }
        if let Some(p) = self.progress.as_mut() {
            p.observe(r);
        }
    }
}

pub struct RunReport {
    pub outcome: RunOutcome,
    pub check: CheckReport,
    pub metrics: Metrics,
    pub trace: Option<Vec<Record>>,
    /// Wall-clock seconds of the run: 0 here (the core reads no clock); the shell, which times
    /// the call, fills it in for the timing fields of `summary.json`.
    pub wall_s: f64,
    /// Set when `expect.replay` asked for a second run: that run's hash.
    pub replay_hash: Option<u64>,
    /// What writing the streamed history came to (`None`: none was asked for).
    pub history_written: Option<std::io::Result<()>>,
}

/// Writers the shell opens for a run's files that are written while it goes.
#[derive(Default)]
pub struct Sinks {
    /// `attempts.csv` rows, as attempts end.
    pub attempt_rows: Option<Box<dyn Write + Send>>,
    /// The history file (`docs/history-format.md`), a record at a time.
    pub history: Option<Box<dyn Write>>,
}

/// Runs the scenario once. `attempt_rows` receives `attempts.csv` as it is produced.
pub fn run_once(
    scenario: &Scenario,
    request: &RunRequest,
    attempt_rows: Option<Box<dyn Write + Send>>,
) -> RunReport {
    let sinks = Sinks {
        attempt_rows,
        history: None,
    };
    run_streaming(scenario, request, sinks)
}

/// Runs the scenario once, streaming `attempts.csv` and the history file into `sinks` as the
/// run produces them.
pub fn run_streaming(scenario: &Scenario, request: &RunRequest, sinks: Sinks) -> RunReport {
    let attempt_rows = sinks.attempt_rows;
    let capacity = scenario.capacity(request.jobs);
    let mut metrics = Metrics::new(scenario.workers.count, capacity, attempt_rows);
    if let Some(outage) = scenario.faults.outage {
        metrics.watch_outage(outage.from_ms, outage.to_ms);
    }
    if scenario.semantics().rescue_races() {
        metrics.measure_waits_from_history();
    }
    metrics.bugs = request.bugs;
    let judges = Judges {
        checker: Checker::with_capacity(capacity).with_names(scenario.names().clone()),
        metrics,
    };
    let observers = Observers {
        judges: JudgesSide::new(judges, request.observer_thread),
        trace: request.keep_trace.then(Vec::new),
        trace_filter: request.trace_filter,
        history: sinks
            .history
            .map(|out| HistoryWriter::new(out, scenario.names().clone())),
        progress: request
            .progress
            .clone()
            .map(|sink| Progress::new(sink, scenario.run_jobs(request.jobs))),
    };
    let (outcome, observers) = crate::sim::run_scenario(scenario, request, observers);
    let (check, metrics) = observers.judges.finish().verdicts();
    let mut report = RunReport {
        outcome,
        check,
        metrics,
        trace: observers.trace,
        wall_s: 0.0,
        replay_hash: None,
        history_written: observers.history.map(HistoryWriter::finish),
    };
    // A program that failed the protocol stops the run: there is nothing to replay (and a
    // silent program would cost its wall-clock limit twice).
    if scenario.expectations().replay.is_some() && report.outcome.program_fault.is_none() {
        let again = crate::sim::run_scenario(scenario, request, crate::history::NullObserver).0;
        report.replay_hash = Some(again.trace_hash);
    }
    report
}

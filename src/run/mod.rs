//! One run, end to end: scenario in, verdicts, metrics and expectations out.
//!
//! Owns: wiring the kernel to its observers (trace hash, checker, metrics, optional in-memory
//! trace, optional history file streamed as the run goes), checking the scenario's `[expect]` block, and the self-replay that `expect.replay`
//! asks for.
//! Does not: touch the file system (see `cli` and `report::summary`).

pub mod observer_thread;
pub mod verify;

use crate::check::{CheckReport, Checker, Invariant, Sometimes};
use crate::history::format::HistoryWriter;
use crate::history::{Event, Observer, Record};
use crate::observe::metrics::Metrics;
use crate::observe::progress::Progress;
use crate::run::observer_thread::ObserverThread;
use crate::scenario::{ReplayExpectation, Scenario};
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

/// The observers that keep state from every record: the checker and the metrics.
pub struct Judges {
    pub checker: Checker,
    pub metrics: Metrics,
}

impl Observer for Judges {
    #[inline]
    fn observe(&mut self, r: &Record) {
        self.checker.observe(r);
        self.metrics.observe(r);
    }
}

/// Where the checker and the metrics read the records: on the run's thread, or on one of
/// their own (`observer_thread.rs`).
// One value a run, observed in place: boxing the inline judges would add a pointer to follow
// for every record of every sweep seed.
#[allow(clippy::large_enum_variant)]
pub enum JudgesSide {
    Inline(Judges),
    Thread(ObserverThread<Judges>),
}

impl JudgesSide {
    /// On a thread of their own when `thread` is asked for and a thread can be had.
    pub fn new(judges: Judges, thread: bool) -> JudgesSide {
        if !thread {
            return JudgesSide::Inline(judges);
        }
        match ObserverThread::start(judges) {
            Ok(t) => JudgesSide::Thread(t),
            Err(judges) => JudgesSide::Inline(judges),
        }
    }

    pub fn finish(self) -> Judges {
        match self {
            JudgesSide::Inline(j) => j,
            JudgesSide::Thread(t) => t.finish(),
        }
    }
}

/// One unmet expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmet {
    pub field: String,
    pub expected: String,
    pub actual: String,
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
    let jobs = request.jobs.unwrap_or(scenario.arrivals.jobs) as usize
        + scenario.enqueue.len()
        + scenario.burst_jobs() as usize;
    let mut metrics = Metrics::new(scenario.workers.count, jobs.min(1 << 24), attempt_rows);
    if let Some(outage) = scenario.faults.outage {
        metrics.watch_outage(outage.from_ms, outage.to_ms);
    }
    metrics.bugs = request.bugs;
    let judges = Judges {
        checker: Checker::with_capacity(jobs.min(1 << 24))
            .with_names(crate::sim::kernel::scenario_names(scenario)),
        metrics,
    };
    let observers = Observers {
        judges: JudgesSide::new(judges, request.observer_thread),
        trace: request.keep_trace.then(Vec::new),
        trace_filter: request.trace_filter,
        history: sinks
            .history
            .map(|out| HistoryWriter::new(out, crate::sim::kernel::scenario_names(scenario))),
        progress: request
            .progress
            .clone()
            .map(|sink| Progress::new(sink, jobs as u64)),
    };
    let (outcome, observers) = crate::sim::run_scenario(scenario, request, observers);
    let Judges { checker, metrics } = observers.judges.finish();
    let mut check = checker.finish();
    // Every figure of summary.json the history determines, counted again by the checker.
    check.cross_check_figures(&metrics.counts, &metrics.held);
    let mut report = RunReport {
        outcome,
        check,
        metrics,
        trace: observers.trace,
        wall_s: 0.0,
        replay_hash: None,
        history_written: observers.history.map(HistoryWriter::finish),
    };
    if scenario.expect.replay.is_some() {
        let again = crate::sim::run_scenario(scenario, request, crate::history::NullObserver).0;
        report.replay_hash = Some(again.trace_hash);
    }
    report
}

/// Compares a run with the scenario's `[expect]` block.
pub fn check_expectations(scenario: &Scenario, r: &RunReport) -> Vec<Unmet> {
    let e = &scenario.expect;
    let m = &r.metrics;
    let mut unmet = Vec::new();
    for (counter, expected) in e.counts.iter() {
        // A figure the run does not have (a recovery depth without an outage) never matches.
        let actual = m.figure(counter).unwrap_or(u64::MAX);
        if expected != actual {
            unmet.push(Unmet {
                field: counter.name().expect("an [expect] key").to_string(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
    }
    let expected_violations: Vec<String> = match &e.violations {
        Some(v) => {
            let mut v = v.clone();
            v.sort_by_key(|n| Invariant::parse(n).map(|i| i as usize));
            v
        }
        None => Vec::new(),
    };
    let actual: Vec<String> = r
        .check
        .violated()
        .iter()
        .map(|i| i.name().to_string())
        .collect();
    if expected_violations != actual {
        unmet.push(Unmet {
            field: "violations".into(),
            expected: format!("[{}]", expected_violations.join(", ")),
            actual: format!("[{}]", actual.join(", ")),
        });
    }
    if let Some(names) = &e.sometimes {
        for n in names {
            let s = Sometimes::parse(n).expect("validated");
            if r.check.reached(s) == 0 {
                unmet.push(Unmet {
                    field: format!("sometimes.{n}"),
                    expected: "reached".into(),
                    actual: "never".into(),
                });
            }
        }
    }
    if let Some(want) = &e.trace_hash {
        let actual = crate::history::TraceHash::hex(r.outcome.trace_hash);
        if !want.eq_ignore_ascii_case(&actual) {
            unmet.push(Unmet {
                field: "trace_hash".into(),
                expected: want.clone(),
                actual,
            });
        }
    }
    if let (Some(want), Some(again)) = (e.replay, r.replay_hash) {
        let same = again == r.outcome.trace_hash;
        let ok = match want {
            ReplayExpectation::Identical => same,
            ReplayExpectation::Diverges => !same,
        };
        if !ok {
            unmet.push(Unmet {
                field: "replay".into(),
                expected: format!("{want:?}").to_lowercase(),
                actual: if same {
                    "identical".into()
                } else {
                    "diverges".into()
                },
            });
        }
    }
    unmet
}

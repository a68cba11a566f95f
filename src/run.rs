//! One run, end to end: scenario in, verdicts, metrics and expectations out.
//!
//! Owns: wiring the kernel to its observers (trace hash, checker, metrics, optional in-memory
//! trace), checking the scenario's `[expect]` block, and the self-replay that `expect.replay`
//! asks for.
//! Does not: touch the file system (see `cli` and `report::summary`).

use crate::check::{CheckReport, Checker, Invariant, Sometimes};
use crate::history::{Event, Observer, Record};
use crate::observe::metrics::Metrics;
use crate::observe::progress::Progress;
use crate::scenario::{ReplayExpectation, Scenario};
pub use crate::sim::RunRequest;
use crate::sim::{RunOutcome, Sim};
use std::io::Write;

/// Everything that watches a run's history.
pub struct Observers {
    pub checker: Checker,
    pub metrics: Metrics,
    pub trace: Option<Vec<Record>>,
    /// Keep only the records this accepts in `trace` (a sweep keeps only fault evidence).
    pub trace_filter: Option<fn(&Event) -> bool>,
    pub progress: Option<Progress>,
}

impl Observer for Observers {
    #[inline]
    fn observe(&mut self, r: &Record) {
        self.checker.observe(r);
        self.metrics.observe(r);
        if let Some(t) = self.trace.as_mut() {
            if self.trace_filter.is_none_or(|keep| keep(&r.event)) {
                t.push(r.clone());
            }
        }
        if let Some(p) = self.progress.as_mut() {
            p.observe(r);
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
}

/// Runs the scenario once. `attempt_rows` receives `attempts.csv` as it is produced.
pub fn run_once(
    scenario: &Scenario,
    request: &RunRequest,
    attempt_rows: Option<Box<dyn Write>>,
) -> RunReport {
    let jobs = request.jobs.unwrap_or(scenario.arrivals.jobs) as usize
        + scenario.enqueue.len()
        + scenario.burst_jobs() as usize;
    let mut metrics = Metrics::new(scenario.workers.count, jobs.min(1 << 24), attempt_rows);
    if let Some(outage) = scenario.faults.outage {
        metrics.watch_outage(outage.from_ms, outage.to_ms);
    }
    metrics.bug_republish_miscount = request.bugs.republish_miscount;
    let observers = Observers {
        checker: Checker::with_capacity(jobs.min(1 << 24))
            .with_names(crate::sim::kernel::scenario_names(scenario)),
        metrics,
        trace: request.keep_trace.then(Vec::new),
        trace_filter: request.trace_filter,
        progress: request
            .progress
            .clone()
            .map(|sink| Progress::new(sink, jobs as u64)),
    };
    let (outcome, observers) = Sim::new(scenario, request, observers).run();
    let mut check = observers.checker.finish();
    // Every figure of summary.json the history determines, counted again by the checker.
    check.cross_check_figures(&observers.metrics.figures());
    let mut report = RunReport {
        outcome,
        check,
        metrics: observers.metrics,
        trace: observers.trace,
        wall_s: 0.0,
        replay_hash: None,
    };
    if scenario.expect.replay.is_some() {
        let again = Sim::new(scenario, request, crate::history::NullObserver)
            .run()
            .0;
        report.replay_hash = Some(again.trace_hash);
    }
    report
}

/// Compares a run with the scenario's `[expect]` block.
pub fn check_expectations(scenario: &Scenario, r: &RunReport) -> Vec<Unmet> {
    let e = &scenario.expect;
    let m = &r.metrics;
    let depth = m.depth_stats();
    let mut unmet = Vec::new();
    let mut num = |field: &str, expected: Option<u64>, actual: u64| {
        if let Some(x) = expected {
            if x != actual {
                unmet.push(Unmet {
                    field: field.to_string(),
                    expected: x.to_string(),
                    actual: actual.to_string(),
                });
            }
        }
    };
    num("enqueued", e.enqueued, m.jobs.enqueued);
    num("acked", e.acked, m.jobs.acked);
    num("dead_lettered", e.dead_lettered, m.jobs.dead_lettered);
    num("cancelled", e.cancelled, m.jobs.cancelled);
    num("unfinished", e.unfinished, m.jobs.unfinished);
    num("extract_calls", e.extract_calls, m.effects.extract_calls);
    num("attempts", e.attempts, m.leases.granted);
    num(
        "results_committed",
        e.results_committed,
        m.effects.results_committed,
    );
    num(
        "deduped_commits",
        e.deduped_commits,
        m.effects.deduped_commits,
    );
    num(
        "payload_conflicts",
        e.payload_conflicts,
        m.effects.payload_conflicts,
    );
    num("enqueue_deduped", e.enqueue_deduped, m.jobs.enqueue_deduped);
    num("outbox_events", e.outbox_events, m.effects.outbox_events);
    num("published", e.published, m.effects.published);
    num("republished", e.republished, m.effects.republished);
    num(
        "consumer_applied",
        e.consumer_applied,
        m.effects.consumer_applied,
    );
    num(
        "consumer_duplicates",
        e.consumer_duplicates,
        m.effects.consumer_duplicates,
    );
    num("reviews_done", e.reviews_done, m.effects.reviews_done);
    num(
        "stale_rejections",
        e.stale_rejections,
        m.leases.stale_rejections,
    );
    num("leases_expired", e.leases_expired, m.leases.expired);
    num("worker_crashes", e.worker_crashes, m.crashes.worker);
    num("relay_crashes", e.relay_crashes, m.crashes.relay);
    num(
        "dlq_permanent_error",
        e.dlq_permanent_error,
        m.dlq.permanent_error,
    );
    num(
        "dlq_max_attempts_exceeded",
        e.dlq_max_attempts_exceeded,
        m.dlq.max_attempts_exceeded,
    );
    num("reprocessed", e.reprocessed, m.reprocessed);
    num(
        "reprocess_refused",
        e.reprocess_refused,
        m.reprocess_refused,
    );
    num(
        "reprocess_rate_limited",
        e.reprocess_rate_limited,
        m.reprocess_rate_limited,
    );
    num("dlq_evicted", e.dlq_evicted, m.dlq.evicted);
    num("dlq_size_max", e.dlq_size_max, m.dlq.size_max);
    num("outbox_pruned", e.outbox_pruned, m.outbox.pruned);
    num(
        "retries_peak_per_s",
        e.retries_peak_per_s,
        m.retries.peak_per_s,
    );
    if let Some(x) = e.depth_max_after_recovery {
        num(
            "depth_max_after_recovery",
            Some(x),
            m.retries.depth_max_after_recovery.unwrap_or(u64::MAX),
        );
    }
    num("outbox_rows_max", e.outbox_rows_max, m.outbox.rows_max);
    num(
        "outbox_rows_final",
        e.outbox_rows_final,
        m.outbox.rows_final,
    );
    num(
        "max_attempts_seen",
        e.max_attempts_seen,
        m.leases.max_attempts_seen,
    );
    num("depth_min", e.depth_min, depth.min);
    num("depth_max", e.depth_max, depth.max);
    num(
        "inference_ms_p50",
        e.inference_ms_p50,
        m.inference.stats().p50,
    );
    num(
        "review_wait_ms_p50",
        e.review_wait_ms_p50,
        m.review_wait.stats().p50,
    );
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

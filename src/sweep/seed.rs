//! One seed of a sweep: its setup, its run and its record (a line of `seeds.jsonl`).
//!
//! Owns: the scenario and request a seed runs with (swarm settings applied), running it under
//! `catch_unwind` (a panic is a `crash` failure, not the end of the sweep), the second run of
//! every `REPLAY_EVERY`-th seed that catches nondeterminism, a failure's signature, and the
//! per-seed figures the sweep's charts show.
//! Does not: group failures across seeds (`aggregate`) or decide the coverage gate (`coverage`).

use super::{freeze, swarm, Plan, REPLAY_EVERY};
use crate::check::Kind;
use crate::model::worker::CrashPoint;
use crate::observe::metrics::Metrics;
use crate::run::{run_once, RunRequest};
use crate::scenario::Scenario;
use crate::vocab::counters::Counter;
use serde::{Deserialize, Serialize};
use swarm::SwarmDraw;

/// One failure of one seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedFailure {
    /// `safety`, `liveness`, `nondeterminism` or `crash`.
    pub class: String,
    /// The invariant, or `replay` (nondeterminism) or `panic` (crash).
    pub invariant: String,
    pub signature: String,
    pub violations: u64,
    pub at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<u32>,
    pub message: String,
}

/// One seed's result, a line of `seeds.jsonl`. No wall-clock fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedRecord {
    pub seed: u64,
    pub events: u64,
    pub virtual_time_ms: u64,
    pub quiescent: bool,
    pub replay_checked: bool,
    pub failures: Vec<SeedFailure>,
    pub faults: Vec<String>,
    pub crash_points: Vec<String>,
    pub sometimes: Vec<String>,
    /// What the sweep's charts show per seed; none for a seed whose run panicked.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metrics: Option<SeedMetrics>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub swarm: Option<SwarmDraw>,
    /// How often the run took each coverage probe's branch, in `vocab::probes::TABLE` order;
    /// empty for a seed whose run panicked.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub probes: Vec<u64>,
    /// A configuration-space seed: the invariants it broke that its draw's hazards tolerate
    /// (`swarm.tolerates`), set apart from its failures.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tolerated: Vec<String>,
}

/// A seed's figures for the distributions across seeds (`report::chart::sweep_charts`), so a
/// chart reads them instead of running the seed again. Integers only: a merge reads them back
/// and writes them again byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedMetrics {
    pub queue_wait_p95_ms: u64,
    pub depth_max: u64,
    pub enqueued: u64,
    pub dead_lettered: u64,
}

impl SeedMetrics {
    pub fn of(m: &Metrics) -> SeedMetrics {
        SeedMetrics {
            queue_wait_p95_ms: m.queue_wait.stats().p95,
            depth_max: m.depth_stats().max,
            enqueued: m.counts.get(Counter::Enqueued),
            dead_lettered: m.counts.get(Counter::DeadLettered),
        }
    }

    /// The share of enqueued jobs that were dead-lettered (0 when none was enqueued).
    pub fn dlq_fraction(&self) -> f64 {
        if self.enqueued == 0 {
            0.0
        } else {
            self.dead_lettered as f64 / self.enqueued as f64
        }
    }
}

/// A message with its numbers taken out: violations that differ only in ids, times and counts
/// share a signature.
pub fn signature(message: &str) -> String {
    // Every run of letters and digits that holds a digit (ids, times, counts, payload hashes)
    // becomes `#`.
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().any(|c| c.is_ascii_digit()) {
            out.push('#');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".into()
    }
}

/// A panic as the crash failure of its seed.
fn panic_failure(payload: &(dyn std::any::Any + Send)) -> SeedFailure {
    let message = panic_message(payload);
    SeedFailure {
        class: "crash".into(),
        invariant: "panic".into(),
        signature: signature(&message),
        violations: 1,
        at_ms: 0,
        job: None,
        message,
    }
}

/// The scenario and request a seed runs with (swarm settings applied).
pub fn seed_setup(plan: &Plan, seed: u64) -> (Scenario, RunRequest, Option<SwarmDraw>) {
    let base = plan.scenario.without_expectations();
    let (scenario, rates, draw) = if plan.swarm {
        let (s, r, d) = swarm::draw(&base, seed);
        (s, Some(r), Some(d))
    } else {
        (base, None, None)
    };
    let request = RunRequest {
        seed,
        jobs: plan.jobs,
        bugs: plan.bugs,
        // The coverage gate reads which faults fired: keep only that evidence, not the
        // whole history (copying every record made sweeps memory-bound on two threads).
        keep_trace: true,
        rates,
        progress: None,
        trace_filter: Some(freeze::fault_evidence),
        // The sweep's threads each run seeds: a seed's observers stay on its thread.
        observer_thread: false,
        max_events: plan.max_events,
        programs: plan.programs.clone(),
    };
    (scenario, request, draw)
}

/// The failure of a seed whose history the sweep cannot read as the simulator writes one.
pub fn inconsistent_failure(e: &freeze::Inconsistent) -> SeedFailure {
    let message = e.to_string();
    SeedFailure {
        class: "safety".into(),
        invariant: freeze::HISTORY_CONSISTENT.into(),
        signature: signature(&message),
        violations: 1,
        at_ms: e.at,
        job: None,
        message,
    }
}

/// Runs one seed: never panics, never depends on other seeds.
pub fn run_seed(plan: &Plan, seed: u64) -> SeedRecord {
    let index = seed - plan.seeds.0;
    let replay = index.is_multiple_of(REPLAY_EVERY);
    let mut record = SeedRecord {
        seed,
        events: 0,
        virtual_time_ms: 0,
        quiescent: false,
        replay_checked: replay,
        failures: Vec::new(),
        faults: Vec::new(),
        crash_points: Vec::new(),
        sometimes: Vec::new(),
        metrics: None,
        swarm: None,
        probes: Vec::new(),
        tolerated: Vec::new(),
    };
    // A configuration-space draw that does not validate is a crash of its seed, not the sweep's.
    let setup = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| seed_setup(plan, seed)));
    let (scenario, request, draw) = match setup {
        Ok(s) => s,
        Err(payload) => {
            record.failures.push(panic_failure(payload.as_ref()));
            return record;
        }
    };
    record.swarm = draw;
    let panic_on = plan.panic_on_seed;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if panic_on == Some(seed) {
            panic!("injected test panic at seed {seed}");
        }
        let mut report = run_once(&scenario, &request, None);
        if let (Some(edit), Some(trace)) = (plan.edit_history, report.trace.as_mut()) {
            edit(seed, trace);
        }
        let again = replay.then(|| {
            let mut plain = request.clone();
            plain.keep_trace = false;
            run_once(&scenario, &plain, None).outcome.trace_hash
        });
        (report, again)
    }));
    let (report, again) = match result {
        Ok(x) => x,
        Err(payload) => {
            record.failures.push(panic_failure(payload.as_ref()));
            return record;
        }
    };
    if let Some(message) = report.outcome.program_fault {
        // A program in a role failed (`sim::program`): the command exits 2 with this.
        record.failures.push(SeedFailure {
            class: "program".into(),
            invariant: "program".into(),
            signature: signature(&message),
            violations: 1,
            at_ms: report.outcome.virtual_time_ms,
            job: None,
            message,
        });
        return record;
    }
    record.events = report.outcome.records;
    record.virtual_time_ms = report.outcome.virtual_time_ms;
    record.quiescent = report.outcome.quiescent;
    record.metrics = Some(SeedMetrics::of(&report.metrics));
    record.probes = report
        .outcome
        .probes
        .as_ref()
        .map_or_else(Vec::new, |p| p.counts().to_vec());
    let tolerates = record
        .swarm
        .as_ref()
        .map(|d| d.tolerates.clone())
        .unwrap_or_default();
    for (invariant, verdict) in &report.check.verdicts {
        if verdict.count == 0 {
            continue;
        }
        if tolerates.iter().any(|t| t == invariant.name()) {
            record.tolerated.push(invariant.name().into());
            continue;
        }
        let first = verdict.first.as_ref();
        let message = first.map(|v| v.message.clone()).unwrap_or_default();
        record.failures.push(SeedFailure {
            class: match invariant.kind() {
                Kind::Always => "safety",
                Kind::Eventually => "liveness",
            }
            .into(),
            invariant: invariant.name().into(),
            signature: signature(&message),
            violations: verdict.count,
            at_ms: first.map_or(0, |v| v.at),
            job: first.and_then(|v| v.job).map(|j| j.0),
            message,
        });
    }
    if let Some(h) = again {
        if h != report.outcome.trace_hash {
            let message = "the same seed gave a different history on a second run: some step is not determined by the seed".to_string();
            record.failures.push(SeedFailure {
                class: "nondeterminism".into(),
                invariant: "replay".into(),
                signature: message.clone(),
                violations: 1,
                at_ms: 0,
                job: None,
                message,
            });
        }
    }
    if let Some(trace) = &report.trace {
        match freeze::fired_kinds(&scenario, trace, &report.outcome.names) {
            Ok((kinds, points)) => {
                record.faults = kinds.into_iter().map(String::from).collect();
                record.crash_points = points;
                record.crash_points.sort_by_key(|p| CrashPoint::parse(p));
            }
            // A defect of the model under test: a verdict of the seed, never the sweep's end.
            Err(e) => record.failures.push(inconsistent_failure(&e)),
        }
    }
    record.sometimes = report
        .check
        .sometimes
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, _)| s.name().to_string())
        .collect();
    record
}

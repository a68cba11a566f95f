//! The coverage gate: which faults, crash points and `sometimes` properties a sweep must see.
//!
//! Owns: what the scenario (and its `[swarm]` ranges) configures, which `sometimes` properties
//! that makes required, how many seeds showed each, and the gate's verdict.
//! Does not: run seeds or group failures (`seed`, `aggregate`).

use super::seed::SeedRecord;
use super::summary::{Coverage, FaultCoverage, SometimesCoverage};
use super::Plan;
use crate::check::Sometimes;
use crate::model::worker::CrashPoint;

/// The fault kinds the coverage gate counts, in report order.
pub const FAULT_KINDS: [&str; 6] = [
    "crash",
    "stall",
    "transient_error",
    "permanent_error",
    "relay_crash",
    "pause",
];

/// Names with a flag (configured, or required).
pub type Named = Vec<(String, bool)>;

/// Which fault kinds and crash points are configured, and which `sometimes` are required.
/// Required: every property the scenario's `expect.sometimes` and `expect.sweep_sometimes` name,
/// and those its configured
/// random faults imply (see docs/sweeps.md).
pub fn configured(plan: &Plan) -> (Named, Named, Named) {
    let s = &plan.scenario;
    let f = &s.faults;
    let sw = if plan.swarm {
        s.swarm.clone().unwrap_or_default()
    } else {
        Default::default()
    };
    let on = |rate: f64, range: Option<[f64; 2]>| match range {
        Some([_, hi]) => hi > 0.0,
        None => rate > 0.0,
    };
    let kinds = [
        on(f.crash, sw.crash),
        on(f.stall, sw.stall),
        on(f.transient_error, sw.transient_error),
        on(f.permanent_error, sw.permanent_error),
        on(f.relay_crash, sw.relay_crash),
        on(f.pause, None),
    ];
    let points_pool: Vec<String> = sw
        .crash_points
        .clone()
        .unwrap_or_else(|| f.crash_points.clone());
    let faults: Vec<(String, bool)> = FAULT_KINDS
        .iter()
        .zip(kinds)
        .map(|(n, on)| (n.to_string(), on))
        .collect();
    let points: Vec<(String, bool)> = CrashPoint::ALL
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                kinds[0] && points_pool.iter().any(|x| x == p.name()),
            )
        })
        .collect();
    let mut required: Vec<Sometimes> = Vec::new();
    for names in [&s.expect.sometimes, &s.expect.sweep_sometimes]
        .into_iter()
        .flatten()
    {
        required.extend(names.iter().filter_map(|n| Sometimes::parse(n)));
    }
    if kinds[0] {
        required.extend([Sometimes::WorkerCrashed, Sometimes::LeaseExpired]);
        if points
            .iter()
            .any(|(p, on)| *on && p == CrashPoint::AfterCommitBeforeAck.name())
        {
            required.push(Sometimes::CommitDeduped);
        }
    }
    if kinds[1] {
        required.extend([Sometimes::Stalled, Sometimes::LeaseExpired]);
        let workers = sw.workers.map_or(s.workers.count, |[_, hi]| hi);
        if workers >= 2 {
            required.push(Sometimes::StaleFenceRejected);
        }
    }
    if kinds[2] {
        required.push(Sometimes::RetryScheduled);
    }
    if kinds[3] {
        required.push(Sometimes::DeadLettered);
    }
    if kinds[4] {
        required.extend([Sometimes::RelayCrashed, Sometimes::RepublishAbsorbed]);
    }
    if kinds[5] {
        required.push(Sometimes::Paused);
        // Only a pause longer than the lease lets a renewed lease expire.
        if s.faults
            .pause_ms
            .max_possible()
            .is_none_or(|m| m > s.queue.lease_ms)
        {
            required.push(Sometimes::RenewedLeaseExpired);
        }
    }
    let sometimes = Sometimes::ALL
        .iter()
        .map(|x| (x.name().to_string(), required.contains(x)))
        .collect();
    (faults, points, sometimes)
}

/// The coverage of the records (sorted by seed) and the gate: see [`CoverageTally`].
pub fn coverage(plan: &Plan, records: &[SeedRecord], deferred: bool) -> Coverage {
    let mut tally = CoverageTally::new(plan);
    for r in records {
        tally.add(r);
    }
    tally.finish(deferred)
}

/// Coverage counted one seed record at a time (a sweep folds each record as it completes and
/// keeps none): for each configured name, the number of seeds whose record lists it.
#[derive(Clone, Debug)]
pub struct CoverageTally {
    faults: Vec<(String, bool, u64)>,
    crash_points: Vec<(String, bool, u64)>,
    sometimes: Vec<(String, bool, u64)>,
    seeds: u64,
}

impl CoverageTally {
    pub fn new(plan: &Plan) -> CoverageTally {
        let (faults, points, sometimes) = configured(plan);
        let zero = |list: Named| list.into_iter().map(|(n, on)| (n, on, 0)).collect();
        CoverageTally {
            faults: zero(faults),
            crash_points: zero(points),
            sometimes: zero(sometimes),
            seeds: 0,
        }
    }

    /// Counts one seed's record.
    pub fn add(&mut self, r: &SeedRecord) {
        self.seeds += 1;
        for (list, seen) in [
            (&mut self.faults, &r.faults),
            (&mut self.crash_points, &r.crash_points),
            (&mut self.sometimes, &r.sometimes),
        ] {
            for (name, _, seeds) in list.iter_mut() {
                if seen.contains(name) {
                    *seeds += 1;
                }
            }
        }
    }

    /// The coverage and the gate: `deferred` for a shard (the merge of all shards decides),
    /// else `failed` when a configured fault, crash point or required `sometimes` never showed
    /// up.
    pub fn finish(self, deferred: bool) -> Coverage {
        let n = self.seeds;
        let listed = |list: Vec<(String, bool, u64)>| -> Vec<FaultCoverage> {
            list.into_iter()
                .map(|(name, configured, seeds)| FaultCoverage {
                    name,
                    configured,
                    seeds,
                })
                .collect()
        };
        let faults = listed(self.faults);
        let crash_points = listed(self.crash_points);
        let sometimes: Vec<SometimesCoverage> = self
            .sometimes
            .into_iter()
            .map(|(name, required, seeds)| SometimesCoverage {
                name,
                required,
                seeds,
            })
            .collect();
        let mut problems = Vec::new();
        for f in faults.iter().filter(|f| f.configured && f.seeds == 0) {
            problems.push(format!(
                "fault `{}` is configured but never fired in {n} seeds: the injector does nothing",
                f.name
            ));
        }
        for f in crash_points.iter().filter(|f| f.configured && f.seeds == 0) {
            problems.push(format!(
                "crash point `{}` is configured but no worker ever crashed there in {n} seeds",
                f.name
            ));
        }
        for s in sometimes.iter().filter(|s| s.required && s.seeds == 0) {
            problems.push(format!(
                "`sometimes` property `{}` was never reached in {n} seeds",
                s.name
            ));
        }
        let gate = if deferred {
            "deferred"
        } else if problems.is_empty() {
            "passed"
        } else {
            "failed"
        };
        Coverage {
            faults,
            crash_points,
            sometimes,
            gate: gate.into(),
            problems,
        }
    }
}

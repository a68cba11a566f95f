//! The coverage gate: which faults, crash points and `sometimes` properties a sweep must see.
//!
//! Owns: what the scenario (and its `[swarm]` ranges) configures, which `sometimes` properties
//! that makes required, how many seeds showed each, and the gate's verdict.
//! Does not: run seeds or group failures (`seed`, `aggregate`).

use super::seed::SeedRecord;
use super::summary::{Coverage, FaultCoverage, ProbeCoverage, SometimesCoverage};
use super::Plan;
use crate::check::Sometimes;
use crate::model::worker::CrashPoint;
use crate::vocab::faults::{FaultKind, Held, Outlasts, Struck, COVERED};
use crate::vocab::probes::{PROBE_COUNT, TABLE as PROBES};

/// The fault kinds the coverage gate counts, in report order (`vocab::faults::COVERED`).
pub fn fault_kinds() -> impl Iterator<Item = &'static str> {
    COVERED.into_iter().map(FaultKind::name)
}

/// Names with a flag (configured, or required).
pub type Named = Vec<(String, bool)>;

/// Which fault kinds and crash points are configured, and which `sometimes` are required.
/// Required: every property the scenario's `expect.sometimes` and `expect.sweep_sometimes` name,
/// and those its configured random faults imply (see docs/sweeps.md).
pub fn configured(plan: &Plan) -> (Named, Named, Named) {
    let s = &plan.scenario;
    let sw = swarm_ranges(plan);
    let kinds = kinds_configured(plan);
    let on_kind = |k: FaultKind| kinds[k.coverage_index().expect("covered")];
    let points_pool: Vec<String> = match space(plan) {
        true => CrashPoint::ALL
            .iter()
            .map(|p| p.name().to_string())
            .collect(),
        false => sw
            .crash_points
            .clone()
            .unwrap_or_else(|| s.faults.crash_points.clone()),
    };
    let faults: Vec<(String, bool)> = fault_kinds()
        .zip(kinds)
        .map(|(n, on)| (n.to_string(), on))
        .collect();
    let points: Vec<(String, bool)> = CrashPoint::ALL
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                on_kind(FaultKind::Crash) && points_pool.iter().any(|x| x == p.name()),
            )
        })
        .collect();
    let required = required(plan, on_kind, &points);
    let sometimes = Sometimes::ALL
        .iter()
        .map(|x| (x.name().to_string(), required.contains(x)))
        .collect();
    (faults, points, sometimes)
}

/// The `[swarm]` ranges a sweep draws from (none unless it is a swarm sweep).
fn swarm_ranges(plan: &Plan) -> crate::scenario::Swarm {
    if plan.swarm {
        plan.scenario.swarm.clone().unwrap_or_default()
    } else {
        Default::default()
    }
}

/// A configuration-space sweep (`[swarm] space`): its seeds draw every fault kind, crash point
/// and path, so the gate requires every one.
fn space(plan: &Plan) -> bool {
    plan.swarm && swarm_ranges(plan).space.is_some()
}

/// Per fault kind of `COVERED`: whether a seed can draw it (its rate, or its `[swarm]` range's
/// maximum, above 0).
fn kinds_configured(plan: &Plan) -> [bool; COVERED.len()] {
    if space(plan) {
        return [true; COVERED.len()];
    }
    let f = &plan.scenario.faults;
    let sw = swarm_ranges(plan);
    let on = |rate: f64, range: Option<[f64; 2]>| match range {
        Some([_, hi]) => hi > 0.0,
        None => rate > 0.0,
    };
    COVERED.map(|k| match k {
        FaultKind::Crash => on(f.crash, sw.crash),
        FaultKind::TransientError => on(f.transient_error, sw.transient_error),
        FaultKind::PermanentError => on(f.permanent_error, sw.permanent_error),
        // `[swarm]` has a range for these two struck faults (`sweep/swarm.rs` draws them).
        FaultKind::RelayCrash => on(f.struck(Struck::RelayCrash), sw.relay_crash),
        FaultKind::ConsumerCrash => on(f.struck(Struck::ConsumerCrash), sw.consumer_crash),
        // `[swarm]` has a range for the stall alone among the held faults.
        FaultKind::Stall => on(f.held(Held::Stall).rate, sw.stall),
        k if k.struck().is_some() => on(f.struck(k.struck().expect("struck")), None),
        held => on(f.held(held.held().expect("a held fault")).rate, None),
    })
}

/// The `sometimes` properties a sweep must reach: those `[expect]` names, then those the
/// configured faults (`on_kind`) and crash points (`points`) imply.
fn required(plan: &Plan, on_kind: impl Fn(FaultKind) -> bool, points: &Named) -> Vec<Sometimes> {
    let s = &plan.scenario;
    let sw = swarm_ranges(plan);
    let e = s.expectations();
    if space(plan) {
        return Sometimes::ALL.to_vec();
    }
    let mut required: Vec<Sometimes> = e
        .sometimes
        .iter()
        .chain(&e.sweep_sometimes)
        .copied()
        .collect();
    if on_kind(FaultKind::Crash) {
        required.extend([Sometimes::WorkerCrashed, Sometimes::LeaseExpired]);
        if points
            .iter()
            .any(|(p, on)| *on && p == CrashPoint::AfterCommitBeforeAck.name())
        {
            required.push(Sometimes::CommitDeduped);
        }
    }
    let workers = sw.workers.map_or(s.workers.count, |[_, hi]| hi);
    if on_kind(FaultKind::Stall) && workers >= 2 {
        required.push(Sometimes::StaleFenceRejected);
    }
    if on_kind(FaultKind::TransientError) {
        required.push(Sometimes::RetryScheduled);
    }
    if on_kind(FaultKind::PermanentError) {
        required.push(Sometimes::DeadLettered);
    }
    for st in Struck::ALL.into_iter().filter(|st| on_kind(st.spec().kind)) {
        required.push(Sometimes::Struck(st));
        required.extend(
            st.spec()
                .requires
                .iter()
                .filter_map(|n| Sometimes::parse(n)),
        );
    }
    for h in Held::ALL.into_iter().filter(|h| on_kind(h.spec().kind)) {
        let spec = h.spec();
        required.push(Sometimes::Held(h));
        required.extend(spec.requires.iter().filter_map(|n| Sometimes::parse(n)));
        // Only a fault that can outlast what is left of the lease lets it run out.
        let left = match spec.outlasts {
            Outlasts::Always => 0,
            Outlasts::Lease => s.queue.lease_ms,
            Outlasts::LeaseAfterHeartbeat => s.queue.lease_ms.saturating_sub(s.queue.heartbeat_ms),
        };
        if s.faults.held(h).ms.max_possible().is_none_or(|m| m > left) {
            required.extend(
                spec.requires_when_outlasting
                    .iter()
                    .filter_map(|n| Sometimes::parse(n)),
            );
        }
    }
    required
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
    /// Per probe: the seeds that reached it, and its hits in all.
    probe_seeds: Vec<u64>,
    probe_hits: Vec<u64>,
    probes_required: bool,
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
            probe_seeds: vec![0; PROBE_COUNT],
            probe_hits: vec![0; PROBE_COUNT],
            probes_required: plan.require_coverage,
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
        // A record of another build's table (a merge of mismatched shards) counts nothing.
        if r.probes.len() == PROBE_COUNT {
            for (i, n) in r.probes.iter().enumerate() {
                self.probe_seeds[i] += u64::from(*n > 0);
                self.probe_hits[i] += n;
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
        let probes: Vec<ProbeCoverage> = PROBES
            .iter()
            .enumerate()
            .map(|(i, row)| ProbeCoverage {
                name: row.name.to_string(),
                seeds: self.probe_seeds[i],
                hits: self.probe_hits[i],
            })
            .collect();
        if self.probes_required {
            for (p, row) in probes.iter().zip(PROBES).filter(|(p, _)| p.seeds == 0) {
                problems.push(format!(
                    "probe `{}` was never reached in {n} seeds ({}: {})",
                    p.name, row.site, row.about
                ));
            }
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
            probes_reached: probes.iter().filter(|p| p.seeds > 0).count(),
            probes,
            probes_required: self.probes_required,
            gate: gate.into(),
            problems,
        }
    }
}

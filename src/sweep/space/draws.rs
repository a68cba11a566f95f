//! One configuration-space draw: a whole scenario file from a seed's stream, section by
//! section in a fixed order, and its repair when a profile refuses a key.
//!
//! Owns: the ranges. Times are drawn around the seed's own lease (a held fault before or after
//! the lease's end, a sweeper faster or slower than it), and every long default of a real
//! queue's profile (an hour's rescue horizon, a day's retention) is drawn down to seconds, so a
//! run settles in simulated minutes; a queue that never rescues a job draws no crash (its job
//! would hang until the time limit).
//! Does not: decide which invariants a draw may break (`hazards.rs`).

use super::Gen;
use crate::model::worker::CrashPoint;
use crate::profile::{Profile, Word};
use crate::scenario::{
    Arrivals, Burst, ConsumerSection, DepthSampling, Dist, DlqSection, Enqueue, Faults,
    InvalidDocuments, MetricsSection, Operator, OperatorAction, OperatorTarget, Outage,
    OutboxSection, QueueSection, Relay, RetrySection, RunSection, Scenario, ScenarioFile, Script,
    Stages, Workers, Written,
};
use crate::vocab::config::Jitter;
use crate::vocab::faults::{FaultKind, Held, Struck};
use crate::vocab::queue_params::{
    AttemptsCount, BackoffFormula, DlqMode, ExpiryKind, Fetch, Heartbeat, OnExpiry, PermanentError,
    RescueWrite, Unique, WriteGuard,
};

const TENANTS: [&str; 5] = ["acme", "globex", "initech", "umbrella", "hooli"];

/// Every section drawn, in a fixed order; `base` gives the name and description.
pub(super) fn file(g: &mut Gen, base: &ScenarioFile) -> ScenarioFile {
    let mut f = base.clone();
    f.swarm = None;
    f.expect = Default::default();
    f.bugs = Default::default();
    f.seed = 0;
    f.workers = Workers {
        count: g.span(1, 8) as u32,
        restart_ms: g.span(1, 2_000),
    };
    f.queue = queue(g);
    f.retry = retry(g, &mut f.queue);
    f.stages = stages(g, f.queue.lease_ms);
    f.arrivals = arrivals(g);
    f.enqueue = enqueues(g);
    f.burst = bursts(g);
    f.faults = faults(g, &f.queue);
    f.relay = Relay {
        interval_ms: g.span(5, 300),
        restart_ms: g.chance(0.4).then(|| g.span(1, 1_000)),
    };
    f.outbox = OutboxSection {
        retention_ms: g.chance(0.3).then(|| g.span(1, 3_000)),
    };
    f.consumer = ConsumerSection {
        dedupe_window_ms: g.chance(0.15).then(|| g.span(1, 3_000)),
    };
    f.metrics = MetricsSection {
        depth_sample_ms: g.span(10, 1_000),
        depth_sample: match g.chance(0.2) {
            true => DepthSampling::PerLease,
            false => DepthSampling::Interval,
        },
    };
    f.run = RunSection {
        time_limit_ms: 14_400_000,
        ties: Vec::new(),
    };
    f.dlq = dlq(g);
    f.operator = operators(g, &f);
    f.script = script(g, &f);
    f
}

/// The queue: a profile (durasim a third of the time), its own four settings where the file
/// writes them, and each profile key with some chance.
fn queue(g: &mut Gen) -> QueueSection {
    let profile = match g.chance(0.35) {
        true => Profile::Durasim,
        false => g.pick(&Profile::ALL[1..]),
    };
    g.note(profile.name());
    let mut q = QueueSection {
        profile: (profile != Profile::Durasim || g.chance(0.3)).then(|| profile.name().into()),
        ..QueueSection::default()
    };
    let has_lease = profile.defaults().lease_ms.is_some() || profile == Profile::Temporal;
    q.lease_ms = g.span(50, 3_000);
    q.heartbeat_ms = match g.chance(0.1) {
        true => g.span(q.lease_ms, 2 * q.lease_ms),
        false => g.span(10, q.lease_ms.saturating_sub(1).max(10)),
    };
    q.deadline_ms = match g.chance(0.2) {
        true => 3_600_000,
        false => g.span(200, 120_000),
    };
    q.max_attempts = match g.range(0, 19) {
        0 => u32::MAX,
        1 => 70,
        _ => g.range(1, 8) as u32,
    };
    // A real queue's long defaults (hours) are drawn down: its lease always written.
    let durasim = profile == Profile::Durasim;
    q.written = Written {
        lease_ms: durasim || has_lease,
        heartbeat_ms: durasim || g.chance(0.6),
        deadline_ms: durasim || g.chance(0.5),
        max_attempts: durasim || g.chance(0.7),
        ..Written::default()
    };
    profile_keys(g, &mut q, profile);
    q
}

/// `Some(word)` with chance `p`, the word one of `W`'s.
fn word<W: Word>(g: &mut Gen, p: f64) -> Option<String> {
    g.chance(p).then(|| g.pick(W::ALL).name().to_string())
}

/// The keys a scenario may set on top of its profile (docs/queues.md §2.1).
fn profile_keys(g: &mut Gen, q: &mut QueueSection, profile: Profile) {
    q.heartbeat = word::<Heartbeat>(g, 0.2);
    q.attempts_count = word::<AttemptsCount>(g, 0.15);
    q.stale_heartbeat = word::<WriteGuard>(g, 0.15);
    q.stale_ack = word::<WriteGuard>(g, 0.15);
    q.stale_retry = word::<WriteGuard>(g, 0.15);
    q.stale_dead_letter = word::<WriteGuard>(g, 0.15);
    q.stale_apply_permille = g.chance(0.3).then(|| g.range(0, 1_000) as u32);
    q.expiry = word::<ExpiryKind>(g, 0.25);
    // Every sweeper is drawn fast: a real one ticks every 30 s to 10 min.
    let sweeps = !matches!(profile, Profile::Durasim | Profile::Sqs | Profile::Pgmq);
    q.sweep_ms = (sweeps || g.chance(0.3)).then(|| g.span(10, 2_000));
    q.liveness_ms = (matches!(profile, Profile::Procrastinate | Profile::Sidekiq) || g.chance(0.1))
        .then(|| g.span(50, 3_000));
    q.on_expiry = word::<OnExpiry>(g, 0.2);
    q.stall_limit = g.chance(0.2).then(|| g.range(0, 3) as u32);
    q.rescue_write = word::<RescueWrite>(g, 0.15);
    q.rescue_gap_ms = g.chance(0.15).then(|| g.span(1, 300));
    q.fetch = word::<Fetch>(g, 0.05);
    q.permanent_error = word::<PermanentError>(g, 0.15);
    q.unique = match profile {
        Profile::Durasim => word::<Unique>(g, 0.6),
        _ => word::<Unique>(g, 0.3),
    };
    if let Some(u) = &q.unique {
        g.note(format!("unique {u}"));
    }
}

/// The retry policy: base, cap and jitter where written, and now and then another formula. A
/// profile's own formula keeps its constants; its unit is drawn small.
fn retry(g: &mut Gen, q: &mut QueueSection) -> RetrySection {
    let base = g.span(1, 400);
    let mut r = RetrySection {
        backoff_base_ms: base,
        backoff_cap_ms: g.span(base, 5_000),
        jitter: g.pick(&[Jitter::None, Jitter::Full, Jitter::Equal]),
        backoff: word::<BackoffFormula>(g, 0.2),
        written_only: None,
    };
    if q.max_attempts == 70 {
        // A retry storm: the 63rd attempt and beyond, quickly.
        r.backoff = None;
        r.backoff_base_ms = 1;
        r.backoff_cap_ms = 20;
    }
    let profiled = q.profile.as_deref().is_some_and(|p| p != "durasim");
    if profiled {
        // The unit is always drawn small (a real queue's is seconds); cap and jitter sometimes.
        let (cap, jitter) = (g.chance(0.3), g.chance(0.5));
        r.written_only = Some((true, cap, jitter));
        q.written.backoff_base_ms = true;
        q.written.backoff_cap_ms = cap;
        q.written.jitter = jitter;
    }
    r
}

/// A duration: constant, uniform, exponential or lognormal, around `scale` ms.
fn dist(g: &mut Gen, scale: u64) -> Dist {
    let scale = scale.max(1);
    match g.range(0, 3) {
        0 => Dist::Constant {
            value: g.span(1, 2 * scale),
        },
        1 => {
            let min = g.range(0, scale);
            Dist::Uniform {
                min,
                max: g.span(min.max(1), 3 * scale),
            }
        }
        2 => Dist::Exponential {
            mean: g.span(1, scale) as f64,
        },
        _ => Dist::Lognormal {
            median: g.span(1, scale) as f64,
            sigma: (g.range(0, 120) as f64) / 100.0,
        },
    }
}

fn stages(g: &mut Gen, lease_ms: u64) -> Stages {
    let scale = match g.chance(0.3) {
        true => lease_ms * 2,
        false => lease_ms / 2,
    };
    Stages {
        inference_ms: dist(g, scale.clamp(1, 4_000)),
        validate_ms: match g.chance(0.5) {
            true => Dist::Constant {
                value: g.range(0, 20),
            },
            false => dist(g, 10),
        },
        review_ms: dist(g, 150),
    }
}

/// Tenants, jobs and gaps from simultaneous (0 ms) to minutes, collisions, resubmissions and
/// invalid documents.
fn arrivals(g: &mut Gen) -> Arrivals {
    let tenants = g.range(1, 4) as usize;
    let (gap, jobs, label) = match g.range(0, 5) {
        0 => (Dist::Constant { value: 0 }, g.range(0, 20), "simultaneous"),
        // Below a millisecond: most gaps round to 0, some to 1.
        1 => (Dist::Exponential { mean: 0.4 }, g.range(0, 25), "sub-ms"),
        2 => (dist(g, 30), g.range(0, 25), "ms"),
        3 => (dist(g, 2_000), g.range(0, 15), "seconds"),
        4 => (
            Dist::Exponential {
                mean: g.span(30_000, 180_000) as f64,
            },
            g.range(1, 4),
            "minutes",
        ),
        _ => (Dist::Constant { value: 0 }, 0, "none"),
    };
    g.note(format!("{jobs} arrivals {label} apart"));
    let collision = match tenants >= 2 {
        true => g.rate(0.4),
        false => 0.0,
    };
    let resubmit = (g.rate(0.4)).min(1.0 - collision);
    Arrivals {
        tenants: TENANTS[..tenants].iter().map(|t| t.to_string()).collect(),
        jobs,
        interarrival_ms: gap,
        document_collision: collision,
        resubmit,
        resubmit_changed: g.rate(1.0),
        invalid_documents: g.chance(0.3).then(|| {
            let every = g.range(1, 8) as u32;
            InvalidDocuments {
                every,
                first: g.range(0, every as u64) as u32,
            }
        }),
    }
}

/// A few explicit `[[enqueue]]` entries: generated documents' names (which collide with the
/// arrivals') or named ones, new versions, payloads, invalid documents, known and new tenants.
fn enqueues(g: &mut Gen) -> Vec<Enqueue> {
    let n = match g.chance(0.5) {
        true => g.range(1, 5),
        false => 0,
    };
    (0..n)
        .map(|_| Enqueue {
            at_ms: at_or_later(g),
            tenant: g.pick(&TENANTS).to_string(),
            document: match g.chance(0.5) {
                true => format!("doc-{}", g.range(0, 6)),
                false => format!("invoice-{}", g.range(0, 3)),
            },
            version: g.range(1, 3) as u32,
            payload: g.chance(0.4).then(|| format!("v{}", g.range(0, 2))),
            invalid: g.chance(0.2),
        })
        .collect()
}

/// 0 half the time (the entry aims by job and attempt alone), else a time in the first seconds.
fn at_or_later(g: &mut Gen) -> u64 {
    match g.chance(0.5) {
        true => 0,
        false => g.span(1, 5_000),
    }
}

fn bursts(g: &mut Gen) -> Vec<Burst> {
    let n = match g.chance(0.25) {
        true => g.range(1, 2),
        false => 0,
    };
    (0..n)
        .map(|_| Burst {
            at_ms: g.span(1, 5_000),
            tenant: g.pick(&TENANTS).to_string(),
            jobs: g.range(1, 12),
        })
        .collect()
}

/// Every random fault kind, each half the time; held faults' lengths around the lease's end
/// (some shorter than what is left of it, some longer); now and then a provider outage.
fn faults(g: &mut Gen, q: &QueueSection) -> Faults {
    let lease = q.lease_ms;
    let mut f = Faults {
        crash: g.rate(0.15),
        transient_error: g.rate(0.3),
        permanent_error: g.rate(0.1),
        ..Faults::default()
    };
    if q.max_attempts == 70 {
        f.transient_error = 0.97;
    }
    let points: Vec<String> = CrashPoint::ALL
        .iter()
        .filter(|_| g.chance(0.6))
        .map(|p| p.name().to_string())
        .collect();
    if !points.is_empty() {
        f.crash_points = points;
    }
    *f.struck_mut(Struck::RelayCrash) = g.rate(0.2);
    *f.struck_mut(Struck::ConsumerCrash) = g.rate(0.1);
    for h in Held::ALL {
        let around = match h {
            Held::SlowHeartbeat => lease.saturating_sub(q.heartbeat_ms.min(lease)),
            Held::Stall | Held::Pause => lease,
        }
        .max(2);
        let held = f.held_mut(h);
        held.rate = g.rate(0.1);
        let min = g.range(1, around);
        held.ms = Dist::Uniform {
            min,
            max: g.span(min, 3 * around),
        };
    }
    if g.chance(0.05) {
        // A zombie storm: holders that outlive their lease and fail for good, so that a stale
        // write meets a job that already died (and, by id, revives it).
        f.held_mut(Held::Stall).rate = 0.4;
        f.permanent_error = 0.4;
        g.note("zombie storm");
    }
    f.outage = g.chance(0.1).then(|| {
        let from_ms = g.range(0, 3_000);
        Outage {
            from_ms,
            to_ms: from_ms + g.span(1, 3_000),
        }
    });
    f
}

/// The DLQ's own limits: a capacity, a per-tenant reprocess limit.
fn dlq(g: &mut Gen) -> DlqSection {
    let limit = g.chance(0.25).then(|| g.range(1, 3) as u32);
    DlqSection {
        capacity: g.chance(0.25).then(|| g.range(1, 6) as u32),
        reprocess_limit: limit,
        reprocess_window_ms: limit.and_then(|_| g.chance(0.7).then(|| g.span(10, 5_000))),
        mode: word::<DlqMode>(g, 0.2),
        retention_ms: g.chance(0.2).then(|| g.span(1, 5_000)),
    }
}

/// Operators: a fixed job (and its chain), the oldest DLQ entry, the first cancelled job;
/// named or not; once or as an automation.
fn operators(g: &mut Gen, f: &ScenarioFile) -> Vec<Operator> {
    let n = match g.chance(0.5) {
        true => g.range(1, 3),
        false => 0,
    };
    let planned = f.jobs_planned();
    (0..n)
        .map(|_| {
            let fixed = planned > 0 && g.chance(0.4);
            let repeat = match g.chance(0.4) {
                true => g.range(1, 30) as u32,
                false => 0,
            };
            Operator {
                at_ms: g.span(1, 20_000),
                action: OperatorAction::ReprocessDlq,
                operator: g
                    .chance(0.9)
                    .then(|| g.pick(&["ops-ana", "bot@ci"]).to_string()),
                job: fixed.then(|| g.range(0, planned - 1) as u32),
                target: (!fixed).then(|| {
                    g.pick(&[
                        OperatorTarget::OldestDeadLettered,
                        OperatorTarget::OldestDeadLettered,
                        OperatorTarget::Cancelled,
                    ])
                }),
                repeat,
                every_ms: match repeat {
                    0 => 0,
                    _ => g.span(1, 2_000),
                },
                follow: fixed && g.chance(0.5),
            }
        })
        .collect()
}

/// A few scripted faults, aimed at jobs the scenario plans.
fn script(g: &mut Gen, f: &ScenarioFile) -> Vec<Script> {
    let planned = f.jobs_planned();
    let n = match g.chance(0.4) {
        true => g.range(1, 4),
        false => 0,
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let kind = g.pick(&FaultKind::ALL);
        let job = (planned > 0).then(|| g.range(0, planned - 1) as u32);
        let mut e = Script::new(at_or_later(g), kind, None);
        if kind.takes_job() {
            let Some(j) = job else { continue };
            e.job = Some(j);
        }
        if kind.strikes_attempt() {
            e.attempt = g.chance(0.6).then(|| g.range(1, 3) as u32);
        }
        match kind {
            FaultKind::Crash => e.point = Some(g.pick(&CrashPoint::ALL).name().into()),
            FaultKind::MutatePayload => e.payload = g.chance(0.5).then(|| "edited".into()),
            k => {
                if let Some(h) = k.held() {
                    let lease = f.queue.lease_ms;
                    e.length = Some((h, g.span(1, 3 * lease)));
                }
            }
        }
        out.push(e);
    }
    out
}

/// A queue that never takes an abandoned job back loses a crashed worker's job: such a draw
/// gets no crash (a stalled, paused or slow holder still finishes). True if it changed the file.
fn never_lose_a_job(g: &mut Gen, f: &mut ScenarioFile, s: &Scenario) -> bool {
    let sem = s.semantics();
    if sem.expiry.kind != ExpiryKind::Never {
        return false;
    }
    // A lock whose TTL lapses refuses its holder's ack: with no rescue the job would hang.
    if sem.lock_ttl && f.queue.expiry.take().is_some() {
        return true;
    }
    let crashes = f.faults.crash > 0.0 || f.script.iter().any(|e| e.fault == FaultKind::Crash);
    if !crashes {
        return false;
    }
    f.faults.crash = 0.0;
    f.script.retain(|e| e.fault != FaultKind::Crash);
    g.note("no rescue: no crash");
    true
}

/// A job that can be retried without end (no attempt limit, or a high one) under a slow
/// formula, a profile that retries permanent errors, or a rescue that counts a failure (a job
/// that always outlives its lease: temporal-dust-29171) would keep its run going to the time
/// limit: such a draw writes a small `max_attempts`. True if it changed the file.
pub(super) fn settle(g: &mut Gen, f: &mut ScenarioFile, s: &Scenario) -> bool {
    let sem = s.semantics();
    if never_lose_a_job(g, f, s) {
        return true;
    }
    // Counting failures alone, a rescue that is no stall never counts: a job whose every
    // attempt outlives its lease would be leased for ever.
    if sem.attempts_count == AttemptsCount::Failures
        && sem.on_expiry != OnExpiry::Stall
        && sem.expiry.kind != ExpiryKind::Never
    {
        f.queue.attempts_count = Some("leases".into());
        return true;
    }
    let endless = sem.backoff.formula != BackoffFormula::Exp2
        || sem.permanent_error == PermanentError::Retry
        || matches!(sem.on_expiry, OnExpiry::Retry | OnExpiry::Fail);
    if !endless || sem.max_attempts.is_some_and(|n| n <= 8) {
        return false;
    }
    f.queue.max_attempts = g.range(1, 8) as u32;
    f.queue.written.max_attempts = true;
    true
}

/// The file, validated: a key its profile refuses is left out (as a user would), until the
/// file validates. A field this cannot repair is a bug of the draws: it panics.
pub(super) fn validated(f: &mut ScenarioFile) -> Scenario {
    for _ in 0..64 {
        match Scenario::from_file(f.clone(), &f.name.clone()) {
            Ok(s) => return s,
            Err(e) => {
                if !repair(f, &e.field) {
                    panic!("a configuration-space draw does not validate: {e}");
                }
            }
        }
    }
    panic!("a configuration-space draw was repaired 64 times and still does not validate");
}

/// Leaves out the key at `field`; false if it is not one a draw may leave out.
fn repair(f: &mut ScenarioFile, field: &str) -> bool {
    let q = &mut f.queue;
    let w = &mut q.written;
    let key: &mut Option<String> = match field {
        "queue.lease_ms" => return std::mem::replace(&mut w.lease_ms, false),
        // Temporal has no default Start-To-Close.
        "queue.profile" => return !std::mem::replace(&mut w.lease_ms, true),
        "queue.heartbeat_ms" => return std::mem::replace(&mut w.heartbeat_ms, false),
        "queue.stale_apply_permille" => return q.stale_apply_permille.take().is_some(),
        "queue.sweep_ms" => return q.sweep_ms.take().is_some() || set(&mut q.sweep_ms, 500),
        "queue.liveness_ms" => return q.liveness_ms.take().is_some(),
        "queue.stall_limit" => return q.stall_limit.take().is_some(),
        "queue.rescue_gap_ms" => return q.rescue_gap_ms.take().is_some(),
        // The profile's own rescue or stall counter, which a drawn expiry cannot carry.
        "queue.on_expiry" if q.on_expiry.is_none() => return fill(&mut q.on_expiry, "ready"),
        "queue.rescue_write" if q.rescue_write.is_none() => {
            return fill(&mut q.rescue_write, "guarded")
        }
        "queue.heartbeat" => &mut q.heartbeat,
        "queue.attempts_count" => &mut q.attempts_count,
        "queue.expiry" => &mut q.expiry,
        "queue.on_expiry" => &mut q.on_expiry,
        "queue.rescue_write" => &mut q.rescue_write,
        "queue.fetch" => &mut q.fetch,
        "retry.backoff" => &mut f.retry.backoff,
        "dlq.mode" => &mut f.dlq.mode,
        "retry.backoff_cap_ms" | "retry.jitter" => return unwrite_retry(f, field),
        "dlq.retention_ms" => return f.dlq.retention_ms.take().is_some(),
        "dlq.reprocess_window_ms" => return f.dlq.reprocess_window_ms.take().is_some(),
        _ => return false,
    };
    key.take().is_some()
}

fn fill(slot: &mut Option<String>, word: &str) -> bool {
    *slot = Some(word.to_string());
    true
}

fn set(slot: &mut Option<u64>, value: u64) -> bool {
    *slot = Some(value);
    true
}

/// Leaves a retry key out under a profile (its own then applies), or lets the cap be the base.
fn unwrite_retry(f: &mut ScenarioFile, field: &str) -> bool {
    let r = &mut f.retry;
    let w = &mut f.queue.written;
    match (r.written_only.as_mut(), field) {
        (Some((_, cap, _)), "retry.backoff_cap_ms") if *cap => {
            *cap = false;
            w.backoff_cap_ms = false;
        }
        (Some((_, _, jitter)), "retry.jitter") if *jitter => {
            *jitter = false;
            w.jitter = false;
        }
        (None, "retry.backoff_cap_ms") if r.backoff_cap_ms < r.backoff_base_ms => {
            r.backoff_cap_ms = r.backoff_base_ms
        }
        (None, "retry.backoff_cap_ms") if r.backoff.is_some() => r.backoff = None,
        _ => return false,
    }
    true
}

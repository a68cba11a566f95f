//! The hazards of a configuration-space draw: settings under which a correct pipeline still
//! breaks an invariant, because the queue or the setting really behaves that way
//! (docs/queues.md, "Profile × fault matrix"; the DLQ's and the consumer's bounded memories).
//!
//! Owns: which hazards a validated draw runs into, and for each the invariants it breaks, which
//! its seed tolerates (a violation of one of them is not a failure of that seed; every other
//! invariant is judged as everywhere). The probes of those paths (a stale write a guard takes,
//! a consumer that forgot an event id, ...) are reached only in such seeds.
//! Does not: draw anything (`draws.rs`) or judge (the checker; `seed::run_seed` sets the
//! tolerated violations apart).

use crate::check::Invariant;
use crate::profile::{AttemptsCount, ExpiryKind, Heartbeat, OnExpiry, Unique, WriteGuard};
use crate::scenario::Scenario;
use crate::vocab::faults::{FaultKind, Struck};

/// A setting under which the invariants it names break without any defect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hazard {
    /// A write guard other than `reject` takes a stale holder's write (River, Oban, pgmq,
    /// pg-boss, graphile-worker; SQS's coin): `fenced_writes`, and `terminal_once` for a write
    /// to a finished job; what follows from the write breaks what the checker then recomputes
    /// from the holder's lease (a zombie's renewal moves the `visibility` delay:
    /// `backoff_respected`, and keeps the current lease held past the end the checker computes
    /// from the renewals it accepts: `lease_end_detected`) and from the DLQ (a revived job filed
    /// again: `dlq_bounded`).
    StaleWritesTaken,
    /// A sweeper reads a job, then writes by id later whatever the job became
    /// (riverqueue/river#1302): a finished job leased again, a lease's end recorded for a lease
    /// already released, the depth the checker recomputes from those records, and a revived
    /// job's second DLQ entry (`dlq_bounded`).
    RescueRace,
    /// Attempts counted by failures, or stalls counted apart (BullMQ, Sidekiq): a job is leased
    /// more often than `max_attempts`, and a job that stalled past its limit is failed at its
    /// next pick into the DLQ as `max_attempts_exceeded` with attempts to spare
    /// (`retry_policy_followed`).
    LeasesUncounted,
    /// A bounded DLQ (capacity or retention) drops an entry no operator reprocessed in time.
    DlqLoss,
    /// A consumer that remembers event ids for a window applies a republish that comes later.
    ForgetfulConsumer,
    /// Uniqueness by key alone (`while_active`, `replace`): a resubmit with another payload is
    /// deduplicated onto, or replaces, the key's job.
    KeysNotPayloads,
    /// Renewals under a lease whose end a sweeper or a stalled checker notices only later,
    /// with no lock TTL: the holder's renewal after the lease's end, before anyone noticed, is
    /// taken. The header states no detection, so the checker judges it a renewal of an ended
    /// lease (`fenced_writes`). Worker liveness (Sidekiq Pro's super_fetch, procrastinate's
    /// recipe) is such a lease: a late process heartbeat re-arms the process's liveness, and
    /// nothing was rescued before the next orphan scan.
    LapsedRenewals,
}

impl Hazard {
    pub fn name(self) -> &'static str {
        match self {
            Hazard::StaleWritesTaken => "stale_writes_taken",
            Hazard::RescueRace => "rescue_race",
            Hazard::LeasesUncounted => "leases_uncounted",
            Hazard::DlqLoss => "dlq_loss",
            Hazard::ForgetfulConsumer => "forgetful_consumer",
            Hazard::KeysNotPayloads => "keys_not_payloads",
            Hazard::LapsedRenewals => "lapsed_renewals",
        }
    }

    /// The invariants a correct run may break under it.
    pub fn tolerates(self) -> &'static [Invariant] {
        match self {
            Hazard::StaleWritesTaken => &[
                Invariant::FencedWrites,
                Invariant::TerminalOnce,
                Invariant::BackoffRespected,
                Invariant::DlqBounded,
                // A stale heartbeat taken by id renews the job's current lease, which its holder
                // did not renew: the lease's end as the checker reads it passes undetected
                // (found by the swarm once the checker judged lease_end_detected).
                Invariant::LeaseEndDetected,
            ],
            Hazard::RescueRace => &[
                Invariant::TerminalOnce,
                // The write by id ends whatever lease the job holds by then: one its holder
                // renewed after the read, or a new attempt's after a retry; the job is leased
                // again while that lease is live, as river#1302's rescuer re-queues a running
                // job (swarm seeds 21971 under oban, 37646 under pg-boss).
                Invariant::SingleLiveLease,
                Invariant::DepthMatchesHistory,
                Invariant::RecordedValuesMatch,
                // A job the race revived that dies again is filed a second time (found by a
                // guided sweep: a capacity-1 DLQ then holds its two entries).
                Invariant::DlqBounded,
            ],
            Hazard::LeasesUncounted => {
                &[Invariant::AttemptsBounded, Invariant::RetryPolicyFollowed]
            }
            Hazard::DlqLoss => &[Invariant::NoSilentDrop],
            Hazard::ForgetfulConsumer => &[Invariant::NoDuplicateEffect],
            Hazard::KeysNotPayloads => &[Invariant::PayloadConflictRejected],
            Hazard::LapsedRenewals => &[Invariant::FencedWrites],
        }
    }
}

/// The hazards `s` runs into, in [`Hazard`]'s order.
pub fn of(s: &Scenario) -> Vec<Hazard> {
    let sem = s.semantics();
    let st = &sem.stale;
    let mut out = Vec::new();
    if [st.heartbeat, st.ack, st.retry, st.dead_letter]
        .iter()
        .any(|g| *g != WriteGuard::Reject)
    {
        out.push(Hazard::StaleWritesTaken);
    }
    if sem.rescue_races() {
        out.push(Hazard::RescueRace);
    }
    if sem.attempts_count == AttemptsCount::Failures || sem.on_expiry == OnExpiry::Stall {
        out.push(Hazard::LeasesUncounted);
    }
    if s.dlq_config().capacity.is_some() || sem.dlq.retention_ms.is_some() {
        out.push(Hazard::DlqLoss);
    }
    let republished = [Struck::RelayCrash, Struck::ConsumerCrash]
        .iter()
        .any(|k| s.faults.struck(*k) > 0.0)
        || s.script
            .iter()
            .any(|e| matches!(e.fault, FaultKind::RelayCrash | FaultKind::ConsumerCrash));
    if s.consumer.dedupe_window_ms.is_some() && republished {
        out.push(Hazard::ForgetfulConsumer);
    }
    if matches!(sem.unique, Unique::WhileActive | Unique::Replace) {
        out.push(Hazard::KeysNotPayloads);
    }
    // Under worker liveness the process heartbeat renews every job of the process whatever
    // `heartbeat` says (`Effective::of`); a heartbeat slowed past `liveness_ms` is taken before
    // the next sweep, as a real process's heartbeat re-arms its expired key (Sidekiq Pro; swarm
    // seeds 57896, 124066 and 166009 under sidekiq).
    let renews = sem.heartbeat == Heartbeat::Renew || sem.expiry.kind == ExpiryKind::WorkerLiveness;
    if renews && !sem.lock_ttl && sem.expiry.kind != ExpiryKind::Timer {
        out.push(Hazard::LapsedRenewals);
    }
    out
}

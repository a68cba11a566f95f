//! The invariants: named sentences with a kind.
//!
//! Owns: the closed list of properties durasim proves, their names (the contract users grep for),
//! their kind and the sentence that states each. Also the `sometimes` properties, which prove a
//! fault path actually ran.
//! Does not: evaluate anything (see `checker` and the family files: `leases`, `policy`,
//! `effects`, `dlq`, `tenancy`, `metrics`).

use crate::vocab::faults::{Held, Struck, HELD_KINDS, STRUCK_KINDS};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Must hold at every event (safety).
    Always,
    /// Must hold once the run is quiescent (liveness).
    Eventually,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Invariant {
    SingleResultPerKey,
    EventPerResult,
    NoDuplicateEffect,
    EveryResultDelivered,
    FencedWrites,
    SingleLiveLease,
    AttemptsBounded,
    DeadlineRespected,
    TerminalOnce,
    TenantIsolation,
    RedactedDlq,
    AuditedReprocess,
    PayloadConflictRejected,
    FirstResultWins,
    NoSilentDrop,
    FencingTokenIncreases,
    BackoffRespected,
    RetryPolicyFollowed,
    AckedWithResult,
    DlqBounded,
    ReprocessJustified,
    DepthMatchesHistory,
    RecordedValuesMatch,
    SummaryMatchesHistory,
}

impl Invariant {
    pub const ALL: [Invariant; 24] = [
        Invariant::SingleResultPerKey,
        Invariant::EventPerResult,
        Invariant::NoDuplicateEffect,
        Invariant::EveryResultDelivered,
        Invariant::FencedWrites,
        Invariant::SingleLiveLease,
        Invariant::AttemptsBounded,
        Invariant::DeadlineRespected,
        Invariant::TerminalOnce,
        Invariant::TenantIsolation,
        Invariant::RedactedDlq,
        Invariant::AuditedReprocess,
        Invariant::PayloadConflictRejected,
        Invariant::FirstResultWins,
        Invariant::NoSilentDrop,
        Invariant::FencingTokenIncreases,
        Invariant::BackoffRespected,
        Invariant::RetryPolicyFollowed,
        Invariant::AckedWithResult,
        Invariant::DlqBounded,
        Invariant::ReprocessJustified,
        Invariant::DepthMatchesHistory,
        Invariant::RecordedValuesMatch,
        Invariant::SummaryMatchesHistory,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::SingleResultPerKey => "single_result_per_key",
            Invariant::EventPerResult => "event_per_result",
            Invariant::NoDuplicateEffect => "no_duplicate_effect",
            Invariant::EveryResultDelivered => "every_result_delivered",
            Invariant::FencedWrites => "fenced_writes",
            Invariant::SingleLiveLease => "single_live_lease",
            Invariant::AttemptsBounded => "attempts_bounded",
            Invariant::DeadlineRespected => "deadline_respected",
            Invariant::TerminalOnce => "terminal_once",
            Invariant::TenantIsolation => "tenant_isolation",
            Invariant::RedactedDlq => "redacted_dlq",
            Invariant::AuditedReprocess => "audited_reprocess",
            Invariant::PayloadConflictRejected => "payload_conflict_rejected",
            Invariant::FirstResultWins => "first_result_wins",
            Invariant::NoSilentDrop => "no_silent_drop",
            Invariant::FencingTokenIncreases => "fencing_token_increases",
            Invariant::BackoffRespected => "backoff_respected",
            Invariant::RetryPolicyFollowed => "retry_policy_followed",
            Invariant::AckedWithResult => "acked_with_result",
            Invariant::DlqBounded => "dlq_bounded",
            Invariant::ReprocessJustified => "reprocess_justified",
            Invariant::DepthMatchesHistory => "depth_matches_history",
            Invariant::RecordedValuesMatch => "recorded_values_match",
            Invariant::SummaryMatchesHistory => "summary_matches_history",
        }
    }

    pub fn parse(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    pub fn kind(self) -> Kind {
        match self {
            Invariant::EventPerResult
            | Invariant::EveryResultDelivered
            | Invariant::NoSilentDrop
            | Invariant::SummaryMatchesHistory => Kind::Eventually,
            _ => Kind::Always,
        }
    }

    pub fn sentence(self) -> &'static str {
        match self {
            Invariant::SingleResultPerKey => "no idempotency key has more than one committed result",
            Invariant::EventPerResult => "every committed result has exactly one event, written with it, and it is published",
            Invariant::NoDuplicateEffect => "no effect is applied twice for one idempotency key or one event",
            Invariant::EveryResultDelivered => "every committed result is applied by the consumer and reviewed",
            Invariant::FencedWrites => "every accepted heartbeat, ack, retry, dead-letter or cancel comes from the current holder: the worker of the job's latest lease, with its token; a heartbeat only while that lease is live (its end recomputed from the lease and heartbeat times and the configured lease)",
            Invariant::SingleLiveLease => "a job is never leased while another lease on it is live (lease ends recomputed, never read from the record)",
            Invariant::AttemptsBounded => "no job is leased more than max_attempts times",
            Invariant::DeadlineRespected => "no job is leased after its deadline, recomputed as enqueue time + the configured deadline",
            Invariant::TerminalOnce => "a job reaches one terminal state once, and nothing is accepted for it afterwards",
            Invariant::TenantIsolation => "every key embeds its job's tenant, and no request resolves to another tenant's job",
            Invariant::RedactedDlq => "every dead-letter reason is a closed code, never an error's text",
            Invariant::AuditedReprocess => "every reprocessed job has an audit entry naming an operator and a predecessor whose entry is in the DLQ, not yet reprocessed, and the same tenant, document and payload at version + 1",
            Invariant::PayloadConflictRejected => "the same key with a different payload (operation and content, as recorded) is rejected, at enqueue and at commit, never reused; the same payload is never refused as a conflict unless the header's unique mode refuses any submit there; a submit of a known key gets a new job, a dedupe onto the key's newest job or a refusal exactly as that mode allows, given the newest job's state",
            Invariant::FirstResultWins => "the effect the consumer applies is the first committed result for its key",
            Invariant::NoSilentDrop => "every enqueued job ends acked, dead-lettered or cancelled, and keeps that record: a DLQ entry evicted before any reprocess is a lost job",
            Invariant::FencingTokenIncreases => "every lease of a job carries a token strictly greater than the job's previous one",
            Invariant::BackoffRespected => "no job is leased before its visible time, and every retry delay is within what the configured backoff (base, cap) and jitter mode allow for that attempt",
            Invariant::RetryPolicyFollowed => "every failed attempt gets the decision its error and the configuration call for: a permanent error goes to the DLQ as permanent_error; a transient one is retried below max_attempts and before the deadline, then dead-lettered as max_attempts_exceeded or cancelled; a cancel only past the deadline",
            Invariant::AckedWithResult => "a job is acked only when its key has a committed result (its own, or one its commit deduplicated onto)",
            Invariant::DlqBounded => "the DLQ, tracked by the checker, never holds more than its capacity, and an entry leaves it only by an eviction record naming its oldest entry when full",
            Invariant::ReprocessJustified => "a reprocess is refused only for a reason the history shows, and accepted only within the tenant's reprocess rate limit",
            Invariant::DepthMatchesHistory => "every queue depth sample equals the number of visible, unleased, unfinished jobs recomputed from the history",
            Invariant::RecordedValuesMatch => "every value the recorder computed (lease_until, deadline_at, visible_at, payload hashes, error classes, attempt numbers, capacities) and every optional record (visible, lease_expired) agrees with what the configuration and the raw facts give",
            Invariant::SummaryMatchesHistory => "every figure of summary.json that the history determines (counts of jobs, outcomes, effects, leases, crashes, DLQ entries, reprocesses, retries) equals the checker's own count",
        }
    }
}

/// Things that must happen *sometimes* across a sweep, or a fault path is dead code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sometimes {
    StaleFenceRejected,
    CommitDeduped,
    RepublishAbsorbed,
    DeadlineCancellation,
    DeadLettered,
    Reprocessed,
    LeaseExpired,
    HeartbeatRenewed,
    RetryScheduled,
    PayloadConflict,
    EnqueueDeduped,
    WorkerCrashed,
    ReprocessSucceeded,
    DlqEvicted,
    OperatorAtCancelled,
    RenewedLeaseExpired,
    /// A held fault struck (`stalled`, `paused`, ...: its row of `vocab::faults::HELD`).
    Held(Held),
    /// A fault of the delivery side struck (`relay_crashed`, ...: its row of
    /// `vocab::faults::STRUCK`).
    Struck(Struck),
}

/// The properties before the stall's, and after it, in report order.
const BEFORE_STALL: [Sometimes; 13] = [
    Sometimes::StaleFenceRejected,
    Sometimes::CommitDeduped,
    Sometimes::RepublishAbsorbed,
    Sometimes::DeadlineCancellation,
    Sometimes::DeadLettered,
    Sometimes::Reprocessed,
    Sometimes::LeaseExpired,
    Sometimes::HeartbeatRenewed,
    Sometimes::RetryScheduled,
    Sometimes::PayloadConflict,
    Sometimes::EnqueueDeduped,
    Sometimes::WorkerCrashed,
    Sometimes::Struck(Struck::RelayCrash),
];
const AFTER_STALL: [Sometimes; 4] = [
    Sometimes::ReprocessSucceeded,
    Sometimes::DlqEvicted,
    Sometimes::OperatorAtCancelled,
    Sometimes::RenewedLeaseExpired,
];
const COUNT: usize = BEFORE_STALL.len() + AFTER_STALL.len() + HELD_KINDS + STRUCK_KINDS - 1;

impl Sometimes {
    /// Every property in report order: the stall's and the relay crash's where they always
    /// were, the other held faults' after the fixed ones, in `Held` order, then the other struck
    /// faults', in `Struck` order.
    pub const ALL: [Sometimes; COUNT] = {
        let mut out = [Sometimes::StaleFenceRejected; COUNT];
        let mut i = 0;
        while i < BEFORE_STALL.len() {
            out[i] = BEFORE_STALL[i];
            i += 1;
        }
        out[i] = Sometimes::Held(Held::ALL[0]);
        let mut k = 0;
        while k < AFTER_STALL.len() {
            out[i + 1 + k] = AFTER_STALL[k];
            k += 1;
        }
        let mut h = 1;
        while h < HELD_KINDS {
            out[i + k + h] = Sometimes::Held(Held::ALL[h]);
            h += 1;
        }
        let mut s = 1;
        while s < STRUCK_KINDS {
            out[i + k + h + s - 1] = Sometimes::Struck(Struck::ALL[s]);
            s += 1;
        }
        out
    };

    /// Its place in [`Sometimes::ALL`] (and in the checker's counts).
    #[inline]
    pub fn index(self) -> usize {
        const STALL: usize = BEFORE_STALL.len();
        match self {
            Sometimes::StaleFenceRejected => 0,
            Sometimes::CommitDeduped => 1,
            Sometimes::RepublishAbsorbed => 2,
            Sometimes::DeadlineCancellation => 3,
            Sometimes::DeadLettered => 4,
            Sometimes::Reprocessed => 5,
            Sometimes::LeaseExpired => 6,
            Sometimes::HeartbeatRenewed => 7,
            Sometimes::RetryScheduled => 8,
            Sometimes::PayloadConflict => 9,
            Sometimes::EnqueueDeduped => 10,
            Sometimes::WorkerCrashed => 11,
            Sometimes::Held(Held::Stall) => STALL,
            Sometimes::ReprocessSucceeded => STALL + 1,
            Sometimes::DlqEvicted => STALL + 2,
            Sometimes::OperatorAtCancelled => STALL + 3,
            Sometimes::RenewedLeaseExpired => STALL + 4,
            Sometimes::Held(h) => STALL + 4 + h as usize,
            // The relay crash (`Struck` 0) keeps the place it had before the table; the others
            // come after the held faults.
            Sometimes::Struck(s) => match s as usize {
                0 => 12,
                i => STALL + 4 + HELD_KINDS + i - 1,
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sometimes::StaleFenceRejected => "stale_fence_rejected",
            Sometimes::CommitDeduped => "commit_deduped",
            Sometimes::RepublishAbsorbed => "republish_absorbed",
            Sometimes::DeadlineCancellation => "deadline_cancellation",
            Sometimes::DeadLettered => "dead_lettered",
            Sometimes::Reprocessed => "reprocessed",
            Sometimes::LeaseExpired => "lease_expired",
            Sometimes::HeartbeatRenewed => "heartbeat_renewed",
            Sometimes::RetryScheduled => "retry_scheduled",
            Sometimes::PayloadConflict => "payload_conflict",
            Sometimes::EnqueueDeduped => "enqueue_deduped",
            Sometimes::WorkerCrashed => "worker_crashed",
            Sometimes::ReprocessSucceeded => "reprocess_succeeded",
            Sometimes::DlqEvicted => "dlq_evicted",
            Sometimes::OperatorAtCancelled => "operator_at_cancelled",
            Sometimes::RenewedLeaseExpired => "renewed_lease_expired",
            Sometimes::Held(h) => h.spec().sometimes,
            Sometimes::Struck(s) => s.spec().sometimes,
        }
    }

    pub fn parse(name: &str) -> Option<Sometimes> {
        Sometimes::ALL.into_iter().find(|s| s.name() == name)
    }
}

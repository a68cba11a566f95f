//! The invariants: named sentences with a kind.
//!
//! Owns: the closed list of properties durasim proves, and where each is stated: its name (the
//! contract users grep for), kind and sentence are its family's [`Spec`], declared beside its
//! rule in `rules/`. Also the `sometimes` properties, which prove a fault path actually ran.
//! Does not: evaluate anything (the families in `rules/` do).

use super::rules::{
    chain, depth, detection, dlq, effects, fences, leases, payloads, policy, recorded, summary,
    tenancy, Spec,
};
use crate::vocab::faults::{Held, Struck, HELD_KINDS, STRUCK_KINDS};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
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
    DeliveryChain,
    FencesIssued,
    RejectionJustified,
    LeaseEndDetected,
}

impl Invariant {
    pub const ALL: [Invariant; 28] = [
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
        Invariant::DeliveryChain,
        Invariant::FencesIssued,
        Invariant::RejectionJustified,
        Invariant::LeaseEndDetected,
    ];

    /// Its name, kind and sentence, as its family declares them beside its rule.
    pub fn spec(self) -> &'static Spec {
        match self {
            Invariant::SingleResultPerKey => &effects::SINGLE_RESULT_PER_KEY,
            Invariant::EventPerResult => &effects::EVENT_PER_RESULT,
            Invariant::NoDuplicateEffect => &effects::NO_DUPLICATE_EFFECT,
            Invariant::EveryResultDelivered => &effects::EVERY_RESULT_DELIVERED,
            Invariant::FencedWrites => &leases::FENCED_WRITES,
            Invariant::SingleLiveLease => &leases::SINGLE_LIVE_LEASE,
            Invariant::AttemptsBounded => &leases::ATTEMPTS_BOUNDED,
            Invariant::DeadlineRespected => &leases::DEADLINE_RESPECTED,
            Invariant::TerminalOnce => &leases::TERMINAL_ONCE,
            Invariant::TenantIsolation => &tenancy::TENANT_ISOLATION,
            Invariant::RedactedDlq => &dlq::REDACTED_DLQ,
            Invariant::AuditedReprocess => &dlq::AUDITED_REPROCESS,
            Invariant::PayloadConflictRejected => &payloads::PAYLOAD_CONFLICT_REJECTED,
            Invariant::FirstResultWins => &effects::FIRST_RESULT_WINS,
            Invariant::NoSilentDrop => &dlq::NO_SILENT_DROP,
            Invariant::FencingTokenIncreases => &leases::FENCING_TOKEN_INCREASES,
            Invariant::BackoffRespected => &policy::BACKOFF_RESPECTED,
            Invariant::RetryPolicyFollowed => &policy::RETRY_POLICY_FOLLOWED,
            Invariant::AckedWithResult => &effects::ACKED_WITH_RESULT,
            Invariant::DlqBounded => &dlq::DLQ_BOUNDED,
            Invariant::ReprocessJustified => &dlq::REPROCESS_JUSTIFIED,
            Invariant::DepthMatchesHistory => &depth::DEPTH_MATCHES_HISTORY,
            Invariant::RecordedValuesMatch => &recorded::RECORDED_VALUES_MATCH,
            Invariant::SummaryMatchesHistory => &summary::SUMMARY_MATCHES_HISTORY,
            Invariant::DeliveryChain => &chain::DELIVERY_CHAIN,
            Invariant::FencesIssued => &fences::FENCES_ISSUED,
            Invariant::RejectionJustified => &fences::REJECTION_JUSTIFIED,
            Invariant::LeaseEndDetected => &detection::LEASE_END_DETECTED,
        }
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn parse(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    pub fn kind(self) -> Kind {
        self.spec().kind
    }

    pub fn sentence(self) -> &'static str {
        self.spec().sentence
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

//! The invariants: named sentences with a kind.
//!
//! Owns: the closed list of properties durasim proves, their names (the contract users grep for),
//! their kind and the sentence that states each. Also the `sometimes` properties, which prove a
//! fault path actually ran.
//! Does not: evaluate anything (see `checker`).

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
}

impl Invariant {
    pub const ALL: [Invariant; 15] = [
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
        }
    }

    pub fn parse(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    pub fn kind(self) -> Kind {
        match self {
            Invariant::EventPerResult
            | Invariant::EveryResultDelivered
            | Invariant::NoSilentDrop => Kind::Eventually,
            _ => Kind::Always,
        }
    }

    pub fn sentence(self) -> &'static str {
        match self {
            Invariant::SingleResultPerKey => "no idempotency key has more than one committed result",
            Invariant::EventPerResult => "every committed result has exactly one event, written with it, and it is published",
            Invariant::NoDuplicateEffect => "no effect is applied twice for one idempotency key or one event",
            Invariant::EveryResultDelivered => "every committed result is applied by the consumer and reviewed",
            Invariant::FencedWrites => "every accepted heartbeat, ack, retry, dead-letter or cancel carries the job's current fencing token",
            Invariant::SingleLiveLease => "a job is never leased while another lease on it is live",
            Invariant::AttemptsBounded => "no job is leased more than max_attempts times",
            Invariant::DeadlineRespected => "no job is leased after its deadline",
            Invariant::TerminalOnce => "a job reaches one terminal state once, and nothing is accepted for it afterwards",
            Invariant::TenantIsolation => "every key embeds its job's tenant, and no request resolves to another tenant's job",
            Invariant::RedactedDlq => "every dead-letter reason is a closed code, never an error's text",
            Invariant::AuditedReprocess => "every reprocessed job has an audit entry naming an operator, a dead-lettered predecessor and version + 1",
            Invariant::PayloadConflictRejected => "the same key with a different payload is rejected, at enqueue and at commit, never reused",
            Invariant::FirstResultWins => "the effect the consumer applies is the first committed result for its key",
            Invariant::NoSilentDrop => "every enqueued job ends acked, dead-lettered or cancelled, and keeps that record: a DLQ entry evicted before any reprocess is a lost job",
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
    RelayCrashed,
    Stalled,
}

impl Sometimes {
    pub const ALL: [Sometimes; 14] = [
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
        Sometimes::RelayCrashed,
        Sometimes::Stalled,
    ];

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
            Sometimes::RelayCrashed => "relay_crashed",
            Sometimes::Stalled => "stalled",
        }
    }

    pub fn parse(name: &str) -> Option<Sometimes> {
        Sometimes::ALL.into_iter().find(|s| s.name() == name)
    }
}

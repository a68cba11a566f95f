//! AWS SQS standard queue.
//!
//! Owns: SQS's values (docs/queues.md §1.2). The visibility timeout is the lease: 30 s by
//! default, renewed only by an explicit ChangeMessageVisibility counted from the call, at most
//! 12 h from the receive (ChangeMessageVisibility API reference). A delete with a stale receipt
//! handle "will still succeed, but the message might not be deleted" (DeleteMessage API
//! reference): the `may_apply` guard with a seeded coin; how often it applies is not documented,
//! so 500 ‰ is a placeholder a sweep can vary. No nack: a failed message is visible again when
//! its visibility ends. A redrive policy's `maxReceiveCount` (5 here, the value AWS recommends
//! at least for Lambda sources) moves it to a DLQ whose retention (4 days by default) counts
//! from the original enqueue ("Setting-up dead-letter queue retention"). No deduplication on a
//! standard queue, no deadline.
//! Does not: model FIFO queues (5-minute deduplication, not re-checked).

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Sqs,
        lease_ms: Some(30_000),
        // The SDKs do not renew on their own (redpanda-data/connect#1948).
        heartbeat: Heartbeat::None,
        heartbeat_ms: 10_000,
        lease_cap_ms: Some(43_200_000),
        stale: StaleWrites {
            // ChangeMessageVisibility with a stale handle: not stated (unverified).
            heartbeat: WriteGuard::Reject,
            ack: WriteGuard::MayApply,
            // No nack: a retry is a write only the holder's visibility lapse performs.
            retry: WriteGuard::Reject,
            // The application deletes after sending to its DLQ: the same stale delete.
            dead_letter: WriteGuard::MayApply,
            apply_permille: 500,
        },
        // Implicit and exact: receivable again once the visibility timeout has passed.
        lock_ttl: false,
        // A deleted message is gone.
        finished_rows_kept_ms: Some(0),
        expiry: Expiry::TIMER,
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(5),
        // ApproximateReceiveCount counts receives.
        attempts_count: AttemptsCount::Leases,
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::plain(BackoffFormula::Visibility),
        dlq: Dlq {
            mode: DlqMode::Redrive,
            capacity: None,
            retention_ms: Some(345_600_000),
        },
        // A standard queue keeps every `SendMessage`; only FIFO queues deduplicate (5 minutes,
        // `MessageDeduplicationId`), which this profile does not model.
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.2: ChangeMessageVisibility and DeleteMessage API references, \
                  SQS Developer Guide (dead-letter queue redrive and retention), CreateQueue attributes",
    }
}

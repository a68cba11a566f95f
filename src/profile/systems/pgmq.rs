//! pgmq (PostgreSQL extension, SQS-like), as the conformance harness uses it.
//!
//! Owns: pgmq's values (docs/queues.md §1.7 and §5, `pgmq/pgmq@c8575e3`, extension 1.5.1).
//! `read(queue, vt, qty)` hides a message for `vt` and increments `read_ct`; `set_vt`,
//! `delete` and `archive` take only `msg_id`: `by_id`, accepted while the row exists. Expiry is
//! implicit and exact (a read takes rows with `vt <= clock_timestamp()`). No retry policy, no
//! maximum reads, no DLQ (archived rows are kept), no uniqueness, no deadline. The lease and
//! the renewal are the application's: 30 s mirrors SQS; `crates/conform`'s pgmq store renews
//! with `set_vt` like durasim's heartbeat.
//! Does not: model `pop` (at-most-once; `fetch = "pop"` does).

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Pgmq,
        lease_ms: Some(30_000),
        heartbeat: Heartbeat::Renew,
        heartbeat_ms: 10_000,
        lease_cap_ms: None,
        stale: StaleWrites::all(WriteGuard::ById),
        lock_ttl: false,
        // `delete` and `archive` remove the row from the queue table.
        finished_rows_kept_ms: Some(0),
        expiry: Expiry::TIMER,
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: None,
        attempts_count: AttemptsCount::Leases,
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::plain(BackoffFormula::Visibility),
        dlq: Dlq::KEPT,
        // `send` always inserts a new message (pgmq-extension/sql/pgmq.sql `send`).
        unique: Unique::None,
        deadline_ms: None,
        sources:
            "docs/queues.md §1.7, §5: pgmq/pgmq@c8575e3 pgmq-extension/sql/pgmq.sql (read, set_vt, \
                  delete, archive), docs/api/sql/functions.md; pgmq/pgmq#274",
    }
}

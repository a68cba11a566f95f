//! durasim's own queue (the default profile): the chapter's idealised one.
//!
//! Owns: the values today's scenarios run with when they name no profile, so their histories
//! and golden trace hashes do not change (docs/queues.md §1.1; `src/model/queue.rs`,
//! `src/model/retry.rs`, `src/sim/kernel.rs`).
//! Does not: differ from the scenario schema's own defaults in any value.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Durasim,
        lease_ms: Some(1_000),
        heartbeat: Heartbeat::Renew,
        heartbeat_ms: 300,
        lease_cap_ms: None,
        // `Queue::check_fence`: every queue write needs the current token.
        stale: StaleWrites::all(WriteGuard::Reject),
        lock_ttl: false,
        // `arm_expiry` / `on_lease_check`: an exact timer at leaseUntil + 1.
        finished_rows_kept_ms: None,
        expiry: Expiry::TIMER,
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(3),
        attempts_count: AttemptsCount::Leases,
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::exp2(100, 2_000, JitterMode::Full),
        dlq: Dlq::QUEUE,
        // The idempotency key is unique for ever (src/model/queue.rs `enqueue`).
        unique: Unique::Forever,
        deadline_ms: Some(30_000),
        sources: "docs/queues.md §1.1: src/model/queue.rs (check_fence, lease_next), \
                  src/model/retry.rs (backoff_ms), src/model/dead_letter.rs, src/sim/kernel.rs (arm_expiry)",
    }
}

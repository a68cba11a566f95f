//! procrastinate (Python, PostgreSQL).
//!
//! Owns: procrastinate's values (docs/queues.md §1.9, `procrastinate-org/procrastinate@f099a75`).
//! No job lease: a fetch sets `status = 'doing'`; the worker process heartbeats every 10 s
//! (`worker.py`), which is process liveness, not a lease. Nothing rescues a job whose worker
//! died: "these stalled jobs will remain in the queue forever" unless the application runs the
//! documented recipe (`retry_stalled_jobs.md`: every 10 min, retry jobs whose worker has no
//! heartbeat for 30 s), which `expiry = "worker_liveness"` turns on. `finish_job` matches
//! `status IN ('todo','doing')` (`if_not_terminal`); the retry functions match
//! `status = 'doing'` (`if_leased`). Tasks default to `retry=False`: one attempt (`retry.py`).
//! Does not: model `queueing_lock` (opt-in) or `delete_old_jobs`.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Procrastinate,
        lease_ms: None,
        heartbeat: Heartbeat::None,
        // The worker process's heartbeat (`update_heartbeat_interval`).
        heartbeat_ms: 10_000,
        lease_cap_ms: None,
        stale: StaleWrites {
            heartbeat: WriteGuard::Reject,
            ack: WriteGuard::IfNotTerminal,
            retry: WriteGuard::IfLeased,
            dead_letter: WriteGuard::IfNotTerminal,
            apply_permille: 0,
        },
        lock_ttl: false,
        finished_rows_kept_ms: None,
        expiry: Expiry::NEVER,
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(1),
        attempts_count: AttemptsCount::Leases,
        // `retry_exceptions`.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::plain(BackoffFormula::Immediate),
        dlq: Dlq::KEPT,
        // `defer` inserts unless the app passes a `queueing_lock` (procrastinate/sql/schema.sql:
        // the partial unique index on `queueing_lock` over `todo` jobs is opt-in).
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.9: procrastinate-org/procrastinate@f099a75 procrastinate/sql/schema.sql, \
                  queries.sql, worker.py, retry.py, docs/howto/production/retry_stalled_jobs.md; \
                  procrastinate-org/procrastinate#1518",
    }
}

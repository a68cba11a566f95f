//! pg-boss (Node, PostgreSQL, v12).
//!
//! Owns: pg-boss's values (docs/queues.md §1.8, `timgit/pg-boss@55ee32f`). `expire_seconds`
//! 15 min (`plans.ts`, `QUEUE_DEFAULTS`) with no renewal by default; the supervisor runs every
//! 60 s (`attorney.ts`) and fails expired active jobs, which the retry policy then retries
//! (`failJobsByTimeout`, `failJobsBody`). Completion requires `state = 'active'` with no
//! attempt check (`completeJobsUpdate`): `if_leased`; failure by id requires only
//! `state < 'completed'` (`failJobsById`): `if_not_terminal`. `retry_limit` 2, i.e. 3
//! executions; retry delay 0; failed jobs deleted 7 days later (`deletion`); no uniqueness
//! for the `standard` policy.
//! Does not: model queued-job retention (14 days), heartbeats (opt-in), or the dead-letter
//! queue option.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::PgBoss,
        lease_ms: Some(900_000),
        heartbeat: Heartbeat::None,
        heartbeat_ms: 900_000,
        lease_cap_ms: None,
        stale: StaleWrites {
            heartbeat: WriteGuard::IfLeased,
            ack: WriteGuard::IfLeased,
            retry: WriteGuard::IfNotTerminal,
            dead_letter: WriteGuard::IfNotTerminal,
            apply_permille: 0,
        },
        lock_ttl: false,
        // Completed jobs are deleted 7 days later (`deletion`).
        finished_rows_kept_ms: Some(604_800_000),
        expiry: Expiry::sweep(60_000),
        on_expiry: OnExpiry::Fail,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(3),
        attempts_count: AttemptsCount::Leases,
        // The `deadletter` disposition.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::plain(BackoffFormula::Immediate),
        dlq: Dlq {
            mode: DlqMode::Discarded,
            capacity: None,
            retention_ms: Some(604_800_000),
        },
        // The default `standard` queue policy has no unique index on `singleton_key` (src/plans.ts).
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.8: timgit/pg-boss@55ee32f src/plans.ts (QUEUE_DEFAULTS, fetchNextJob, \
                  completeJobsUpdate, failJobsById, failJobsBody, deletion), src/attorney.ts; timgit/pg-boss#529",
    }
}

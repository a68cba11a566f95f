//! graphile-worker (Node, PostgreSQL).
//!
//! Owns: graphile-worker's values (docs/queues.md §1.6, `graphile/worker@abfb4cf`). A fetch
//! sets `locked_at`; the lock expires after a hard-coded 4 h with no renewal in OSS; each worker
//! unlocks expired jobs at start and every 8 to 10 min (`resetLockedAt.ts`, `config.ts`; the
//! sweep here runs every 10 min, the upper end). The Node worker's completion deletes by id
//! (`completeJobs.ts`): `by_id`; failure requires `locked_by = poolId` (`failJobs.ts`):
//! `if_same_process`. 25 attempts (`sql/000011.sql`); backoff e^min(n, 10) s, no jitter
//! (`failJobs.ts`); no API to fail permanently; a job out of attempts stays in the table.
//! Does not: default to `job_key` (opt-in; `[queue] unique = "replace"` is its default mode)
//! or model the 8–10 minute spread.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::GraphileWorker,
        lease_ms: Some(14_400_000),
        heartbeat: Heartbeat::None,
        heartbeat_ms: 14_400_000,
        lease_cap_ms: None,
        stale: StaleWrites {
            heartbeat: WriteGuard::Reject,
            ack: WriteGuard::ById,
            retry: WriteGuard::IfSameProcess,
            dead_letter: WriteGuard::IfSameProcess,
            apply_permille: 0,
        },
        lock_ttl: false,
        // A completed job's row is deleted at once (`completeJobs.ts`).
        finished_rows_kept_ms: Some(0),
        expiry: Expiry::sweep(600_000),
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(25),
        attempts_count: AttemptsCount::Leases,
        permanent_error: PermanentError::Retry,
        backoff: Backoff {
            formula: BackoffFormula::ExpE,
            base_ms: 1_000,
            cap_ms: u64::MAX,
            offset_ms: 0,
            index_from: 0,
            jitter: JitterMode::None,
            jitter_pct: 0,
            jitter_step_ms: 0,
        },
        dlq: Dlq::KEPT,
        // `add_job` without a `job_key` always inserts; with one, the default `job_key_mode` is
        // `replace` (sql/000011.sql `add_job`; website/docs/job-key.md): `unique = "replace"`.
        unique: Unique::None,
        deadline_ms: None,
        sources:
            "docs/queues.md §1.6: graphile/worker@abfb4cf src/sql/getJobs.ts, completeJobs.ts, \
                  failJobs.ts, resetLockedAt.ts, src/config.ts, sql/000011.sql, sql/000016.sql",
    }
}

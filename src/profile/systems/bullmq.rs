//! BullMQ (Node, Redis).
//!
//! Owns: BullMQ's values (docs/queues.md §1.3, `taskforcesh/bullmq@352d3c7`). A lock with TTL
//! `lockDuration` 30 s, renewed about every 15 s (`lock-manager.ts`), fenced by the fetch's
//! token on renewal and on completion (`extendLock-2.lua`, `removeLock.lua`). The stalled
//! checker runs every `stalledInterval` 30 s in two passes (`moveStalledJobsToWait-9.lua`); a
//! stall is not an attempt, and past `maxStalledCount` 1 the job fails as unrecoverable
//! (`worker.ts`). `attempts` 1, counting failures (`job.ts`, `shouldRetryJob`); no backoff by
//! default (`backoffs.ts`); the failed set is kept (`removeOnFail` unset); no deduplication by
//! default.
//! Does not: model `jobId` or `deduplication` (opt-in), or sandboxed processors.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Bullmq,
        lease_ms: Some(30_000),
        heartbeat: Heartbeat::Renew,
        heartbeat_ms: 15_000,
        lease_cap_ms: None,
        stale: StaleWrites::all(WriteGuard::Reject),
        // `lockDuration` is the lock key's TTL; completed jobs are kept.
        lock_ttl: true,
        finished_rows_kept_ms: None,
        expiry: Expiry::two_pass(30_000),
        on_expiry: OnExpiry::Stall,
        stall_limit: 1,
        // One Lua script: atomic.
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(1),
        attempts_count: AttemptsCount::Failures,
        // `UnrecoverableError`.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::plain(BackoffFormula::Immediate),
        dlq: Dlq::KEPT,
        // `Queue.add` makes a new job unless the app passes a `jobId` or `deduplication`
        // (src/interfaces/base-job-options.ts: both opt-in).
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.3: taskforcesh/bullmq@352d3c7 src/classes/worker.ts, lock-manager.ts, \
                  job.ts, backoffs.ts, src/commands/moveStalledJobsToWait-9.lua, extendLock-2.lua, \
                  includes/removeLock.lua, src/interfaces/base-job-options.ts",
    }
}

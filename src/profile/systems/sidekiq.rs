//! Sidekiq OSS (Ruby, Redis).
//!
//! Owns: Sidekiq's values (docs/queues.md §1.10, `sidekiq/sidekiq@1bb4aa0`). No lease: OSS
//! fetches with BRPOP and the job leaves Redis (`fetch.rb`); "If Sidekiq crashes while
//! processing that job, it is lost forever" (sidekiq/sidekiq#1831). 25 retries, i.e. 26
//! executions, counting failures (`job_retry.rb`); backoff c⁴ + 15 s plus U[0, 10 × (c + 1)) s,
//! c the retry index from 0 (`delay_for`, `process_retry`); the dead set keeps the newest 9,999
//! entries and drops entries older than 6 months (`send_to_morgue`, `config.rb`:
//! `dead_max_jobs` 10,000 trimmed to rank −10,000, hence sidekiq/sidekiq#6827's 9,999).
//! Does not: model Sidekiq Pro's super_fetch beyond `fetch = "super_fetch"` (recovery at a
//! process start, for processes whose heartbeat expired), or Enterprise's `unique!`.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Sidekiq,
        lease_ms: None,
        heartbeat: Heartbeat::None,
        // The process heartbeat (`config.rb`).
        heartbeat_ms: 10_000,
        lease_cap_ms: None,
        // There is no ack to fence: the job left the store at fetch.
        stale: StaleWrites::all(WriteGuard::Reject),
        lock_ttl: false,
        // A finished job is gone from Redis.
        finished_rows_kept_ms: Some(0),
        expiry: Expiry::NEVER,
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Pop,
        max_attempts: Some(26),
        attempts_count: AttemptsCount::Failures,
        // `sidekiq_retry_in` returning `:kill`.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff {
            formula: BackoffFormula::Pow4,
            base_ms: 1_000,
            cap_ms: u64::MAX,
            offset_ms: 15_000,
            index_from: 1,
            jitter: JitterMode::Additive,
            jitter_pct: 0,
            jitter_step_ms: 10_000,
        },
        dlq: Dlq {
            mode: DlqMode::DeadSet,
            capacity: Some(9_999),
            retention_ms: Some(15_552_000_000),
        },
        // `perform_async` always pushes a new job; uniqueness is Enterprise's `unique!`.
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.10: sidekiq/sidekiq@1bb4aa0 lib/sidekiq/fetch.rb, job_retry.rb, config.rb; \
                  sidekiq/sidekiq#1831, #6827, #3196, #3273",
    }
}

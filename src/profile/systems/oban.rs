//! Oban (Elixir, PostgreSQL), with the Lifeline and Pruner plugins at their defaults.
//!
//! Owns: Oban's values (docs/queues.md §1.5, `oban-bg/oban@2939e31`). No lease and no renewal:
//! a fetch sets `state = 'executing'`. `complete_job`, `error_job` and `discard_job` update by
//! id with no state condition (`engines/basic.ex`): `by_id`, terminal included (a late
//! `error_job` revives a completed job). Lifeline (opt-in, recommended) runs every 60 s and
//! makes executing jobs older than `rescue_after` 60 min available at once (`lifeline.ex`). 20
//! attempts; backoff 15 s + 2ⁿ s with +[0, 10 %] jitter (`worker.ex`, `backoff.ex`); the Pruner
//! (opt-in, recommended) deletes discarded jobs after 60 s (`pruner.ex`); no uniqueness by
//! default.
//! Does not: model Oban without Lifeline (`expiry = "never"` says it) or Oban Pro.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Oban,
        lease_ms: Some(3_600_000),
        heartbeat: Heartbeat::None,
        heartbeat_ms: 3_600_000,
        lease_cap_ms: None,
        stale: StaleWrites::all(WriteGuard::ById),
        lock_ttl: false,
        // The Pruner deletes completed and discarded jobs older than 60 s (every 30 s).
        finished_rows_kept_ms: Some(60_000),
        expiry: Expiry::sweep(60_000),
        on_expiry: OnExpiry::Ready,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(20),
        attempts_count: AttemptsCount::Leases,
        // `{:cancel, reason}`.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff {
            formula: BackoffFormula::Exp2Offset,
            base_ms: 1_000,
            cap_ms: u64::MAX,
            offset_ms: 15_000,
            index_from: 0,
            jitter: JitterMode::Up,
            jitter_pct: 10,
            jitter_step_ms: 0,
        },
        dlq: Dlq {
            mode: DlqMode::Discarded,
            capacity: None,
            retention_ms: Some(60_000),
        },
        // `unique: false` unless the worker or the insert sets `unique:` (lib/oban/job.ex).
        unique: Unique::None,
        deadline_ms: None,
        sources:
            "docs/queues.md §1.5: oban-bg/oban@2939e31 lib/oban/engines/basic.ex, lifeline.ex, \
                  pruner.ex, worker.ex, backoff.ex, job.ex, config.ex",
    }
}

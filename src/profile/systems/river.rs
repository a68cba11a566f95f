//! River (Go, PostgreSQL).
//!
//! Owns: River's values (docs/queues.md §1.4, `riverqueue/river@fdf6cdf`). No lease in the
//! store and no renewal in OSS (#682, #773): a fetch sets `state = 'running'` and
//! `attempted_at`. Completion, retry and discard change a row only while it is running, with no
//! attempt check (`JobSetStateIfRunningMany`): `if_leased`. The rescuer runs every 30 s
//! (`JobRescuerIntervalDefault`) and takes jobs running for longer than 1 h
//! (`RescueStuckJobsAfter`), scheduling them with the retry policy; its update matches by id
//! (`JobRescueMany`, riverqueue/river#1302, guarded by #1373 after this snapshot). 25 attempts
//! (`river_common.go`); backoff n⁴ s ±10 % (`retrypolicy/default.go`); discarded jobs deleted
//! after 7 days (`river_shared_maintenance.go`); no uniqueness unless `UniqueOpts`.
//! Does not: model `JobTimeout` (which only cancels a context the job may ignore) or River Pro.

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::River,
        lease_ms: Some(3_600_000),
        heartbeat: Heartbeat::None,
        heartbeat_ms: 3_600_000,
        lease_cap_ms: None,
        stale: StaleWrites::all(WriteGuard::IfLeased),
        lock_ttl: false,
        // Completed jobs are deleted by the cleaner after 24 h.
        finished_rows_kept_ms: Some(86_400_000),
        expiry: Expiry::sweep(30_000),
        on_expiry: OnExpiry::Retry,
        stall_limit: 0,
        rescue_write: RescueWrite::ById,
        // The time between the rescuer's select and its update is not a setting; 0 here, and
        // riverqueue/river#1302's incident scenario sets the race it reports.
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: Some(25),
        attempts_count: AttemptsCount::Leases,
        // `JobCancel`.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff {
            formula: BackoffFormula::Pow4,
            base_ms: 1_000,
            cap_ms: u64::MAX,
            offset_ms: 0,
            index_from: 0,
            jitter: JitterMode::Symmetric,
            jitter_pct: 10,
            jitter_step_ms: 0,
        },
        dlq: Dlq {
            mode: DlqMode::Discarded,
            capacity: None,
            retention_ms: Some(604_800_000),
        },
        // `Insert` makes a new job unless `UniqueOpts` is set (insert_opts.go).
        unique: Unique::None,
        deadline_ms: None,
        sources: "docs/queues.md §1.4: riverqueue/river@fdf6cdf client.go, internal/maintenance/job_rescuer.go, \
                  internal/retrypolicy/default.go, internal/rivercommon/river_common.go, \
                  riverdriver/riverpgxv5/internal/dbsqlc/river_job.sql; riverqueue/river#1302, #1373",
    }
}

//! Temporal activities.
//!
//! Owns: Temporal's values (docs/queues.md §1.11, `temporalio/temporal@6805cae`). The lease is
//! the Start-To-Close timeout, which has no default: a scenario under this profile must set
//! `lease_ms`, as Temporal refuses an activity with neither timeout. Heartbeats only matter
//! with a Heartbeat Timeout (none by default). A completion or failure whose task token carries
//! another attempt is refused (`activity_util.go`): fenced. The attempt times out on a
//! server-side timer and the retry policy decides (`fail`). Unlimited attempts; backoff 1 s ×
//! 2ⁿ⁻¹ capped at 100 s, no jitter (`common/backoff/retry.go`); no DLQ (the failure goes to the
//! workflow); a workflow id is refused while its run is open and runs again after it closes
//! (`common/enums/defaults.go`).
//! Does not: model the by-id completion calls (`RespondActivityTaskCompletedById`) or
//! Schedule-To-Close (default ∞: no deadline).

use crate::profile::*;

pub fn semantics() -> Semantics {
    Semantics {
        profile: Profile::Temporal,
        // Required: `resolve` refuses a scenario that does not set it.
        lease_ms: None,
        heartbeat: Heartbeat::None,
        heartbeat_ms: 30_000,
        lease_cap_ms: None,
        stale: StaleWrites::all(WriteGuard::Reject),
        lock_ttl: false,
        finished_rows_kept_ms: None,
        expiry: Expiry::TIMER,
        on_expiry: OnExpiry::Fail,
        stall_limit: 0,
        rescue_write: RescueWrite::Guarded,
        rescue_gap_ms: 0,
        fetch: Fetch::Lease,
        max_attempts: None,
        attempts_count: AttemptsCount::Leases,
        // A non-retryable failure.
        permanent_error: PermanentError::DeadLetter,
        backoff: Backoff::exp2(1_000, 100_000, JitterMode::None),
        dlq: Dlq::KEPT,
        // StartWorkflowExecution: WorkflowIdConflictPolicy FAIL while the run is open,
        // WorkflowIdReusePolicy ALLOW_DUPLICATE after it closes (common/enums/defaults.go).
        unique: Unique::ConflictWhileRunning,
        deadline_ms: None,
        sources: "docs/queues.md §1.11: temporalio/temporal@6805cae common/retrypolicy/retry_policy.go, \
                  common/backoff/retry.go, service/history/api/activity_util.go, common/enums/defaults.go; \
                  temporalio/documentation@0217b71 docs/encyclopedia/detecting-activity-failures.mdx",
    }
}

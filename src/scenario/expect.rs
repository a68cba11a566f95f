//! The `[expect]` block: what a run of the scenario must show.
//!
//! Owns: `Expect` (counts, percentiles, violations, `sometimes` properties, replay, trace hash)
//! and `ReplayExpectation`.
//! Does not: check a run against it (`run.rs`) or validate the names it holds (`validate.rs`).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayExpectation {
    Identical,
    Diverges,
}

/// What a scenario must show. Every field is optional; `run` exits 1 when one is not met.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub enqueued: Option<u64>,
    pub acked: Option<u64>,
    pub dead_lettered: Option<u64>,
    pub cancelled: Option<u64>,
    pub unfinished: Option<u64>,
    pub extract_calls: Option<u64>,
    pub attempts: Option<u64>,
    pub results_committed: Option<u64>,
    pub deduped_commits: Option<u64>,
    pub payload_conflicts: Option<u64>,
    pub enqueue_deduped: Option<u64>,
    pub outbox_events: Option<u64>,
    pub published: Option<u64>,
    pub republished: Option<u64>,
    pub consumer_applied: Option<u64>,
    pub consumer_duplicates: Option<u64>,
    pub reviews_done: Option<u64>,
    pub stale_rejections: Option<u64>,
    pub leases_expired: Option<u64>,
    pub worker_crashes: Option<u64>,
    pub relay_crashes: Option<u64>,
    pub dlq_permanent_error: Option<u64>,
    pub dlq_max_attempts_exceeded: Option<u64>,
    pub reprocessed: Option<u64>,
    pub reprocess_refused: Option<u64>,
    pub reprocess_rate_limited: Option<u64>,
    pub dlq_evicted: Option<u64>,
    pub dlq_size_max: Option<u64>,
    pub outbox_pruned: Option<u64>,
    pub outbox_rows_max: Option<u64>,
    pub outbox_rows_final: Option<u64>,
    pub retries_peak_per_s: Option<u64>,
    pub depth_max_after_recovery: Option<u64>,
    pub max_attempts_seen: Option<u64>,
    pub depth_min: Option<u64>,
    pub depth_max: Option<u64>,
    pub inference_ms_p50: Option<u64>,
    pub review_wait_ms_p50: Option<u64>,
    /// The invariants this scenario must violate (and no others). `[]` means all hold.
    pub violations: Option<Vec<String>>,
    /// `sometimes` properties this run must reach.
    pub sometimes: Option<Vec<String>>,
    /// `sometimes` properties a sweep of this scenario must reach in at least one seed (its
    /// coverage gate); a single run need not.
    pub sweep_sometimes: Option<Vec<String>>,
    /// Re-running the same seed must give the same trace (`identical`) or not (`diverges`).
    pub replay: Option<ReplayExpectation>,
    /// The run's trace hash (16 hex digits): pins the exact history, as a frozen scenario does.
    pub trace_hash: Option<String>,
}

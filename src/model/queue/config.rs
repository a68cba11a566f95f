//! The queue's settings: its lease, deadline and attempts, its uniqueness mode, and the bug
//! switches that break it on purpose.
//!
//! Owns: [`QueueConfig`]. Does not: act on them (see `queue.rs`).

use crate::profile::Unique;

#[derive(Clone, Copy, Debug)]
pub struct QueueConfig {
    pub lease_ms: u64,
    pub deadline_ms: u64,
    pub attempts_max: u32,
    /// Bug switch `no_fencing`: ack / nack / heartbeat accept any token.
    pub bug_no_fencing: bool,
    /// Bug switch `skip_deadline_check`: lease jobs whose deadline has passed.
    pub bug_skip_deadline_check: bool,
    /// Bug switch `unbounded_retries`: re-lease an expired job whatever its attempt count.
    pub bug_unbounded_retries: bool,
    /// Bug switch `reuse_on_conflict`: same key, different payload silently reuses the job.
    pub bug_reuse_on_conflict: bool,
    /// Bug switch `token_reuse`: a re-lease after expiry keeps the old fencing token.
    pub bug_token_reuse: bool,
    /// Bug switch `backoff_ignored`: a retried job is visible at once.
    pub bug_backoff_ignored: bool,
    /// Bug switch `deadline_tripled`: deadlineAt = createdAt + 3 x deadline_ms.
    pub bug_deadline_tripled: bool,
    /// Bug switch `depth_never_decrements`: leasing a job does not decrement the depth.
    pub bug_depth_never_decrements: bool,
    /// Bug switch `heartbeat_not_stored`: a heartbeat does not move leaseUntil.
    pub bug_heartbeat_not_stored: bool,
    /// Bug switch `early_expiry`: a lease expires at leaseUntil instead of just after it.
    pub bug_early_expiry: bool,
    /// Bug switch `unfenced_heartbeat`: heartbeats skip the token check.
    pub bug_unfenced_heartbeat: bool,
    /// What a submit of a key already known does (`[queue] unique`; durasim: unique for ever).
    pub unique: Unique,
}

impl QueueConfig {
    /// A queue with these settings and no bug switch on.
    pub fn new(lease_ms: u64, deadline_ms: u64, attempts_max: u32) -> QueueConfig {
        QueueConfig {
            lease_ms,
            deadline_ms,
            attempts_max,
            bug_no_fencing: false,
            bug_skip_deadline_check: false,
            bug_unbounded_retries: false,
            bug_reuse_on_conflict: false,
            bug_token_reuse: false,
            bug_backoff_ignored: false,
            bug_deadline_tripled: false,
            bug_depth_never_decrements: false,
            bug_heartbeat_not_stored: false,
            bug_early_expiry: false,
            bug_unfenced_heartbeat: false,
            unique: Unique::Forever,
        }
    }
}

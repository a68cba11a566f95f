//! The queue's settings: its lease, deadline and attempts, its uniqueness mode, and the bug
//! switches that break it on purpose.
//!
//! Owns: [`QueueConfig`]. Does not: act on them (see `queue.rs`).

use crate::profile::Unique;
use crate::vocab::bugs::BugSet;

#[derive(Clone, Copy, Debug, Hash)]
pub struct QueueConfig {
    pub lease_ms: u64,
    pub deadline_ms: u64,
    pub attempts_max: u32,
    /// The bug switches on; the queue reads those whose site is the queue (`no_fencing`,
    /// `skip_deadline_check`, `unbounded_retries`, `reuse_on_conflict`, `token_reuse`,
    /// `backoff_ignored`, `deadline_tripled`, `depth_never_decrements`, `heartbeat_not_stored`,
    /// `early_expiry`, `unfenced_heartbeat`: `vocab::bugs`).
    pub bugs: BugSet,
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
            bugs: BugSet::EMPTY,
            unique: Unique::Forever,
        }
    }
}

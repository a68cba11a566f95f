//! Time-based DLQ retention (docs/queues.md M9): when a dead job's entry is deleted.
//!
//! Owns: the moment an entry leaves the DLQ by age: `retention_ms` after it was filed
//! (Sidekiq's dead set, River's and pg-boss's failed jobs, Oban's Pruner), or after the job's
//! **original enqueue** for an SQS standard redrive DLQ ("a message that spent 1 day in the
//! source queue is deleted from a 4-day DLQ after 3 days"). The eviction is recorded as today's
//! `dlq_evicted`, so `no_silent_drop` judges it unchanged.
//! Does not: evict by capacity (see `model::dead_letter`) or schedule anything.

use super::params::{Dlq, DlqMode};
use crate::base::ids::SimTime;

/// When the entry of a job enqueued at `enqueued_at` and dead-lettered at `dead_at` expires,
/// or `None` if it is kept.
pub fn expires_at(dlq: &Dlq, enqueued_at: SimTime, dead_at: SimTime) -> Option<SimTime> {
    let keep = dlq.retention_ms?;
    let from = match dlq.mode {
        DlqMode::Redrive => enqueued_at,
        DlqMode::Queue | DlqMode::DeadSet | DlqMode::Discarded | DlqMode::Kept => dead_at,
    };
    // An entry is kept through its last moment; it is gone the millisecond after.
    Some(from.saturating_add(keep).max(dead_at) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    const DAY: u64 = 86_400_000;

    #[test]
    fn an_sqs_dlq_counts_from_the_original_enqueue() {
        let sqs = Profile::Sqs.defaults().dlq;
        // Enqueued at 0, dead after one day: gone at 4 days, 3 days after it got there.
        assert_eq!(expires_at(&sqs, 0, DAY), Some(4 * DAY + 1));
        // Dead after 5 days in the source queue: gone at once.
        assert_eq!(expires_at(&sqs, 0, 5 * DAY), Some(5 * DAY + 1));
    }

    #[test]
    fn other_dlqs_count_from_the_dead_letter() {
        let oban = Profile::Oban.defaults().dlq;
        assert_eq!(expires_at(&oban, 0, DAY), Some(DAY + 60_001));
        assert_eq!(expires_at(&Profile::Durasim.defaults().dlq, 0, DAY), None);
        assert_eq!(expires_at(&Profile::Bullmq.defaults().dlq, 0, DAY), None);
    }
}

//! The figures of a run a scenario's `[expect]` block can pin, named once.
//!
//! Owns: [`Counter`] (one variant per figure: its `[expect]` key, and where [`Metrics`] holds
//! its value) and [`Counts`] (an optional value per counter: what `[expect]` asks for, what
//! `--freeze` pins). `scenario/expect.rs` reads and writes the keys through this list,
//! `run::check_expectations` compares through it and `sweep/freeze.rs` pins through it, so a
//! new figure is one variant here (and its count in `metrics.rs`).
//! Does not: count (`metrics.rs` counts history records) or judge (`run.rs` compares; the
//! checker recomputes its own figures from the history, independently of this list).

use super::metrics::Metrics;

macro_rules! counters {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A figure of a run that `[expect]` can pin, in `[expect]`'s order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Counter {
            $($(#[$doc])* $variant,)*
        }

        impl Counter {
            /// Every counter, in the order `[expect]` lists (and `--freeze` writes) them.
            pub const ALL: &'static [Counter] = &[$(Counter::$variant,)*];

            /// Its key in `[expect]`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Counter::$variant => $name,)*
                }
            }
        }
    };
}

counters! {
    Enqueued = "enqueued",
    Acked = "acked",
    DeadLettered = "dead_lettered",
    Cancelled = "cancelled",
    Unfinished = "unfinished",
    ExtractCalls = "extract_calls",
    /// Leases granted.
    Attempts = "attempts",
    ResultsCommitted = "results_committed",
    DedupedCommits = "deduped_commits",
    PayloadConflicts = "payload_conflicts",
    EnqueueDeduped = "enqueue_deduped",
    OutboxEvents = "outbox_events",
    Published = "published",
    Republished = "republished",
    ConsumerApplied = "consumer_applied",
    ConsumerDuplicates = "consumer_duplicates",
    ReviewsDone = "reviews_done",
    StaleRejections = "stale_rejections",
    LeasesExpired = "leases_expired",
    WorkerCrashes = "worker_crashes",
    RelayCrashes = "relay_crashes",
    DlqPermanentError = "dlq_permanent_error",
    DlqMaxAttemptsExceeded = "dlq_max_attempts_exceeded",
    Reprocessed = "reprocessed",
    ReprocessRefused = "reprocess_refused",
    ReprocessRateLimited = "reprocess_rate_limited",
    DlqEvicted = "dlq_evicted",
    DlqSizeMax = "dlq_size_max",
    OutboxPruned = "outbox_pruned",
    OutboxRowsMax = "outbox_rows_max",
    OutboxRowsFinal = "outbox_rows_final",
    RetriesPeakPerS = "retries_peak_per_s",
    /// The largest depth after an outage ended (none without `[faults] outage`).
    DepthMaxAfterRecovery = "depth_max_after_recovery",
    MaxAttemptsSeen = "max_attempts_seen",
    DepthMin = "depth_min",
    DepthMax = "depth_max",
    InferenceMsP50 = "inference_ms_p50",
    ReviewWaitMsP50 = "review_wait_ms_p50",
}

impl Counter {
    /// The counter whose `[expect]` key is `name`.
    pub fn parse(name: &str) -> Option<Counter> {
        Counter::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Its value in a run's metrics (`None`: the run has no such figure, as a recovery depth
    /// without an outage).
    pub fn of(self, m: &Metrics) -> Option<u64> {
        Some(match self {
            Counter::Enqueued => m.jobs.enqueued,
            Counter::Acked => m.jobs.acked,
            Counter::DeadLettered => m.jobs.dead_lettered,
            Counter::Cancelled => m.jobs.cancelled,
            Counter::Unfinished => m.jobs.unfinished,
            Counter::ExtractCalls => m.effects.extract_calls,
            Counter::Attempts => m.leases.granted,
            Counter::ResultsCommitted => m.effects.results_committed,
            Counter::DedupedCommits => m.effects.deduped_commits,
            Counter::PayloadConflicts => m.effects.payload_conflicts,
            Counter::EnqueueDeduped => m.jobs.enqueue_deduped,
            Counter::OutboxEvents => m.effects.outbox_events,
            Counter::Published => m.effects.published,
            Counter::Republished => m.effects.republished,
            Counter::ConsumerApplied => m.effects.consumer_applied,
            Counter::ConsumerDuplicates => m.effects.consumer_duplicates,
            Counter::ReviewsDone => m.effects.reviews_done,
            Counter::StaleRejections => m.leases.stale_rejections,
            Counter::LeasesExpired => m.leases.expired,
            Counter::WorkerCrashes => m.crashes.worker,
            Counter::RelayCrashes => m.crashes.relay,
            Counter::DlqPermanentError => m.dlq.permanent_error,
            Counter::DlqMaxAttemptsExceeded => m.dlq.max_attempts_exceeded,
            Counter::Reprocessed => m.reprocessed,
            Counter::ReprocessRefused => m.reprocess_refused,
            Counter::ReprocessRateLimited => m.reprocess_rate_limited,
            Counter::DlqEvicted => m.dlq.evicted,
            Counter::DlqSizeMax => m.dlq.size_max,
            Counter::OutboxPruned => m.outbox.pruned,
            Counter::OutboxRowsMax => m.outbox.rows_max,
            Counter::OutboxRowsFinal => m.outbox.rows_final,
            Counter::RetriesPeakPerS => m.retries.peak_per_s,
            Counter::DepthMaxAfterRecovery => return m.retries.depth_max_after_recovery,
            Counter::MaxAttemptsSeen => m.leases.max_attempts_seen,
            Counter::DepthMin => m.depth_stats().min,
            Counter::DepthMax => m.depth_stats().max,
            Counter::InferenceMsP50 => m.inference.stats().p50,
            Counter::ReviewWaitMsP50 => m.review_wait.stats().p50,
        })
    }

    /// `[expect]`'s keys for counters, for error messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Counter::ALL.iter().map(|c| c.name())
    }
}

/// A value, or none, per counter: `[expect]`'s counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts([Option<u64>; Counter::ALL.len()]);

impl Default for Counts {
    fn default() -> Self {
        Counts([None; Counter::ALL.len()])
    }
}

impl Counts {
    /// The value asked for `c`, if any.
    pub fn get(&self, c: Counter) -> Option<u64> {
        self.0[c as usize]
    }

    /// Sets (or, with `None`, removes) the value of `c`.
    pub fn set(&mut self, c: Counter, value: Option<u64>) {
        self.0[c as usize] = value;
    }

    /// The counters given a value, in [`Counter::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL
            .iter()
            .filter_map(|&c| self.get(c).map(|v| (c, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_one_name_and_a_slot() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?} out of order");
            assert_eq!(Counter::parse(c.name()), Some(*c));
        }
        let mut counts = Counts::default();
        for (i, c) in Counter::ALL.iter().enumerate().rev() {
            counts.set(*c, Some(i as u64));
        }
        let listed: Vec<(Counter, u64)> = counts.iter().collect();
        assert_eq!(listed.len(), Counter::ALL.len());
        assert!(listed
            .iter()
            .enumerate()
            .all(|(i, (c, v))| *c as usize == i && *v == i as u64));
        counts.set(Counter::Acked, None);
        assert_eq!(counts.get(Counter::Acked), None);
    }
}

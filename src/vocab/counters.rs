//! The figures of a run that are counted, shown and pinned, named once.
//!
//! Owns: [`Counter`] and its table: per figure its `summary.json` object ([`Group`]) and key,
//! its `[expect]` key (if a scenario can pin it), its word in the text summary (if printed);
//! [`Tally`] (a count per counted figure: what the metrics keep and `summary.json` shows, and
//! what the checker's cross-check compares) and [`Counts`] (an optional value per figure: what
//! `[expect]` asks for, what `--freeze` pins). The metrics count into a `Tally`
//! (`observe/metrics.rs`), `shell/report/summary.rs` writes its groups, the text summary prints its
//! words, `scenario/expect.rs` reads and writes the keys, `run::check_expectations` and
//! `sweep/freeze.rs` go through it, and the checker names its own figures by it. So a new
//! counted figure is one row here and the line in `metrics.rs` that counts it; a derived one
//! (read from the metrics' other figures) is one row and its arm in `Metrics::figure`.
//! Does not: count (`observe/metrics.rs` counts history records) or judge (`run/` compares;
//! the checker recomputes its own figures from the history, independently of the metrics).

/// Where a counted figure shows in `summary.json`: the object holding it, or the top level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Jobs,
    Effects,
    Leases,
    Crashes,
    Dlq,
    /// `summary.json`'s top level.
    Top,
    Outbox,
    Retries,
}

impl Group {
    /// In `summary.json`'s order.
    pub const ALL: [Group; 8] = [
        Group::Jobs,
        Group::Effects,
        Group::Leases,
        Group::Crashes,
        Group::Dlq,
        Group::Top,
        Group::Outbox,
        Group::Retries,
    ];

    /// Its object's key in `summary.json` (none: the top level).
    pub fn key(self) -> Option<&'static str> {
        match self {
            Group::Jobs => Some("jobs"),
            Group::Effects => Some("effects"),
            Group::Leases => Some("leases"),
            Group::Crashes => Some("crashes"),
            Group::Dlq => Some("dlq"),
            Group::Top => None,
            Group::Outbox => Some("outbox"),
            Group::Retries => Some("retries"),
        }
    }
}

macro_rules! counters {
    (
        counted {
            $($(#[$doc:meta])* $variant:ident: $group:ident $key:literal, $expect:tt, $text:tt;)*
        }
        derived {
            $($(#[$ddoc:meta])* $dvariant:ident: $dexpect:literal;)*
        }
    ) => {
        /// A figure of a run: counted (a slot of [`Tally`], shown in `summary.json`), or derived
        /// from the metrics' other figures. In `[expect]`'s order: the counted ones first.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Counter {
            $($(#[$doc])* $variant,)*
            $($(#[$ddoc])* $dvariant,)*
        }

        impl Counter {
            /// Every counter, in the order `[expect]` lists (and `--freeze` writes) them.
            pub const ALL: &'static [Counter] = &[$(Counter::$variant,)* $(Counter::$dvariant,)*];

            /// How many are counted: they come first, and have the slots of a [`Tally`].
            pub const COUNTED: usize = [$(Counter::$variant,)*].len();

            /// Its key in `[expect]` (none: a scenario cannot pin it).
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(Counter::$variant => counters!(@opt $expect),)*
                    $(Counter::$dvariant => Some($dexpect),)*
                }
            }

            /// Its object and key in `summary.json` (none: a derived figure, shown elsewhere if
            /// at all).
            pub fn summary(self) -> Option<(Group, &'static str)> {
                match self {
                    $(Counter::$variant => Some((Group::$group, $key)),)*
                    $(Counter::$dvariant => None,)*
                }
            }

            /// Its words in the text summary's line for its group (none: not printed).
            pub fn words(self) -> Option<&'static str> {
                match self {
                    $(Counter::$variant => counters!(@opt $text),)*
                    $(Counter::$dvariant => None,)*
                }
            }
        }
    };
    (@opt -) => { None };
    (@opt $x:literal) => { Some($x) };
}

// Within a group, the rows are in `summary.json`'s order; across groups, in `[expect]`'s.
// `-`: the figure has no `[expect]` key, or no words in the text summary.
#[rustfmt::skip]
counters! {
    counted {
        // variant                group    summary.json key         [expect] key                  text summary
        Enqueued:                 Jobs     "enqueued",              "enqueued",                   "enqueued";
        Acked:                    Jobs     "acked",                 "acked",                      "acked";
        DeadLettered:             Jobs     "deadLettered",          "dead_lettered",              "dead-lettered";
        Cancelled:                Jobs     "cancelled",             "cancelled",                  "cancelled";
        /// Jobs without a terminal record when the run ended.
        Unfinished:               Jobs     "unfinished",            "unfinished",                 "unfinished";
        ExtractCalls:             Effects  "extractCalls",          "extract_calls",              "extract calls";
        /// Leases granted.
        Attempts:                 Leases   "granted",               "attempts",                   "granted";
        ResultsCommitted:         Effects  "resultsCommitted",      "results_committed",          "results";
        DedupedCommits:           Effects  "dedupedCommits",        "deduped_commits",            "deduped commits";
        /// Refused enqueues and commits (same key, other payload).
        PayloadConflicts:         Effects  "payloadConflicts",      "payload_conflicts",          -;
        EnqueueDeduped:           Jobs     "enqueueDeduped",        "enqueue_deduped",            -;
        EnqueueConflicts:         Jobs     "enqueueConflicts",      -,                            -;
        OutboxEvents:             Effects  "outboxEvents",          "outbox_events",              "outbox events";
        Published:                Effects  "published",             "published",                  -;
        Republished:              Effects  "republished",           "republished",                -;
        ConsumerApplied:          Effects  "consumerApplied",       "consumer_applied",           "applied";
        ConsumerDuplicates:       Effects  "consumerDuplicates",    "consumer_duplicates",        "duplicates absorbed";
        ReviewsDone:              Effects  "reviewsDone",           "reviews_done",               -;
        LeasesExpired:            Leases   "expired",               "leases_expired",             "expired";
        Heartbeats:               Leases   "heartbeats",            -,                            "heartbeats";
        /// Writes refused for a stale fence.
        StaleRejections:          Leases   "staleRejections",       "stale_rejections",           "stale rejections";
        /// Acks refused, for a stale fence or because the job was already terminal.
        AckRejections:            Leases   "ackRejections",         -,                            -;
        WorkerCrashes:            Crashes  "worker",                "worker_crashes",             -;
        RelayCrashes:             Crashes  "relay",                 "relay_crashes",              -;
        ConsumerCrashes:          Crashes  "consumer",              "consumer_crashes",           -;
        DlqPermanentError:        Dlq      "permanent_error",       "dlq_permanent_error",        -;
        DlqMaxAttemptsExceeded:   Dlq      "max_attempts_exceeded", "dlq_max_attempts_exceeded",  -;
        /// Entries whose reason is not a code (only with `raw_dlq_reason`).
        DlqOther:                 Dlq      "other",                 -,                            -;
        Reprocessed:              Top      "reprocessed",           "reprocessed",                -;
        ReprocessRefused:         Top      "reprocessRefused",      "reprocess_refused",          -;
        /// Refusals by the per-tenant rate limit (`[dlq] reprocess_limit`).
        ReprocessRateLimited:     Top      "reprocessRateLimited",  "reprocess_rate_limited",     -;
        /// Entries dropped by a full DLQ (`[dlq] capacity`).
        DlqEvicted:               Dlq      "evicted",               "dlq_evicted",                -;
        /// The most entries the DLQ held at once (dead-lettered minus evicted).
        DlqSizeMax:               Dlq      "size_max",              "dlq_size_max",               -;
        OutboxPruned:             Outbox   "pruned",                "outbox_pruned",              -;
        OutboxRowsMax:            Outbox   "rowsMax",               "outbox_rows_max",            -;
        OutboxRowsFinal:          Outbox   "rowsFinal",             "outbox_rows_final",          -;
        RetriesTotal:             Retries  "total",                 -,                            -;
        /// The most retries scheduled in one second of virtual time ([k s, k+1 s)).
        RetriesPeakPerS:          Retries  "peakPerS",              "retries_peak_per_s",         -;
        MaxAttemptsSeen:          Leases   "maxAttemptsSeen",       "max_attempts_seen",          -;
    }
    derived {
        // variant                [expect] key
        /// The largest depth after an outage ended (none without `[faults] outage`).
        DepthMaxAfterRecovery:    "depth_max_after_recovery";
        DepthMin:                 "depth_min";
        DepthMax:                 "depth_max";
        InferenceMsP50:           "inference_ms_p50";
        ReviewWaitMsP50:          "review_wait_ms_p50";
    }
}

impl Counter {
    /// The counter whose `[expect]` key is `name`.
    pub fn parse(name: &str) -> Option<Counter> {
        Counter::ALL
            .iter()
            .copied()
            .find(|c| c.name() == Some(name))
    }

    /// `[expect]`'s keys for counters, for error messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Counter::ALL.iter().filter_map(|c| c.name())
    }

    /// The counted figures of `group` with their `summary.json` keys, in its order.
    pub fn of_group(group: Group) -> impl Iterator<Item = (Counter, &'static str)> {
        Counter::ALL[..Counter::COUNTED]
            .iter()
            .filter_map(move |c| match c.summary() {
                Some((g, key)) if g == group => Some((*c, key)),
                _ => None,
            })
    }

    /// Its path in `summary.json` (`jobs.acked`, `reprocessed`); none for a derived figure.
    pub fn path(self) -> Option<String> {
        let (group, key) = self.summary()?;
        Some(match group.key() {
            Some(g) => format!("{g}.{key}"),
            None => key.to_string(),
        })
    }
}

/// A count per counted figure ([`Counter::COUNTED`] of them), indexed by [`Counter`]: what the
/// metrics keep and `summary.json` shows. A derived counter has no slot: indexing one panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tally([u64; Counter::COUNTED]);

impl Default for Tally {
    fn default() -> Self {
        Tally([0; Counter::COUNTED])
    }
}

impl Tally {
    #[inline]
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }
    #[inline]
    pub fn add(&mut self, c: Counter, n: u64) {
        self.0[c as usize] += n;
    }
    /// Keeps the larger of the count and `v` (a maximum over the run).
    #[inline]
    pub fn raise(&mut self, c: Counter, v: u64) {
        let slot = &mut self.0[c as usize];
        *slot = (*slot).max(v);
    }
    #[inline]
    pub fn set(&mut self, c: Counter, v: u64) {
        self.0[c as usize] = v;
    }
}

/// A value, or none, per counter: `[expect]`'s counts, or the figures the checker counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
            if let Some(name) = c.name() {
                assert_eq!(Counter::parse(name), Some(*c));
            }
            // Counted figures first, each with its place in summary.json.
            assert_eq!(c.summary().is_some(), i < Counter::COUNTED, "{c:?}");
            assert!(
                c.summary().is_some() || c.name().is_some(),
                "{c:?} is named nowhere"
            );
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

    #[test]
    fn names_and_paths_are_unique() {
        let names: Vec<&str> = Counter::names().collect();
        let paths: Vec<String> = Counter::ALL.iter().filter_map(|c| c.path()).collect();
        for list in [
            names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            paths.clone(),
        ] {
            let mut sorted = list.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), list.len(), "{list:?}");
        }
        assert_eq!(paths.len(), Counter::COUNTED);
        assert_eq!(Counter::Attempts.path().as_deref(), Some("leases.granted"));
        assert_eq!(Counter::Reprocessed.path().as_deref(), Some("reprocessed"));
        let jobs: Vec<&str> = Counter::of_group(Group::Jobs).map(|(_, k)| k).collect();
        assert_eq!(jobs[..3], ["enqueued", "acked", "deadLettered"]);
    }

    /// scenarios/README.md's `[expect]` row lists every key, in this order (the order of the
    /// error for an unknown key).
    #[test]
    fn the_scenario_readme_lists_every_expect_key() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/README.md"),
        )
        .unwrap();
        let listed = readme
            .split("counts that must match exactly: `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .expect("the [expect] row of scenarios/README.md");
        let names: Vec<&str> = Counter::names().collect();
        assert_eq!(listed.split(' ').collect::<Vec<_>>(), names);
    }

    #[test]
    fn a_tally_counts_adds_and_keeps_maxima() {
        let mut t = Tally::default();
        t.add(Counter::Acked, 1);
        t.add(Counter::Acked, 2);
        t.raise(Counter::DlqSizeMax, 4);
        t.raise(Counter::DlqSizeMax, 3);
        t.set(Counter::Unfinished, 7);
        assert_eq!(
            (
                t.get(Counter::Acked),
                t.get(Counter::DlqSizeMax),
                t.get(Counter::Unfinished),
                t.get(Counter::Enqueued)
            ),
            (3, 4, 7, 0)
        );
    }
}

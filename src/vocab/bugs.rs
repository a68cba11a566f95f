//! The bug switches: deliberate defects, each of which the checker (or the replay check) must
//! catch. The one place that declares them.
//!
//! Owns: [`Bug`] with its table [`TABLE`]: for each switch, the name users type (`--bug NAME`,
//! a `[bugs]` key, `summary.json`'s and `sweep.json`'s `bugs`), the defect it plants, its site
//! (the code path that holds the defect, [`BugSite`]), what catches it (an invariant's name, or
//! `replay`) and the shipped scenario that shows it; and [`BugSet`], the switches a run has on,
//! a bit set read where the defects live (`bugs.contains(Bug::NoFencing)`: one bit test), and
//! written in a scenario as the `[bugs]` table of every switch. The command line (`--bug`,
//! `durasim bugs`), the scenario's `[bugs]`, the model's configurations, the kernel, the metrics,
//! the sweep (its reproduce commands, freeze and shrink), the conformance harness and the tests
//! read this table and name no switch by a string of their own.
//! Does not: plant a defect (each lives where it would in real code: the row's site), or say
//! which switches a queue profile cannot act on (`scenario::refused_under`, which needs the
//! profiles). Nothing here is read by the checker: it judges the history alone.
//!
//! Adding a switch is a variant of [`Bug`] (the next discriminant), its row of [`TABLE`], and the
//! defect at its site, read as `bugs.contains(Bug::X)`; off, it changes no trace hash.
//! `tests/it/bug_table.rs` checks each row: its site names it, its demo scenario passes without it
//! and is caught with it, as the row says.

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A bug switch. Its discriminant indexes [`TABLE`] and is its bit in a [`BugSet`], so the
/// variants keep the table's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bug {
    NoFencing = 0,
    NoIdempotency = 1,
    TenantlessKeys = 2,
    NaiveDualWrite = 3,
    UnboundedRetries = 4,
    NoConsumerDedupe = 5,
    SkipDeadlineCheck = 6,
    RawDlqReason = 7,
    ReuseOnConflict = 8,
    NondeterministicStep = 9,
    TokenReuse = 10,
    AckBeforeCommit = 11,
    BackoffIgnored = 12,
    DeadlineTripled = 13,
    PermanentErrorRetried = 14,
    CancelEarly = 15,
    ReprocessSameVersion = 16,
    ReprocessCancelled = 17,
    UnrecordedEviction = 18,
    EvictNewest = 19,
    DepthNeverDecrements = 20,
    HashIgnoresContent = 21,
    HeartbeatNotStored = 22,
    EarlyExpiry = 23,
    JitterOverCap = 24,
    UnfencedHeartbeat = 25,
    RepublishMiscount = 26,
}

/// How many bug switches there are.
pub const BUG_COUNT: usize = 27;

/// Where a switch's defect lives: the code path that reads `bugs.contains(Bug::X)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BugSite {
    /// The job queue (`src/model/queue.rs`).
    Queue,
    /// The outbox (`src/model/outbox.rs`).
    Outbox,
    /// The deduping consumer (`src/model/consumer.rs`).
    Consumer,
    /// The retry policy (`src/model/retry.rs`).
    Retry,
    /// A worker's attempt (`src/model/worker.rs`).
    Worker,
    /// The dead-letter queue (`src/model/dead_letter.rs`).
    Dlq,
    /// The kernel, where it plays the producer, the model call and the DLQ's writer
    /// (`src/sim/`).
    Kernel,
    /// The metrics (`src/observe/metrics.rs`).
    Metrics,
}

impl BugSite {
    pub const ALL: [BugSite; 8] = [
        BugSite::Queue,
        BugSite::Outbox,
        BugSite::Consumer,
        BugSite::Retry,
        BugSite::Worker,
        BugSite::Dlq,
        BugSite::Kernel,
        BugSite::Metrics,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BugSite::Queue => "queue",
            BugSite::Outbox => "outbox",
            BugSite::Consumer => "consumer",
            BugSite::Retry => "retry",
            BugSite::Worker => "worker",
            BugSite::Dlq => "dlq",
            BugSite::Kernel => "kernel",
            BugSite::Metrics => "metrics",
        }
    }

    /// The source file (or folder) that holds its defects, from the repository's root.
    pub fn path(self) -> &'static str {
        match self {
            BugSite::Queue => "src/model/queue.rs",
            BugSite::Outbox => "src/model/outbox.rs",
            BugSite::Consumer => "src/model/consumer.rs",
            BugSite::Retry => "src/model/retry.rs",
            BugSite::Worker => "src/model/worker.rs",
            BugSite::Dlq => "src/model/dead_letter.rs",
            BugSite::Kernel => "src/sim/",
            BugSite::Metrics => "src/observe/metrics.rs",
        }
    }
}

/// Everything the code outside a switch's site knows about it.
#[derive(Clone, Copy, Debug, Hash)]
pub struct BugRow {
    pub bug: Bug,
    /// What users type: `--bug NAME`, the `[bugs]` key.
    pub name: &'static str,
    /// The defect it plants, in one sentence.
    pub defect: &'static str,
    /// The code paths that hold the defect, the main one first.
    pub sites: &'static [BugSite],
    /// The invariant that catches it, or `replay` for the determinism check.
    pub caught_by: &'static str,
    /// The shipped scenario (`scenarios/<demo>.toml`) that holds without the switch and is
    /// caught with it (for `replay`: whose two runs of one seed then differ).
    pub demo: &'static str,
}

/// One row per [`Bug`], in its order.
pub const TABLE: [BugRow; BUG_COUNT] = [
    BugRow {
        bug: Bug::NoFencing,
        name: "no_fencing",
        defect: "ack / nack / heartbeat accept a stale fencing token",
        sites: &[BugSite::Queue],
        caught_by: "fenced_writes",
        demo: "zombie-worker",
    },
    BugRow {
        bug: Bug::NoIdempotency,
        name: "no_idempotency",
        defect: "commits never look up the key: every attempt writes a new result and event",
        sites: &[BugSite::Outbox],
        caught_by: "single_result_per_key",
        demo: "incident-crash-before-ack",
    },
    BugRow {
        bug: Bug::TenantlessKeys,
        name: "tenantless_keys",
        defect: "keys are documentId:vN, without the tenant",
        sites: &[BugSite::Kernel],
        caught_by: "tenant_isolation",
        demo: "failure-4-tenant-collision",
    },
    BugRow {
        bug: Bug::NaiveDualWrite,
        name: "naive_dual_write",
        defect: "the result is written, then published directly, with no outbox row in between",
        sites: &[BugSite::Worker, BugSite::Kernel],
        caught_by: "event_per_result",
        demo: "failure-3-dual-write",
    },
    BugRow {
        bug: Bug::UnboundedRetries,
        name: "unbounded_retries",
        defect: "transient errors retry forever, ignoring max_attempts",
        sites: &[BugSite::Retry, BugSite::Queue],
        caught_by: "attempts_bounded",
        demo: "failure-1-retry-storm",
    },
    BugRow {
        bug: Bug::NoConsumerDedupe,
        name: "no_consumer_dedupe",
        defect: "the consumer applies every event it receives, including republished ones",
        sites: &[BugSite::Consumer],
        caught_by: "no_duplicate_effect",
        demo: "relay-republish",
    },
    BugRow {
        bug: Bug::SkipDeadlineCheck,
        name: "skip_deadline_check",
        defect: "leaseNext hands out jobs whose deadline has passed",
        sites: &[BugSite::Queue],
        caught_by: "deadline_respected",
        demo: "deadline-cancel",
    },
    BugRow {
        bug: Bug::RawDlqReason,
        name: "raw_dlq_reason",
        defect: "the DLQ stores the error's text (which quotes the document) instead of a code",
        sites: &[BugSite::Kernel],
        caught_by: "redacted_dlq",
        demo: "dlq-reprocess",
    },
    BugRow {
        bug: Bug::ReuseOnConflict,
        name: "reuse_on_conflict",
        defect: "the same key with a different payload silently reuses the existing job / result",
        sites: &[BugSite::Queue, BugSite::Outbox],
        caught_by: "payload_conflict_rejected",
        demo: "payload-conflict",
    },
    BugRow {
        bug: Bug::NondeterministicStep,
        name: "nondeterministic_step",
        defect: "the model's output comes from an unrecorded, unseeded source",
        sites: &[BugSite::Kernel],
        caught_by: "replay",
        demo: "failure-2-nondeterminism",
    },
    BugRow {
        bug: Bug::TokenReuse,
        name: "token_reuse",
        defect: "leaseNext re-leases an expired job under its old fencing token instead of a new one",
        sites: &[BugSite::Queue],
        caught_by: "fencing_token_increases",
        demo: "zombie-worker",
    },
    BugRow {
        bug: Bug::AckBeforeCommit,
        name: "ack_before_commit",
        defect: "the worker acks the job, then commits the result (a crash in between loses the effect)",
        sites: &[BugSite::Worker],
        caught_by: "acked_with_result",
        demo: "incident-crash-before-ack",
    },
    BugRow {
        bug: Bug::BackoffIgnored,
        name: "backoff_ignored",
        defect: "the queue makes a retried job visible at once, ignoring the backoff the worker asked for",
        sites: &[BugSite::Queue],
        caught_by: "backoff_respected",
        demo: "failure-1-retry-storm",
    },
    BugRow {
        bug: Bug::DeadlineTripled,
        name: "deadline_tripled",
        defect: "the queue computes deadlineAt as createdAt + 3 x deadline_ms, and enforces that",
        sites: &[BugSite::Queue],
        caught_by: "deadline_respected",
        demo: "deadline-cancel",
    },
    BugRow {
        bug: Bug::PermanentErrorRetried,
        name: "permanent_error_retried",
        defect: "the retry policy classifies schema_invalid as transient: permanent errors are retried",
        sites: &[BugSite::Retry],
        caught_by: "retry_policy_followed",
        demo: "dlq-reprocess",
    },
    BugRow {
        bug: Bug::CancelEarly,
        name: "cancel_early",
        defect: "a transient error is cancelled when its retry would land past the deadline, before the deadline has passed",
        sites: &[BugSite::Retry],
        caught_by: "retry_policy_followed",
        // No scenario of its own: chaos.toml's own seed shows it.
        demo: "chaos",
    },
    BugRow {
        bug: Bug::ReprocessSameVersion,
        name: "reprocess_same_version",
        defect: "an operator's reprocess resubmits the dead job's key without bumping its version: every reprocess is refused as version_exists",
        sites: &[BugSite::Dlq],
        caught_by: "reprocess_justified",
        demo: "dlq-reprocess",
    },
    BugRow {
        bug: Bug::ReprocessCancelled,
        name: "reprocess_cancelled",
        defect: "an operator's reprocess of a cancelled job is let through as if it were dead-lettered",
        sites: &[BugSite::Dlq],
        caught_by: "audited_reprocess",
        demo: "deadline-cancel",
    },
    BugRow {
        bug: Bug::UnrecordedEviction,
        name: "unrecorded_eviction",
        defect: "a full DLQ evicts its oldest entry without recording the eviction",
        sites: &[BugSite::Kernel],
        caught_by: "dlq_bounded",
        demo: "dlq-eviction",
    },
    BugRow {
        bug: Bug::EvictNewest,
        name: "evict_newest",
        defect: "a full DLQ evicts its newest entry instead of its oldest",
        sites: &[BugSite::Dlq],
        caught_by: "dlq_bounded",
        demo: "dlq-eviction",
    },
    BugRow {
        bug: Bug::DepthNeverDecrements,
        name: "depth_never_decrements",
        defect: "the queue's depth counter is not decremented when a job is leased",
        sites: &[BugSite::Queue],
        caught_by: "depth_matches_history",
        demo: "synthetic-12",
    },
    BugRow {
        bug: Bug::HashIgnoresContent,
        name: "hash_ignores_content",
        defect: "the payload hash is computed without the content: a changed payload under a key looks the same",
        sites: &[BugSite::Kernel],
        caught_by: "payload_conflict_rejected",
        demo: "payload-conflict",
    },
    BugRow {
        bug: Bug::HeartbeatNotStored,
        name: "heartbeat_not_stored",
        defect: "a heartbeat answers the new leaseUntil but the queue keeps the old one: renewed leases expire early",
        sites: &[BugSite::Queue],
        caught_by: "single_live_lease",
        demo: "paused-holder",
    },
    BugRow {
        bug: Bug::EarlyExpiry,
        name: "early_expiry",
        defect: "the queue treats leaseUntil as exclusive: a lease expires in its last millisecond, while still live",
        sites: &[BugSite::Queue],
        caught_by: "single_live_lease",
        demo: "zombie-worker",
    },
    BugRow {
        bug: Bug::JitterOverCap,
        name: "jitter_over_cap",
        defect: "full jitter draws in [0, 2d] instead of [0, d]: retry delays exceed the capped backoff",
        sites: &[BugSite::Retry],
        caught_by: "backoff_respected",
        demo: "retry-storm-full-jitter",
    },
    BugRow {
        bug: Bug::UnfencedHeartbeat,
        name: "unfenced_heartbeat",
        defect: "heartbeats skip the fencing check (\"a heartbeat is harmless\"): a zombie's heartbeat renews the new holder's lease",
        sites: &[BugSite::Queue],
        caught_by: "fenced_writes",
        demo: "paused-holder",
    },
    BugRow {
        bug: Bug::RepublishMiscount,
        name: "republish_miscount",
        defect: "the metrics count every publish as a republish in summary.json",
        sites: &[BugSite::Metrics],
        caught_by: "summary_matches_history",
        demo: "relay-republish",
    },
];

// Each row sits at its switch's discriminant.
const _: () = {
    let mut i = 0;
    while i < BUG_COUNT {
        assert!(TABLE[i].bug as usize == i, "TABLE is out of Bug's order");
        i += 1;
    }
};

impl Bug {
    /// Every switch, in table order.
    pub const ALL: [Bug; BUG_COUNT] = {
        let mut all = [Bug::NoFencing; BUG_COUNT];
        let mut i = 0;
        while i < BUG_COUNT {
            all[i] = TABLE[i].bug;
            i += 1;
        }
        all
    };

    /// Every switch's name, in table order (the `[bugs]` keys).
    pub const NAMES: [&'static str; BUG_COUNT] = {
        let mut names = [""; BUG_COUNT];
        let mut i = 0;
        while i < BUG_COUNT {
            names[i] = TABLE[i].name;
            i += 1;
        }
        names
    };

    #[inline]
    pub const fn row(self) -> &'static BugRow {
        &TABLE[self as usize]
    }

    pub const fn name(self) -> &'static str {
        self.row().name
    }

    pub const fn defect(self) -> &'static str {
        self.row().defect
    }

    pub const fn sites(self) -> &'static [BugSite] {
        self.row().sites
    }

    /// The invariant that catches it, or `replay`.
    pub const fn caught_by(self) -> &'static str {
        self.row().caught_by
    }

    /// The shipped scenario that shows it (`scenarios/<demo>.toml`).
    pub const fn demo(self) -> &'static str {
        self.row().demo
    }

    /// The switch named `name`, or an error that lists the names allowed.
    pub fn parse(name: &str) -> Result<Bug, UnknownBug> {
        Bug::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or(UnknownBug)
    }

    /// The names a user may give, for error messages.
    pub fn allowed() -> String {
        Bug::NAMES.join(", ")
    }
}

/// A name that is no bug switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error, Hash)]
#[error("no such bug switch; allowed: {}", Bug::allowed())]
pub struct UnknownBug;

/// The switches a run has on: one bit per [`Bug`], so that testing one where its defect lives
/// costs what testing a `bool` did. Written (`[bugs]`, a frozen scenario) as the table of every
/// switch, `true` for those on; read from such a table, where an unknown key is an error naming
/// the keys allowed and a missing one is off.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BugSet(u32);

const _: () = assert!(BUG_COUNT <= u32::BITS as usize);

impl BugSet {
    /// No switch on.
    pub const EMPTY: BugSet = BugSet(0);

    #[inline]
    pub const fn contains(self, bug: Bug) -> bool {
        self.0 & (1 << bug as u32) != 0
    }

    #[inline]
    pub fn insert(&mut self, bug: Bug) {
        self.0 |= 1 << bug as u32;
    }

    #[inline]
    pub fn remove(&mut self, bug: Bug) {
        self.0 &= !(1 << bug as u32);
    }

    /// This set with `bug` on too.
    pub const fn with(self, bug: Bug) -> BugSet {
        BugSet(self.0 | 1 << bug as u32)
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The switches on, in table order.
    pub fn iter(self) -> impl Iterator<Item = Bug> {
        Bug::ALL.into_iter().filter(move |b| self.contains(*b))
    }

    /// The names of the switches on, in table order (`summary.json`'s and `sweep.json`'s `bugs`).
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Bug::name).collect()
    }
}

impl From<Bug> for BugSet {
    fn from(bug: Bug) -> BugSet {
        BugSet::EMPTY.with(bug)
    }
}

impl FromIterator<Bug> for BugSet {
    fn from_iter<I: IntoIterator<Item = Bug>>(iter: I) -> BugSet {
        let mut set = BugSet::EMPTY;
        for b in iter {
            set.insert(b);
        }
        set
    }
}

impl fmt::Debug for BugSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// The `[bugs]` table: every switch by name, in table order, `true` for those on.
impl Serialize for BugSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(BUG_COUNT))?;
        for b in Bug::ALL {
            map.serialize_entry(b.name(), &self.contains(b))?;
        }
        map.end()
    }
}

/// A `[bugs]` key: a switch's name, read as a struct's field is (so that an unknown one is the
/// same error, at the same place in the file, as an unknown key of any other section).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Bug;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Bug, D::Error> {
        d.deserialize_identifier(Key)
    }
}

impl Visitor<'_> for Key {
    type Value = Bug;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Bug, E> {
        Bug::parse(name).map_err(|_| E::unknown_field(name, &Bug::NAMES))
    }
}

struct Table;

impl<'de> Visitor<'de> for Table {
    type Value = BugSet;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct Bugs")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BugSet, A::Error> {
        let mut set = BugSet::EMPTY;
        let mut seen = BugSet::EMPTY;
        while let Some(bug) = map.next_key_seed(Key)? {
            if seen.contains(bug) {
                return Err(de::Error::duplicate_field(bug.name()));
            }
            seen.insert(bug);
            if map.next_value::<bool>()? {
                set.insert(bug);
            }
        }
        Ok(set)
    }
}

impl<'de> Deserialize<'de> for BugSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BugSet, D::Error> {
        d.deserialize_struct("Bugs", &Bug::NAMES, Table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NoFencing` for `no_fencing`: a variant is its name in CamelCase.
    fn camel(name: &str) -> String {
        name.split('_')
            .map(|w| w[..1].to_uppercase() + &w[1..])
            .collect()
    }

    #[test]
    fn every_switch_is_named_once_and_parses_back() {
        for b in Bug::ALL {
            assert_eq!(format!("{b:?}"), camel(b.name()));
            assert_eq!(Bug::parse(b.name()), Ok(b));
            assert_eq!(BugSet::from(b).names(), vec![b.name()]);
            assert!(!b.sites().is_empty() && !b.demo().is_empty() && !b.defect().is_empty());
        }
        let mut names = Bug::NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BUG_COUNT);
        assert_eq!(
            Bug::parse("no_such_bug").unwrap_err().to_string(),
            format!("no such bug switch; allowed: {}", Bug::NAMES.join(", "))
        );
    }

    #[test]
    fn a_set_holds_its_switches_in_table_order() {
        let mut s: BugSet = [Bug::RepublishMiscount, Bug::NoFencing]
            .into_iter()
            .collect();
        assert_eq!(s.names(), ["no_fencing", "republish_miscount"]);
        assert!(s.contains(Bug::NoFencing) && !s.contains(Bug::EarlyExpiry));
        s.remove(Bug::NoFencing);
        s.remove(Bug::RepublishMiscount);
        assert!(s.is_empty());
        assert_eq!(s, BugSet::default());
    }

    #[test]
    fn the_bugs_table_reads_back_what_it_writes() {
        let on = BugSet::from(Bug::EarlyExpiry).with(Bug::NoFencing);
        let json = serde_json::to_value(on).unwrap();
        assert_eq!(json.as_object().unwrap().len(), BUG_COUNT);
        assert_eq!(json["early_expiry"], true);
        assert_eq!(json["token_reuse"], false);
        assert_eq!(serde_json::from_value::<BugSet>(json).unwrap(), on);
        let some: BugSet =
            serde_json::from_str(r#"{"no_fencing": true, "token_reuse": false}"#).unwrap();
        assert_eq!(some, BugSet::from(Bug::NoFencing));
        let unknown = serde_json::from_str::<BugSet>(r#"{"no_fencin": true}"#).unwrap_err();
        assert!(unknown
            .to_string()
            .starts_with("unknown field `no_fencin`, expected one of `no_fencing`, "));
    }
}

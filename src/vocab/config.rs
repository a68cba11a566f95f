//! The run's configuration as a history records it: everything a rule of the checker depends on.
//!
//! Owns: [`RunConfig`], the header of every history (the simulator's and an external recorder's):
//! the time unit, the lease, heartbeat and deadline, the attempt cap, the backoff and its jitter
//! mode, the DLQ capacity, the reprocess rate limit, the consumer's dedupe window, the outbox
//! retention, and which optional records the recorder writes ([`Emits`]).
//! Does not: read scenarios (see `scenario`) or files (see `history::reader`).

use serde::{Deserialize, Serialize};

/// Backoff jitter: none keeps the capped exponential delay `d`; full draws in `[0, d]`; equal
/// draws in `[d/2, d]` (`d/2` rounded down).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    None,
    Full,
    Equal,
}

impl Jitter {
    pub const ALL: [Jitter; 3] = [Jitter::None, Jitter::Full, Jitter::Equal];

    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
        }
    }

    pub fn parse(name: &str) -> Option<Jitter> {
        Jitter::ALL.into_iter().find(|j| j.name() == name)
    }
}

/// The unit of every timestamp and duration in a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TimeUnit {
    Ms,
    Us,
}

impl TimeUnit {
    /// As the header writes it.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "us",
        }
    }

    /// As messages print it after a number.
    pub fn suffix(self) -> &'static str {
        match self {
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "µs",
        }
    }

    pub fn parse(name: &str) -> Option<TimeUnit> {
        match name {
            "ms" => Some(TimeUnit::Ms),
            "us" | "µs" => Some(TimeUnit::Us),
            _ => None,
        }
    }
}

/// The optional records a recorder writes. A real queue has no lease-expired event, no
/// visibility event and no depth gauge; the simulator writes all three. When a kind is declared,
/// the checker cross-checks every such record against what it recomputed; no invariant needs
/// them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Emits {
    /// `visible`: a waiting job's visibility time came.
    pub visible: bool,
    /// `lease_expired`: a lease ran out without renewal or release.
    pub lease_expired: bool,
    /// `depth_sampled`: the queue depth (visible, unleased, not terminal jobs) at a moment.
    pub depth_sampled: bool,
}

impl Emits {
    pub const NAMES: [&'static str; 3] = ["visible", "lease_expired", "depth_sampled"];

    pub fn all() -> Emits {
        Emits {
            visible: true,
            lease_expired: true,
            depth_sampled: true,
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        let on = [self.visible, self.lease_expired, self.depth_sampled];
        Emits::NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect()
    }

    /// Turns a kind on by name; false if there is no such kind.
    pub fn set(&mut self, name: &str) -> bool {
        match name {
            "visible" => self.visible = true,
            "lease_expired" => self.lease_expired = true,
            "depth_sampled" => self.depth_sampled = true,
            _ => return false,
        }
        true
    }
}

/// A per-tenant reprocess rate limit: at most `max` accepted reprocesses in any `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReprocessLimit {
    pub max: u32,
    pub window: u64,
}

/// The header of a history. Durations are in `time_unit`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    pub time_unit: TimeUnit,
    pub emits: Emits,
    /// The simulator's seed (absent for an external recorder).
    pub seed: Option<u64>,
    /// Worker processes (informative; no rule depends on it).
    pub workers: Option<u32>,
    /// A lease taken (or renewed) at `t` is live through `t + lease`.
    pub lease: u64,
    /// How often a healthy holder renews (informative: leases are judged from the heartbeats
    /// actually recorded).
    pub heartbeat: u64,
    /// A job enqueued at `t` may not be leased after `t + deadline`.
    pub deadline: u64,
    pub attempts_max: u32,
    pub backoff_base: u64,
    pub backoff_cap: u64,
    pub jitter: Jitter,
    /// The DLQ holds at most this many entries (none: unbounded).
    pub dlq_capacity: Option<u32>,
    pub reprocess_limit: Option<ReprocessLimit>,
    /// The consumer remembers an event id this long (none: for ever).
    pub dedupe_window: Option<u64>,
    /// Published outbox rows are pruned this long after being marked (none: kept).
    pub outbox_retention: Option<u64>,
    /// The retry delay when it is not `min(backoff_base × 2ⁿ⁻¹, backoff_cap)` with none, full
    /// or equal jitter: a queue profile's formula (the header's `backoff` object; then
    /// `backoff_base`, `backoff_cap` and `jitter` are left out). `None`: the capped exponential,
    /// which every header written before these formulas states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_formula: Option<RetryFormula>,
    /// Every error is retried, a permanent one too: the queue has no "fail for good" API
    /// (graphile-worker; the header's `"permanent_error": "retry"`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub permanent_errors_retried: bool,
    /// DLQ entries are deleted by age (the header's `dlq_retention`). `None`: kept until
    /// reprocessed or, with a capacity, evicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dlq_retention: Option<DlqRetention>,
    /// What a submit of a key already known does (the header's `unique`; absent: `forever`,
    /// durasim's key, which every header before the uniqueness modes means).
    #[serde(skip_serializing_if = "is_forever")]
    pub unique: crate::vocab::queue_params::Unique,
    /// When the queue notices that a lease ended unreleased (the header's `lease_detection`;
    /// `None`: not stated, and not judged). Not covered by the trace hash (a run's hash is what
    /// it was before the field), so not serialised here: the history writer writes it.
    #[serde(skip_serializing)]
    pub lease_detection: Option<LeaseDetection>,
}

/// When the queue notices that a lease ended without renewal or release, and how long it may
/// take from there to record it (docs/history-format.md, `lease_detection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseDetection {
    pub kind: DetectionKind,
    /// The sweeper's period (`sweep`, `two_pass`; 0 for a timer).
    pub every: u64,
    /// The most time from the lease's end (a timer) or the sweeper's tick to the
    /// `lease_expired` record: a timer's resolution (1 in the unit of the file by default), a
    /// rescue's hold.
    pub slack: u64,
}

/// How a queue notices a lease's end (docs/queues.md M3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectionKind {
    /// Just after the lease's end.
    Timer,
    /// At the first multiple of `every` after the lease's end.
    Sweep,
    /// BullMQ's stalled checker: marked at the first pass after the last renewal, moved at the
    /// first pass after both the mark and the lease's end.
    TwoPass,
}

impl DetectionKind {
    pub const ALL: [DetectionKind; 3] = [
        DetectionKind::Timer,
        DetectionKind::Sweep,
        DetectionKind::TwoPass,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DetectionKind::Timer => "timer",
            DetectionKind::Sweep => "sweep",
            DetectionKind::TwoPass => "two_pass",
        }
    }

    pub fn parse(name: &str) -> Option<DetectionKind> {
        DetectionKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl LeaseDetection {
    /// The latest time a lease last renewed at `renewed_at` and live through `end` may be
    /// recorded as expired.
    pub fn deadline(&self, renewed_at: u64, end: u64) -> u64 {
        let tick = |t: u64| {
            (t / self.every.max(1))
                .saturating_add(1)
                .saturating_mul(self.every)
        };
        let detected = match self.kind {
            DetectionKind::Timer => end,
            DetectionKind::Sweep => tick(end),
            DetectionKind::TwoPass => tick(end.max(tick(renewed_at))),
        };
        detected.saturating_add(self.slack)
    }
}

fn is_forever(u: &crate::vocab::queue_params::Unique) -> bool {
    *u == crate::vocab::queue_params::Unique::Forever
}

/// DLQ retention by age: an entry may be deleted once it is older than `after`, counted from
/// its dead-lettering or (an SQS redrive DLQ) from the job's original enqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DlqRetention {
    pub after: u64,
    /// The age counts from the job's enqueue, not from its dead-lettering.
    pub from_enqueue: bool,
}

impl DlqRetention {
    /// How the header writes where the age counts from.
    pub fn from_name(&self) -> &'static str {
        if self.from_enqueue {
            "enqueued"
        } else {
            "dead_lettered"
        }
    }
}

/// A retry delay formula as a header states it (docs/history-format.md): the formula, its
/// constants, the jitter mode, and what the attempt number n counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RetryFormula {
    pub backoff: crate::vocab::queue_params::Backoff,
    /// `leases`: n is the job's lease count; `failures`: its failed attempts (BullMQ, Sidekiq).
    pub attempt: crate::vocab::queue_params::AttemptsCount,
}

impl Default for RunConfig {
    /// A permissive configuration for histories whose header was not seen (tests).
    fn default() -> Self {
        RunConfig {
            time_unit: TimeUnit::Ms,
            emits: Emits::default(),
            seed: None,
            workers: None,
            lease: u64::MAX / 4,
            heartbeat: u64::MAX / 4,
            deadline: u64::MAX / 4,
            attempts_max: u32::MAX,
            backoff_base: 0,
            backoff_cap: 0,
            jitter: Jitter::Full,
            dlq_capacity: None,
            reprocess_limit: None,
            dedupe_window: None,
            outbox_retention: None,
            retry_formula: None,
            permanent_errors_retried: false,
            dlq_retention: None,
            unique: crate::vocab::queue_params::Unique::Forever,
            lease_detection: None,
        }
    }
}

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
pub struct ReprocessLimit {
    pub max: u32,
    pub window: u64,
}

/// The header of a history. Durations are in `time_unit`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Hash)]
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
    /// A job enqueued at `t` may not be leased after `t + deadline` (none: the queue has no
    /// deadline, a version 2 header's `"deadline": null`).
    #[serde(serialize_with = "plain")]
    pub deadline: Option<u64>,
    /// Leases a job may have (none: not capped as a whole, a version 2 header that caps failures
    /// or rescues instead).
    #[serde(serialize_with = "plain")]
    pub attempts_max: Option<u32>,
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
    /// What a version 2 header states beyond version 1 (docs/history-format.md, "Version 2").
    /// Not covered by the trace hash: a version 1 history states none of it.
    #[serde(skip_serializing)]
    pub stated: Stated,
}

/// Serialises a present value as the value itself (the trace hash of a configuration whose
/// deadline and attempt cap are stated is what it was when they were plain numbers).
fn plain<T: Serialize, S: serde::Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.serialize_none(),
    }
}

/// How a job's lease is kept alive (docs/history-format.md, `liveness`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Liveness {
    /// Per job: a lease (or a `heartbeat` of it) at `t` keeps it through `t + lease`.
    #[default]
    PerJob,
    /// Per worker process: a job's lease is live while its holder's last `worker_heartbeat`
    /// (before or after the lease) is at most `lease` old (procrastinate, Oban, Sidekiq Pro).
    PerProcess,
}

/// What a version 2 header states that version 1 could not (each the value version 1 means
/// when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stated {
    /// The history's format version (1 or 2).
    pub version: u32,
    /// Whether records carry fencing tokens (`"fences": "none"`: they do not; the reader
    /// numbers each job's leases and judges a write by its worker's own latest lease).
    pub fences: bool,
    pub liveness: Liveness,
    /// Recorded delays (a retry's `visible_at`, a lease against the visible time, a rescue or
    /// re-lease against the lease's end) may be off by this much: two clocks, or a client
    /// computing a time just before its transaction.
    pub clock_tolerance: u64,
    /// Lines from different writers may be out of time order by up to this much; the reader
    /// sorts them within the window.
    pub reorder_window: u64,
    /// Whether results go through a review step (`every_result_delivered` waits for it).
    pub review: bool,
    /// Failed attempts (`attempt_failed`) a job may have (none: not capped by themselves).
    pub failures_max: Option<u32>,
    /// Rescues (`rescued`) a job may have (none: not capped by themselves).
    pub rescues_max: Option<u32>,
}

impl Default for Stated {
    fn default() -> Self {
        Stated {
            version: 1,
            fences: true,
            liveness: Liveness::PerJob,
            clock_tolerance: 0,
            reorder_window: 0,
            review: true,
            failures_max: None,
            rescues_max: None,
        }
    }
}

/// When the queue notices that a lease ended without renewal or release, and how long it may
/// take from there to record it (docs/history-format.md, `lease_detection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
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
            deadline: Some(u64::MAX / 4),
            attempts_max: Some(u32::MAX),
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
            stated: Stated::default(),
        }
    }
}

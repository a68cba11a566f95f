//! The scenario's settings sections (`[workers]`, `[queue]`, `[retry]`, `[stages]`,
//! `[arrivals]`, `[[enqueue]]`, `[[burst]]`, `[relay]`, `[outbox]`, `[consumer]`,
//! `[metrics]`, `[run]`, `[dlq]`): their fields and defaults. (`[bugs]` is the bug switches'
//! table, `vocab::bugs::BugSet`.)
//!
//! Owns: each section's serde shape (unknown keys rejected) and its default values.
//! Does not: hold `[faults]` (`faults.rs`), validate across fields (`validate.rs`), hold scripted injections or operator
//! actions (`script.rs`), expectations (`expect.rs`) or swarm ranges (`swarm.rs`).

use super::dist::{constant, Dist};
use crate::vocab::config::Jitter;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Workers {
    #[serde(default = "Workers::default_count")]
    pub count: u32,
    #[serde(default = "Workers::default_restart_ms")]
    pub restart_ms: u64,
}
impl Workers {
    fn default_count() -> u32 {
        2
    }
    fn default_restart_ms() -> u64 {
        1000
    }
}
impl Default for Workers {
    fn default() -> Self {
        Workers {
            count: 2,
            restart_ms: 1000,
        }
    }
}

/// `[queue]`: durasim's four settings, the queue-semantics profile, and the profile keys a
/// scenario may set on top of it (docs/queues.md §2.1; resolved by `profile::resolve`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueSection {
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    pub deadline_ms: u64,
    /// A number, or `"unlimited"` (stored as `u32::MAX`).
    #[serde(deserialize_with = "attempts_limit")]
    pub max_attempts: u32,
    pub profile: Option<String>,
    pub heartbeat: Option<String>,
    pub attempts_count: Option<String>,
    pub stale_heartbeat: Option<String>,
    pub stale_ack: Option<String>,
    pub stale_retry: Option<String>,
    pub stale_dead_letter: Option<String>,
    pub stale_apply_permille: Option<u32>,
    pub expiry: Option<String>,
    pub sweep_ms: Option<u64>,
    pub liveness_ms: Option<u64>,
    pub on_expiry: Option<String>,
    pub stall_limit: Option<u32>,
    pub rescue_write: Option<String>,
    pub rescue_gap_ms: Option<u64>,
    pub fetch: Option<String>,
    pub permanent_error: Option<String>,
    pub unique: Option<String>,
    /// Which of the four durasim settings the file wrote: under a profile other than durasim,
    /// the others are the profile's, and a written-back file leaves them out.
    #[serde(skip)]
    pub written: Written,
}

/// The durasim settings a scenario file wrote itself (profile resolution needs to know).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub lease_ms: bool,
    pub heartbeat_ms: bool,
    pub deadline_ms: bool,
    pub max_attempts: bool,
    pub backoff_base_ms: bool,
    pub backoff_cap_ms: bool,
    pub jitter: bool,
}

/// `max_attempts`: an integer, or `"unlimited"` (`u32::MAX`).
fn attempts_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Limit {
        Number(u32),
        Word(String),
    }
    match Limit::deserialize(d)? {
        Limit::Number(n) => Ok(n),
        Limit::Word(w) if w == "unlimited" => Ok(u32::MAX),
        Limit::Word(w) => Err(serde::de::Error::custom(format!(
            "max_attempts is a number between 1 and 1000, or \"unlimited\" (got {})",
            crate::base::messages::clip(&w)
        ))),
    }
}

impl Serialize for QueueSection {
    /// Every field the file could have written; under a profile other than durasim, only the
    /// durasim settings the file wrote itself (the others are the profile's).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            lease_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            heartbeat_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            deadline_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            max_attempts: Option<toml::Value>,
            #[serde(flatten)]
            rest: Rest<'a>,
        }
        #[derive(Serialize)]
        struct Rest<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            profile: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            heartbeat: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            attempts_count: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stale_heartbeat: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stale_ack: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stale_retry: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stale_dead_letter: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stale_apply_permille: &'a Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            expiry: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            sweep_ms: &'a Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            liveness_ms: &'a Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            on_expiry: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            stall_limit: &'a Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            rescue_write: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            rescue_gap_ms: &'a Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            fetch: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            permanent_error: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            unique: &'a Option<String>,
        }
        let all = self.profile.as_deref().is_none_or(|p| p == "durasim");
        let keep = |written: bool, v: u64| (all || written).then_some(v);
        let w = &self.written;
        let max_attempts = (all || w.max_attempts).then(|| {
            if self.max_attempts == u32::MAX {
                toml::Value::String("unlimited".into())
            } else {
                toml::Value::Integer(self.max_attempts as i64)
            }
        });
        View {
            lease_ms: keep(w.lease_ms, self.lease_ms),
            heartbeat_ms: keep(w.heartbeat_ms, self.heartbeat_ms),
            deadline_ms: keep(w.deadline_ms, self.deadline_ms),
            max_attempts,
            rest: Rest {
                profile: &self.profile,
                heartbeat: &self.heartbeat,
                attempts_count: &self.attempts_count,
                stale_heartbeat: &self.stale_heartbeat,
                stale_ack: &self.stale_ack,
                stale_retry: &self.stale_retry,
                stale_dead_letter: &self.stale_dead_letter,
                stale_apply_permille: &self.stale_apply_permille,
                expiry: &self.expiry,
                sweep_ms: &self.sweep_ms,
                liveness_ms: &self.liveness_ms,
                on_expiry: &self.on_expiry,
                stall_limit: &self.stall_limit,
                rescue_write: &self.rescue_write,
                rescue_gap_ms: &self.rescue_gap_ms,
                fetch: &self.fetch,
                permanent_error: &self.permanent_error,
                unique: &self.unique,
            },
        }
        .serialize(s)
    }
}

impl Default for QueueSection {
    fn default() -> Self {
        QueueSection {
            lease_ms: 1000,
            heartbeat_ms: 300,
            deadline_ms: 30_000,
            max_attempts: 3,
            profile: None,
            heartbeat: None,
            attempts_count: None,
            stale_heartbeat: None,
            stale_ack: None,
            stale_retry: None,
            stale_dead_letter: None,
            stale_apply_permille: None,
            expiry: None,
            sweep_ms: None,
            liveness_ms: None,
            on_expiry: None,
            stall_limit: None,
            rescue_write: None,
            rescue_gap_ms: None,
            fetch: None,
            permanent_error: None,
            unique: None,
            written: Written::default(),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrySection {
    pub backoff_base_ms: u64,
    pub backoff_cap_ms: u64,
    pub jitter: Jitter,
    /// The formula (docs/queues.md M8); absent: the profile's (durasim: `exp2`).
    pub backoff: Option<String>,
    /// Under a profile other than durasim, only the keys the file wrote are written back
    /// (`(base, cap, jitter)`; set when the scenario is parsed).
    #[serde(skip)]
    pub written_only: Option<(bool, bool, bool)>,
}

impl Serialize for RetrySection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            backoff_base_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            backoff_cap_ms: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            jitter: Option<Jitter>,
            #[serde(skip_serializing_if = "Option::is_none")]
            backoff: &'a Option<String>,
        }
        let (b, c, j) = self.written_only.unwrap_or((true, true, true));
        View {
            backoff_base_ms: b.then_some(self.backoff_base_ms),
            backoff_cap_ms: c.then_some(self.backoff_cap_ms),
            jitter: j.then_some(self.jitter),
            backoff: &self.backoff,
        }
        .serialize(s)
    }
}
impl Default for RetrySection {
    fn default() -> Self {
        RetrySection {
            backoff_base_ms: 100,
            backoff_cap_ms: 2000,
            jitter: Jitter::Full,
            backoff: None,
            written_only: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Stages {
    pub inference_ms: Dist,
    pub validate_ms: Dist,
    pub review_ms: Dist,
}
impl Default for Stages {
    fn default() -> Self {
        Stages {
            inference_ms: constant(40),
            validate_ms: constant(5),
            review_ms: constant(90),
        }
    }
}

/// Documents whose index modulo `every` is below `first` fail validation on every attempt.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InvalidDocuments {
    pub every: u32,
    pub first: u32,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Arrivals {
    pub tenants: Vec<String>,
    pub jobs: u64,
    pub interarrival_ms: Dist,
    /// Probability that an arrival reuses the documentId of a recent arrival of another tenant.
    pub document_collision: f64,
    /// Probability that an arrival resubmits a recent document of the same tenant.
    pub resubmit: f64,
    /// Of the resubmissions, the share whose payload changed (same key, different payload).
    pub resubmit_changed: f64,
    pub invalid_documents: Option<InvalidDocuments>,
}
impl Default for Arrivals {
    fn default() -> Self {
        Arrivals {
            tenants: vec!["acme".into()],
            jobs: 1,
            interarrival_ms: constant(0),
            document_collision: 0.0,
            resubmit: 0.0,
            resubmit_changed: 0.0,
            invalid_documents: None,
        }
    }
}

/// An explicit enqueue request, on top of the generated arrivals.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Enqueue {
    pub at_ms: u64,
    pub tenant: String,
    pub document: String,
    #[serde(default = "one")]
    pub version: u32,
    /// The document content; the same text means the same payload.
    #[serde(default)]
    pub payload: Option<String>,
    /// The document fails validation on every attempt.
    #[serde(default)]
    pub invalid: bool,
}
fn one() -> u32 {
    1
}

/// A burst: one tenant submits `jobs` new documents at once (a noisy tenant's bulk import).
/// Their documents are numbered after the generated arrivals' (`doc-N`), version 1.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    pub at_ms: u64,
    pub tenant: String,
    pub jobs: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Relay {
    pub interval_ms: u64,
    /// A crashed relay's next tick comes this long after the crash (its recovery delay); absent:
    /// the next regular tick, `interval_ms` later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_ms: Option<u64>,
}
impl Default for Relay {
    fn default() -> Self {
        Relay {
            interval_ms: 50,
            restart_ms: None,
        }
    }
}

/// The outbox, beyond the chapter. Absent: published rows are kept for ever.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct OutboxSection {
    /// Published rows are deleted this long after the relay marked them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
}

impl OutboxSection {
    pub fn is_default(&self) -> bool {
        *self == OutboxSection::default()
    }
}

/// The consumer, beyond the chapter. Absent: it remembers every event id forever.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsumerSection {
    /// How long an event id is remembered after its first sighting (SQS FIFO: five minutes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_window_ms: Option<u64>,
}

impl ConsumerSection {
    pub fn is_default(&self) -> bool {
        *self == ConsumerSection::default()
    }
}

/// When the queue depth is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DepthSampling {
    /// Every `depth_sample_ms` of virtual time, from 0.
    Interval,
    /// At every lease, as the worker sees it: the ready jobs including the one it takes (the
    /// chapter's "per tick" sampling of its 12-document run).
    PerLease,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSection {
    pub depth_sample_ms: u64,
    pub depth_sample: DepthSampling,
}
impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            depth_sample_ms: 100,
            depth_sample: DepthSampling::Interval,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// The run stops here even if it has not settled; liveness invariants then fail.
    pub time_limit_ms: u64,
    /// The order of simultaneous events, where it is not the default (`sim::tie_break`): the
    /// run's ties (two or more events due at one time) numbered from 0 as they come, and
    /// `[tie, pick]` runs the `pick`-th of that tie's events (from 0, in the default order)
    /// first. `durasim explore` writes it into a counterexample that needs it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ties: Vec<[u64; 2]>,
}
impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            time_limit_ms: 86_400_000,
            ties: Vec::new(),
        }
    }
}

/// The DLQ's limits, beyond the chapter. Absent: unbounded, and no reprocess rate limit.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DlqSection {
    /// Maximum entries; when full, the oldest entry is evicted (and lost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// Accepted reprocesses per tenant in any `reprocess_window_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reprocess_limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reprocess_window_ms: Option<u64>,
    /// What a dead job becomes (docs/queues.md M9); absent: the profile's (durasim: `queue`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Entries deleted this long after they arrived; absent: the profile's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
}

impl DlqSection {
    pub const DEFAULT_REPROCESS_WINDOW_MS: u64 = 60_000;

    pub fn is_default(&self) -> bool {
        *self == DlqSection::default()
    }

    pub fn config(&self) -> crate::model::dead_letter::DlqConfig {
        crate::model::dead_letter::DlqConfig {
            capacity: self.capacity,
            reprocess_limit: self.reprocess_limit.map(|max| {
                crate::model::dead_letter::ReprocessLimit {
                    max,
                    window_ms: self
                        .reprocess_window_ms
                        .unwrap_or(DlqSection::DEFAULT_REPROCESS_WINDOW_MS),
                }
            }),
            bugs: crate::vocab::bugs::BugSet::EMPTY,
        }
    }
}

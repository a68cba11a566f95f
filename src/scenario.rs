//! The scenario file: its schema, its defaults and its validation.
//!
//! Owns: what a `scenarios/*.toml` file may say (serde with unknown keys rejected), what each
//! field defaults to, and every check that turns a bad file into a clear error naming the file,
//! the line, the field and what is allowed.
//! Does not: run anything (see `sim`) or read files (the CLI hands over the text).

use crate::check::{Invariant, Sometimes};
use crate::limits::MAX_JOBS;
use crate::model::worker::CrashPoint;
use crate::vocab::config::Jitter;
use crate::vocab::key::{validate_document, validate_tenant, MAX_VERSION};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A bad scenario: where, which field, and what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: String,
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": field `{}`: {}", self.field, self.message)
        }
    }
}

pub use crate::messages::{clip, MAX_SHOWN};

/// What a scenario name may be: it is the default output directory `reports/<name>/`, so it
/// must never be a path (no `/`, no `.` or `..`, nothing a terminal would show differently).
pub const NAME_RULE: &str =
    "1 to 64 characters from a-z, 0-9, '-' and '_', starting with a letter or a digit";
pub const MAX_NAME: usize = 64;

pub fn validate_name(name: &str) -> Result<(), String> {
    let slug = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_';
    crate::limits::check_identifier(name, MAX_NAME, slug, NAME_RULE)
}

/// A duration or delay distribution, in integer virtual milliseconds. Written as a table
/// (`{ dist = "uniform", min = 1, max = 5 }`): serde's derive for a tagged enum would also take
/// an array (`["constant", 1]`), which no document shows and which hides a typo, so the
/// deserializer below asks for a table before it reads the fields.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(
    tag = "dist",
    rename_all = "lowercase",
    deny_unknown_fields,
    remote = "Dist"
)]
pub enum Dist {
    Constant {
        value: u64,
    },
    Uniform {
        min: u64,
        max: u64,
    },
    Exponential {
        mean: f64,
    },
    /// `median * exp(sigma * z)` with z standard normal.
    Lognormal {
        median: f64,
        sigma: f64,
    },
}

impl Serialize for Dist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Dist::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
        struct Table;
        impl<'de> serde::de::Visitor<'de> for Table {
            type Value = Dist;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "a table such as {{ dist = \"constant\", value = 5 }} (a distribution)"
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Dist, A::Error> {
                Dist::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Table)
    }
}

impl Dist {
    pub const ALLOWED: &'static str = "{ dist = \"constant\", value }, { dist = \"uniform\", min, max }, { dist = \"exponential\", mean }, { dist = \"lognormal\", median, sigma }";

    /// Draws one value. A constant draws nothing, so it leaves the stream untouched.
    /// One sample, taking exactly one draw from the stream (a constant too, so the position of
    /// every later draw does not depend on the distribution's kind).
    pub fn sample(&self, s: &mut crate::rng::Stream) -> u64 {
        self.sample_from(s.next_u64())
    }

    /// The sample a raw draw `bits` stands for.
    /// Never above [`crate::limits::MAX_MS`], so adding it to a time cannot overflow.
    pub fn sample_from(&self, bits: u64) -> u64 {
        use crate::rng::{normal_of, range_of, unit_of};
        let v = match *self {
            Dist::Constant { value } => value,
            Dist::Uniform { min, max } => range_of(bits, min, max),
            Dist::Exponential { mean } => (-mean * (1.0 - unit_of(bits)).ln()).round() as u64,
            Dist::Lognormal { median, sigma } => {
                (median * (sigma * normal_of(bits)).exp()).round() as u64
            }
        };
        v.min(crate::limits::MAX_MS)
    }

    /// The largest value it can draw (`None`: unbounded).
    pub fn max_possible(&self) -> Option<u64> {
        match *self {
            Dist::Constant { value } => Some(value),
            Dist::Uniform { max, .. } => Some(max),
            Dist::Exponential { .. } | Dist::Lognormal { .. } => None,
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant { value } => value as f64,
            Dist::Uniform { min, max } => (min + max) as f64 / 2.0,
            Dist::Exponential { mean } => mean,
            Dist::Lognormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
        }
    }

    fn check(&self) -> Result<(), String> {
        match *self {
            Dist::Uniform { min, max } if min > max => Err(format!("uniform needs min <= max (got min = {min}, max = {max})")),
            Dist::Exponential { mean } if !(mean.is_finite() && mean >= 0.0) => Err(format!("exponential needs a finite mean >= 0 (got {mean})")),
            Dist::Lognormal { median, sigma } if !(median.is_finite() && median > 0.0 && sigma.is_finite() && (0.0..=10.0).contains(&sigma)) => {
                Err(format!("lognormal needs median > 0 and 0 <= sigma <= 10 (got median = {median}, sigma = {sigma})"))
            }
            _ => Ok(()),
        }
    }
}

fn constant(value: u64) -> Dist {
    Dist::Constant { value }
}

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
            clip(&w)
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

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrySection {
    pub backoff_base_ms: u64,
    pub backoff_cap_ms: u64,
    pub jitter: Jitter,
    /// The formula (docs/queues.md M8); absent: the profile's (durasim: `exp2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
}
impl Default for RetrySection {
    fn default() -> Self {
        RetrySection {
            backoff_base_ms: 100,
            backoff_cap_ms: 2000,
            jitter: Jitter::Full,
            backoff: None,
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
pub struct Faults {
    pub crash: f64,
    pub crash_points: Vec<String>,
    pub stall: f64,
    pub stall_ms: Dist,
    pub transient_error: f64,
    pub permanent_error: f64,
    pub relay_crash: f64,
    /// Probability that an attempt's holder pauses right after its first heartbeat (a GC
    /// pause, a descheduled process) for `pause_ms`: a pause longer than the lease lets the
    /// renewed lease expire under a live holder.
    pub pause: f64,
    pub pause_ms: Dist,
    /// A transient outage of the model provider: every extraction started in [from_ms, to_ms)
    /// fails with provider_unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outage: Option<Outage>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    pub from_ms: u64,
    pub to_ms: u64,
}

impl Outage {
    pub fn covers(&self, now: u64) -> bool {
        (self.from_ms..self.to_ms).contains(&now)
    }
}
impl Default for Faults {
    fn default() -> Self {
        Faults {
            crash: 0.0,
            crash_points: CrashPoint::ALL
                .iter()
                .map(|p| p.name().to_string())
                .collect(),
            stall: 0.0,
            stall_ms: Dist::Uniform {
                min: 800,
                max: 1500,
            },
            transient_error: 0.0,
            permanent_error: 0.0,
            relay_crash: 0.0,
            pause: 0.0,
            pause_ms: Dist::Uniform {
                min: 600,
                max: 1500,
            },
            outage: None,
        }
    }
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
pub struct Metrics {
    pub depth_sample_ms: u64,
    pub depth_sample: DepthSampling,
}
impl Default for Metrics {
    fn default() -> Self {
        Metrics {
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
}
impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            time_limit_ms: 86_400_000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    Crash,
    Stall,
    TransientError,
    PermanentError,
    RelayCrash,
    MutatePayload,
    /// The holder pauses `pause_ms` right after the attempt's first heartbeat.
    Pause,
}

impl FaultKind {
    /// The name a scenario file uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Stall => "stall",
            FaultKind::TransientError => "transient_error",
            FaultKind::PermanentError => "permanent_error",
            FaultKind::RelayCrash => "relay_crash",
            FaultKind::MutatePayload => "mutate_payload",
            FaultKind::Pause => "pause",
        }
    }

    pub const ALLOWED: &'static str =
        "crash, stall, transient_error, permanent_error, relay_crash, mutate_payload, pause";
}

/// A deterministic injection. Worker faults hit the first attempt of `job` leased at or after
/// `at_ms` (or exactly attempt number `attempt`); `relay_crash` hits the first relay tick at or
/// after `at_ms` that publishes something; `mutate_payload` changes the job's payload at `at_ms`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub at_ms: u64,
    pub fault: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAction {
    ReprocessDlq,
}

/// Which job an operator action picks when it runs, instead of a fixed `job`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorTarget {
    /// The oldest DLQ entry not yet reprocessed (an operator working the DLQ in order).
    OldestDeadLettered,
    /// The first job cancelled so far (an operator who mistakes a cancellation for a DLQ entry).
    Cancelled,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operator {
    pub at_ms: u64,
    pub action: OperatorAction,
    #[serde(default)]
    pub operator: Option<String>,
    /// The job acted on; or, with `target`, none: the job is picked when the action runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<OperatorTarget>,
    /// An automation: the action runs again `repeat` more times, every `every_ms`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub repeat: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub every_ms: u64,
    /// Act on the newest job of `job`'s reprocess chain (the "same dead document"), not `job`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub follow: bool,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}
fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}
fn is_false(x: &bool) -> bool {
    !*x
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
            bug_evict_newest: false,
        }
    }
}

/// The deliberately broken variants. All off by default.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Bugs {
    pub no_fencing: bool,
    pub no_idempotency: bool,
    pub tenantless_keys: bool,
    pub naive_dual_write: bool,
    pub unbounded_retries: bool,
    pub no_consumer_dedupe: bool,
    pub skip_deadline_check: bool,
    pub raw_dlq_reason: bool,
    pub reuse_on_conflict: bool,
    pub nondeterministic_step: bool,
    pub token_reuse: bool,
    pub ack_before_commit: bool,
    pub backoff_ignored: bool,
    pub deadline_tripled: bool,
    pub permanent_error_retried: bool,
    pub cancel_early: bool,
    pub reprocess_same_version: bool,
    pub reprocess_cancelled: bool,
    pub unrecorded_eviction: bool,
    pub evict_newest: bool,
    pub depth_never_decrements: bool,
    pub hash_ignores_content: bool,
    pub heartbeat_not_stored: bool,
    pub early_expiry: bool,
    pub jitter_over_cap: bool,
    pub unfenced_heartbeat: bool,
    pub republish_miscount: bool,
}

/// `--swarm` ranges: each seed of a swarm sweep draws its own settings inside these closed
/// `[min, max]` ranges (from the seed's `swarm` stream), so every seed tests a different mix of
/// faults and settings and still replays alone. A range left out keeps the scenario's value.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Swarm {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transient_error: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permanent_error: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_crash: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<[u64; 2]>,
    /// Drawn below the seed's lease_ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_ms: Option<[u64; 2]>,
    /// Each seed keeps a random non-empty subset of these crash points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_points: Option<Vec<String>>,
    /// The consumer's dedupe window (`[consumer] dedupe_window_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_window_ms: Option<[u64; 2]>,
    /// The relay's recovery delay after a crash (`[relay] restart_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_restart_ms: Option<[u64; 2]>,
}

impl Swarm {
    fn validate(&self) -> Result<(), (String, String)> {
        let err = |field: &str, message: String| Err((format!("swarm.{field}"), message));
        for (field, r) in [
            ("crash", self.crash),
            ("stall", self.stall),
            ("transient_error", self.transient_error),
            ("permanent_error", self.permanent_error),
            ("relay_crash", self.relay_crash),
        ] {
            if let Some([lo, hi]) = r {
                if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
                    return err(field, format!("is a range of probabilities [min, max] with 0 <= min <= max <= 1 (got [{lo}, {hi}])"));
                }
            }
        }
        if let Some([lo, hi]) = self.workers {
            if lo == 0 || lo > hi || hi > 1_000_000 {
                return err(
                    "workers",
                    format!("needs 1 <= min <= max <= 1000000 (got [{lo}, {hi}])"),
                );
            }
        }
        for (field, r) in [
            ("lease_ms", self.lease_ms),
            ("heartbeat_ms", self.heartbeat_ms),
            ("dedupe_window_ms", self.dedupe_window_ms),
            ("relay_restart_ms", self.relay_restart_ms),
        ] {
            if let Some([lo, hi]) = r {
                if lo == 0 || lo > hi {
                    return err(field, format!("needs 1 <= min <= max (got [{lo}, {hi}])"));
                }
            }
        }
        if let (Some([_, lease_hi]), Some([hb_lo, _])) = (self.lease_ms, self.heartbeat_ms) {
            if hb_lo >= lease_hi {
                return err("heartbeat_ms", format!("min ({hb_lo}) must be below lease_ms max ({lease_hi}): heartbeats are drawn below the lease"));
            }
        }
        if let Some(points) = &self.crash_points {
            if points.is_empty() {
                return err(
                    "crash_points",
                    format!(
                        "needs at least one crash point; allowed: {}",
                        crash_points_allowed()
                    ),
                );
            }
            for p in points {
                if CrashPoint::parse(p).is_none() {
                    return err(
                        "crash_points",
                        format!(
                            "unknown crash point {}; allowed: {}",
                            clip(p),
                            crash_points_allowed()
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

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

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub workers: Workers,
    #[serde(default)]
    pub queue: QueueSection,
    #[serde(default)]
    pub retry: RetrySection,
    #[serde(default)]
    pub stages: Stages,
    #[serde(default)]
    pub arrivals: Arrivals,
    #[serde(default)]
    pub enqueue: Vec<Enqueue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub burst: Vec<Burst>,
    #[serde(default)]
    pub faults: Faults,
    #[serde(default)]
    pub relay: Relay,
    #[serde(default, skip_serializing_if = "OutboxSection::is_default")]
    pub outbox: OutboxSection,
    #[serde(default, skip_serializing_if = "ConsumerSection::is_default")]
    pub consumer: ConsumerSection,
    #[serde(default)]
    pub metrics: Metrics,
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub script: Vec<Script>,
    #[serde(default)]
    pub operator: Vec<Operator>,
    #[serde(default, skip_serializing_if = "DlqSection::is_default")]
    pub dlq: DlqSection,
    #[serde(default)]
    pub bugs: Bugs,
    #[serde(default)]
    pub expect: Expect,
    /// Ranges for `durasim sweep --swarm`; ignored by `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
}

/// Splits a field path (`script[2].job`, `queue.lease_ms`) into its parts: `("script", Some(2))`,
/// `("job", None)`.
fn path_parts(path: &str) -> Vec<(&str, Option<usize>)> {
    path.split('.')
        .map(|p| match p.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
            None => (p, None),
        })
        .collect()
}

/// Finds the line of `field` (a path such as `script[2].job` for the third `[[script]]`, or
/// `queue.lease_ms`) in the source, for errors found after parsing.
pub(crate) fn locate(source: &str, path: &str) -> Option<usize> {
    let parts = path_parts(path);
    let lines: Vec<&str> = source.lines().collect();
    let key_of = |l: &str| {
        l.trim_start()
            .split(['=', ' '])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let (mut from, key_parts): (usize, &[(&str, Option<usize>)]) = match parts.as_slice() {
        [(table, Some(n)), rest @ ..] => {
            let header = format!("[[{table}]]");
            let at = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim() == header)
                .nth(*n)?
                .0;
            if rest.is_empty() {
                return Some(at + 1);
            }
            (at + 1, rest)
        }
        [(table, None), rest @ ..] if !rest.is_empty() => {
            let header = format!("[{table}]");
            match lines.iter().position(|l| l.trim() == header) {
                Some(at) => (at + 1, rest),
                None => {
                    // Maybe written inline (`table.key = ...` or `table = { ... }`) at the top.
                    return lines
                        .iter()
                        .position(|l| key_of(l) == *table)
                        .map(|i| i + 1);
                }
            }
        }
        [key] => (0, std::slice::from_ref(key)),
        _ => return None,
    };
    let key = key_parts.first()?.0;
    while from < lines.len() {
        let l = lines[from].trim();
        if l.starts_with('[') {
            break;
        }
        if key_of(l) == key {
            return Some(from + 1);
        }
        from += 1;
    }
    None
}

/// The path of the table a `[header]` or `[[header]]` line opens: `stages.inference_ms`, or
/// `script[2]` for the third `[[script]]`.
fn table_path(lines: &[&str], header_line: usize) -> String {
    let h = lines[header_line].trim();
    if let Some(name) = h
        .strip_prefix("[[")
        .and_then(|r| r.split_once("]]"))
        .map(|(n, _)| n.trim())
    {
        let header = format!("[[{name}]]");
        let index = lines[..header_line]
            .iter()
            .filter(|l| l.trim() == header)
            .count();
        format!("{name}[{index}]")
    } else {
        h.trim_start_matches('[')
            .split(']')
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

/// The path of the key defined on `line` (1-based), from its table header, if any; for a table
/// header line, the table's path followed by `key` when one is given.
fn field_at_line(source: &str, line: usize, key: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let at = line.checked_sub(1)?;
    let here = lines.get(at)?.trim();
    if here.starts_with('[') {
        let table = table_path(&lines, at);
        return Some(match key {
            Some(k) => format!("{table}.{k}"),
            None => table,
        });
    }
    let name = here.split('=').next()?.trim();
    if name.is_empty() || !here.contains('=') {
        return None;
    }
    let table = (0..at).rev().find(|&i| lines[i].trim().starts_with('['));
    Some(match table {
        Some(t) => format!("{}.{name}", table_path(&lines, t)),
        None => name.to_string(),
    })
}

/// serde reads a `[min, max]` range from an array of any length of at least 2 (the TOML reader
/// does not report the extra values); a range must have exactly two.
fn check_ranges_are_pairs(source: &str) -> Result<(), (String, String)> {
    let table: toml::Table = toml::from_str(source).map_err(|e| (String::new(), e.to_string()))?;
    let Some(toml::Value::Table(swarm)) = table.get("swarm") else {
        return Ok(());
    };
    for (k, v) in swarm {
        if let toml::Value::Array(a) = v {
            if k != "crash_points" && a.len() != 2 {
                return Err((
                    format!("swarm.{k}"),
                    format!(
                        "is a range [min, max] of exactly two values (got {} values)",
                        a.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn toml_line(source: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    span.map(|s| source[..s.start.min(source.len())].matches('\n').count() + 1)
}

impl Scenario {
    /// Parses and validates a scenario's text. `file` is only used in error messages.
    pub fn parse(file: &str, source: &str) -> Result<Scenario, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(source).map_err(|e| {
            let message = e.message().trim().to_string();
            let unknown = message
                .strip_prefix("unknown field `")
                .and_then(|r| r.split('`').next())
                .map(str::to_string);
            let message = if unknown.is_some() {
                message
                    .replacen("unknown field", "unknown key", 1)
                    .replacen("expected one of", "allowed keys are", 1)
                    .replacen("expected", "allowed:", 1)
            } else {
                message
            };
            let line = toml_line(source, e.span());
            let field = line
                .and_then(|l| field_at_line(source, l, unknown.as_deref()))
                .or(unknown)
                .unwrap_or_default();
            ScenarioError {
                file: file.to_string(),
                line,
                field: crate::messages::clip_name(&field),
                message: crate::messages::plain(&message),
            }
        })?;
        scenario.note_written(source);
        scenario
            .validate()
            .and_then(|()| check_ranges_are_pairs(source))
            .map_err(|(field, message)| ScenarioError {
                file: file.to_string(),
                line: locate(source, &field),
                field,
                message,
            })?;
        Ok(scenario)
    }

    /// The DLQ's limits under this scenario's profile (a profile can bring a capacity: Sidekiq's
    /// dead set keeps 9,999).
    pub fn dlq_config(&self) -> crate::model::dead_letter::DlqConfig {
        crate::model::dead_letter::DlqConfig {
            capacity: self.semantics().dlq.capacity,
            ..self.dlq.config()
        }
    }

    /// Records which durasim settings the text wrote itself (a profile supplies the others).
    fn note_written(&mut self, source: &str) {
        let Ok(table) = toml::from_str::<toml::Table>(source) else {
            return;
        };
        let has = |section: &str, key: &str| {
            table
                .get(section)
                .and_then(toml::Value::as_table)
                .is_some_and(|t| t.contains_key(key))
        };
        self.queue.written = Written {
            lease_ms: has("queue", "lease_ms"),
            heartbeat_ms: has("queue", "heartbeat_ms"),
            deadline_ms: has("queue", "deadline_ms"),
            max_attempts: has("queue", "max_attempts"),
            backoff_base_ms: has("retry", "backoff_base_ms"),
            backoff_cap_ms: has("retry", "backoff_cap_ms"),
            jitter: has("retry", "jitter"),
        };
    }

    /// The queue-semantics profile this scenario runs on (`[queue] profile`, default durasim).
    pub fn queue_profile(&self) -> crate::profile::Profile {
        use crate::profile::Word;
        self.queue
            .profile
            .as_deref()
            .and_then(crate::profile::Profile::parse)
            .unwrap_or_default()
    }

    /// The keys this scenario sets on top of its profile. Under durasim every durasim setting
    /// counts (they are today's queue); under another profile only those the file wrote.
    pub fn profile_overrides(&self) -> crate::profile::resolve::Overrides {
        use crate::profile::resolve::{AttemptsLimit, Overrides};
        let q = &self.queue;
        let all = self.queue_profile() == crate::profile::Profile::Durasim;
        let w = q.written;
        let r = &self.retry;
        let d = &self.dlq;
        Overrides {
            lease_ms: (all || w.lease_ms).then_some(q.lease_ms),
            heartbeat: q.heartbeat.clone(),
            heartbeat_ms: (all || w.heartbeat_ms).then_some(q.heartbeat_ms),
            deadline_ms: (all || w.deadline_ms).then_some(q.deadline_ms),
            max_attempts: (all || w.max_attempts).then_some(if q.max_attempts == u32::MAX {
                AttemptsLimit::Unlimited
            } else {
                AttemptsLimit::Limit(q.max_attempts)
            }),
            attempts_count: q.attempts_count.clone(),
            stale_heartbeat: q.stale_heartbeat.clone(),
            stale_ack: q.stale_ack.clone(),
            stale_retry: q.stale_retry.clone(),
            stale_dead_letter: q.stale_dead_letter.clone(),
            stale_apply_permille: q.stale_apply_permille,
            expiry: q.expiry.clone(),
            sweep_ms: q.sweep_ms,
            liveness_ms: q.liveness_ms,
            on_expiry: q.on_expiry.clone(),
            stall_limit: q.stall_limit,
            rescue_write: q.rescue_write.clone(),
            rescue_gap_ms: q.rescue_gap_ms,
            fetch: q.fetch.clone(),
            permanent_error: q.permanent_error.clone(),
            unique: q.unique.clone(),
            backoff: r.backoff.clone(),
            backoff_base_ms: (all || w.backoff_base_ms).then_some(r.backoff_base_ms),
            backoff_cap_ms: (all || w.backoff_cap_ms).then_some(r.backoff_cap_ms),
            jitter: (all || w.jitter).then(|| r.jitter.name().to_string()),
            dlq_mode: d.mode.clone(),
            dlq_capacity: d.capacity,
            dlq_retention_ms: d.retention_ms,
        }
    }

    /// The queue semantics a run of this scenario uses: its profile's defaults with the
    /// scenario's keys applied. Validation already refused every combination `resolve` refuses.
    pub fn semantics(&self) -> crate::profile::Semantics {
        crate::profile::resolve::resolve(self.queue_profile(), &self.profile_overrides())
            .expect("a validated scenario resolves")
    }

    /// The header of this scenario's histories: every setting a rule of the checker depends
    /// on, in milliseconds, and the optional records the simulator writes (all of them).
    pub fn run_config(&self, seed: u64) -> crate::vocab::config::RunConfig {
        let dlq = self.dlq_config();
        let sem = self.semantics();
        let e = crate::profile::Effective::of(&sem);
        let (backoff_base, backoff_cap, jitter) = e.header_backoff(&sem);
        crate::vocab::config::RunConfig {
            time_unit: crate::vocab::config::TimeUnit::Ms,
            emits: crate::vocab::config::Emits::all(),
            seed: Some(seed),
            workers: Some(self.workers.count),
            lease: e.lease_ms,
            heartbeat: e.heartbeat_ms,
            deadline: e.deadline_ms,
            attempts_max: e.attempts_max,
            backoff_base,
            backoff_cap,
            jitter,
            dlq_capacity: dlq.capacity,
            reprocess_limit: dlq
                .reprocess_limit
                .map(|l| crate::vocab::config::ReprocessLimit {
                    max: l.max,
                    window: l.window_ms,
                }),
            dedupe_window: self.consumer.dedupe_window_ms,
            outbox_retention: self.outbox.retention_ms,
        }
    }

    /// The number of jobs that can exist before any reprocess: generated plus explicit.
    pub fn jobs_planned(&self) -> u64 {
        self.arrivals.jobs + self.enqueue.len() as u64 + self.burst_jobs()
    }

    /// The most jobs that can exist: those planned, plus one per operator action (each
    /// accepted reprocess creates one). Jobs a reprocess creates can be named by `[[script]]`
    /// entries (a frozen run pins the faults that hit them).
    pub fn jobs_possible(&self) -> u64 {
        self.jobs_planned()
            + self
                .operator
                .iter()
                .map(|o| 1 + o.repeat as u64)
                .sum::<u64>()
    }

    /// The jobs all `[[burst]]` entries submit together.
    pub fn burst_jobs(&self) -> u64 {
        self.burst.iter().map(|b| b.jobs).sum()
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |field: &str, message: String| Err((field.to_string(), message));
        validate_name(&self.name).or_else(|m| err("name", format!("{} {m}", clip(&self.name))))?;
        crate::limits::check_times(self)?;
        if self.workers.count == 0 || self.workers.count > 1_000_000 {
            return err(
                "workers.count",
                format!("must be between 1 and 1000000 (got {})", self.workers.count),
            );
        }
        let q = &self.queue;
        if q.lease_ms == 0 {
            return err("queue.lease_ms", "must be > 0".into());
        }
        if q.heartbeat_ms == 0 {
            return err("queue.heartbeat_ms", "must be > 0".into());
        }
        if let Some(p) = &q.profile {
            use crate::profile::Word;
            if crate::profile::Profile::parse(p).is_none() {
                return err(
                    "queue.profile",
                    format!(
                        "unknown profile {}; allowed: {}",
                        clip(p),
                        crate::profile::Profile::allowed()
                    ),
                );
            }
        }
        crate::profile::resolve::resolve(self.queue_profile(), &self.profile_overrides())?;
        if q.max_attempts == 0 || (q.max_attempts > 1000 && q.max_attempts != u32::MAX) {
            return err(
                "queue.max_attempts",
                format!("must be between 1 and 1000 (got {})", q.max_attempts),
            );
        }
        if self.retry.backoff_cap_ms < self.retry.backoff_base_ms {
            return err(
                "retry.backoff_cap_ms",
                format!(
                    "must be >= backoff_base_ms ({})",
                    self.retry.backoff_base_ms
                ),
            );
        }
        for (field, d) in [
            ("stages.inference_ms", &self.stages.inference_ms),
            ("stages.validate_ms", &self.stages.validate_ms),
            ("stages.review_ms", &self.stages.review_ms),
            ("arrivals.interarrival_ms", &self.arrivals.interarrival_ms),
            ("faults.stall_ms", &self.faults.stall_ms),
            ("faults.pause_ms", &self.faults.pause_ms),
        ] {
            d.check().or_else(|m| err(field, m))?;
        }
        let a = &self.arrivals;
        if a.tenants.is_empty() {
            return err(
                "arrivals.tenants",
                "needs at least one tenant id (each matching ^[a-z][a-z0-9-]{1,32}$)".into(),
            );
        }
        if a.tenants.len() > 4096 {
            return err(
                "arrivals.tenants",
                format!("at most 4096 tenants (got {})", a.tenants.len()),
            );
        }
        for t in &a.tenants {
            validate_tenant(t).or_else(|e| err("arrivals.tenants", e.to_string()))?;
        }
        if a.jobs > MAX_JOBS {
            return err(
                "arrivals.jobs",
                format!("at most {MAX_JOBS} (got {})", a.jobs),
            );
        }
        if let Some(inv) = a.invalid_documents {
            if inv.every == 0 || inv.first > inv.every {
                return err(
                    "arrivals.invalid_documents",
                    format!(
                        "needs every >= 1 and first <= every (got every = {}, first = {})",
                        inv.every, inv.first
                    ),
                );
            }
        }
        for (field, p) in [
            ("arrivals.document_collision", a.document_collision),
            ("arrivals.resubmit", a.resubmit),
            ("arrivals.resubmit_changed", a.resubmit_changed),
            ("faults.crash", self.faults.crash),
            ("faults.stall", self.faults.stall),
            ("faults.transient_error", self.faults.transient_error),
            ("faults.permanent_error", self.faults.permanent_error),
            ("faults.relay_crash", self.faults.relay_crash),
            ("faults.pause", self.faults.pause),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return err(
                    field,
                    format!("is a probability: must be between 0 and 1 (got {p})"),
                );
            }
        }
        if a.document_collision + a.resubmit > 1.0 {
            return err(
                "arrivals.resubmit",
                "document_collision + resubmit must not exceed 1".into(),
            );
        }
        if a.document_collision > 0.0 && a.tenants.len() < 2 {
            return err(
                "arrivals.document_collision",
                "needs at least two tenants to collide".into(),
            );
        }
        for (i, e) in self.enqueue.iter().enumerate() {
            validate_tenant(&e.tenant)
                .or_else(|m| err(&format!("enqueue[{i}].tenant"), m.to_string()))?;
            validate_document(&e.document)
                .or_else(|m| err(&format!("enqueue[{i}].document"), m.to_string()))?;
            if e.version == 0 || e.version >= MAX_VERSION {
                return err(
                    &format!("enqueue[{i}].version"),
                    format!(
                        "operationVersion must be an integer >= 1 and < {MAX_VERSION} (got {})",
                        e.version
                    ),
                );
            }
        }
        for (i, b) in self.burst.iter().enumerate() {
            validate_tenant(&b.tenant)
                .or_else(|m| err(&format!("burst[{i}].tenant"), m.to_string()))?;
            if b.jobs == 0 || b.jobs > MAX_JOBS {
                return err(
                    &format!("burst[{i}].jobs"),
                    format!("must be between 1 and {MAX_JOBS} (got {})", b.jobs),
                );
            }
        }
        if self.jobs_planned() > MAX_JOBS {
            return err(
                "burst",
                format!(
                    "arrivals.jobs, the [[enqueue]] entries and the bursts' jobs together must not exceed {MAX_JOBS} (got {})",
                    self.jobs_planned()
                ),
            );
        }
        if self.faults.crash > 0.0 && self.faults.crash_points.is_empty() {
            return err(
                "faults.crash_points",
                "needs at least one crash point when faults.crash > 0".into(),
            );
        }
        for p in &self.faults.crash_points {
            if CrashPoint::parse(p).is_none() {
                return err(
                    "faults.crash_points",
                    format!(
                        "unknown crash point {}; allowed: {}",
                        clip(p),
                        crash_points_allowed()
                    ),
                );
            }
        }
        if let Some(o) = self.faults.outage {
            if o.from_ms >= o.to_ms {
                return err(
                    "faults.outage",
                    format!(
                        "needs from_ms < to_ms (got from_ms = {}, to_ms = {}): {{ from_ms, to_ms }}",
                        o.from_ms, o.to_ms
                    ),
                );
            }
        }
        if self.relay.interval_ms == 0 {
            return err("relay.interval_ms", "must be > 0".into());
        }
        if self.relay.restart_ms == Some(0) {
            return err(
                "relay.restart_ms",
                "must be > 0 (leave it out to restart at the next tick)".into(),
            );
        }
        if self.outbox.retention_ms == Some(0) {
            return err(
                "outbox.retention_ms",
                "must be > 0 (leave it out to keep published rows for ever)".into(),
            );
        }
        if self.consumer.dedupe_window_ms == Some(0) {
            return err(
                "consumer.dedupe_window_ms",
                "must be > 0 (leave it out to remember every event id forever)".into(),
            );
        }
        if self.metrics.depth_sample_ms == 0 {
            return err("metrics.depth_sample_ms", "must be > 0".into());
        }
        let planned = self.jobs_planned();
        let possible = self.jobs_possible();
        for (i, s) in self.script.iter().enumerate() {
            let field = |f: &str| format!("script[{i}].{f}");
            let worker_fault = matches!(
                s.fault,
                FaultKind::Crash
                    | FaultKind::Stall
                    | FaultKind::TransientError
                    | FaultKind::PermanentError
                    | FaultKind::MutatePayload
                    | FaultKind::Pause
            );
            match s.job {
                None if worker_fault => {
                    return err(
                        &field("fault"),
                        format!(
                            "fault {} needs `job` (a job id from 0 to {})",
                            s.fault.name(),
                            planned.saturating_sub(1)
                        ),
                    )
                }
                Some(j) if j as u64 >= possible => {
                    return err(&field("job"), format!("no job {j} exists: this scenario creates jobs 0 to {} (arrivals.jobs + enqueue and burst entries), and at most {} more by reprocess (one per operator action)", planned.saturating_sub(1), possible - planned));
                }
                Some(_) if !worker_fault => {
                    return err(&field("job"), "relay_crash does not take a job".into())
                }
                _ => {}
            }
            match (s.fault, &s.point) {
                (FaultKind::Crash, None) => {
                    return err(
                        &field("fault"),
                        format!("crash needs `point`; allowed: {}", crash_points_allowed()),
                    )
                }
                (FaultKind::Crash, Some(p)) if CrashPoint::parse(p).is_none() => {
                    return err(
                        &field("point"),
                        format!(
                            "unknown crash point {}; allowed: {}",
                            clip(p),
                            crash_points_allowed()
                        ),
                    );
                }
                (FaultKind::Crash, Some(_)) => {}
                (_, Some(_)) => return err(&field("point"), "only a crash takes a point".into()),
                _ => {}
            }
            if s.stall_ms.is_some() != (s.fault == FaultKind::Stall) {
                return err(
                    &field("stall_ms"),
                    "a stall needs `stall_ms`, and only a stall takes it".into(),
                );
            }
            if s.pause_ms.is_some() != (s.fault == FaultKind::Pause) {
                return err(
                    &field("pause_ms"),
                    "a pause needs `pause_ms`, and only a pause takes it".into(),
                );
            }
            if s.payload.is_some() && s.fault != FaultKind::MutatePayload {
                return err(
                    &field("payload"),
                    "only mutate_payload takes `payload`".into(),
                );
            }
            if s.attempt == Some(0) {
                return err(&field("attempt"), "attempt numbers start at 1".into());
            }
        }
        if self.dlq.capacity == Some(0) {
            return err(
                "dlq.capacity",
                "must be >= 1 (leave it out for an unbounded DLQ)".into(),
            );
        }
        if self.dlq.reprocess_limit == Some(0) {
            return err(
                "dlq.reprocess_limit",
                "must be >= 1 reprocess per window (leave it out for no limit)".into(),
            );
        }
        match (self.dlq.reprocess_limit, self.dlq.reprocess_window_ms) {
            (_, Some(0)) => return err("dlq.reprocess_window_ms", "must be > 0".into()),
            (None, Some(_)) => {
                return err(
                    "dlq.reprocess_window_ms",
                    "only applies with dlq.reprocess_limit".into(),
                )
            }
            _ => {}
        }
        for (i, o) in self.operator.iter().enumerate() {
            if o.repeat > 0 && o.every_ms == 0 {
                return err(
                    &format!("operator[{i}].repeat"),
                    format!(
                        "a repeated action (repeat = {}) needs every_ms > 0, the gap between runs",
                        o.repeat
                    ),
                );
            }
            if o.repeat > 1_000_000 {
                return err(
                    &format!("operator[{i}].repeat"),
                    format!("at most 1000000 (got {})", o.repeat),
                );
            }
            match (o.job, o.target) {
                (Some(j), None) if j as u64 >= planned => {
                    return err(
                        &format!("operator[{i}].job"),
                        format!(
                            "no job {j} exists: this scenario creates jobs 0 to {} before any reprocess",
                            planned.saturating_sub(1)
                        ),
                    );
                }
                (Some(_), None) => {}
                (None, Some(_)) if o.follow => {
                    return err(
                        &format!("operator[{i}].follow"),
                        "`follow` follows a fixed `job`'s reprocess chain; a `target` picks its job itself".into(),
                    );
                }
                (None, Some(_)) => {}
                _ => {
                    return err(
                        &format!("operator[{i}].job"),
                        "give either `job` (a job id) or `target` (oldest_dead_lettered or cancelled), not both".into(),
                    );
                }
            }
        }
        for (i, o) in self.operator.iter().enumerate() {
            if let Some(id) = &o.operator {
                crate::limits::validate_operator(id).or_else(|m| {
                    err(
                        &format!("operator[{i}].operator"),
                        format!("{} {m}", clip(id)),
                    )
                })?;
            }
        }
        if let Some(names) = &self.expect.violations {
            for n in names {
                if Invariant::parse(n).is_none() {
                    let allowed: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                    return err(
                        "expect.violations",
                        format!(
                            "unknown invariant {}; allowed: {}",
                            clip(n),
                            allowed.join(", ")
                        ),
                    );
                }
            }
        }
        if let Some(swarm) = &self.swarm {
            swarm.validate()?;
        }
        for (field, names) in [
            ("expect.sometimes", &self.expect.sometimes),
            ("expect.sweep_sometimes", &self.expect.sweep_sometimes),
        ] {
            for n in names.iter().flatten() {
                if Sometimes::parse(n).is_none() {
                    let allowed: Vec<&str> = Sometimes::ALL.iter().map(|i| i.name()).collect();
                    return err(
                        field,
                        format!(
                            "unknown property {}; allowed: {}",
                            clip(n),
                            allowed.join(", ")
                        ),
                    );
                }
            }
        }
        if let Some(h) = &self.expect.trace_hash {
            if h.len() != 16 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
                return err(
                    "expect.trace_hash",
                    format!("{} is not a trace hash; allowed: 16 hex digits, as summary.json's traceHash", clip(h)),
                );
            }
        }
        Ok(())
    }
}

fn crash_points_allowed() -> String {
    CrashPoint::ALL
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse("t.toml", src)
    }

    #[test]
    fn a_minimal_file_gets_defaults() {
        let s = parse("name = \"x\"\n").unwrap();
        assert_eq!(s.queue.max_attempts, 3);
        assert_eq!(s.arrivals.tenants, vec!["acme"]);
    }

    #[test]
    fn unknown_keys_name_the_file_line_field_and_allowed_keys() {
        let e = parse("name = \"x\"\n[queue]\nlease_ms = 5\nleese_ms = 3\n").unwrap_err();
        assert_eq!(e.line, Some(4));
        assert_eq!(e.field, "queue.leese_ms");
        assert!(
            e.to_string()
                .starts_with("t.toml:4: field `queue.leese_ms`"),
            "{e}"
        );
        assert!(e.message.contains("lease_ms"), "{e}");
    }

    #[test]
    fn wrong_types_and_malformed_toml_give_a_line() {
        let e = parse("name = \"x\"\n[workers]\ncount = \"two\"\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        let e = parse("name = \"x\"\n[workers\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        let e = parse("name = \"x\"\n[stages]\ninference_ms = { dist = \"gamma\", k = 1 }\n")
            .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    #[test]
    fn a_distribution_is_a_table_never_an_array() {
        let e = parse("name = \"x\"\n[stages]\ninference_ms = [\"constant\", 1]\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().contains("expected a table"), "{e}");
        let s =
            parse("name = \"x\"\n[stages]\ninference_ms = { dist = \"constant\", value = 7 }\n")
                .unwrap();
        assert_eq!(s.stages.inference_ms, Dist::Constant { value: 7 });
    }

    #[test]
    fn semantic_errors_are_located() {
        let e = parse("name = \"x\"\n[arrivals]\njobs = 2\ntenants = [\"Acme\"]\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("arrivals.tenants", Some(4)));
        assert!(e.message.contains("^[a-z][a-z0-9-]{1,32}$"));
        let e = parse("name = \"x\"\n[faults]\ncrash = 1.5\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("faults.crash", Some(3)));
        let src = "name = \"x\"\n[arrivals]\njobs = 2\n[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\n[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lunch\"\njob = 0\n";
        let e = parse(src).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("script[1].point", Some(12)));
        assert!(e.message.contains("after_commit_before_ack"));
        let e = parse(
            &src.replace("after_lunch", "after_lease")
                .replace("job = 0\n[[script]]", "job = 7\n[[script]]"),
        )
        .unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("script[0].job", Some(8)));
    }

    #[test]
    fn expectations_name_real_invariants() {
        let e = parse("name = \"x\"\n[expect]\nviolations = [\"no_such_thing\"]\n").unwrap_err();
        assert_eq!(e.field, "expect.violations");
        assert!(e.message.contains("single_result_per_key"));
    }
}

//! What a scenario file says: its sections as written, before validation.
//!
//! Owns: [`ScenarioFile`] (one field per section, read by serde with unknown keys rejected, and
//! written back by `--freeze` and the shrinker), which durasim settings the text wrote itself,
//! the profile and the keys a file sets on top of it, and its job counts.
//! Does not: check anything across fields or resolve the profile (`validate.rs` turns a file
//! into a [`super::Scenario`]), or locate an error (`mod.rs`, `position.rs`).

use super::{
    Arrivals, Burst, ConsumerSection, DlqSection, Enqueue, Expect, Faults, MetricsSection,
    Operator, OutboxSection, QueueSection, Relay, RetrySection, RunSection, Script, Stages, Swarm,
    Workers, Written,
};
use serde::{Deserialize, Serialize};

/// A scenario as its file says it. Everything downstream takes a validated
/// [`super::Scenario`]; a file is what the sweep edits (a swarm seed's draw, a shrink's
/// candidate, a frozen run) and what is written back as TOML.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
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
    pub metrics: MetricsSection,
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub script: Vec<Script>,
    #[serde(default)]
    pub operator: Vec<Operator>,
    #[serde(default, skip_serializing_if = "DlqSection::is_default")]
    pub dlq: DlqSection,
    #[serde(default)]
    pub bugs: crate::vocab::bugs::BugSet,
    #[serde(default)]
    pub expect: Expect,
    /// Ranges for `durasim sweep --swarm`; ignored by `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
}

impl ScenarioFile {
    /// Which durasim settings a parsed text wrote itself (a profile supplies the others):
    /// `[queue]` and `[retry]` are never read apart from the rest (`read.rs`).
    pub(super) fn written_of(table: &toml::de::DeTable<'_>) -> Written {
        let has = |section: &str, key: &str| {
            table
                .get(section)
                .and_then(|v| v.get_ref().as_table())
                .is_some_and(|t| t.contains_key(key))
        };
        Written {
            lease_ms: has("queue", "lease_ms"),
            heartbeat_ms: has("queue", "heartbeat_ms"),
            deadline_ms: has("queue", "deadline_ms"),
            max_attempts: has("queue", "max_attempts"),
            backoff_base_ms: has("retry", "backoff_base_ms"),
            backoff_cap_ms: has("retry", "backoff_cap_ms"),
            jitter: has("retry", "jitter"),
        }
    }

    /// Records which durasim settings the text wrote itself ([`ScenarioFile::written_of`]).
    pub(super) fn note_written(&mut self, written: Written) {
        self.queue.written = written;
        let w = self.queue.written;
        let profiled = self
            .queue
            .profile
            .as_deref()
            .is_some_and(|p| p != "durasim");
        self.retry.written_only =
            profiled.then_some((w.backoff_base_ms, w.backoff_cap_ms, w.jitter));
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
}

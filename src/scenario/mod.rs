//! The scenario file: what a `scenarios/*.toml` file may say, and parsing it into a
//! [`Scenario`].
//!
//! Owns: the top-level `Scenario` (one field per section), `ScenarioError` (file, line, field,
//! what is allowed), the name rule, `Scenario::parse` (TOML through serde with unknown keys
//! rejected, then validation, each error located), the history header a scenario implies
//! (`run_config`) and its job counts.
//! Does not: define the sections (`sections.rs`, `script.rs`), distributions (`dist.rs`),
//! expectations (`expect.rs`), swarm ranges (`swarm.rs`), the cross-field checks
//! (`validate.rs`) or how a field path becomes a line (`position.rs`); run anything (see `sim`)
//! or read files (the shell hands over the text).

mod dist;
mod expect;
mod faults;
mod position;
mod script;
mod sections;
mod swarm;
mod validate;
pub mod warnings;

pub use dist::Dist;
pub use expect::{Expect, ReplayExpectation};
pub use faults::{Faults, HeldFault, Outage};
pub(crate) use position::locate;
pub use script::{FaultKind, Operator, OperatorAction, OperatorTarget, Script};
pub use sections::{
    Arrivals, Burst, ConsumerSection, DepthSampling, DlqSection, Enqueue, InvalidDocuments,
    Metrics, OutboxSection, QueueSection, Relay, RetrySection, RunSection, Stages, Workers,
    Written,
};
pub use swarm::Swarm;
pub use validate::refused_under;

pub use position::Positions;
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

pub use crate::base::messages::{clip, MAX_SHOWN};

/// What a scenario name may be: it is the default output directory `reports/<name>/`, so it
/// must never be a path (no `/`, no `.` or `..`, nothing a terminal would show differently).
pub const NAME_RULE: &str =
    "1 to 64 characters from a-z, 0-9, '-' and '_', starting with a letter or a digit";
pub const MAX_NAME: usize = 64;

pub fn validate_name(name: &str) -> Result<(), crate::base::limits::LimitError> {
    let slug = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_';
    crate::base::limits::check_identifier(name, MAX_NAME, slug, NAME_RULE)
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
    /// The `[bugs]` table: the switches on (`vocab::bugs`).
    #[serde(default)]
    pub bugs: crate::vocab::bugs::BugSet,
    #[serde(default)]
    pub expect: Expect,
    /// Ranges for `durasim sweep --swarm`; ignored by `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
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
            let positions = Positions::new(source);
            let line = e.span().map(|s| positions.line_of(s.start));
            let field = e
                .span()
                .and_then(|s| positions.field_at(s, unknown.as_deref()))
                .or(unknown)
                .unwrap_or_default();
            ScenarioError {
                file: file.to_string(),
                line,
                field: crate::base::messages::clip_name(&field),
                message: crate::base::messages::plain(&message),
            }
        })?;
        scenario.note_written(source);
        scenario
            .validate()
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
        let (backoff_base, backoff_cap, jitter, retry_formula) = e.header_backoff(&sem);
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
            retry_formula,
            permanent_errors_retried: sem.permanent_error == crate::profile::PermanentError::Retry,
            dlq_retention: sem
                .dlq
                .retention_ms
                .map(|after| crate::vocab::config::DlqRetention {
                    after,
                    from_enqueue: sem.dlq.mode == crate::profile::DlqMode::Redrive,
                }),
            unique: sem.unique,
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

    #[test]
    fn positions_come_from_the_parsers_spans() {
        // A key left out: the line of the table it belongs in (the line finder gave none).
        let e = parse("name = \"x\"\n[[operator]]\nat_ms = 5\naction = \"reprocess_dlq\"\n")
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("operator[0].job", Some(2)),
            "{e}"
        );
        // A key written inline, in a table, at the top: its own line.
        let e = parse("name = \"x\"\nqueue = { lease_ms = 5,\n  max_attempts = 0 }\n").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("queue.max_attempts", Some(3)),
            "{e}"
        );
        // A range of three values: refused while reading, at its line.
        let e = parse("name = \"x\"\n[swarm]\nworkers = [1, 2]\ncrash = [0.1, 0.2, 0.3]\n")
            .unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("swarm.crash", Some(4)), "{e}");
        assert!(
            e.message.contains("exactly two values (got 3 values)"),
            "{e}"
        );
        // A table defined twice: the header's table, not a key of the table before it.
        let e = parse("name = \"x\"\n[stages]\n[queue]\nlease_ms = 5\n[stages]\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("stages", Some(5)), "{e}");
        // A key defined twice: named in its table.
        let e = parse("name = \"x\"\n[queue]\nlease_ms = 5\nlease_ms = 6\n").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("queue.lease_ms", Some(4)),
            "{e}"
        );
    }

    #[test]
    fn expect_reads_every_counter_and_writes_it_back() {
        use crate::vocab::counters::Counter;
        let mut src = String::from("name = \"x\"\n[expect]\n");
        for (i, c) in Counter::ALL.iter().enumerate() {
            if let Some(name) = c.name() {
                src.push_str(&format!("{name} = {i}\n"));
            }
        }
        src.push_str("violations = []\ntrace_hash = \"0123456789abcdef\"\n");
        let s = parse(&src).unwrap();
        for (i, c) in Counter::ALL.iter().enumerate() {
            let pinned = c.name().map(|_| i as u64);
            assert_eq!(s.expect.counts.get(*c), pinned, "{c:?}");
        }
        let again = parse(&toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(again.expect, s.expect);
        let e = parse("name = \"x\"\n[expect]\nacked = 1\nackd = 1\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("expect.ackd", Some(4)), "{e}");
        assert!(
            e.message.contains("`acked`") && e.message.contains("`trace_hash`"),
            "{e}"
        );
        let e = parse("name = \"x\"\n[expect]\nacked = \"one\"\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("expect.acked", Some(3)), "{e}");
    }
}

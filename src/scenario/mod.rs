//! The scenario file: what a `scenarios/*.toml` file may say, and parsing it into the one
//! validated, resolved [`Scenario`] everything downstream takes.
//!
//! Owns: `Scenario` (the file, with what validation resolved once: the profile's semantics, the
//! history header, the name table and the explicit entries' ids, the script's aims, the typed
//! `[expect]`), `ScenarioError` (file, line, field, what is allowed), the name rule,
//! `Scenario::parse` (TOML through serde with unknown keys rejected, then validation, each
//! error located), and a run's job counts.
//! Does not: define the file (`file.rs`) or its sections (`sections.rs`, `script.rs`),
//! distributions (`dist.rs`), expectations (`expect.rs`), swarm ranges and draws (`swarm.rs`),
//! the cross-field checks (`validate.rs`), the name table (`names.rs`) or how a field path
//! becomes a line (`position.rs`); run anything (see `sim`) or read files (the shell hands over
//! the text).

pub mod cost;
mod dist;
mod expect;
mod faults;
mod file;
mod names;
mod position;
pub mod read;
mod script;
mod sections;
pub mod shape;
mod swarm;
mod validate;
pub mod warnings;

pub use cost::{Budget, Cost};
pub use dist::Dist;
pub use expect::{Expect, Expectations, PinnedHash, ReplayExpectation};
pub use faults::{Faults, HeldFault, Outage};
pub use file::ScenarioFile;
pub use script::{Aim, FaultKind, Operator, OperatorAction, OperatorTarget, Script};
pub use sections::{
    Arrivals, Burst, ConsumerSection, DepthSampling, DlqSection, Enqueue, InvalidDocuments,
    MetricsSection, OutboxSection, QueueSection, Relay, RetrySection, RunSection, Stages, Workers,
    Written,
};
pub use swarm::{Swarm, SwarmDraw};
pub use validate::refused_under;

use crate::base::ids::{DocumentId, TenantId};
use crate::profile::Semantics;
use crate::vocab::config::RunConfig;
use crate::vocab::key::KeyNames;
use names::EntryIds;
pub use position::Positions;
pub use read::Locator;
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

/// A validated scenario: its file, and what validation resolved from it once. Every run, check
/// and report takes one; the sections read through it as the file's (`Deref`). A changed
/// scenario is a new file validated again ([`Scenario::edited`]), or a swarm seed's draw
/// ([`Scenario::with_draw`]).
#[derive(Clone, Debug)]
pub struct Scenario {
    file: ScenarioFile,
    /// The queue semantics a run uses: the profile's defaults with the file's keys applied.
    semantics: Semantics,
    /// The header of this scenario's histories, but the seed (a run's own).
    header: RunConfig,
    /// Every name a run can use, registered in a fixed order.
    names: KeyNames,
    /// The ids each explicit entry enqueues under.
    entry_ids: EntryIds,
    /// What each `[[script]]` entry strikes.
    aims: Vec<Aim>,
    expectations: Expectations,
}

impl std::ops::Deref for Scenario {
    type Target = ScenarioFile;

    fn deref(&self) -> &ScenarioFile {
        &self.file
    }
}

/// A scenario is written as its file (everything else is derived from it).
impl serde::Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.file.serialize(s)
    }
}

impl Scenario {
    /// Parses and validates a scenario's text. `file` is only used in error messages. Reading
    /// costs at most `shape::COST_PER_BYTE` times the text's size, plus `shape::COST_FIXED`
    /// (`read.rs`, `shape.rs`).
    pub fn parse(file: &str, source: &str) -> Result<Scenario, ScenarioError> {
        let (scenario, _) = read::read(source).map_err(|(line, field, message)| ScenarioError {
            file: file.to_string(),
            line,
            field,
            message,
        })?;
        scenario
            .validate()
            .map_err(|(field, message)| ScenarioError {
                file: file.to_string(),
                line: read::Locator::new(source).line(&field),
                field,
                message,
            })
    }

    /// Validates a file built in code (a frozen run, a shrink's candidate, an edit): as
    /// [`Scenario::parse`], but an error has no line. `file` is only used in error messages.
    pub fn from_file(scenario: ScenarioFile, file: &str) -> Result<Scenario, ScenarioError> {
        scenario
            .validate()
            .map_err(|(field, message)| ScenarioError {
                file: file.to_string(),
                line: None,
                field,
                message,
            })
    }

    /// This scenario with `edit` made to its file, validated again.
    pub fn edited(&self, edit: impl FnOnce(&mut ScenarioFile)) -> Result<Scenario, ScenarioError> {
        let mut file = self.file.clone();
        edit(&mut file);
        Scenario::from_file(file, &self.file.name)
    }

    /// The pieces validation resolved, put together (`validate.rs`).
    fn resolved(
        file: ScenarioFile,
        semantics: Semantics,
        names: KeyNames,
        entry_ids: EntryIds,
        aims: Vec<Aim>,
        expectations: Expectations,
    ) -> Scenario {
        let header = header(&file, &semantics);
        Scenario {
            file,
            semantics,
            header,
            names,
            entry_ids,
            aims,
            expectations,
        }
    }

    /// The file as written (and as `--freeze` writes it back).
    pub fn file(&self) -> &ScenarioFile {
        &self.file
    }

    /// The queue semantics a run of this scenario uses: its profile's defaults with the
    /// scenario's keys applied.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// The header of this scenario's histories run with `seed`: every setting a rule of the
    /// checker depends on, in milliseconds, and the optional records the simulator writes (all
    /// of them).
    pub fn run_config(&self, seed: u64) -> RunConfig {
        RunConfig {
            seed: Some(seed),
            ..self.header.clone()
        }
    }

    /// Every name a run can use, registered before it starts, in a fixed order: the generated
    /// arrivals' tenants, then the tenants and documents of `[[enqueue]]` and the tenants of
    /// `[[burst]]`, in file order. The kernel, the checker and the history file take copies.
    pub fn names(&self) -> &KeyNames {
        &self.names
    }

    /// The tenant and document `[[enqueue]]` entry `index` enqueues under.
    pub fn enqueue_ids(&self, index: usize) -> (TenantId, DocumentId) {
        self.entry_ids.enqueue[index]
    }

    /// The tenant `[[burst]]` entry `index` submits for.
    pub fn burst_tenant(&self, index: usize) -> TenantId {
        self.entry_ids.burst[index]
    }

    /// What each `[[script]]` entry strikes, index for index.
    pub fn aims(&self) -> &[Aim] {
        &self.aims
    }

    /// The `[expect]` block in the checker's words.
    pub fn expectations(&self) -> &Expectations {
        &self.expectations
    }

    /// This scenario expecting nothing (a sweep's seed, a run to be frozen or shrunk: no
    /// self-replay either).
    pub fn without_expectations(&self) -> Scenario {
        let mut s = self.clone();
        s.file.expect = Expect::default();
        s.expectations = Expectations::default();
        s
    }

    /// The DLQ's limits under this scenario's profile (a profile can bring a capacity: Sidekiq's
    /// dead set keeps 9,999).
    pub fn dlq_config(&self) -> crate::model::dead_letter::DlqConfig {
        dlq_config(&self.file, &self.semantics)
    }

    /// The jobs a run creates before any reprocess, with `jobs` (`--jobs`) in place of
    /// `arrivals.jobs` when given.
    pub fn run_jobs(&self, jobs: Option<u64>) -> u64 {
        jobs.unwrap_or(self.arrivals.jobs) + self.enqueue.len() as u64 + self.burst_jobs()
    }

    /// The jobs a run's per-job tables are sized for up front: [`Scenario::run_jobs`], capped
    /// (a larger run grows them as it goes).
    pub fn capacity(&self, jobs: Option<u64>) -> usize {
        (self.run_jobs(jobs) as usize).min(1 << 24)
    }
}

fn dlq_config(file: &ScenarioFile, sem: &Semantics) -> crate::model::dead_letter::DlqConfig {
    crate::model::dead_letter::DlqConfig {
        capacity: sem.dlq.capacity,
        ..file.dlq.config()
    }
}

/// The header a scenario's histories share (the seed is each run's own).
fn header(file: &ScenarioFile, sem: &Semantics) -> RunConfig {
    let dlq = dlq_config(file, sem);
    let e = crate::profile::Effective::of(sem);
    let (backoff_base, backoff_cap, jitter, retry_formula) = e.header_backoff(sem);
    RunConfig {
        time_unit: crate::vocab::config::TimeUnit::Ms,
        emits: crate::vocab::config::Emits::all(),
        seed: None,
        workers: Some(file.workers.count),
        lease: e.lease_ms,
        heartbeat: e.heartbeat_ms,
        deadline: Some(e.deadline_ms),
        attempts_max: Some(e.attempts_max),
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
        dedupe_window: file.consumer.dedupe_window_ms,
        outbox_retention: file.outbox.retention_ms,
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
        lease_detection: lease_detection(sem),
        stated: crate::vocab::config::Stated::default(),
    }
}

/// When the profile's queue notices a lease's end, as the header states it (docs/history-format.md
/// `lease_detection`): its timer or sweeper, and the time from there to the `lease_expired`
/// record (a by-id rescue's gap). `None` where the header's kinds cannot state the rule: a
/// rescue that holds the job for a retry delay, a sweeper over worker processes, no rescuer.
fn lease_detection(sem: &Semantics) -> Option<crate::vocab::config::LeaseDetection> {
    use crate::profile::{ExpiryKind, OnExpiry, RescueWrite};
    use crate::vocab::config::{DetectionKind, LeaseDetection};
    let (kind, every) = match sem.expiry.kind {
        ExpiryKind::Timer => (DetectionKind::Timer, 0),
        ExpiryKind::Sweep => (DetectionKind::Sweep, sem.expiry.sweep_ms),
        ExpiryKind::TwoPass => (DetectionKind::TwoPass, sem.expiry.sweep_ms),
        ExpiryKind::WorkerLiveness | ExpiryKind::Never => return None,
    };
    if !matches!(sem.on_expiry, OnExpiry::Ready | OnExpiry::Stall)
        || (kind != DetectionKind::Timer && every == 0)
    {
        return None;
    }
    // A timer fires the millisecond after the lease's end; a sweeper at its tick. A by-id
    // rescue writes its gap later.
    let gap = match sem.rescue_write {
        RescueWrite::ById => sem.rescue_gap_ms,
        _ => 0,
    };
    let slack = (kind == DetectionKind::Timer) as u64 + gap;
    Some(LeaseDetection { kind, every, slack })
}

/// A TOML error in a scenario's (or an expectations file's) text as a [`ScenarioError`]: its
/// line, its field path, an unknown key with the keys allowed.
fn toml_error(file: &str, source: &str, e: &toml::de::Error) -> ScenarioError {
    let (message, unknown) = read::worded(e);
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
}

/// An expectations file (`durasim verify --expect FILE`): the keys of a scenario's `[expect]`
/// block at the top level, read and validated as that block is (an unknown key or name is an
/// error at its line and field). `file` is only used in error messages.
pub fn parse_expectations(file: &str, source: &str) -> Result<Expectations, ScenarioError> {
    let expect: Expect = toml::from_str(source).map_err(|e| toml_error(file, source, &e))?;
    expect
        .invariants()
        .and_then(|v| expect.typed(v))
        .map_err(|(field, message)| {
            let field = field.strip_prefix("expect.").unwrap_or(&field).to_string();
            ScenarioError {
                file: file.to_string(),
                line: Positions::new(source).line(&field),
                field,
                message,
            }
        })
}

/// A history header's `expect` object (`durasim verify`, when no `--expect FILE` is given): the
/// keys of a scenario's `[expect]` block, validated as that block is; an error names the header
/// (line 1 of `file`) and the field `expect.<key>`.
pub fn parse_expectations_json(
    file: &str,
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<Expectations, ScenarioError> {
    let error = |field: String, message: String| ScenarioError {
        file: file.to_string(),
        line: Some(1),
        field: crate::base::messages::clip_name(&field),
        message: crate::base::messages::plain(&message),
    };
    // Key by key, so that an error names its key (serde_json's own message does not).
    let mut whole = serde_json::Map::new();
    for (k, v) in map {
        let one = serde_json::Map::from_iter([(k.clone(), v.clone())]);
        serde_json::from_value::<Expect>(serde_json::Value::Object(one))
            .map_err(|e| error(format!("expect.{k}"), e.to_string()))?;
        whole.insert(k.clone(), v.clone());
    }
    let expect: Expect = serde_json::from_value(serde_json::Value::Object(whole))
        .map_err(|e| error("expect".into(), e.to_string()))?;
    expect
        .invariants()
        .and_then(|v| expect.typed(v))
        .map_err(|(field, message)| error(field, message))
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
    fn validation_resolves_names_aims_and_expectations_once() {
        use crate::base::ids::JobId;
        use crate::check::{Invariant, Sometimes};
        let src = "name = \"x\"\n[arrivals]\njobs = 2\ntenants = [\"acme\", \"beta\"]\n\
            [[enqueue]]\nat_ms = 0\ntenant = \"gamma\"\ndocument = \"inv-7\"\n\
            [[enqueue]]\nat_ms = 1\ntenant = \"acme\"\ndocument = \"doc-5\"\n\
            [[burst]]\nat_ms = 2\ntenant = \"delta\"\njobs = 3\n\
            [[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 1\n\
            [[script]]\nat_ms = 5\nfault = \"mutate_payload\"\njob = 0\n\
            [[script]]\nat_ms = 9\nfault = \"relay_crash\"\n\
            [expect]\nviolations = [\"terminal_once\", \"fenced_writes\"]\n\
            sometimes = [\"dead_lettered\"]\ntrace_hash = \"00000000000000AB\"\n";
        let s = parse(src).unwrap();
        let names = s.names();
        let tenants: Vec<&str> = (0..names.tenants.len())
            .map(|t| names.tenants.name(TenantId(t as u16)))
            .collect();
        assert_eq!(tenants, ["acme", "beta", "gamma", "delta"]);
        assert_eq!(s.enqueue_ids(0).0, TenantId(2));
        assert_eq!(names.documents.name(s.enqueue_ids(0).1), "inv-7");
        assert_eq!(s.enqueue_ids(1), (TenantId(0), DocumentId(5)));
        assert_eq!(s.burst_tenant(0), TenantId(3));
        assert_eq!(
            s.aims(),
            [
                Aim::Attempt {
                    job: JobId(1),
                    point: Some(crate::model::worker::CrashPoint::AfterLease)
                },
                Aim::Payload { job: JobId(0) },
                Aim::Site {
                    fault: crate::vocab::faults::Struck::RelayCrash,
                    job: None
                },
            ]
        );
        let e = s.expectations();
        let mut checker_order = vec![Invariant::TerminalOnce, Invariant::FencedWrites];
        checker_order.sort_by_key(|i| *i as usize);
        assert_eq!(e.violations, checker_order);
        assert_eq!(e.sometimes, [Sometimes::DeadLettered]);
        let hash = e.trace_hash.as_ref().unwrap();
        assert_eq!(
            (hash.value, hash.written.as_str()),
            (0xab, "00000000000000AB")
        );
        assert_eq!(s.run_config(9).seed, Some(9));
        assert_eq!(s.capacity(Some(10)), 10 + 2 + 3);
        // An edit is validated again: refused at its field, without a line.
        let e = s.edited(|f| f.workers.count = 0).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("workers.count", None), "{e}");
        let fewer = s.edited(|f| f.burst.clear()).unwrap();
        assert_eq!(fewer.names().tenants.len(), 3);
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

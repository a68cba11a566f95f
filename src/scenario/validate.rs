//! The checks serde cannot make: ranges, probabilities, identifiers, references between
//! sections (a script's job exists, an operator names a job or a target), names of invariants
//! and properties.
//!
//! Owns: `ScenarioFile::validate`, which returns the first offending field's path and what is
//! allowed (`parse` turns the path into a line), or the validated [`Scenario`] with its profile
//! resolved, its names registered (`names.rs`), its script's aims and its `[expect]` read; and
//! `refused_under` (a bug switch that cannot act under the scenario's `[queue]` profile:
//! `[bugs]` is refused here, `--bug` by the shell; `bugs::refused_under` names it too).
//! Does not: parse TOML or locate fields (`mod.rs`, `position.rs`); warn about suspicious but
//! valid settings (`scenario/warnings.rs`).

use super::names::register;
use super::{validate_name, Aim, FaultKind, Scenario, ScenarioFile, Script};
use crate::base::ids::JobId;
use crate::base::limits::{LimitError, MAX_JOBS};
use crate::base::messages::clip;
use crate::model::worker::CrashPoint;
use crate::profile::resolve::Refusal;
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::faults::{Held, Site, Struck};
use crate::vocab::key::{validate_document, validate_tenant, MAX_VERSION};

/// The refusal of `field`, saying `message`.
fn err<T>(field: &str, message: String) -> Result<T, Refusal> {
    Err((field.to_string(), message))
}

/// At most this many entries in `[run] ties`.
pub const MAX_TIES: usize = 1_000;
/// A tie's pick is at most this (a tie has fewer events due than the run has events).
pub const MAX_TIE_PICK: u64 = 1_000_000;

/// `[run] ties`: `[tie, pick]` pairs, ties strictly increasing, picks from 1 (0 is the default
/// and is not written).
fn check_ties(ties: &[[u64; 2]]) -> Result<(), Refusal> {
    if ties.len() > MAX_TIES {
        return err(
            "run.ties",
            format!("at most {MAX_TIES} entries (got {})", ties.len()),
        );
    }
    for (i, &[tie, pick]) in ties.iter().enumerate() {
        let field = format!("run.ties[{i}]");
        if i > 0 && tie <= ties[i - 1][0] {
            return err(
                &field,
                format!(
                    "[{tie}, {pick}]: ties are listed in increasing order, each once (the one before is {})",
                    ties[i - 1][0]
                ),
            );
        }
        if pick == 0 || pick > MAX_TIE_PICK {
            return err(
                &field,
                format!(
                    "[{tie}, {pick}]: a pick is 1 to {MAX_TIE_PICK} (0, the default order's first, is not listed)"
                ),
            );
        }
    }
    Ok(())
}

impl ScenarioFile {
    /// The file as a [`Scenario`]: every check in a fixed order, the first offending field's
    /// path and what is allowed on a refusal; on success the profile resolved, the names
    /// registered, the script's aims and the expectations read, once.
    pub(super) fn validate(mut self) -> Result<Scenario, Refusal> {
        validate_name(&self.name).or_else(|m| err("name", format!("{} {m}", clip(&self.name))))?;
        self.check_times()?;
        self.check_settings()?;
        let semantics =
            crate::profile::resolve::resolve(self.queue_profile(), &self.profile_overrides())?;
        self.check_retry_and_durations()?;
        self.check_arrivals()?;
        self.check_probabilities()?;
        self.check_entries()?;
        self.check_faults_and_delivery()?;
        let aims = self.check_script()?;
        self.check_dlq()?;
        self.check_operators()?;
        // `[swarm]` is checked between `violations` and the rest of `[expect]`: a file with
        // errors in both is refused at the same field as ever.
        let violations = self.expect.invariants()?;
        if let Some(swarm) = &self.swarm {
            swarm.validate()?;
        }
        let expectations = self.expect.typed(violations)?;
        let profile = self.queue.profile.as_deref().unwrap_or("durasim");
        if let Some(m) = refused_under(self.bugs, &semantics, profile) {
            return err(&format!("bugs.{}", Bug::EarlyExpiry.name()), m);
        }
        let (names, ids) = register(&self)?;
        Ok(Scenario::resolved(
            self,
            semantics,
            names,
            ids,
            aims,
            expectations,
        ))
    }

    /// Every time against its range (`limits::check_times`), in the order of the file's
    /// serialized keys: the entries' arrays one entry at a time (a file of many entries is never
    /// held as one JSON tree).
    fn check_times(&mut self) -> Result<(), Refusal> {
        use crate::base::limits::check_times_at;
        let enqueue = std::mem::take(&mut self.enqueue);
        let script = std::mem::take(&mut self.script);
        let operator = std::mem::take(&mut self.operator);
        let burst = std::mem::take(&mut self.burst);
        let rest = serde_json::to_value(&*self).expect("a scenario serializes");
        self.enqueue = enqueue;
        self.script = script;
        self.operator = operator;
        self.burst = burst;
        let serde_json::Value::Object(mut map) = rest else {
            unreachable!("a scenario serializes as a table")
        };
        for name in super::shape::ENTRY_ARRAYS {
            map.insert(name.to_string(), serde_json::Value::Null);
        }
        fn each<T: serde::Serialize>(name: &str, items: &[T]) -> Result<(), LimitError> {
            for (i, item) in items.iter().enumerate() {
                let value = serde_json::to_value(item).expect("an entry serializes");
                check_times_at(&value, format!("{name}[{i}]"))?;
            }
            Ok(())
        }
        for (key, value) in &map {
            match key.as_str() {
                "enqueue" => each(key, &self.enqueue),
                "script" => each(key, &self.script),
                "operator" => each(key, &self.operator),
                "burst" => each(key, &self.burst),
                _ => check_times_at(value, key.clone()),
            }
            .or_else(|e| err(e.field().unwrap_or(""), e.to_string()))?;
        }
        Ok(())
    }

    /// The workers and the queue's own settings and profile name.
    fn check_settings(&self) -> Result<(), Refusal> {
        if self.workers.count == 0 || self.workers.count > 1_000_000 {
            return err(
                "workers.count",
                format!("must be between 1 and 1000000 (got {})", self.workers.count),
            );
        }
        check_ties(&self.run.ties)?;
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
        Ok(())
    }

    /// The attempts limit, the backoff's bounds and every drawn duration.
    fn check_retry_and_durations(&self) -> Result<(), Refusal> {
        let q = &self.queue;
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
        ] {
            d.check().or_else(|m| err(field, m))?;
        }
        for h in Held::ALL {
            let field = format!("faults.{}", h.spec().length_key);
            self.faults.held(h).ms.check().or_else(|m| err(&field, m))?;
        }
        Ok(())
    }

    /// The generated arrivals' tenants, job count and invalid documents.
    fn check_arrivals(&self) -> Result<(), Refusal> {
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
        let mut seen = std::collections::BTreeSet::new();
        for t in &a.tenants {
            validate_tenant(t).or_else(|e| err("arrivals.tenants", e.to_string()))?;
            if !seen.insert(t.as_str()) {
                return err(
                    "arrivals.tenants",
                    format!("each tenant once (`{t}` is listed twice)"),
                );
            }
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
        Ok(())
    }

    /// Every probability (the arrivals' and the faults'), and the arrivals' together.
    fn check_probabilities(&self) -> Result<(), Refusal> {
        let a = &self.arrivals;
        let struck =
            Struck::ALL.map(|s| (format!("faults.{}", s.spec().name), self.faults.struck(s)));
        let held = Held::ALL.map(|h| {
            (
                format!("faults.{}", h.spec().name),
                self.faults.held(h).rate,
            )
        });
        for (field, p) in [
            ("arrivals.document_collision", a.document_collision),
            ("arrivals.resubmit", a.resubmit),
            ("arrivals.resubmit_changed", a.resubmit_changed),
            ("faults.crash", self.faults.crash),
            ("faults.transient_error", self.faults.transient_error),
            ("faults.permanent_error", self.faults.permanent_error),
        ]
        .into_iter()
        .chain(struck.iter().map(|(f, p)| (f.as_str(), *p)))
        .chain(held.iter().map(|(f, p)| (f.as_str(), *p)))
        {
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
        Ok(())
    }

    /// The `[[enqueue]]` and `[[burst]]` entries, and the jobs planned in all.
    fn check_entries(&self) -> Result<(), Refusal> {
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
        Ok(())
    }

    /// The random crashes' points, the outage, and the relay's, outbox's, consumer's and
    /// metrics' periods.
    fn check_faults_and_delivery(&self) -> Result<(), Refusal> {
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
        Ok(())
    }

    /// Every `[[script]]` entry, and what each aims at.
    fn check_script(&self) -> Result<Vec<Aim>, Refusal> {
        let (planned, possible) = (self.jobs_planned(), self.jobs_possible());
        let mut aims = Vec::with_capacity(self.script.len());
        for (i, s) in self.script.iter().enumerate() {
            let field = |f: &str| format!("script[{i}].{f}");
            let mut aim = script_aim(s, &field, planned, possible)?;
            let point = script_point(s, &field)?;
            check_script_details(s, &field)?;
            if let Aim::Attempt { point: p, .. } = &mut aim {
                *p = point;
            }
            aims.push(aim);
        }
        Ok(aims)
    }

    /// The DLQ's capacity and reprocess limit.
    fn check_dlq(&self) -> Result<(), Refusal> {
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
            (_, Some(0)) => err("dlq.reprocess_window_ms", "must be > 0".into()),
            (None, Some(_)) => err(
                "dlq.reprocess_window_ms",
                "only applies with dlq.reprocess_limit".into(),
            ),
            _ => Ok(()),
        }
    }

    /// Every `[[operator]]` action: its repeats, its job or target, then its operator id.
    fn check_operators(&self) -> Result<(), Refusal> {
        let planned = self.jobs_planned();
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
                crate::base::limits::validate_operator(id).or_else(|m| {
                    err(
                        &format!("operator[{i}].operator"),
                        format!("{} {m}", clip(id)),
                    )
                })?;
            }
        }
        Ok(())
    }
}

/// What a script entry aims at (an attempt's crash point left to [`script_point`]): its `job`
/// one that can exist when its fault takes one, none otherwise.
fn script_aim(
    s: &Script,
    field: &dyn Fn(&str) -> String,
    planned: u64,
    possible: u64,
) -> Result<Aim, Refusal> {
    let takes_job = s.fault.takes_job();
    let needs_job = || {
        err(
            &field("fault"),
            format!(
                "fault {} needs `job` (a job id from 0 to {})",
                s.fault.name(),
                planned.saturating_sub(1)
            ),
        )
    };
    match (s.job, s.fault.struck()) {
        // A worker's fault and `mutate_payload` take a job, a struck fault when its site does.
        (None, None) => needs_job(),
        (None, Some(_)) if takes_job => needs_job(),
        (Some(j), _) if j as u64 >= possible => {
            err(&field("job"), format!("no job {j} exists: this scenario creates jobs 0 to {} (arrivals.jobs + enqueue and burst entries), and at most {} more by reprocess (one per operator action)", planned.saturating_sub(1), possible - planned))
        }
        (Some(_), _) if !takes_job => err(
            &field("job"),
            format!("{} does not take a job", s.fault.name()),
        ),
        (job, Some(fault)) => Ok(Aim::Site {
            fault,
            job: job.map(JobId),
        }),
        (Some(j), None) if s.fault == FaultKind::MutatePayload => Ok(Aim::Payload { job: JobId(j) }),
        (Some(j), None) => Ok(Aim::Attempt {
            job: JobId(j),
            point: None,
        }),
    }
}

/// A script entry's crash point: a crash's own, none for any other fault.
fn script_point(s: &Script, field: &dyn Fn(&str) -> String) -> Result<Option<CrashPoint>, Refusal> {
    match (s.fault, &s.point) {
        (FaultKind::Crash, None) => err(
            &field("fault"),
            format!("crash needs `point`; allowed: {}", crash_points_allowed()),
        ),
        (FaultKind::Crash, Some(p)) => match CrashPoint::parse(p) {
            None => err(
                &field("point"),
                format!(
                    "unknown crash point {}; allowed: {}",
                    clip(p),
                    crash_points_allowed()
                ),
            ),
            point => Ok(point),
        },
        (_, Some(_)) => err(&field("point"), "only a crash takes a point".into()),
        _ => Ok(None),
    }
}

/// A script entry's length, payload and attempt: each only on the fault that takes it.
fn check_script_details(s: &Script, field: &dyn Fn(&str) -> String) -> Result<(), Refusal> {
    match (s.fault.held(), s.length) {
        (Some(h), None) => {
            let key = h.spec().length_key;
            return err(
                &field(key),
                format!(
                    "a {} needs `{key}`, and only a {} takes it",
                    h.spec().name,
                    h.spec().name
                ),
            );
        }
        (held, Some((k, _))) if held != Some(k) => {
            let (key, name) = (k.spec().length_key, k.spec().name);
            return err(
                &field(key),
                format!("a {name} needs `{key}`, and only a {name} takes it"),
            );
        }
        _ => {}
    }
    if s.payload.is_some() && s.fault != FaultKind::MutatePayload {
        return err(
            &field("payload"),
            "only mutate_payload takes `payload`".into(),
        );
    }
    if s.attempt.is_some() && !s.fault.strikes_attempt() {
        return err(
            &field("attempt"),
            format!(
                "{} strikes no worker's attempt, so it takes no `attempt` ({}; `at_ms` picks \
                 which); allowed only with {}",
                s.fault.name(),
                strikes(s.fault),
                attempt_faults_allowed()
            ),
        );
    }
    if s.attempt == Some(0) {
        return err(&field("attempt"), "attempt numbers start at 1".into());
    }
    Ok(())
}

/// Why the switches on in `bugs` cannot act on a run under `sem` (the scenario's resolved
/// `[queue]`, profile `profile`), if one cannot: `early_expiry` moves the chapter's exact expiry
/// timer, which a profile that detects a lease's end otherwise (a sweeper, a two-pass checker,
/// worker liveness, never) or rescues it otherwise (after a retry delay, as a failure, as a
/// stall) does not use. Such a run would pass with the switch silently off.
pub fn refused_under(
    bugs: BugSet,
    sem: &crate::profile::Semantics,
    profile: &str,
) -> Option<String> {
    use crate::model::profiled_queue::ProfiledQueue;
    use crate::profile::Word;
    if !bugs.contains(Bug::EarlyExpiry) || ProfiledQueue::exact_timer(sem) {
        return None;
    }
    let timed: Vec<&str> = crate::profile::Profile::ALL
        .iter()
        .filter(|p| ProfiledQueue::exact_timer(&p.defaults()))
        .map(|p| p.name())
        .collect();
    Some(format!(
        "early_expiry moves the chapter's exact expiry timer, but [queue] profile {profile:?} ends a lease with expiry {:?} and on_expiry {:?}, which the switch does not change; allowed: a profile (or [queue] keys) with expiry \"timer\" and on_expiry \"ready\" ({})",
        sem.expiry.kind.name(),
        sem.on_expiry.name(),
        timed.join(", ")
    ))
}

/// The faults a `[[script]]` entry may give an `attempt` (those that strike a worker's attempt).
fn attempt_faults_allowed() -> String {
    FaultKind::ALL
        .iter()
        .filter(|f| f.strikes_attempt())
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a scripted fault that strikes no attempt strikes instead, for the error on its `attempt`.
fn strikes(fault: FaultKind) -> &'static str {
    match fault.struck().map(|s| s.spec().site) {
        Some(Site::RelayTick) => {
            "it strikes the first relay tick at or after `at_ms` that publishes something"
        }
        Some(Site::ConsumerApplied) => {
            "it strikes the first relayed event of `job` the consumer applies at or after `at_ms`"
        }
        None => {
            debug_assert_eq!(
                fault,
                FaultKind::MutatePayload,
                "every other fault strikes an attempt"
            );
            "it changes the job's payload at `at_ms`"
        }
    }
}

pub(super) fn crash_points_allowed() -> String {
    CrashPoint::ALL
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

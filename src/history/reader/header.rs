//! The history file's first line: the header (format, version, time unit, optional records,
//! the configuration every rule of the checker depends on).
//!
//! Owns: reading the header into a `RunConfig`, every missing or bad field an error naming it.
//! Does not: read records (`records.rs`) or read lines (`mod.rs`).

use super::*;
use crate::vocab::config::{Liveness, Stated};

/// The config fields a version 2 header adds (docs/history-format.md, "Version 2").
const V2_FIELDS: [&str; 7] = [
    "liveness",
    "clock_tolerance",
    "reorder_window",
    "review",
    "fences",
    "failures_max",
    "rescues_max",
];
use crate::profile::{Unique, Word};

impl<R: BufRead> HistoryReader<R> {
    pub(super) fn header(&self, mut map: Map<String, Value>) -> Result<RunConfig, HistoryError> {
        // `expect` is taken out before (`mod.rs`): what `verify` checks, not configuration.
        const FIELDS: [&str; 6] = [
            "format",
            "version",
            "time_unit",
            "emits",
            "config",
            "expect",
        ];
        let shape = format!(
            "the first line is the header {{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"time_unit\":\"ms\"|\"us\",\"emits\":[...],\"config\":{{...}}}}"
        );
        if map.get("format").and_then(Value::as_str) != Some(FORMAT) {
            let got = map
                .get("format")
                .map_or("no format field".to_string(), shown);
            return Err(self.error(Some("format"), format!("{got}; {shape}")));
        }
        if let Some(k) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(self.error(
                Some(k),
                format!("unknown header field; allowed: {}", FIELDS.join(", ")),
            ));
        }
        let version = match map.get("version").and_then(Value::as_u64) {
            Some(v @ (VERSION | VERSION_2)) => v as u32,
            _ => {
                return Err(self.error(
                    Some("version"),
                    format!(
                        "{}; this reader reads versions {VERSION} and {VERSION_2}",
                        map.get("version").map_or("missing".into(), shown)
                    ),
                ))
            }
        };
        let time_unit = map
            .get("time_unit")
            .and_then(Value::as_str)
            .and_then(TimeUnit::parse)
            .ok_or_else(|| {
                self.error(
                    Some("time_unit"),
                    "missing or not one of \"ms\", \"us\" (the unit of every time and duration in the file)",
                )
            })?;
        let mut emits = Emits::default();
        match map.remove("emits") {
            None | Some(Value::Null) => {}
            Some(Value::Array(kinds)) => {
                for k in kinds {
                    if !k.as_str().is_some_and(|s| emits.set(s)) {
                        return Err(self.error(
                            Some("emits"),
                            format!(
                                "{} is not an optional record; allowed: {}",
                                shown(&k),
                                Emits::NAMES.join(", ")
                            ),
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(self.error(
                    Some("emits"),
                    format!(
                        "{}: a list of optional record types from {}",
                        shown(&other),
                        Emits::NAMES.join(", ")
                    ),
                ))
            }
        }
        let Some(Value::Object(config)) = map.remove("config") else {
            return Err(self.error(Some("config"), format!("missing or not an object; {shape}")));
        };
        let mut config = self.parse_config(config, time_unit, emits, version)?;
        config.stated.version = version;
        self.check_ranges(&config)?;
        Ok(config)
    }

    /// The ranges a scenario file allows, in the same words (`scenario/validate.rs`): a header
    /// the simulator could not have been configured with is refused, not judged.
    fn check_ranges(&self, c: &RunConfig) -> Result<(), HistoryError> {
        let bad = |field: &str, m: String| Err(self.error(Some(&format!("config.{field}")), m));
        let per = match c.time_unit {
            TimeUnit::Ms => 1,
            TimeUnit::Us => 1000,
        };
        let unit = c.time_unit.suffix();
        let max = crate::base::limits::MAX_MS * per;
        let times = [
            ("lease", Some(c.lease)),
            ("heartbeat", Some(c.heartbeat)),
            ("deadline", c.deadline),
            ("backoff_base", Some(c.backoff_base)),
            ("backoff_cap", Some(c.backoff_cap)),
            ("dedupe_window", c.dedupe_window),
            ("outbox_retention", c.outbox_retention),
            ("clock_tolerance", Some(c.stated.clock_tolerance)),
            ("reorder_window", Some(c.stated.reorder_window)),
        ];
        for (field, v) in times {
            // Version 1 as the simulator writes it: "never" (a heartbeat a profile does not
            // send, a lease a queue never ends) is 2^52 or more, read as written.
            let never =
                c.stated.version == 1 && v.unwrap_or(0) >= crate::profile::effective::NEVER_MS;
            if let Some(v) = v.filter(|v| *v > max && !never) {
                return bad(
                    field,
                    format!("{v} {unit} is out of range: times and durations are at most {max} {unit} (about 31 years)"),
                );
            }
        }
        let lease = match c.stated.liveness {
            crate::vocab::config::Liveness::PerJob => "lease",
            crate::vocab::config::Liveness::PerProcess => "liveness.threshold",
        };
        if c.lease == 0 {
            return bad(lease, "must be > 0".into());
        }
        if c.heartbeat == 0 && c.stated.version == 1 {
            return bad("heartbeat", "must be > 0".into());
        }
        for (field, v) in [
            ("attempts_max", c.attempts_max),
            ("failures_max", c.stated.failures_max),
            ("rescues_max", c.stated.rescues_max),
        ] {
            // `u32::MAX`: a scenario's `max_attempts = "unlimited"`, as the simulator writes it.
            if let Some(n) = v.filter(|n| *n == 0 || (*n > 1000 && *n != u32::MAX)) {
                return bad(field, format!("must be between 1 and 1000 (got {n})"));
            }
        }
        if c.retry_formula.is_none() && c.backoff_cap < c.backoff_base {
            return bad(
                "backoff_cap",
                format!("must be >= backoff_base ({})", c.backoff_base),
            );
        }
        if c.dlq_capacity == Some(0) {
            return bad(
                "dlq_capacity",
                "must be >= 1 (leave it out for an unbounded DLQ)".into(),
            );
        }
        if let Some(l) = c.reprocess_limit {
            if l.max == 0 {
                return bad(
                    "reprocess_limit.max",
                    "must be >= 1 reprocess per window (leave it out for no limit)".into(),
                );
            }
            if l.window == 0 {
                return bad("reprocess_limit.window", "must be > 0".into());
            }
        }
        // What cannot be judged soundly.
        if c.stated.clock_tolerance >= c.lease {
            return bad(
                "clock_tolerance",
                format!(
                    "{} {unit} is not less than the {lease} ({} {unit}): no lease could be judged live or over",
                    c.stated.clock_tolerance, c.lease
                ),
            );
        }
        Ok(())
    }

    pub(super) fn parse_config(
        &self,
        map: Map<String, Value>,
        time_unit: TimeUnit,
        emits: Emits,
        version: u32,
    ) -> Result<RunConfig, HistoryError> {
        const FIELDS: [&str; 18] = [
            "seed",
            "workers",
            "lease",
            "heartbeat",
            "deadline",
            "attempts_max",
            "backoff_base",
            "backoff_cap",
            "jitter",
            "backoff",
            "dlq_capacity",
            "reprocess_limit",
            "dedupe_window",
            "outbox_retention",
            "permanent_error",
            "dlq_retention",
            "unique",
            "lease_detection",
        ];
        let f = Fields {
            reader: self,
            map,
            prefix: "config.",
        };
        let all: Vec<&str> = FIELDS.iter().chain(V2_FIELDS.iter()).copied().collect();
        match version as u64 {
            VERSION => f.only(&FIELDS, "a version 1 header's config (version 2 adds: liveness, clock_tolerance, reorder_window, review, fences, failures_max, rescues_max)")?,
            _ => f.only(&all, "the header's config")?,
        }
        let limit = match f.map.get("reprocess_limit") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => {
                let lf = Fields {
                    reader: self,
                    map: m.clone(),
                    prefix: "config.reprocess_limit.",
                };
                lf.only(&["max", "window"], "a reprocess limit")?;
                Some(ReprocessLimit {
                    max: lf.u32("max")?,
                    window: lf.number("window")?,
                })
            }
            Some(_) => {
                return Err(self.error(
                    Some("config.reprocess_limit"),
                    "null, or {\"max\": N, \"window\": T} (at most N accepted reprocesses per tenant in any window of T)",
                ))
            }
        };
        // A profile's formula (`backoff`) or the capped exponential (`backoff_base`,
        // `backoff_cap`, `jitter`), never both.
        let retry_formula = match f.map.get("backoff") {
            None => None,
            Some(v) => {
                if let Some(k) = ["backoff_base", "backoff_cap", "jitter"]
                    .into_iter()
                    .find(|k| f.map.contains_key(*k))
                {
                    return Err(self.error(
                        Some(&format!("config.{k}")),
                        "not with `backoff`: the header states either the capped exponential (backoff_base, backoff_cap, jitter) or a `backoff` formula object",
                    ));
                }
                Some(self.retry_formula(v)?)
            }
        };
        let (backoff_base, backoff_cap, jitter) = match &retry_formula {
            // Not read: the checker restates the formula.
            Some(r) => (r.backoff.base_ms, r.backoff.cap_ms, Jitter::Full),
            None => {
                let jitter = f.string("jitter")?;
                let jitter = Jitter::parse(jitter).ok_or_else(|| {
                    self.error(
                        Some("config.jitter"),
                        format!("{}: allowed: none, full, equal", clip(jitter)),
                    )
                })?;
                (f.number("backoff_base")?, f.number("backoff_cap")?, jitter)
            }
        };
        let permanent_errors_retried = match f.opt_string("permanent_error")? {
            None | Some("dead_letter") => false,
            Some("retry") => true,
            Some(other) => {
                return Err(self.error(
                    Some("config.permanent_error"),
                    format!(
                        "{}: allowed: \"dead_letter\" (the default: a permanent error goes to the DLQ) or \"retry\" (every error is retried)",
                        clip(other)
                    ),
                ))
            }
        };
        let unique = match f.opt_string("unique")? {
            None => Unique::Forever,
            Some(name) => Unique::parse(name).ok_or_else(|| {
                self.error(
                    Some("config.unique"),
                    format!(
                        "{}: allowed: {} (absent: \"forever\")",
                        clip(name),
                        Unique::allowed()
                    ),
                )
            })?,
        };
        let (stated, lease) = match version as u64 {
            VERSION => (Stated::default(), f.number("lease")?),
            _ => self.stated_v2(&f)?,
        };
        let (deadline, attempts_max, heartbeat) = match version as u64 {
            VERSION => (
                Some(f.number("deadline")?),
                Some(f.u32("attempts_max")?),
                f.number("heartbeat")?,
            ),
            _ => {
                let caps = (
                    f.opt_u32("attempts_max")?,
                    stated.failures_max,
                    stated.rescues_max,
                );
                if caps == (None, None, None) && !f.map.contains_key("attempts_max") {
                    return Err(self.error(
                        Some("config.attempts_max"),
                        "missing: a version 2 header states its attempt caps: attempts_max (leases), failures_max, rescues_max, or attempts_max: null for a queue that retries for ever",
                    ));
                }
                if !f.map.contains_key("deadline") {
                    return Err(self.error(
                        Some("config.deadline"),
                        "missing: a job's deadline from its enqueue, or null for a queue without one (version 2 says so explicitly)",
                    ));
                }
                (
                    f.opt_number("deadline")?,
                    caps.0,
                    f.opt_number("heartbeat")?.unwrap_or(lease),
                )
            }
        };
        Ok(RunConfig {
            time_unit,
            emits,
            seed: f.opt_u64("seed")?,
            workers: f.opt_u32("workers")?,
            lease,
            heartbeat,
            deadline,
            attempts_max,
            backoff_base,
            backoff_cap,
            jitter,
            dlq_capacity: f.opt_u32("dlq_capacity")?,
            reprocess_limit: limit,
            dedupe_window: f.opt_number("dedupe_window")?,
            outbox_retention: f.opt_number("outbox_retention")?,
            retry_formula,
            permanent_errors_retried,
            dlq_retention: self.dlq_retention(f.map.get("dlq_retention"))?,
            unique,
            lease_detection: self.lease_detection(f.map.get("lease_detection"))?,
            stated,
        })
    }

    /// What a version 2 header states beyond version 1, and the lease (`lease`, or liveness per
    /// process's `threshold`).
    fn stated_v2(&self, f: &Fields<'_, R>) -> Result<(Stated, u64), HistoryError> {
        let mut s = Stated {
            version: VERSION_2 as u32,
            ..Stated::default()
        };
        let lease = match f.map.get("liveness") {
            None | Some(Value::Null) => f.number("lease")?,
            Some(Value::Object(m)) => {
                let lf = Fields {
                    reader: self,
                    map: m.clone(),
                    prefix: "config.liveness.",
                };
                lf.only(&["per", "threshold"], "a liveness")?;
                match lf.string("per")? {
                    "job" => {
                        if lf.map.contains_key("threshold") {
                            return Err(self.error(Some("config.liveness.threshold"), "only with \"per\": \"process\" (per job, the lease is `lease`)"));
                        }
                        f.number("lease")?
                    }
                    "process" => {
                        if f.map.contains_key("lease") {
                            return Err(self.error(Some("config.lease"), "not with liveness per process: a job's lease lives `liveness.threshold` past its holder's last worker_heartbeat"));
                        }
                        s.liveness = Liveness::PerProcess;
                        lf.number("threshold")?
                    }
                    other => {
                        return Err(self.error(
                            Some("config.liveness.per"),
                            format!("{}: allowed: \"job\" (each lease renewed by its own heartbeat records), \"process\" (a worker's heartbeat renews every lease it holds)", clip(other)),
                        ))
                    }
                }
            }
            Some(v) => {
                return Err(self.error(
                    Some("config.liveness"),
                    format!(
                        "{}: {{\"per\": \"job\"}} or {{\"per\": \"process\", \"threshold\": T}}",
                        shown(v)
                    ),
                ))
            }
        };
        s.clock_tolerance = f.opt_number("clock_tolerance")?.unwrap_or(0);
        s.reorder_window = f.opt_number("reorder_window")?.unwrap_or(0);
        s.review = f.opt_bool("review")?.unwrap_or(true);
        s.fences = match f.opt_string("fences")? {
            None | Some("recorded") => true,
            Some("none") => false,
            Some(other) => {
                return Err(self.error(
                    Some("config.fences"),
                    format!("{}: allowed: \"recorded\" (every lease and write carries its token), \"none\" (no record carries one: the reader numbers each job's leases)", clip(other)),
                ))
            }
        };
        s.failures_max = f.opt_u32("failures_max")?;
        s.rescues_max = f.opt_u32("rescues_max")?;
        Ok((s, lease))
    }

    /// The header's `lease_detection`: `{"kind": "timer"}`, `{"kind": "sweep" | "two_pass",
    /// "every": P}`, each with an optional `slack`.
    fn lease_detection(&self, v: Option<&Value>) -> Result<Option<LeaseDetection>, HistoryError> {
        let what = "null, or {\"kind\": \"timer\" | \"sweep\" | \"two_pass\", \"every\": P (a sweeper's period, not for a timer), \"slack\": S (optional)}";
        let m = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(self.error(Some("config.lease_detection"), what)),
        };
        let f = Fields {
            reader: self,
            map: m.clone(),
            prefix: "config.lease_detection.",
        };
        f.only(&["kind", "every", "slack"], "a lease detection")?;
        let kind = f.string("kind")?;
        let kind = DetectionKind::parse(kind).ok_or_else(|| {
            self.error(
                Some("config.lease_detection.kind"),
                format!("{}: allowed: timer, sweep, two_pass", clip(kind)),
            )
        })?;
        let every = match kind {
            DetectionKind::Timer => {
                if f.map.contains_key("every") {
                    return Err(self.error(
                        Some("config.lease_detection.every"),
                        "a timer has no period",
                    ));
                }
                0
            }
            _ => {
                let every = f.number("every")?;
                if every == 0 {
                    return Err(self.error(
                        Some("config.lease_detection.every"),
                        "0: a sweeper's period is at least 1",
                    ));
                }
                every
            }
        };
        Ok(Some(LeaseDetection {
            kind,
            every,
            // A timer fires the moment after the lease's end: 1 in the file's unit, unless
            // stated.
            slack: f
                .opt_number("slack")?
                .unwrap_or((kind == DetectionKind::Timer) as u64),
        }))
    }

    /// The header's `dlq_retention`: `null`, or `{"after": T, "from": "dead_lettered" | "enqueued"}`.
    fn dlq_retention(&self, v: Option<&Value>) -> Result<Option<DlqRetention>, HistoryError> {
        let what = "null, or {\"after\": T, \"from\": \"dead_lettered\" | \"enqueued\"} (a DLQ entry may be deleted once older than T, counted from its dead-lettering or from the job's enqueue)";
        let m = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(self.error(Some("config.dlq_retention"), what)),
        };
        let f = Fields {
            reader: self,
            map: m.clone(),
            prefix: "config.dlq_retention.",
        };
        f.only(&["after", "from"], "a DLQ retention")?;
        let from_enqueue = match f.string("from")? {
            "dead_lettered" => false,
            "enqueued" => true,
            other => {
                return Err(self.error(
                    Some("config.dlq_retention.from"),
                    format!("{}: allowed: \"dead_lettered\", \"enqueued\"", clip(other)),
                ))
            }
        };
        Ok(Some(DlqRetention {
            after: f.number("after")?,
            from_enqueue,
        }))
    }

    /// The header's `backoff` object: a profile's retry delay formula.
    fn retry_formula(&self, v: &Value) -> Result<RetryFormula, HistoryError> {
        use crate::profile::{AttemptsCount, Backoff, BackoffFormula, JitterMode, Word};
        let Value::Object(m) = v else {
            return Err(self.error(
                Some("config.backoff"),
                format!("{}: an object {{\"formula\", \"unit\", \"cap\", \"offset\", \"index_from\", \"jitter\", \"jitter_pct\", \"jitter_step\", \"attempt\"}}", shown(v)),
            ));
        };
        let f = Fields {
            reader: self,
            map: m.clone(),
            prefix: "config.backoff.",
        };
        f.only(
            &[
                "formula",
                "unit",
                "cap",
                "offset",
                "index_from",
                "jitter",
                "jitter_pct",
                "jitter_step",
                "attempt",
            ],
            "a backoff formula",
        )?;
        fn word<W: Word, R: BufRead>(
            r: &HistoryReader<R>,
            f: &Fields<'_, R>,
            name: &str,
        ) -> Result<W, HistoryError> {
            let s = f.string(name)?;
            W::parse(s).ok_or_else(|| {
                r.error(
                    Some(&format!("config.backoff.{name}")),
                    format!("{}: allowed: {}", clip(s), W::allowed()),
                )
            })
        }
        let jitter_pct = f.u32("jitter_pct")?;
        if jitter_pct > 100 {
            return Err(self.error(
                Some("config.backoff.jitter_pct"),
                format!("{jitter_pct}: a percentage from 0 to 100"),
            ));
        }
        Ok(RetryFormula {
            backoff: Backoff {
                formula: word::<BackoffFormula, R>(self, &f, "formula")?,
                base_ms: f.number("unit")?,
                cap_ms: f.opt_number("cap")?.unwrap_or(u64::MAX),
                offset_ms: f.number("offset")?,
                index_from: f.u32("index_from")?,
                jitter: word::<JitterMode, R>(self, &f, "jitter")?,
                jitter_pct,
                jitter_step_ms: f.number("jitter_step")?,
            },
            attempt: word::<AttemptsCount, R>(self, &f, "attempt")?,
        })
    }
}

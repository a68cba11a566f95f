//! The history file's first line: the header (format, version, time unit, optional records,
//! the configuration every rule of the checker depends on).
//!
//! Owns: reading the header into a `RunConfig`, every missing or bad field an error naming it.
//! Does not: read records (`records.rs`) or read lines (`mod.rs`).

use super::*;
use crate::profile::{Unique, Word};

impl<R: BufRead> HistoryReader<R> {
    pub(super) fn header(&self, mut map: Map<String, Value>) -> Result<RunConfig, HistoryError> {
        const FIELDS: [&str; 5] = ["format", "version", "time_unit", "emits", "config"];
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
        match map.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            _ => {
                return Err(self.error(
                    Some("version"),
                    format!(
                        "{}; this reader reads version {VERSION}",
                        map.get("version").map_or("missing".into(), shown)
                    ),
                ))
            }
        }
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
        self.parse_config(config, time_unit, emits)
    }

    pub(super) fn parse_config(
        &self,
        map: Map<String, Value>,
        time_unit: TimeUnit,
        emits: Emits,
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
        f.only(&FIELDS, "the header's config")?;
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
        Ok(RunConfig {
            time_unit,
            emits,
            seed: f.opt_u64("seed")?,
            workers: f.opt_u32("workers")?,
            lease: f.number("lease")?,
            heartbeat: f.number("heartbeat")?,
            deadline: f.number("deadline")?,
            attempts_max: f.u32("attempts_max")?,
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
        })
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

//! The history file's first line: the header (format, version, time unit, optional records,
//! the configuration every rule of the checker depends on).
//!
//! Owns: reading the header into a `RunConfig`, every missing or bad field an error naming it.
//! Does not: read records (`records.rs`) or read lines (`mod.rs`).

use super::*;

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
        const FIELDS: [&str; 13] = [
            "seed",
            "workers",
            "lease",
            "heartbeat",
            "deadline",
            "attempts_max",
            "backoff_base",
            "backoff_cap",
            "jitter",
            "dlq_capacity",
            "reprocess_limit",
            "dedupe_window",
            "outbox_retention",
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
        let jitter = f.string("jitter")?;
        let jitter = Jitter::parse(jitter).ok_or_else(|| {
            self.error(
                Some("config.jitter"),
                format!("{}: allowed: none, full, equal", clip(jitter)),
            )
        })?;
        Ok(RunConfig {
            time_unit,
            emits,
            seed: f.opt_u64("seed")?,
            workers: f.opt_u32("workers")?,
            lease: f.number("lease")?,
            heartbeat: f.number("heartbeat")?,
            deadline: f.number("deadline")?,
            attempts_max: f.u32("attempts_max")?,
            backoff_base: f.number("backoff_base")?,
            backoff_cap: f.number("backoff_cap")?,
            jitter,
            dlq_capacity: f.opt_u32("dlq_capacity")?,
            reprocess_limit: limit,
            dedupe_window: f.opt_number("dedupe_window")?,
            outbox_retention: f.opt_number("outbox_retention")?,
        })
    }
}

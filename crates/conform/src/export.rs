//! The store's history as a history file (`docs/history-format.md`, version 1).
//!
//! Owns: the header (the run's configuration as the store applied it, in µs, and the optional
//! records this recorder writes: `lease_expired`, recorded by the store when it re-leases a job
//! whose lease ran out), and one line per `history` row in the store's clock order
//! (`Store::history`), its `at` the store's clock in µs, as recorded: a time that goes back is
//! an error here, never moved to fit.
//! Does not: judge, or convert anything into the simulator's types: the library's history reader
//! reads the file back, and its checker judges it, unchanged.

use anyhow::{anyhow, bail, Result};
use durasim::vocab::config::{Emits, RunConfig, TimeUnit};
use serde_json::Value;
use std::io::Write;

/// The run's configuration as the store applies it, in µs.
#[derive(Clone, Debug)]
pub struct Applied {
    pub seed: u64,
    pub workers: u32,
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    pub deadline_ms: u64,
    pub attempts_max: u32,
    pub backoff_base_ms: u64,
    pub backoff_cap_ms: u64,
    pub jitter: durasim::vocab::config::Jitter,
    /// The store makes a leased job visible again at exactly lease start + lease (pgmq's `vt`:
    /// a message is read again once `vt <= now`), so a lease is live through one µs less. The
    /// header states the lease as the time a lease is live (`docs/history-format.md`).
    pub visible_at_lease_end: bool,
}

/// The header, in µs or (`ms`) in ms.
pub fn header(a: &Applied, ms: bool) -> String {
    let us = |x: u64| if ms { x } else { x * 1000 };
    durasim::history::format::header_line(&RunConfig {
        time_unit: if ms { TimeUnit::Ms } else { TimeUnit::Us },
        emits: Emits {
            lease_expired: true,
            ..Emits::default()
        },
        seed: Some(a.seed),
        workers: Some(a.workers),
        lease: us(a.lease_ms) - u64::from(a.visible_at_lease_end && !ms),
        heartbeat: us(a.heartbeat_ms),
        deadline: Some(us(a.deadline_ms)),
        attempts_max: Some(a.attempts_max),
        backoff_base: us(a.backoff_base_ms),
        backoff_cap: us(a.backoff_cap_ms),
        jitter: a.jitter,
        dlq_capacity: None,
        reprocess_limit: None,
        dedupe_window: None,
        outbox_retention: None,
        retry_formula: None,
        permanent_errors_retried: false,
        dlq_retention: None,
        // The store's key is UNIQUE: one job per key, for ever.
        unique: durasim::profile::Unique::Forever,
        // The stores' expiry is found at the next read, not by a timer the header can state.
        lease_detection: None,
        stated: Default::default(),
    })
}

/// The fields this recorder writes that hold a time or a duration.
const TIME_FIELDS: [&str; 3] = ["visible_at", "inference", "stall"];

/// Writes the history file: the header, then each row with its `at`. With `ms`, every time is
/// divided by 1000 (the rendering the metrics read: they count in ms, like `durasim run`'s);
/// the µs file is the one judged.
pub fn write(out: &mut impl Write, header: &str, rows: &[(i64, String)], ms: bool) -> Result<()> {
    writeln!(out, "{header}")?;
    let mut last = 0i64;
    for (at, body) in rows {
        let mut v: Value =
            serde_json::from_str(body).map_err(|e| anyhow!("history row {body:?}: {e}"))?;
        let at = *at;
        if at < last {
            bail!("history row {body:?} at {at} µs comes after a row at {last} µs: the store's history must be in clock order");
        }
        last = at;
        let map = v
            .as_object_mut()
            .ok_or_else(|| anyhow!("history row {body:?} is not an object"))?;
        // Absent and null mean the same; the file leaves them out.
        map.retain(|_, x| !x.is_null());
        let scale = |x: i64| if ms { x / 1000 } else { x };
        for f in TIME_FIELDS {
            if let Some(t) = map.get_mut(f) {
                *t = Value::from(scale(t.as_i64().unwrap_or(0)).max(0));
            }
        }
        map.insert("at".into(), Value::from(scale(at)));
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_recorded_and_nulls_are_left_out() {
        let mut out = Vec::new();
        let rows = vec![
            (
                4_900,
                r#"{"type":"worker_restarted","worker":1}"#.to_string(),
            ),
            (
                5_400,
                r#"{"type":"cancelled","job":0,"worker":null}"#.to_string(),
            ),
        ];
        write(&mut out, "{}", &rows, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            r#"{"at":4900,"type":"worker_restarted","worker":1}"#
        );
        assert_eq!(lines[2], r#"{"at":5400,"job":0,"type":"cancelled"}"#);
    }

    #[test]
    fn a_time_that_goes_back_is_an_error_not_moved() {
        let rows = vec![
            (
                5_400,
                r#"{"type":"worker_restarted","worker":1}"#.to_string(),
            ),
            (4_900, r#"{"type":"cancelled","job":0}"#.to_string()),
        ];
        let err = write(&mut Vec::new(), "{}", &rows, false).unwrap_err();
        assert!(err.to_string().contains("clock order"), "{err}");
    }
}

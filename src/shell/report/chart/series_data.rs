//! The series the scenario charts draw, read back from a run's directory: per-tenant waits
//! (`tenants.csv`), retries per 100 ms (`retries.csv`), outbox rows (`outbox.csv`) and the
//! dead-letter queue's size (`dlq.csv`) over virtual time.
//!
//! Owns: loading them (a file that is absent gives an empty series: a run written by an older
//! durasim, or a `verify` of a history without them) and whether each has anything to draw.
//! Does not: draw (`tenants`, `series`) or compute a figure the files do not hold.

use super::data::read_csv;
use crate::shell::report::error::ReportError;
use serde::Deserialize;
use std::path::Path;

/// One tenant's row of `tenants.csv`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantRow {
    pub tenant: String,
    pub enqueued: u64,
    pub acked: u64,
    pub dead_lettered: u64,
    pub cancelled: u64,
    pub queue_wait_ms_p50: u64,
    pub queue_wait_ms_p95: u64,
    pub queue_wait_ms_p99: u64,
    pub queue_wait_ms_max: u64,
}

/// The series of a run; each empty when its file is absent.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub tenants: Vec<TenantRow>,
    /// `(timeMs, retries scheduled in [timeMs, timeMs + 100))`.
    pub retries: Vec<(u64, u64)>,
    /// `(timeMs, outbox rows held)` at each depth sample.
    pub outbox: Vec<(u64, u64)>,
    /// `(timeMs, jobs the DLQ holds)` at each depth sample.
    pub dlq: Vec<(u64, u64)>,
    /// The files that were there, for the report's "where from".
    pub present: Vec<&'static str>,
    /// Where `retries` came from: `retries.csv`, or the history (`verify --out` writes no
    /// `retries.csv`); `None` when neither is there.
    pub retries_from: Option<&'static str>,
}

impl Series {
    pub fn retries_total(&self) -> u64 {
        self.retries.iter().map(|r| r.1).sum()
    }
    pub fn outbox_max(&self) -> u64 {
        self.outbox.iter().map(|r| r.1).max().unwrap_or(0)
    }
    pub fn dlq_max(&self) -> u64 {
        self.dlq.iter().map(|r| r.1).max().unwrap_or(0)
    }
}

/// Loads whichever of the four files `dir` holds.
pub fn load(dir: &Path) -> Result<Series, ReportError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Retries {
        time_ms: u64,
        retries: u64,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Outbox {
        time_ms: u64,
        rows: u64,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Dlq {
        time_ms: u64,
        size: u64,
    }
    let mut s = Series::default();
    let mut present = |name: &'static str| {
        let there = dir.join(name).is_file();
        if there {
            s.present.push(name);
        }
        there.then(|| dir.join(name))
    };
    let (t, r, o, q) = (
        present("tenants.csv"),
        present("retries.csv"),
        present("outbox.csv"),
        present("dlq.csv"),
    );
    if let Some(p) = t {
        s.tenants = read_csv(&p)?;
    }
    if let Some(p) = r {
        s.retries = read_csv::<Retries>(&p)?
            .into_iter()
            .map(|x| (x.time_ms, x.retries))
            .collect();
        s.retries_from = Some("retries.csv");
    }
    if let Some(p) = o {
        s.outbox = read_csv::<Outbox>(&p)?
            .into_iter()
            .map(|x| (x.time_ms, x.rows))
            .collect();
    }
    if let Some(p) = q {
        s.dlq = read_csv::<Dlq>(&p)?
            .into_iter()
            .map(|x| (x.time_ms, x.size))
            .collect();
    }
    Ok(s)
}

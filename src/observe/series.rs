//! What the metrics' series come to in `summary.json`, beside the counters: the outbox rows'
//! bytes, the retry waves around an outage, the depth statistics.
//!
//! Owns: their shapes (serialized as `summary.json` names them).
//! Does not: count (see `metrics`, which reads the history) or name the counted figures
//! (`vocab/counters.rs`: the outbox's rows and the retries' total and peak are counters there,
//! written in the same `summary.json` objects before these).

use crate::base::ids::SimTime;
use serde::Serialize;

/// Outbox rows over time: every committed event is a row until it is pruned (never, without a
/// retention: the chapter's outbox). Bytes are rows x an assumed row size. (The rows pruned,
/// most and last are counters: `Counter::OutboxPruned`, ...)
#[derive(Clone, Debug, Default, Serialize, Hash)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRows {
    pub bytes_per_row: u64,
    pub bytes_max: u64,
}

/// Retries over time, and how the queue recovers from a provider outage. (The total and the
/// peak a second are counters: `Counter::RetriesTotal`, `Counter::RetriesPeakPerS`.)
#[derive(Clone, Debug, Default, Serialize, Hash)]
#[serde(rename_all = "camelCase")]
pub struct RetryWaves {
    /// The second (from the start) in which the peak a second (`peakPerS`) fell.
    pub peak_second: u64,
    /// The most retries in one 100 ms window, times 10: the rate a provider sees inside a wave.
    pub peak_rate_per_s_100ms: u64,
    /// With `[faults] outage`: when it ended, the depth at the first sample at or after it, the
    /// largest depth after it, and the first sample after the last busy one (depth > 0) after it:
    /// when the herd of returning retries was worked off.
    pub outage_from_ms: Option<SimTime>,
    pub recovery_at_ms: Option<SimTime>,
    /// The 100 ms windows of the outage in which no retry was scheduled: the silence between
    /// synchronised waves (near zero when retries are spread out).
    pub quiet_windows_in_outage: Option<u64>,
    pub depth_at_recovery: Option<u64>,
    pub depth_max_after_recovery: Option<u64>,
    pub drained_at_ms: Option<SimTime>,
}

/// An outbox row as a database holds it: event id, key, job, output, payload hash, created and
/// published timestamps, status, plus the row header and its index entries. An assumption for
/// the memory column, not a measurement.
pub const OUTBOX_ROW_BYTES: u64 = 256;

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DepthStats {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub samples: u64,
}

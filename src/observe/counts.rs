//! The counts and small figures of `summary.json` that the metrics fill in: jobs, effects,
//! leases, crashes, the DLQ, outbox rows, retry waves around an outage, depth statistics.
//!
//! Owns: their shapes (plain counters, serialized as `summary.json` names them).
//! Does not: count (see `metrics`, which reads the history).

use crate::ids::SimTime;
use crate::vocab::faults::HeldCounts;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobCounts {
    pub enqueued: u64,
    pub acked: u64,
    pub dead_lettered: u64,
    pub cancelled: u64,
    pub unfinished: u64,
    pub enqueue_deduped: u64,
    pub enqueue_conflicts: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectCounts {
    pub extract_calls: u64,
    pub results_committed: u64,
    pub deduped_commits: u64,
    pub payload_conflicts: u64,
    pub outbox_events: u64,
    pub published: u64,
    pub republished: u64,
    pub consumer_applied: u64,
    pub consumer_duplicates: u64,
    pub reviews_done: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseCounts {
    pub granted: u64,
    pub expired: u64,
    pub heartbeats: u64,
    pub stale_rejections: u64,
    /// Acks refused, for a stale fence or because the job was already terminal.
    pub ack_rejections: u64,
    pub max_attempts_seen: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CrashCounts {
    pub worker: u64,
    pub relay: u64,
    /// Each held fault's strikes (`stalls`, `pauses`, ...: `vocab::faults::HELD`).
    #[serde(flatten)]
    pub held: HeldCounts,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DlqCounts {
    pub permanent_error: u64,
    pub max_attempts_exceeded: u64,
    /// Entries whose reason is not a code (only with `raw_dlq_reason`).
    pub other: u64,
    /// Entries dropped by a full DLQ (`[dlq] capacity`).
    pub evicted: u64,
    /// The most entries the DLQ held at once (dead-lettered minus evicted).
    pub size_max: u64,
}

/// Outbox rows over time: every committed event is a row until it is pruned (never, without a
/// retention: the chapter's outbox). Bytes are rows x an assumed row size.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRows {
    pub pruned: u64,
    pub rows_max: u64,
    pub rows_final: u64,
    pub bytes_per_row: u64,
    pub bytes_max: u64,
}

/// Retries over time, and how the queue recovers from a provider outage.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryWaves {
    pub total: u64,
    /// The most retries scheduled in one second of virtual time ([k s, k+1 s)).
    pub peak_per_s: u64,
    /// The second (from the start) in which that peak fell.
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

//! Deterministic injections of a scenario: `[[script]]` faults and `[[operator]]` actions.
//!
//! Owns: `FaultKind` and its names, `Script` (a fault aimed at a job, an attempt or a relay
//! tick), `Operator` (a reprocess at a time, of a fixed job or a target picked when it runs).
//! Does not: check them against the scenario's jobs (`validate.rs`) or apply them (`sim/faults.rs`,
//! `sim/kernel.rs`).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    Crash,
    Stall,
    TransientError,
    PermanentError,
    RelayCrash,
    MutatePayload,
    /// The holder pauses `pause_ms` right after the attempt's first heartbeat.
    Pause,
}

impl FaultKind {
    /// The name a scenario file uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Stall => "stall",
            FaultKind::TransientError => "transient_error",
            FaultKind::PermanentError => "permanent_error",
            FaultKind::RelayCrash => "relay_crash",
            FaultKind::MutatePayload => "mutate_payload",
            FaultKind::Pause => "pause",
        }
    }

    pub const ALLOWED: &'static str =
        "crash, stall, transient_error, permanent_error, relay_crash, mutate_payload, pause";
}

/// A deterministic injection. Worker faults hit the first attempt of `job` leased at or after
/// `at_ms` (or exactly attempt number `attempt`); `relay_crash` hits the first relay tick at or
/// after `at_ms` that publishes something; `mutate_payload` changes the job's payload at `at_ms`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub at_ms: u64,
    pub fault: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAction {
    ReprocessDlq,
}

/// Which job an operator action picks when it runs, instead of a fixed `job`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorTarget {
    /// The oldest DLQ entry not yet reprocessed (an operator working the DLQ in order).
    OldestDeadLettered,
    /// The first job cancelled so far (an operator who mistakes a cancellation for a DLQ entry).
    Cancelled,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operator {
    pub at_ms: u64,
    pub action: OperatorAction,
    #[serde(default)]
    pub operator: Option<String>,
    /// The job acted on; or, with `target`, none: the job is picked when the action runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<OperatorTarget>,
    /// An automation: the action runs again `repeat` more times, every `every_ms`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub repeat: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub every_ms: u64,
    /// Act on the newest job of `job`'s reprocess chain (the "same dead document"), not `job`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub follow: bool,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}
fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}
fn is_false(x: &bool) -> bool {
    !*x
}

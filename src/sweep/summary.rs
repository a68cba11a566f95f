//! `sweep.json`: what a sweep (or a merge of shards) found, as data.
//!
//! Owns: the shape of a sweep's result: the seed range, the failure groups and their
//! signatures, shrunk scenarios, coverage and the gate, and the throughput figures (the only
//! wall-clock part).
//! Does not: compute any of it (`aggregate`, `coverage`, `shrunk`) or write it (`report`).

use super::shrink;
use super::swarm::SwarmDraw;
use super::Shard;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedRange {
    pub start: u64,
    pub end: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShrunkInfo {
    /// Relative to the sweep's output directory.
    pub path: String,
    pub from: shrink::Size,
    pub to: shrink::Size,
    pub runs: u32,
    /// The frozen file failed with the failing seed itself (otherwise a nearby seed was used).
    pub seed_kept: bool,
    pub violates: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureGroup {
    pub signature: String,
    pub seeds: u64,
    pub first_seeds: Vec<u64>,
    pub first_seed: u64,
    pub first_message: String,
    pub first_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_job: Option<u32>,
    pub reproduce: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub swarm: Option<SwarmDraw>,
    #[serde(default)]
    pub shrunk: Option<ShrunkInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureGroup {
    pub invariant: String,
    pub class: String,
    pub seeds: u64,
    pub first_seeds: Vec<u64>,
    pub signatures: Vec<SignatureGroup>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultCoverage {
    pub name: String,
    pub configured: bool,
    pub seeds: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SometimesCoverage {
    pub name: String,
    pub required: bool,
    pub seeds: u64,
}

/// One coverage probe across a sweep: in how many seeds its branch was taken, and how often in
/// all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeCoverage {
    pub name: String,
    pub seeds: u64,
    pub hits: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub faults: Vec<FaultCoverage>,
    pub crash_points: Vec<FaultCoverage>,
    pub sometimes: Vec<SometimesCoverage>,
    /// Every coverage probe (`vocab::probes::TABLE` order) with the seeds that reached it.
    #[serde(default)]
    pub probes: Vec<ProbeCoverage>,
    /// How many probes some seed reached.
    #[serde(default)]
    pub probes_reached: usize,
    /// `--require-coverage`: the gate also fails when a probe was never reached.
    #[serde(default)]
    pub probes_required: bool,
    /// `passed`, `failed`, or `deferred` (a shard: the gate runs on the merge).
    pub gate: String,
    pub problems: Vec<String>,
}

/// Wall-clock figures: the only part of sweep.json that differs between equal sweeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Throughput {
    pub wall_s: f64,
    pub threads: usize,
    pub events_per_wall_s: f64,
    pub sim_to_wall_ratio: f64,
    pub seeds_per_wall_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepJson {
    pub scenario: String,
    pub scenario_file: String,
    pub seeds: SeedRange,
    pub shard: Option<Shard>,
    pub swarm: bool,
    pub bugs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub jobs_override: Option<u64>,
    pub passed: bool,
    pub seeds_run: u64,
    pub seeds_failed: u64,
    pub seeds_replayed: u64,
    pub events: u64,
    pub virtual_time_ms: u64,
    pub failures: Vec<FailureGroup>,
    pub coverage: Coverage,
    pub throughput: Throughput,
}

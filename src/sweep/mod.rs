//! Sweeps: many seeds of one scenario, in parallel, judged together.
//!
//! Owns: a sweep's plan (the seed range, its shards, swarm mode, bug switches), running each seed
//! (`seed`: with `catch_unwind`, and a second run of a fixed sample of seeds to catch
//! nondeterminism), grouping failures by invariant and first-violation signature (`aggregate`),
//! the coverage gate (`coverage`), shrinking the first failure of each group (`shrunk`,
//! `shrink`, `explicit_jobs`), joining shards (`merge`), swarm draws (`swarm`) and freezing a run into an explicit
//! scenario (`freeze`). It takes a scenario and hands each seed's record to a sink as it
//! completes, in seed order (`sweep_streaming`, memory flat in the seed count), or returns them
//! all in memory (`sweep`).
//! Does not: read or write files, print, parse arguments or read the wall clock (the shell,
//! `cli::sweep`, does those, and `report` writes the directory); simulate or judge a run
//! (`run::run_once` does both).
//!
//! Determinism: every seed's result depends only on the scenario, the seed and the bug switches;
//! results are put back in seed order (a bounded reorder buffer), handed on and folded into the
//! groups and coverage one at a time in that order, and only the `throughput` object holds
//! wall-clock figures. So `sweep.json` is the same for any
//! thread count, and shards merged give exactly what one unsharded sweep writes.

pub mod aggregate;
pub mod corpus;
pub mod coverage;
pub mod detect;
pub mod explicit_jobs;
pub mod explore;
pub mod freeze;
pub mod guided;
pub mod merge;
pub mod orders;
pub mod seed;
pub mod shrink;
pub mod shrunk;
pub mod space;
pub mod stream;
pub mod summary;
pub mod swarm;

pub use aggregate::{aggregate, Aggregator};
pub use coverage::{configured, fault_kinds, Named};
pub use seed::{run_seed, seed_setup, signature, SeedFailure, SeedMetrics, SeedRecord};
pub use stream::{sweep_streaming, StreamError, REORDER_AHEAD_PER_THREAD};
pub use summary::{
    Coverage, FailureGroup, FaultCoverage, ProbeCoverage, SeedRange, ShrunkInfo, SignatureGroup,
    SometimesCoverage, SweepJson, Throughput,
};

use crate::scenario::Scenario;
use crate::vocab::bugs::BugSet;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Every `replay_every`-th seed of the range (by index from its start), and the first, runs twice.
pub const REPLAY_EVERY: u64 = 8;
/// Seeds listed per group.
pub const FIRST_SEEDS: usize = 10;
/// At most this many groups are shrunk per sweep (the earliest, by invariant then first seed).
pub const MAX_SHRINKS: usize = 16;

/// Told of each seed as it finishes, with whether it failed; called from the sweep's threads.
#[derive(Clone)]
pub struct SeedSink(pub Arc<dyn Fn(bool) + Send + Sync>);

impl std::fmt::Debug for SeedSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeedSink")
    }
}

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("cannot start the thread pool: {0}")]
    ThreadPool(rayon::ThreadPoolBuildError),
}

/// A slice of the seed range: the seeds whose index is `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Why a shard's `I/N` is not one (`--shard`, or the `shard` of a sweep.json being merged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard {text:?}: expected I/N, e.g. 0/4")]
    NotAFraction { text: String },
    #[error("--shard {text:?}: I is not a number")]
    IndexNotANumber { text: String },
    #[error("--shard {text:?}: N is not a number")]
    CountNotANumber { text: String },
    #[error(
        "--shard {text:?}: needs 0 <= I < N <= {}",
        crate::base::limits::MAX_SHARDS
    )]
    OutOfRange { text: String },
}

impl Shard {
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| ShardError::NotAFraction { text: text.into() })?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| ShardError::IndexNotANumber { text: text.into() })?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| ShardError::CountNotANumber { text: text.into() })?;
        if count == 0 || index >= count || count > crate::base::limits::MAX_SHARDS {
            return Err(ShardError::OutOfRange { text: text.into() });
        }
        Ok(Shard { index, count })
    }
}

/// Everything a sweep needs; the library entry point for tests.
#[derive(Clone, Debug)]
pub struct Plan {
    pub scenario: Scenario,
    /// As typed, for reproduction commands.
    pub scenario_file: String,
    pub seeds: (u64, u64),
    pub shard: Option<Shard>,
    pub swarm: bool,
    pub bugs: BugSet,
    pub jobs: Option<u64>,
    /// 0 = all cores.
    pub threads: usize,
    pub shrink: bool,
    /// `--require-coverage`: the coverage gate also fails when some coverage probe was never
    /// reached (`vocab::probes`).
    pub require_coverage: bool,
    /// Told of every seed as it finishes (the CLI passes a terminal progress bar).
    pub progress: Option<SeedSink>,
    /// The wall clock for the throughput figures of sweep.json (the CLI passes `Instant::now`);
    /// without one they are 0. The sweep reads no clock of its own.
    pub wall_clock: Option<fn() -> std::time::Instant>,
    /// Test hook: the run of this seed panics. Not reachable from the command line.
    #[doc(hidden)]
    pub panic_on_seed: Option<u64>,
    /// Test hook: edits each seed's kept history (its seed given) before the sweep reads it, as
    /// a defect of the model would have written it. Not reachable from the command line.
    #[doc(hidden)]
    pub edit_history: Option<fn(u64, &mut Vec<crate::history::Record>)>,
    /// The kernel events a seed may take (`--max-events`; `RunRequest::max_events`).
    pub max_events: u64,
    /// Run the roles as programs (`sim::program`; `--worker CMD` and friends): every seed, and
    /// every candidate a shrink tries, with the same programs.
    pub programs: Option<crate::sim::program::ProgramSpec>,
}

impl Plan {
    pub fn new(scenario: Scenario, scenario_file: &str, seeds: (u64, u64)) -> Plan {
        let bugs = scenario.bugs;
        Plan {
            scenario,
            scenario_file: scenario_file.to_string(),
            seeds,
            shard: None,
            swarm: false,
            bugs,
            jobs: None,
            threads: 0,
            shrink: true,
            require_coverage: false,
            progress: None,
            wall_clock: None,
            panic_on_seed: None,
            edit_history: None,
            max_events: crate::scenario::cost::DEFAULT_MAX_EVENTS,
            programs: None,
        }
    }

    /// How many seeds this plan runs (never listed: a range can be far larger than memory).
    pub fn seed_count(&self) -> u64 {
        let (a, b) = self.seeds;
        match self.shard {
            None => b - a,
            Some(s) => crate::base::limits::shard_len(a, b, s.index, s.count),
        }
    }

    /// The `i`-th seed this plan runs (`i < seed_count()`), in order.
    pub fn seed_at(&self, i: u64) -> u64 {
        debug_assert!(i < self.seed_count());
        match self.shard {
            None => self.seeds.0 + i,
            Some(s) => self.seeds.0 + i * s.count as u64 + s.index as u64,
        }
    }
}

/// A sweep's result in memory: sweep.json, the per-seed records and the shrunk files.
pub struct SweepOutput {
    pub json: SweepJson,
    pub records: Vec<SeedRecord>,
    /// (path relative to the output directory, file text)
    pub files: Vec<(String, String)>,
}

/// What a streamed sweep returns once every record went to its sink: sweep.json and the shrunk
/// files.
pub struct Swept {
    pub json: SweepJson,
    /// (path relative to the output directory, file text)
    pub files: Vec<(String, String)>,
}

/// Runs a sweep in memory, every record kept (tests, and small sweeps).
pub fn sweep(plan: &Plan) -> Result<SweepOutput, SweepError> {
    let mut records = Vec::new();
    let swept = sweep_streaming(plan, |r: SeedRecord| {
        records.push(r);
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|e| match e {
        StreamError::Sweep(e) => e,
        StreamError::Sink(never) => match never {},
    })?;
    Ok(SweepOutput {
        json: swept.json,
        records,
        files: swept.files,
    })
}

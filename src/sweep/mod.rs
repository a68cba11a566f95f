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
pub mod coverage;
pub mod explicit_jobs;
pub mod freeze;
pub mod merge;
pub mod seed;
pub mod shrink;
pub mod shrunk;
pub mod summary;
pub mod swarm;

pub use aggregate::{aggregate, Aggregator};
pub use coverage::{configured, fault_kinds, Named};
pub use seed::{run_seed, seed_setup, signature, SeedFailure, SeedMetrics, SeedRecord};
pub use summary::{
    Coverage, FailureGroup, FaultCoverage, SeedRange, ShrunkInfo, SignatureGroup,
    SometimesCoverage, SweepJson, Throughput,
};

use crate::scenario::{Bugs, Scenario};
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
    #[error("--shard {text:?}: needs 0 <= I < N <= {}", crate::limits::MAX_SHARDS)]
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
        if count == 0 || index >= count || count > crate::limits::MAX_SHARDS {
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
    pub bugs: Bugs,
    pub jobs: Option<u64>,
    /// 0 = all cores.
    pub threads: usize,
    pub shrink: bool,
    /// Told of every seed as it finishes (the CLI passes a terminal progress bar).
    pub progress: Option<SeedSink>,
    /// The wall clock for the throughput figures of sweep.json (the CLI passes `Instant::now`);
    /// without one they are 0. The sweep reads no clock of its own.
    pub wall_clock: Option<fn() -> std::time::Instant>,
    /// Test hook: the run of this seed panics. Not reachable from the command line.
    #[doc(hidden)]
    pub panic_on_seed: Option<u64>,
}

impl Plan {
    pub fn new(scenario: Scenario, scenario_file: &str, seeds: (u64, u64)) -> Plan {
        let bugs = scenario.bugs.clone();
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
            progress: None,
            wall_clock: None,
            panic_on_seed: None,
        }
    }

    /// How many seeds this plan runs (never listed: a range can be far larger than memory).
    pub fn seed_count(&self) -> u64 {
        let (a, b) = self.seeds;
        match self.shard {
            None => b - a,
            Some(s) => crate::limits::shard_len(a, b, s.index, s.count),
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

/// Why a streamed sweep stopped: it could not run, or its sink refused a record (the sink's
/// own error, e.g. a failed write).
#[derive(Debug, thiserror::Error)]
pub enum StreamError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error(transparent)]
    Sink(E),
}

/// Seeds a worker may run ahead of the first seed not yet handed to the sink, per thread: the
/// reorder buffer holds at most this many records per thread, whatever the seed count.
pub const REORDER_AHEAD_PER_THREAD: u64 = 16;

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

/// Runs a sweep and hands each seed's record to `sink` in seed order as soon as it and every
/// seed before it have finished; keeps none of them (sweep.json is folded record by record), so
/// memory stays flat however many seeds run. The records, their order and sweep.json are the
/// same for any thread count: workers take seeds in order from a shared counter and run at most
/// `REORDER_AHEAD_PER_THREAD` × threads seeds ahead of the first one not yet handed on; this
/// thread puts the finished ones back in order. A sink error stops the workers (seeds already
/// running finish first) and is returned.
pub fn sweep_streaming<E: std::error::Error + 'static>(
    plan: &Plan,
    mut sink: impl FnMut(SeedRecord) -> Result<(), E>,
) -> Result<Swept, StreamError<E>> {
    let count = plan.seed_count();
    assert!(
        count <= crate::limits::MAX_SWEEP_SEEDS,
        "a sweep's seed count is checked before it starts"
    );
    let mut builder = rayon::ThreadPoolBuilder::new();
    if plan.threads > 0 {
        builder = builder.num_threads(plan.threads);
    }
    let pool = builder.build().map_err(SweepError::ThreadPool)?;
    let threads = pool.current_num_threads();
    let started = plan.wall_clock.map(|now| now());
    let ahead = REORDER_AHEAD_PER_THREAD * threads as u64;
    // (the first index not yet handed to the sink, stop), and its change signal.
    let window = std::sync::Mutex::new((0u64, false));
    let moved = std::sync::Condvar::new();
    let next = std::sync::atomic::AtomicU64::new(0);
    let mut aggregator = Aggregator::new(plan);
    let mut failed: Option<E> = None;
    let (window, moved, next) = (&window, &moved, &next);
    let stop = || {
        window.lock().expect("sweep window lock").1 = true;
        moved.notify_all();
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(u64, SeedRecord)>();
        for _ in 0..threads {
            let tx = tx.clone();
            scope.spawn(move || {
                // Stops the others should this worker panic (run_seed catches the model's
                // panics; this is for the sweep's own).
                let _guard = StopOnUnwind(stop);
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    {
                        let mut w = window.lock().expect("sweep window lock");
                        while !w.1 && i >= w.0 + ahead {
                            w = moved.wait(w).expect("sweep window lock");
                        }
                        if w.1 {
                            break;
                        }
                    }
                    let r = run_seed(plan, plan.seed_at(i));
                    if let Some(sink) = &plan.progress {
                        (sink.0)(!r.failures.is_empty());
                    }
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending: std::collections::BTreeMap<u64, SeedRecord> = Default::default();
        let mut first = 0u64;
        'receive: for (i, r) in rx {
            pending.insert(i, r);
            let before = first;
            while let Some(r) = pending.remove(&first) {
                aggregator.add(&r);
                if let Err(e) = sink(r) {
                    failed = Some(e);
                    stop();
                    break 'receive;
                }
                first += 1;
            }
            if first != before {
                window.lock().expect("sweep window lock").0 = first;
                moved.notify_all();
            }
        }
        debug_assert!(failed.is_some() || (first == count && pending.is_empty()));
    });
    if let Some(e) = failed {
        return Err(StreamError::Sink(e));
    }
    let wall = match (plan.wall_clock, started) {
        (Some(now), Some(started)) => now().duration_since(started).as_secs_f64(),
        _ => 0.0,
    };
    let mut json = aggregator.finish(plan.shard, wall, threads);
    let files = if plan.shrink {
        pool.install(|| shrunk::shrink_groups(plan, &mut json))
    } else {
        Vec::new()
    };
    Ok(Swept { json, files })
}

/// Runs its function when dropped by a panic's unwinding.
struct StopOnUnwind<F: Fn()>(F);

impl<F: Fn()> Drop for StopOnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

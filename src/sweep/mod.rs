//! Sweeps: many seeds of one scenario, in parallel, judged together.
//!
//! Owns: `durasim sweep` and `durasim merge`: the seed range and its shards, running each seed
//! (with `catch_unwind`, and a second run of a fixed sample of seeds to catch nondeterminism),
//! per-seed records (`seeds.jsonl`), failures grouped by invariant and first-violation signature,
//! the coverage gate, shrinking the first failure of each group, `sweep.json`, JUnit XML, and
//! `durasim run --freeze`.
//! Does not: simulate or judge a run (`run::run_once` does both).
//!
//! Determinism: every seed's result depends only on the scenario, the seed and the bug switches;
//! results are collected in seed order, groups and coverage are built from the sorted records,
//! and only the `throughput` object holds wall-clock figures. So `sweep.json` is the same for any
//! thread count, and shards merged give exactly what one unsharded sweep writes.

pub mod freeze;
pub mod shrink;
pub mod swarm;

use crate::check::{Invariant, Kind, Sometimes};
use crate::cli::{apply_bug_flags, load_scenario, output_error, BadInput, Outcome};
use crate::model::worker::CrashPoint;
use crate::report::output_dir::{Kind as OutputKind, OutputDir};
use crate::run::{run_once, RunRequest};
use crate::scenario::{Bugs, Scenario};
use anyhow::{anyhow, Context};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use shrink::Target;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use swarm::SwarmDraw;

/// The fault kinds the coverage gate counts, in report order.
pub const FAULT_KINDS: [&str; 5] = [
    "crash",
    "stall",
    "transient_error",
    "permanent_error",
    "relay_crash",
];

/// Every `replay_every`-th seed of the range (by index from its start), and the first, runs twice.
pub const REPLAY_EVERY: u64 = 8;
/// Seeds listed per group.
pub const FIRST_SEEDS: usize = 10;
/// At most this many groups are shrunk per sweep (the earliest, by invariant then first seed).
pub const MAX_SHRINKS: usize = 16;

fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(BadInput(msg.into()))
}

pub const SWEEP_HELP: &str = "Examples:
  durasim sweep scenarios/chaos.toml --seeds 0..2000 --bug no_fencing --quiet
  durasim sweep scenarios/chaos.toml --seeds 0..4000000 --shard 0/4 --out shards/0

Limits: at most 1000000 seeds per invocation (the range's length, or one shard's share of it);
--shard N at most 100000; --threads at most 4 per core.

Exit codes:
  0 no seed failed and the coverage gate passed (or was deferred to the merge of shards)
  1 a seed violated an invariant, crashed or replayed differently, or the coverage gate failed
  2 bad input: a malformed or invalid file, a bad flag, a warning under --deny-warnings, or an
    output durasim may not replace; nothing is written";

pub const MERGE_HELP: &str = "Example:
  durasim merge shards/0 shards/1 shards/2 shards/3 --out reports/chaos-sweep

Exit codes:
  0 the merged sweep passed (no failure, coverage gate passed)
  1 a failure in some shard, or the coverage gate failed
  2 bad input: a shard missing, repeated or from another sweep, an edited file, or an output
    durasim may not replace";

#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The scenario file (scenarios/*.toml)
    pub scenario: PathBuf,
    /// The seed range, A..B (B excluded), e.g. 0..2000
    #[arg(long, value_name = "A..B")]
    pub seeds: String,
    /// Worker threads, 1 to 4 per core (default: all cores); the result does not depend on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Run only shard I of N (seeds whose index in the range is I modulo N); merge with `durasim merge`
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Each seed draws its fault rates, workers, lease and heartbeat from the scenario's [swarm] ranges
    #[arg(long)]
    pub swarm: bool,
    /// Turn a bug switch on (repeatable; see `durasim bugs`)
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Override the scenario's arrivals.jobs (at most 10000000)
    #[arg(long, value_name = "N")]
    pub jobs: Option<u64>,
    /// Output directory (default: reports/<scenario name>-sweep/); replaced only if durasim wrote it
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write a JUnit XML report here; replaced only if durasim wrote it
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Do not shrink failures
    #[arg(long)]
    pub no_shrink: bool,
    /// Print only the verdict and the failures (no progress bar)
    #[arg(long)]
    pub quiet: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The shards' output directories (each holding sweep.json and seeds.jsonl)
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output directory (default: reports/<scenario name>-sweep/); replaced only if durasim wrote it
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write a JUnit XML report here; replaced only if durasim wrote it
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print only the verdict and the failures
    #[arg(long)]
    pub quiet: bool,
}

/// A slice of the seed range: the seeds whose index is `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("--shard {text:?}: expected I/N, e.g. 0/4"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text:?}: I is not a number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text:?}: N is not a number"))?;
        if count == 0 || index >= count || count > crate::limits::MAX_SHARDS {
            return Err(format!(
                "--shard {text:?}: needs 0 <= I < N <= {}",
                crate::limits::MAX_SHARDS
            ));
        }
        Ok(Shard { index, count })
    }
}

pub fn parse_seeds(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("--seeds {text:?}: expected A..B, e.g. 0..2000"))?;
    let a: u64 = a
        .trim()
        .parse()
        .map_err(|_| format!("--seeds {text:?}: A is not a number"))?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| format!("--seeds {text:?}: B is not a number"))?;
    if b <= a {
        return Err(format!(
            "--seeds {text:?}: the range is empty (B must be greater than A)"
        ));
    }
    Ok((a, b))
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
    pub progress: bool,
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
            progress: false,
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

/// One failure of one seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedFailure {
    /// `safety`, `liveness`, `nondeterminism` or `crash`.
    pub class: String,
    /// The invariant, or `replay` (nondeterminism) or `panic` (crash).
    pub invariant: String,
    pub signature: String,
    pub violations: u64,
    pub at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<u32>,
    pub message: String,
}

/// One seed's result, a line of `seeds.jsonl`. No wall-clock fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedRecord {
    pub seed: u64,
    pub events: u64,
    pub virtual_time_ms: u64,
    pub quiescent: bool,
    pub replay_checked: bool,
    pub failures: Vec<SeedFailure>,
    pub faults: Vec<String>,
    pub crash_points: Vec<String>,
    pub sometimes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub swarm: Option<SwarmDraw>,
}

/// A message with its numbers taken out: violations that differ only in ids, times and counts
/// share a signature.
pub fn signature(message: &str) -> String {
    // Every run of letters and digits that holds a digit (ids, times, counts, payload hashes)
    // becomes `#`.
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().any(|c| c.is_ascii_digit()) {
            out.push('#');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".into()
    }
}

/// The scenario and request a seed runs with (swarm settings applied).
pub fn seed_setup(plan: &Plan, seed: u64) -> (Scenario, RunRequest, Option<SwarmDraw>) {
    let mut base = plan.scenario.clone();
    base.expect = Default::default();
    let (scenario, rates, draw) = if plan.swarm {
        let (s, r, d) = swarm::draw(&base, seed);
        (s, Some(r), Some(d))
    } else {
        (base, None, None)
    };
    let request = RunRequest {
        seed,
        jobs: plan.jobs,
        bugs: plan.bugs.clone(),
        // The coverage gate reads which faults fired: keep only that evidence, not the
        // whole history (copying every record made sweeps memory-bound on two threads).
        keep_trace: true,
        rates,
        progress: false,
        trace_filter: Some(freeze::fault_evidence),
    };
    (scenario, request, draw)
}

/// Runs one seed: never panics, never depends on other seeds.
pub fn run_seed(plan: &Plan, seed: u64) -> SeedRecord {
    let index = seed - plan.seeds.0;
    let (scenario, request, draw) = seed_setup(plan, seed);
    let replay = index.is_multiple_of(REPLAY_EVERY);
    let mut record = SeedRecord {
        seed,
        events: 0,
        virtual_time_ms: 0,
        quiescent: false,
        replay_checked: replay,
        failures: Vec::new(),
        faults: Vec::new(),
        crash_points: Vec::new(),
        sometimes: Vec::new(),
        swarm: draw,
    };
    let panic_on = plan.panic_on_seed;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if panic_on == Some(seed) {
            panic!("injected test panic at seed {seed}");
        }
        let report = run_once(&scenario, &request, None);
        let again = replay.then(|| {
            let mut plain = request.clone();
            plain.keep_trace = false;
            run_once(&scenario, &plain, None).outcome.trace_hash
        });
        (report, again)
    }));
    let (report, again) = match result {
        Ok(x) => x,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            record.failures.push(SeedFailure {
                class: "crash".into(),
                invariant: "panic".into(),
                signature: signature(&message),
                violations: 1,
                at_ms: 0,
                job: None,
                message,
            });
            return record;
        }
    };
    record.events = report.outcome.records;
    record.virtual_time_ms = report.outcome.virtual_time_ms;
    record.quiescent = report.outcome.quiescent;
    for (invariant, verdict) in &report.check.verdicts {
        if verdict.count == 0 {
            continue;
        }
        let first = verdict.first.as_ref();
        let message = first.map(|v| v.message.clone()).unwrap_or_default();
        record.failures.push(SeedFailure {
            class: match invariant.kind() {
                Kind::Always => "safety",
                Kind::Eventually => "liveness",
            }
            .into(),
            invariant: invariant.name().into(),
            signature: signature(&message),
            violations: verdict.count,
            at_ms: first.map_or(0, |v| v.at),
            job: first.and_then(|v| v.job).map(|j| j.0),
            message,
        });
    }
    if let Some(h) = again {
        if h != report.outcome.trace_hash {
            let message = "the same seed gave a different history on a second run: some step is not determined by the seed".to_string();
            record.failures.push(SeedFailure {
                class: "nondeterminism".into(),
                invariant: "replay".into(),
                signature: message.clone(),
                violations: 1,
                at_ms: 0,
                job: None,
                message,
            });
        }
    }
    if let Some(trace) = &report.trace {
        let (kinds, points) = freeze::fired_kinds(&scenario, trace, &report.outcome.names);
        record.faults = kinds.into_iter().map(String::from).collect();
        record.crash_points = points;
        record.crash_points.sort_by_key(|p| CrashPoint::parse(p));
    }
    record.sometimes = report
        .check
        .sometimes
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, _)| s.name().to_string())
        .collect();
    record
}

// ---- sweep.json --------------------------------------------------------------------------

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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub faults: Vec<FaultCoverage>,
    pub crash_points: Vec<FaultCoverage>,
    pub sometimes: Vec<SometimesCoverage>,
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

/// Names with a flag (configured, or required).
pub type Named = Vec<(String, bool)>;

/// Which fault kinds and crash points are configured, and which `sometimes` are required.
/// Required: every property the scenario's `expect.sometimes` names, and those its configured
/// random faults imply (see docs/sweeps.md).
pub fn configured(plan: &Plan) -> (Named, Named, Named) {
    let s = &plan.scenario;
    let f = &s.faults;
    let sw = if plan.swarm {
        s.swarm.clone().unwrap_or_default()
    } else {
        Default::default()
    };
    let on = |rate: f64, range: Option<[f64; 2]>| match range {
        Some([_, hi]) => hi > 0.0,
        None => rate > 0.0,
    };
    let kinds = [
        on(f.crash, sw.crash),
        on(f.stall, sw.stall),
        on(f.transient_error, sw.transient_error),
        on(f.permanent_error, sw.permanent_error),
        on(f.relay_crash, sw.relay_crash),
    ];
    let points_pool: Vec<String> = sw
        .crash_points
        .clone()
        .unwrap_or_else(|| f.crash_points.clone());
    let faults: Vec<(String, bool)> = FAULT_KINDS
        .iter()
        .zip(kinds)
        .map(|(n, on)| (n.to_string(), on))
        .collect();
    let points: Vec<(String, bool)> = CrashPoint::ALL
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                kinds[0] && points_pool.iter().any(|x| x == p.name()),
            )
        })
        .collect();
    let mut required: Vec<Sometimes> = Vec::new();
    if let Some(names) = &s.expect.sometimes {
        required.extend(names.iter().filter_map(|n| Sometimes::parse(n)));
    }
    if kinds[0] {
        required.extend([Sometimes::WorkerCrashed, Sometimes::LeaseExpired]);
        if points
            .iter()
            .any(|(p, on)| *on && p == CrashPoint::AfterCommitBeforeAck.name())
        {
            required.push(Sometimes::CommitDeduped);
        }
    }
    if kinds[1] {
        required.extend([Sometimes::Stalled, Sometimes::LeaseExpired]);
        let workers = sw.workers.map_or(s.workers.count, |[_, hi]| hi);
        if workers >= 2 {
            required.push(Sometimes::StaleFenceRejected);
        }
    }
    if kinds[2] {
        required.push(Sometimes::RetryScheduled);
    }
    if kinds[3] {
        required.push(Sometimes::DeadLettered);
    }
    if kinds[4] {
        required.extend([Sometimes::RelayCrashed, Sometimes::RepublishAbsorbed]);
    }
    let sometimes = Sometimes::ALL
        .iter()
        .map(|x| (x.name().to_string(), required.contains(x)))
        .collect();
    (faults, points, sometimes)
}

fn reproduce_command(plan: &Plan, seed: u64) -> String {
    let mut cmd = if plan.swarm {
        format!(
            "durasim sweep {} --swarm --seeds {seed}..{}",
            plan.scenario_file,
            seed + 1
        )
    } else {
        format!("durasim run {} --seed {seed}", plan.scenario_file)
    };
    if let Some(j) = plan.jobs {
        cmd.push_str(&format!(" --jobs {j}"));
    }
    for b in crate::bugs::enabled(&plan.bugs) {
        if !plan.scenario.bugs_has(b) {
            cmd.push_str(&format!(" --bug {b}"));
        }
    }
    cmd
}

trait BugsHas {
    fn bugs_has(&self, name: &str) -> bool;
}
impl BugsHas for Scenario {
    fn bugs_has(&self, name: &str) -> bool {
        crate::bugs::enabled(&self.bugs).contains(&name)
    }
}

/// Builds sweep.json from the records (sorted by seed). `shrunk` maps (invariant, signature) to
/// an already-known shrink result; groups without one get `None`.
pub fn aggregate(
    plan: &Plan,
    records: &[SeedRecord],
    shard: Option<Shard>,
    wall_s: f64,
    threads: usize,
) -> SweepJson {
    debug_assert!(records.windows(2).all(|w| w[0].seed < w[1].seed));
    // Groups in invariant order, then replay, then panic; signatures by first seed.
    let order = |name: &str| -> usize {
        Invariant::parse(name)
            .map(|i| i as usize)
            .unwrap_or(match name {
                "replay" => 100,
                _ => 101,
            })
    };
    let mut groups: Vec<FailureGroup> = Vec::new();
    for r in records {
        for f in &r.failures {
            let g = match groups.iter_mut().position(|g| g.invariant == f.invariant) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(FailureGroup {
                        invariant: f.invariant.clone(),
                        class: f.class.clone(),
                        seeds: 0,
                        first_seeds: Vec::new(),
                        signatures: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.seeds += 1;
            if g.first_seeds.len() < FIRST_SEEDS {
                g.first_seeds.push(r.seed);
            }
            match g.signatures.iter_mut().find(|s| s.signature == f.signature) {
                Some(s) => {
                    s.seeds += 1;
                    if s.first_seeds.len() < FIRST_SEEDS {
                        s.first_seeds.push(r.seed);
                    }
                }
                None => g.signatures.push(SignatureGroup {
                    signature: f.signature.clone(),
                    seeds: 1,
                    first_seeds: vec![r.seed],
                    first_seed: r.seed,
                    first_message: f.message.clone(),
                    first_at_ms: f.at_ms,
                    first_job: f.job,
                    reproduce: reproduce_command(plan, r.seed),
                    swarm: r.swarm.clone(),
                    shrunk: None,
                }),
            }
        }
    }
    groups.sort_by_key(|g| order(&g.invariant));
    let (faults, points, sometimes) = configured(plan);
    let count =
        |pred: &dyn Fn(&SeedRecord) -> bool| records.iter().filter(|r| pred(r)).count() as u64;
    // For each configured name, the number of seeds whose record lists it.
    let tally = |list: Vec<(String, bool)>, seen: fn(&SeedRecord) -> &Vec<String>| {
        list.into_iter().map(move |(name, on)| {
            let seeds = count(&|r| seen(r).contains(&name));
            (name, on, seeds)
        })
    };
    let faults: Vec<FaultCoverage> = tally(faults, |r| &r.faults)
        .map(|(name, configured, seeds)| FaultCoverage {
            name,
            configured,
            seeds,
        })
        .collect();
    let crash_points: Vec<FaultCoverage> = tally(points, |r| &r.crash_points)
        .map(|(name, configured, seeds)| FaultCoverage {
            name,
            configured,
            seeds,
        })
        .collect();
    let sometimes: Vec<SometimesCoverage> = tally(sometimes, |r| &r.sometimes)
        .map(|(name, required, seeds)| SometimesCoverage {
            name,
            required,
            seeds,
        })
        .collect();
    let mut problems = Vec::new();
    for f in faults.iter().filter(|f| f.configured && f.seeds == 0) {
        problems.push(format!(
            "fault `{}` is configured but never fired in {} seeds: the injector does nothing",
            f.name,
            records.len()
        ));
    }
    for f in crash_points.iter().filter(|f| f.configured && f.seeds == 0) {
        problems.push(format!(
            "crash point `{}` is configured but no worker ever crashed there in {} seeds",
            f.name,
            records.len()
        ));
    }
    for s in sometimes.iter().filter(|s| s.required && s.seeds == 0) {
        problems.push(format!(
            "`sometimes` property `{}` was never reached in {} seeds",
            s.name,
            records.len()
        ));
    }
    let gate = if shard.is_some() {
        "deferred"
    } else if problems.is_empty() {
        "passed"
    } else {
        "failed"
    };
    let seeds_failed = count(&|r| !r.failures.is_empty());
    let events: u64 = records.iter().map(|r| r.events).sum();
    let virtual_time_ms: u64 = records.iter().map(|r| r.virtual_time_ms).sum();
    let n = records.len() as u64;
    let wall = wall_s.max(1e-9);
    SweepJson {
        scenario: plan.scenario.name.clone(),
        scenario_file: plan.scenario_file.clone(),
        seeds: SeedRange {
            start: plan.seeds.0,
            end: plan.seeds.1,
        },
        shard,
        swarm: plan.swarm,
        bugs: crate::bugs::enabled(&plan.bugs)
            .into_iter()
            .map(String::from)
            .collect(),
        jobs_override: plan.jobs,
        passed: seeds_failed == 0 && gate != "failed",
        seeds_run: n,
        seeds_failed,
        seeds_replayed: count(&|r| r.replay_checked),
        events,
        virtual_time_ms,
        failures: groups,
        coverage: Coverage {
            faults,
            crash_points,
            sometimes,
            gate: gate.into(),
            problems,
        },
        throughput: Throughput {
            wall_s: (wall_s * 1000.0).round() / 1000.0,
            threads,
            events_per_wall_s: (events as f64 / wall).round(),
            sim_to_wall_ratio: ((virtual_time_ms as f64 / 1000.0 / wall) * 10.0).round() / 10.0,
            seeds_per_wall_s: ((n as f64 / wall) * 10.0).round() / 10.0,
        },
    }
}

/// The file name of a group's shrunk scenario, relative to the output directory.
fn shrunk_path(invariant: &str, k: usize) -> String {
    if k == 0 {
        format!("shrunk/{invariant}.toml")
    } else {
        format!("shrunk/{invariant}-{}.toml", k + 1)
    }
}

/// `shrunk/NAME.toml` with NAME a plain file name: what [`shrunk_path`] writes.
fn is_shrunk_path(p: &str) -> bool {
    p.strip_prefix("shrunk/")
        .and_then(|n| n.strip_suffix(".toml"))
        .is_some_and(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        })
}

/// A sweep's result in memory: sweep.json, the per-seed records and the shrunk files.
pub struct SweepOutput {
    pub json: SweepJson,
    pub records: Vec<SeedRecord>,
    /// (path relative to the output directory, file text)
    pub files: Vec<(String, String)>,
}

/// Shrinks the first failure of each group (at most `MAX_SHRINKS`), in parallel, in a fixed order.
fn shrink_groups(plan: &Plan, json: &mut SweepJson) -> Vec<(String, String)> {
    let mut jobs: Vec<(usize, usize, String, u64, Target)> = Vec::new();
    for (gi, g) in json.failures.iter().enumerate() {
        let target = match g.invariant.as_str() {
            "replay" => Target::Nondeterminism,
            "panic" => continue,
            name => match Invariant::parse(name) {
                Some(i) => Target::Invariant(i),
                None => continue,
            },
        };
        for (si, s) in g.signatures.iter().enumerate() {
            jobs.push((gi, si, shrunk_path(&g.invariant, si), s.first_seed, target));
        }
    }
    jobs.truncate(MAX_SHRINKS);
    let results: Vec<Option<(String, shrink::Shrunk)>> = jobs
        .par_iter()
        .map(|(_, _, path, seed, target)| {
            let (scenario, mut request, _) = seed_setup(plan, *seed);
            request.keep_trace = false;
            let what = match target {
                Target::Invariant(i) => i.name().to_string(),
                Target::Nondeterminism => "replay (nondeterminism)".to_string(),
            };
            let bugs = crate::bugs::enabled(&plan.bugs).join(", ");
            let header = format!(
                "Shrunk by `durasim sweep` from {} seed {seed}{}{}: breaks {what}.\nFaults are explicit [[script]] entries; every random fault rate is 0.\nReproduce: durasim run <this file>",
                plan.scenario_file,
                if plan.swarm { " (swarm)" } else { "" },
                if bugs.is_empty() { String::new() } else { format!(" with bug {bugs}") },
            );
            let shrunk = shrink::shrink(&scenario, &request, *target, &header)?;
            let mut s = shrunk.scenario.clone();
            s.name = format!("{}-shrunk-{}", plan.scenario.name, path.trim_start_matches("shrunk/").trim_end_matches(".toml"));
            s.description = format!(
                "{} seed {seed} shrunk from {} jobs, {} workers, {} faults to {} jobs, {} workers, {} faults; violates {}.",
                plan.scenario_file,
                shrunk.from.jobs,
                shrunk.from.workers,
                shrunk.from.faults,
                shrunk.to.jobs,
                shrunk.to.workers,
                shrunk.to.faults,
                shrunk.violated.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
            );
            let text = freeze::to_toml(&s, &header).ok()?;
            Some((text, shrink::Shrunk { scenario: s, ..shrunk }))
        })
        .collect();
    let mut files = Vec::new();
    for ((gi, si, path, _, _), r) in jobs.into_iter().zip(results) {
        if let Some((text, sh)) = r {
            json.failures[gi].signatures[si].shrunk = Some(ShrunkInfo {
                path: path.clone(),
                from: sh.from,
                to: sh.to,
                runs: sh.runs,
                seed_kept: sh.seed_kept,
                violates: sh.violated.iter().map(|i| i.name().to_string()).collect(),
            });
            files.push((path, text));
        }
    }
    files
}

/// Runs a sweep in memory.
pub fn sweep(plan: &Plan) -> anyhow::Result<SweepOutput> {
    let count = plan.seed_count();
    assert!(
        count <= crate::limits::MAX_SWEEP_SEEDS,
        "a sweep's seed count is checked before it starts"
    );
    let mut builder = rayon::ThreadPoolBuilder::new();
    if plan.threads > 0 {
        builder = builder.num_threads(plan.threads);
    }
    let pool = builder.build().context("cannot start the thread pool")?;
    let threads = pool.current_num_threads();
    let bar = if plan.progress {
        let b = indicatif::ProgressBar::new(count);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} seeds [{bar:40}] {per_sec} eta {eta} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let failed = std::sync::atomic::AtomicU64::new(0);
    let records: Vec<SeedRecord> = pool.install(|| {
        (0..count)
            .into_par_iter()
            .map(|i| {
                let r = run_seed(plan, plan.seed_at(i));
                if plan.progress {
                    if !r.failures.is_empty() {
                        let n = failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        bar.set_message(format!("{n} failed"));
                    }
                    bar.inc(1);
                }
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    let mut json = aggregate(plan, &records, plan.shard, wall, threads);
    let files = if plan.shrink {
        pool.install(|| shrink_groups(plan, &mut json))
    } else {
        Vec::new()
    };
    Ok(SweepOutput {
        json,
        records,
        files,
    })
}

/// Writes a sweep's (or a merge's) directory: into a temporary sibling, renamed into place when
/// complete (see `report::output_dir`). Returns where it went.
fn write_output(out: &Path, output: &SweepOutput) -> anyhow::Result<PathBuf> {
    let dir = OutputDir::create(out, OutputKind::Sweep).map_err(output_error)?;
    for (path, text) in &output.files {
        let p = dir.path().join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
    }
    let mut seeds = std::io::BufWriter::new(
        std::fs::File::create(dir.file("seeds.jsonl")).context("cannot create seeds.jsonl")?,
    );
    for r in &output.records {
        serde_json::to_writer(&mut seeds, r)?;
        seeds.write_all(b"\n")?;
    }
    seeds.flush().context("cannot write seeds.jsonl")?;
    drop(seeds);
    std::fs::write(
        dir.file("sweep.json"),
        serde_json::to_string_pretty(&output.json)? + "\n",
    )
    .context("cannot write sweep.json")?;
    dir.commit().map_err(output_error)
}

/// Writes `--junit FILE`, replacing only a JUnit report durasim wrote.
fn write_junit(path: &Path, json: &SweepJson) -> anyhow::Result<()> {
    crate::report::output_dir::write_own_file(path, &crate::report::junit::render(json), JUNIT, is_junit)
        .map_err(output_error)
}

const JUNIT: &str = "JUnit report";

fn is_junit(text: &str) -> bool {
    text.contains(crate::report::junit::MARK)
}

/// Refuses `--out` and `--junit` targets durasim may not replace, before any work is done
/// (they are checked again when written).
fn check_targets(out: &Path, junit: Option<&Path>) -> anyhow::Result<()> {
    use crate::report::output_dir::{check_own_file, inspect};
    inspect(out).map_err(output_error)?;
    if let Some(j) = junit {
        check_own_file(j, JUNIT, is_junit).map_err(output_error)?;
    }
    Ok(())
}

/// Refuses a `--freeze FILE` durasim may not replace, before the run.
pub fn check_freeze_target(path: &Path) -> anyhow::Result<()> {
    crate::report::output_dir::check_own_file(path, "frozen scenario", |t| {
        t.starts_with(FROZEN_MARK)
    })
    .map_err(output_error)
}

/// Prints the human summary of a sweep.
pub fn print_summary(json: &SweepJson, out: &Path, quiet: bool) {
    let verdict = if json.passed { "PASS" } else { "FAIL" };
    let t = &json.throughput;
    let shard = json
        .shard
        .map(|s| format!(" shard {}/{}", s.index, s.count))
        .unwrap_or_default();
    println!(
        "{verdict}  {} seeds {}..{}{shard}{}{}: {} run, {} failed ({} replayed twice)",
        json.scenario,
        json.seeds.start,
        json.seeds.end,
        if json.swarm { " swarm" } else { "" },
        if json.bugs.is_empty() {
            String::new()
        } else {
            format!(" bug {}", json.bugs.join(","))
        },
        json.seeds_run,
        json.seeds_failed,
        json.seeds_replayed
    );
    if !quiet {
        println!(
            "  throughput {:.2} s wall on {} threads: {:.1} seeds/s, {:.0} events/s, sim/wall {:.0}x",
            t.wall_s, t.threads, t.seeds_per_wall_s, t.events_per_wall_s, t.sim_to_wall_ratio
        );
    }
    for g in &json.failures {
        println!(
            "  {} {} ({}): {} seeds, first {:?}",
            if g.class == "crash" {
                "CRASH"
            } else {
                "VIOLATED"
            },
            g.invariant,
            g.class,
            g.seeds,
            g.first_seeds
        );
        for s in &g.signatures {
            println!("    {} seeds: {}", s.seeds, s.first_message);
            println!("      reproduce: {}", s.reproduce);
            if let Some(sh) = &s.shrunk {
                println!(
                    "      shrunk ({} jobs, {} workers, {} faults): durasim run {}",
                    sh.to.jobs,
                    sh.to.workers,
                    sh.to.faults,
                    out.join(&sh.path).display()
                );
            }
        }
    }
    let c = &json.coverage;
    if !quiet {
        let fmt = |v: &[FaultCoverage]| {
            v.iter()
                .filter(|f| f.configured || f.seeds > 0)
                .map(|f| format!("{} {}", f.name, f.seeds))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("  coverage   faults (seeds fired): {}", fmt(&c.faults));
        println!("             crash points: {}", fmt(&c.crash_points));
        let s: Vec<String> = c
            .sometimes
            .iter()
            .map(|s| {
                format!(
                    "{}{} {}",
                    s.name,
                    if s.required { "*" } else { "" },
                    s.seeds
                )
            })
            .collect();
        println!("             sometimes (* required): {}", s.join(", "));
    }
    match c.gate.as_str() {
        "failed" => {
            println!("  COVERAGE GATE FAILED:");
            for p in &c.problems {
                println!("    {p}");
            }
        }
        "deferred" => {
            if !quiet {
                println!("  coverage gate deferred to `durasim merge` (this is one shard)");
            }
        }
        _ => {
            if !quiet {
                println!("  coverage gate passed");
            }
        }
    }
    println!("  outputs    {}", out.display());
}

fn default_out(name: &str) -> anyhow::Result<PathBuf> {
    crate::cli::default_out(name, "-sweep")
}

/// `durasim sweep`.
pub fn cmd_sweep(args: &SweepArgs) -> anyhow::Result<Outcome> {
    let (scenario, _) = load_scenario(&args.scenario)?;
    let seeds = parse_seeds(&args.seeds).map_err(bad)?;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(bad)?;
    if args.swarm && scenario.swarm.is_none() {
        return Err(bad(format!(
            "--swarm: {} has no [swarm] section with the ranges to draw from",
            args.scenario.display()
        )));
    }
    if let Some(t) = args.threads {
        crate::limits::check_threads(t).map_err(bad)?;
    }
    if let Some(j) = args.jobs {
        crate::limits::check_jobs("--jobs", j).map_err(bad)?;
    }
    let mut plan = Plan::new(scenario, &args.scenario.display().to_string(), seeds);
    apply_bug_flags(&mut plan.bugs, &args.bugs)?;
    plan.shard = shard;
    crate::limits::check_sweep_seeds(&args.seeds, plan.seed_count()).map_err(bad)?;
    plan.swarm = args.swarm;
    plan.jobs = args.jobs;
    plan.threads = args.threads.unwrap_or(0);
    plan.shrink = !args.no_shrink;
    plan.progress = !args.quiet && std::io::stderr().is_terminal();
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&plan.scenario.name)?,
    };
    // Refused before the sweep runs, not after minutes of work (checked again when written).
    check_targets(&out, args.junit.as_deref())?;
    let output = sweep(&plan)?;
    let out = write_output(&out, &output)?;
    if let Some(junit) = &args.junit {
        write_junit(junit, &output.json)?;
    }
    print_summary(&output.json, &out, args.quiet);
    Ok(if output.json.passed {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

/// `durasim merge`: the shards' seeds.jsonl and shrunk files, combined into what one unsharded
/// sweep writes.
pub fn cmd_merge(args: &MergeArgs) -> anyhow::Result<Outcome> {
    let mut shards: Vec<(PathBuf, SweepJson)> = Vec::new();
    for d in &args.dirs {
        let p = d.join("sweep.json");
        let text = crate::limits::read_capped(&p, crate::limits::MAX_SUMMARY_BYTES, "sweep.json")
            .map_err(bad)?;
        let json: SweepJson = serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "{}: not a durasim sweep.json ({})",
                p.display(),
                crate::messages::plain(&e.to_string())
            ))
        })?;
        if let Some(s) = json.shard {
            Shard::parse(&format!("{}/{}", s.index, s.count))
                .map_err(|m| bad(format!("{}: field `shard`: {m}", p.display())))?;
        }
        if json.seeds.start >= json.seeds.end || json.seeds_run > crate::limits::MAX_SWEEP_SEEDS {
            return Err(bad(format!(
                "{}: fields `seeds` and `seedsRun`: not a sweep durasim wrote (an empty range, or more than {} seeds in one shard)",
                p.display(),
                crate::limits::MAX_SWEEP_SEEDS
            )));
        }
        shards.push((d.clone(), json));
    }
    let first = shards[0].1.clone();
    let same = |j: &SweepJson| {
        j.scenario == first.scenario
            && j.scenario_file == first.scenario_file
            && j.seeds == first.seeds
            && j.swarm == first.swarm
            && j.bugs == first.bugs
            && j.jobs_override == first.jobs_override
    };
    if let Some((d, _)) = shards.iter().find(|(_, j)| !same(j)) {
        return Err(bad(format!(
            "{}: a different sweep (scenario, seeds, swarm, bugs or jobs differ from {})",
            d.display(),
            args.dirs[0].display()
        )));
    }
    let count = match first.shard {
        Some(s) => s.count,
        None => 1,
    };
    let mut seen = vec![false; count as usize];
    for (d, j) in &shards {
        let index = match (j.shard, count) {
            (Some(s), _) if s.count == count => s.index,
            (None, 1) => 0,
            _ => {
                return Err(bad(format!(
                    "{}: shard count differs from the other shards",
                    d.display()
                )))
            }
        };
        if std::mem::replace(&mut seen[index as usize], true) {
            return Err(bad(format!(
                "{}: shard {index}/{count} given twice",
                d.display()
            )));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(bad(format!(
            "shard {missing}/{count} is missing: a merge needs every shard"
        )));
    }
    // The scenario file as recorded; its name and expectations decide the coverage gate.
    let scenario_path = PathBuf::from(&first.scenario_file);
    let (scenario, _) = load_scenario(&scenario_path).map_err(|e| {
        bad(format!(
            "merge re-reads the scenario to apply the coverage gate: {e}"
        ))
    })?;
    let mut plan = Plan::new(
        scenario,
        &first.scenario_file,
        (first.seeds.start, first.seeds.end),
    );
    plan.swarm = first.swarm;
    plan.jobs = first.jobs_override;
    plan.bugs = Bugs::default();
    apply_bug_flags(&mut plan.bugs, &first.bugs)?;
    let expected: u64 = shards.iter().map(|(_, j)| j.seeds_run).sum();
    if expected > crate::limits::MAX_MERGED_SEEDS {
        return Err(bad(format!(
            "the shards hold {expected} seeds together; a merge holds at most {} in memory",
            crate::limits::MAX_MERGED_SEEDS
        )));
    }
    let mut records: Vec<SeedRecord> = Vec::new();
    let mut wall = 0.0;
    let mut threads = 0;
    for (d, j) in &shards {
        let p = d.join("seeds.jsonl");
        let file = crate::limits::open_regular(&p, "seeds.jsonl").map_err(bad)?;
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        let mut n = 0u64;
        while crate::limits::read_line_capped(&mut reader, &mut line, &p, n as usize + 1)
            .map_err(bad)?
        {
            n += 1;
            if n > j.seeds_run {
                return Err(bad(format!(
                    "{}: more records than the {} seeds its sweep.json says were run",
                    p.display(),
                    j.seeds_run
                )));
            }
            records.push(serde_json::from_str(&line).map_err(|e| {
                bad(format!(
                    "{}:{n}: not a seed record ({})",
                    p.display(),
                    crate::messages::plain(&e.to_string())
                ))
            })?);
        }
        wall += j.throughput.wall_s;
        threads += j.throughput.threads;
    }
    records.sort_by_key(|r| r.seed);
    if records.len() as u64 != expected || records.windows(2).any(|w| w[0].seed == w[1].seed) {
        return Err(bad("the shards' seeds.jsonl files do not match their sweep.json (missing or repeated seeds)"));
    }
    let mut json = aggregate(&plan, &records, None, wall, threads);
    // Shrunk scenarios: from the shard that holds each group's first seed.
    let mut files = Vec::new();
    for g in json.failures.iter_mut() {
        for (si, s) in g.signatures.iter_mut().enumerate() {
            let found = shards.iter().find_map(|(d, j)| {
                j.failures
                    .iter()
                    .find(|x| x.invariant == g.invariant)
                    .and_then(|x| {
                        x.signatures
                            .iter()
                            .find(|y| y.signature == s.signature && y.first_seed == s.first_seed)
                    })
                    .map(|y| (d, y.shrunk.clone()))
            });
            if let Some((d, Some(mut info))) = found {
                if !is_shrunk_path(&info.path) {
                    return Err(bad(format!(
                        "{}: a shrunk path {} that durasim does not write (shrunk/NAME.toml)",
                        d.join("sweep.json").display(),
                        crate::messages::clip(&info.path)
                    )));
                }
                let text = crate::limits::read_capped(
                    &d.join(&info.path),
                    crate::limits::MAX_SCENARIO_BYTES,
                    "shrunk scenario",
                )
                .map_err(bad)?;
                let path = shrunk_path(&g.invariant, si);
                let own = format!(
                    "-shrunk-{}",
                    info.path
                        .trim_start_matches("shrunk/")
                        .trim_end_matches(".toml")
                );
                let new = format!(
                    "-shrunk-{}",
                    path.trim_start_matches("shrunk/").trim_end_matches(".toml")
                );
                let text = if own == new {
                    text
                } else {
                    text.replacen(&own, &new, 1)
                };
                info.path = path.clone();
                s.shrunk = Some(info);
                files.push((path, text));
            }
        }
    }
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&json.scenario)?,
    };
    check_targets(&out, args.junit.as_deref())?;
    let output = SweepOutput {
        json,
        records,
        files,
    };
    let out = write_output(&out, &output)?;
    if let Some(junit) = &args.junit {
        write_junit(junit, &output.json)?;
    }
    print_summary(&output.json, &out, args.quiet);
    Ok(if output.json.passed {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

/// The first line of every file `--freeze` writes: `--freeze FILE` replaces only a file that
/// starts with it.
pub const FROZEN_MARK: &str = "# Frozen by `durasim run ";

/// `durasim run --freeze FILE`: writes the run as an explicit scenario, checks it, and returns
/// the line that says how closely it replays (printed once the run's outputs are in place).
/// Needs the run's trace.
pub fn freeze_run(
    scenario: &Scenario,
    request: &RunRequest,
    report: &crate::run::RunReport,
    path: &Path,
    scenario_file: &Path,
) -> anyhow::Result<String> {
    let scenario_file = scenario_file.display();
    let trace = report
        .trace
        .as_deref()
        .ok_or_else(|| anyhow!("--freeze needs the run's trace"))?;
    let mut plain = scenario.clone();
    plain.expect = Default::default();
    let mut frozen = freeze::freeze(&plain, request, trace, &report.outcome.names);
    let m = &report.metrics;
    let e = &mut frozen.expect;
    e.violations = Some(
        report
            .check
            .violated()
            .iter()
            .map(|i| i.name().to_string())
            .collect(),
    );
    e.enqueued = Some(m.jobs.enqueued);
    e.acked = Some(m.jobs.acked);
    e.dead_lettered = Some(m.jobs.dead_lettered);
    e.cancelled = Some(m.jobs.cancelled);
    e.results_committed = Some(m.effects.results_committed);
    e.worker_crashes = Some(m.crashes.worker);
    e.relay_crashes = Some(m.crashes.relay);
    // A run with an unseeded step cannot be pinned: no two runs of it share a trace.
    let unseeded = crate::bugs::enabled(&request.bugs).contains(&"nondeterministic_step");
    if !unseeded {
        e.trace_hash = Some(crate::history::TraceHash::hex(report.outcome.trace_hash));
    }
    let header = format!(
        "Frozen by `durasim run {scenario_file} --seed {} --freeze`: the faults that fired are explicit\n[[script]] entries and every random fault rate is 0. Durations still come from the seed, and\nthe run replays with the same trace hash (pinned in [expect]).",
        request.seed
    );
    let text = freeze::to_toml(&frozen, &header).map_err(|e| anyhow!(e))?;
    debug_assert!(text.starts_with(FROZEN_MARK));
    crate::report::output_dir::write_own_file(path, &text, "frozen scenario", |t| {
        t.starts_with(FROZEN_MARK)
    })
    .map_err(output_error)?;
    let check = Scenario::parse(&path.display().to_string(), &text).map_err(|e| anyhow!("{e}"))?;
    let again = run_once(&check, &RunRequest::for_scenario(&check), None);
    let unmet = crate::run::check_expectations(&check, &again);
    let how = if unseeded && unmet.is_empty() {
        "same verdicts and counts (nondeterministic_step is on: no two runs share a trace)"
            .to_string()
    } else if unmet.is_empty() {
        "identical trace".to_string()
    } else {
        format!(
            "DIFFERS: {}",
            unmet
                .iter()
                .map(|u| format!("{} expected {} got {}", u.field, u.expected, u.actual))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    Ok(format!(
        "  frozen     {} ({} scripted faults): replay {how}",
        path.display(),
        frozen.script.len()
    ))
}

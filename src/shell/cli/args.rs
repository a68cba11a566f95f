//! The command line's words: every subcommand, flag and help text (clap).
//!
//! Owns: what `durasim --help` and each `durasim CMD --help` say, and the arguments they parse
//! into. The flags' values are checked by the commands (`limits` holds the ranges).
//! Does not: run anything.

use crate::shell::report::chart::Format;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

const MAIN_HELP: &str = "Examples:
  durasim run scenarios/incident-crash-before-ack.toml
  durasim sweep scenarios/chaos.toml --seeds 0..2000 --bug no_fencing --quiet

Exit codes: 0 the invariants and the scenario's [expect] block agree (an expected violation
included); 1 a violation or an unmet expectation; 2 bad input. Killed by a signal: 128+N, and no
partial output directory is left.";

const RUN_HELP: &str = "Example:
  durasim run scenarios/zombie-worker.toml --seed 7 --bug no_fencing --out reports/zombie

Exit codes:
  0 every invariant and the scenario's [expect] block agree; a violation the scenario expects
    (expect.violations) is agreement
  1 a violation or an unmet expectation (the reproduce line says how to re-run it)
  2 bad input: a malformed or invalid file (named with its line and field), a bad flag, a warning
    under --deny-warnings, or an output durasim may not replace; nothing is written";

const REPLAY_HELP: &str = "Example:
  durasim run scenarios/chaos.toml --trace --out reports/chaos && durasim replay reports/chaos

Runs DIR/scenario.toml (only if it matches the scenarioDigest recorded in DIR/summary.json) with
the recorded seed, jobs and bug switches, and compares trace hashes.

Exit codes:
  0 identical trace
  1 diverged (with DIR/trace.jsonl: the first diverging event is printed)
  2 bad input: DIR's files missing, edited or out of range";

const CHECK_HELP: &str = "Example:
  durasim check scenarios/*.toml

Exit codes:
  0 every file is valid (warnings are printed and do not count, unless --deny-warnings)
  2 at least one file is invalid (each named with its line and field)";

const CHART_HELP: &str = "Example:
  durasim run scenarios/chaos.toml --no-rows --out reports/c && durasim chart reports/c

Prints one `missing CHART: ...` line for each chart that lacks data, with what would supply it.

Exit codes:
  0 charts and index.html written
  2 bad input: DIR is not a run's or a sweep's output, or --out may not be replaced";

const VERIFY_HELP: &str = "Example:
  durasim run scenarios/chaos.toml --trace --out reports/chaos && durasim verify reports/chaos/trace.jsonl

EXPECT (--expect) holds a scenario's [expect] keys at its top level, for example
  violations = [\"single_result_per_key\"]
Without --expect, the history header's \"expect\" object (the same keys, as JSON) is used
when there is one.

Exit codes:
  0 every invariant holds on the recorded history (with expectations: it shows what they say)
  1 an invariant is violated (the first violation and its evidence are printed), or with
    expectations one is not met
  2 bad input: not a history file or an expectations file (named with its line and field), or
    out of its limits";

/// `durasim conform`'s examples and exit codes: the harness's help ends with them
/// (`crates/conform`), and `durasim conform --help` prints them when the harness is missing.
pub const CONFORM_HELP: &str = "Examples:
  durasim conform scenarios/conform-kills.toml --store sqlite:/tmp/kills.db
  durasim conform scenarios/conform-kills.toml --store postgres --kills random --seed 3
  durasim conform scenarios/zombie-worker.toml --store pgmq
  durasim conform scenarios/zombie-worker.toml --store postgres --bug no_fencing

Exit codes:
  0 every invariant holds on the history the store recorded, and the scenario's [expect] block
    agrees (on real stores only `violations`, `sometimes` and `unfinished = 0` are enforced)
  1 a violation or an unmet expectation
  2 bad input: a malformed or invalid scenario, a scenario that needs a simulator-only feature,
    a bad flag or store, an output durasim may not replace, or no PostgreSQL to start; nothing
    is written";

/// `durasim conform`'s flags, as `durasim conform --help` shows them when the harness (which
/// parses them) is missing. `tests/it/cli.rs` checks that the harness's help names each.
pub const CONFORM_FLAGS: &str = "Arguments:
  <SCENARIO>  The scenario file (scenarios/*.toml)

Options:
      --store <STORE>       sqlite:PATH (a new database file), postgres (a throwaway server),
                            postgres://URL (a new database on that server, dropped afterwards),
                            pgmq, or pgmq:postgres://URL
      --seed <SEED>         Seed (default: the scenario's `seed`)
      --jobs <JOBS>         Override the scenario's arrivals.jobs
      --bug <NAME>          Turn a bug switch on (repeatable): no_fencing, tenantless_keys,
                            naive_dual_write, no_consumer_dedupe, no_idempotency
      --kill <JOB:ATTEMPT:POINT>
                            Force a kill (repeatable), e.g. 0:1:mid_commit
      --kills <MODE>        How processes are killed: cooperative (default: at a seeded point
                            the process announces) or random (SIGKILL at seeded random moments,
                            no handshake: kills land anywhere, a COMMIT in flight included)
      --kill-mean-ms <MS>   With --kills random: the mean time between kills of each worker and
                            relay process (default: from the scenario's crash and relay_crash
                            rates)
      --out <DIR>           Output directory (default: reports/<scenario name>-conform-<store>/)
      --time-limit-s <TIME_LIMIT_S>
                            Give up after this many seconds of wall time (default 120)
      --quiet               Print only the verdict line
  -h, --help                Print help";

const BUGS_HELP: &str = "Example:
  durasim bugs

Exit codes: 0.";

pub const EXPLORE_HELP: &str = "Examples:
  durasim explore scenarios/explore/incident-two-jobs.toml --faults 2
  durasim explore scenarios/explore/zombie.toml --faults 2 --bug no_fencing
  durasim explore scenarios/explore/simultaneous.toml --faults 0 --reorders 1 --bug reprocess_cancelled

Each schedule runs in every order of its simultaneous events with up to --reorders non-default
choices (default 1), pruned at a model state already explored.

Limits: --faults at most 4; --reorders at most 8; --grid at least 10 ms and at most 1000 grid
times over the run; at most 250000 schedules (every combination of up to K fault placements);
above them it refuses.

Exit codes:
  0 no counterexample within the bound (N schedules, M distinct states)
  1 a counterexample: the shortest (fewest faults, then earliest, then fewest reorders) is
    written as DIR/counterexample.toml (with [run] ties when it needs another order of
    simultaneous events), which `durasim run` reproduces
  2 bad input: an unreadable scenario, a bound above the caps, an unknown kind or bug";

pub const SWEEP_HELP: &str = "Examples:
  durasim sweep scenarios/chaos.toml --seeds 0..2000 --bug no_fencing --quiet
  durasim sweep scenarios/chaos.toml --seeds 0..4000000 --shard 0/4 --out reports/shards/0
  durasim sweep scenarios/swarm-everything.toml --swarm --guided --seeds 0..10000 --bug cancel_early
  durasim sweep scenarios/swarm-everything.toml --swarm --seeds 0..10000 --seeds-to-detect 4
  durasim sweep scenarios/swarm-everything.toml --swarm --guided --seeds 0..2000 --corpus reports/g/corpus --out reports/g2

Limits: at most 1000000 seeds per invocation (the range's length, or one shard's share of it);
--shard N at most 100000; --threads at most 4 per core; --corpus at most 4096 files, 64 MiB
together.

Exit codes:
  0 no seed failed and the coverage gate passed (or was deferred to the merge of shards)
  1 a seed violated an invariant, crashed or replayed differently, or the coverage gate failed
  2 bad input: a malformed or invalid file, a bad flag, a warning under --deny-warnings, or an
    output durasim may not replace; nothing is written";

pub const MERGE_HELP: &str = "Example:
  durasim merge reports/shards/0 reports/shards/1 reports/shards/2 reports/shards/3 --out reports/chaos-sweep

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
    /// Fail the coverage gate when some coverage probe (a branch of the model's or the
    /// kernel's decisions) was reached by no seed; the gate lists them
    #[arg(long)]
    pub require_coverage: bool,
    /// Guided exploration: keep the runs that reach a new or rare coverage probe or sometimes
    /// property and mutate them (fault times, crashes, crash points, rates, arrivals); B-A runs,
    /// deterministic for the starting seed A; a failure is written as a scenario `run` reproduces
    #[arg(long)]
    pub guided: bool,
    /// Print seeds-to-detect, uniform vs guided, for every bug switch (or each --bug): N
    /// searches of B-A runs each per switch and mode, stopped at the first failure
    #[arg(long, value_name = "N")]
    pub seeds_to_detect: Option<u64>,
    /// With --guided or --seeds-to-detect: start from the runs of an earlier guided sweep's
    /// corpus (its DIR/corpus, or any directory of scenario files), replayed first and kept
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Print only the verdict and the failures (no progress bar)
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub programs: super::programs::ProgramArgs,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ExploreArgs {
    /// The scenario file (a tiny one: a job or two, a worker or two)
    pub scenario: PathBuf,
    /// Place up to K faults a schedule (0 to 4)
    #[arg(long, value_name = "K")]
    pub faults: u32,
    /// The grid's step in ms (default: the run's length / 8, rounded up to 10 ms)
    #[arg(long, value_name = "MS")]
    pub grid: Option<u64>,
    /// The fault kinds to place, comma-separated: crash, stall, pause, relay_crash,
    /// consumer_crash (default: all)
    #[arg(long, value_name = "LIST")]
    pub kinds: Option<String>,
    /// At most R non-default choices of which simultaneous event runs first, a run (0 to 8;
    /// 0: the kernel's one order)
    #[arg(long, value_name = "R", default_value_t = crate::sweep::explore::DEFAULT_REORDERS)]
    pub reorders: u32,
    /// Turn a bug switch on (repeatable)
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Worker threads (default: all cores); the answer never depends on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Output directory (default reports/<scenario name>-explore/)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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
    /// Fail the coverage gate when some coverage probe was reached by no seed of any shard
    #[arg(long)]
    pub require_coverage: bool,
    /// Print only the verdict and the failures
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Parser, Debug)]
#[command(
    name = "durasim",
    version,
    about = "Deterministic simulator that proves a durable job pipeline does each business effect exactly once",
    after_help = MAIN_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Treat warnings (suspicious but valid scenario settings) as bad input: exit 2
    #[arg(long, global = true)]
    pub deny_warnings: bool,
    /// The kernel events a run may take (default 1000000000; the depth samples it keeps, a
    /// hundredth of it): a scenario whose bound is over is refused, a run that passes it stops
    /// (exit 2, nothing written). The formula: docs/limits.md
    #[arg(long, global = true, value_name = "N")]
    pub max_events: Option<u64>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The scenario file (scenarios/*.toml)
    pub scenario: PathBuf,
    /// Seed (default: the scenario's `seed`)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Override the scenario's arrivals.jobs (at most 10000000)
    #[arg(long, value_name = "N")]
    pub jobs: Option<u64>,
    /// Turn a bug switch on (repeatable; see `durasim bugs`)
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Output directory (default: reports/<scenario name>/); replaced only if durasim wrote it
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write trace.jsonl, one history event per line
    #[arg(long)]
    pub trace: bool,
    /// Skip the per-row CSVs (jobs.csv, attempts.csv) for huge runs; summary and depth stay
    #[arg(long)]
    pub no_rows: bool,
    /// Print only the verdict line
    #[arg(long)]
    pub quiet: bool,
    /// Also write the run as an explicit scenario: the faults that fired as [[script]] entries,
    /// random fault rates 0
    #[arg(long, value_name = "FILE")]
    pub freeze: Option<PathBuf>,
    /// Also draw the charts (DIR/charts/*.png) and the HTML report (DIR/index.html); keeps
    /// faults.csv and reviews.csv so `durasim chart DIR` works later without a trace
    #[arg(long)]
    pub chart: bool,
    /// Trace format; implies --trace. jsonl: trace.jsonl; chrome: trace.json for
    /// ui.perfetto.dev and chrome://tracing
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub trace_format: Option<TraceFormat>,
    #[command(flatten)]
    pub programs: super::programs::ProgramArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one scenario, check its invariants and expectations, write its outputs
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// Re-run the scenario and seed recorded in DIR/summary.json and compare trace hashes
    #[command(after_help = REPLAY_HELP)]
    Replay {
        /// A run's output directory
        dir: PathBuf,
    },
    /// Validate scenario files only
    #[command(after_help = CHECK_HELP)]
    Check {
        /// The scenario files (scenarios/*.toml)
        #[arg(required = true, value_name = "SCENARIO")]
        scenarios: Vec<PathBuf>,
        /// Also print each scenario's cost bound: events, samples, CSV rows, memory
        #[arg(long)]
        verbose: bool,
    },
    /// List the bug switches and the invariant each should break
    #[command(after_help = BUGS_HELP)]
    Bugs,
    /// Run a scenario against a real store (SQLite, PostgreSQL or pgmq) with real processes and
    /// real SIGKILLs, judged by the same checker (runs the durasim-conform program; see
    /// `durasim conform --help` and docs/conform.md)
    #[command(disable_help_flag = true)]
    Conform {
        /// SCENARIO --store sqlite:PATH|postgres[://URL]|pgmq [--seed N] [--bug NAME] [--out DIR]
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Judge a history file (a `--trace` file, or one recorded outside the simulator; see
    /// docs/history-format.md) with the same checker, and print the same verdict block as `run`
    #[command(after_help = VERIFY_HELP)]
    Verify {
        /// A history file: a header line with the configuration, then one record a line
        file: PathBuf,
        /// Also write an output directory that `durasim chart` reads: summary.json, a copy of the
        /// history (history.jsonl) and the CSVs; replaced only if durasim wrote it
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Expected violations, counts and `sometimes` properties (a TOML file with the keys of a
        /// scenario's `[expect]` block at its top level): exit 0 when the history shows exactly
        /// what it says, 1 when not
        #[arg(long, value_name = "FILE")]
        expect: Option<PathBuf>,
    },
    /// Run many seeds in parallel, group failures, gate on coverage, shrink the first failures
    #[command(after_help = SWEEP_HELP)]
    Sweep(SweepArgs),
    /// Merge the outputs of sharded sweeps into what one unsharded sweep writes
    #[command(after_help = MERGE_HELP)]
    Merge(MergeArgs),
    /// Bounded-exhaustive search: every placement of up to K faults on a time grid of a tiny
    /// scenario; proves it within the bound or writes the shortest counterexample
    #[command(after_help = EXPLORE_HELP)]
    Explore(ExploreArgs),
    /// durasim's own worker, relay or consumer as a program over stdin and stdout
    /// (docs/worker-protocol.md): `--worker "durasim program"` runs the Rust reference worker
    /// as an external process
    #[command(hide = true)]
    Program,
    /// Draw the charts and the HTML report of a run's (or a sweep's) output directory
    #[command(after_help = CHART_HELP)]
    Chart {
        /// A run's output directory (with summary.json) or a sweep's (with sweep.json)
        dir: PathBuf,
        /// Output directory (default: DIR itself, which gains charts/ and index.html); replaced only if durasim wrote it
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Image format (the HTML report embeds the PNG when both are drawn)
        #[arg(long, value_enum, default_value = "png")]
        format: ChartFormat,
    },
}

/// The format `run --trace-format` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// trace.jsonl: one history record a line (the same as --trace)
    Jsonl,
    /// trace.json: Chrome trace-event format, for ui.perfetto.dev and chrome://tracing
    Chrome,
}

/// `chart --format`: the report's image formats as a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ChartFormat(pub Format);

impl clap::ValueEnum for ChartFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ChartFormat(Format::Png),
            ChartFormat(Format::Svg),
            ChartFormat(Format::Both),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.0.name());
        Some(match self.0 {
            Format::Both => value.help("Both PNG and SVG"),
            _ => value,
        })
    }
}

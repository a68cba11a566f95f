//! The command line: `run`, `replay`, `check`, `bugs`, `verify`, and the sweep and chart
//! commands (their own modules).
//!
//! Owns: parsing arguments (clap), reading scenario files, writing output directories, printing
//! the human summary, and mapping outcomes to exit codes (0 holds, 1 violated or unmet, 2 bad
//! input). The only module besides `report::summary` that touches the file system.
//! Does not: simulate or judge anything.

use crate::history::{to_json_line, TraceHash};
use crate::report::chrome_trace::TraceFormat;
use crate::report::output_dir::{Kind, OutputDir, OutputError};
use crate::report::summary::{summarize, write_trace, ReplayInfo, RunIdentity, Summary};
use crate::run::{check_expectations, run_once, RunReport, RunRequest};
use crate::scenario::Scenario;
use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

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

Exit codes:
  0 every invariant holds on the recorded history
  1 an invariant is violated (the first violation and its evidence are printed)
  2 bad input: not a history file (named with its line and field), or out of its limits";

const BUGS_HELP: &str = "Example:
  durasim bugs

Exit codes: 0.";

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
}

/// `--deny-warnings`, for every scenario file this process reads.
static DENY_WARNINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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
    pub trace_format: Option<crate::report::chrome_trace::TraceFormat>,
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
    },
    /// Run many seeds in parallel, group failures, gate on coverage, shrink the first failures
    #[command(after_help = crate::sweep::SWEEP_HELP)]
    Sweep(crate::sweep::SweepArgs),
    /// Merge the outputs of sharded sweeps into what one unsharded sweep writes
    #[command(after_help = crate::sweep::MERGE_HELP)]
    Merge(crate::sweep::MergeArgs),
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
        format: crate::report::chart::Format,
    },
}

/// How a command ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    Ok,
    Violated,
}

/// A problem with the user's input: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(BadInput(msg.into()))
}

/// An output directory that may not be replaced is bad input (exit 2, like every error).
pub fn output_error(e: OutputError) -> anyhow::Error {
    match e {
        OutputError::Refused(m) => bad(m),
        io => anyhow!(io),
    }
}

/// `reports/<name><suffix>`: the default output directory. Scenario names are validated slugs
/// (see `scenario::validate_name`), so this never leaves `reports/`; checked again here because
/// a directory outside it must never be the default.
pub fn default_out(name: &str, suffix: &str) -> anyhow::Result<PathBuf> {
    crate::scenario::validate_name(name).map_err(|m| {
        bad(format!(
            "scenario name {}: {m}; cannot be the default output directory",
            crate::scenario::clip(name)
        ))
    })?;
    Ok(PathBuf::from("reports").join(format!("{name}{suffix}")))
}

pub fn exit_code(result: &anyhow::Result<Outcome>) -> i32 {
    match result {
        Ok(Outcome::Ok) => 0,
        Ok(Outcome::Violated) => 1,
        Err(_) => 2,
    }
}

pub fn main_with(cli: Cli) -> anyhow::Result<Outcome> {
    DENY_WARNINGS.store(cli.deny_warnings, std::sync::atomic::Ordering::Relaxed);
    match cli.command {
        Command::Run(args) => cmd_run(&args),
        Command::Replay { dir } => cmd_replay(&dir),
        Command::Check { scenarios } => cmd_check(&scenarios),
        Command::Sweep(args) => crate::sweep::cmd_sweep(&args),
        Command::Merge(args) => crate::sweep::cmd_merge(&args),
        Command::Chart { dir, out, format } => cmd_chart(&dir, out.as_deref(), format),
        Command::Conform { args } => cmd_conform(&args),
        Command::Verify { file } => cmd_verify(&file),
        Command::Bugs => {
            println!("{:<22} {:<26} defect", "switch", "caught by");
            for b in &crate::bugs::ALL {
                println!("{:<22} {:<26} {}", b.name, b.caught_by, b.defect);
            }
            Ok(Outcome::Ok)
        }
    }
}

/// The conformance harness lives in its own program (its database clients stay out of this
/// library): `durasim conform` runs `durasim-conform`, found next to this executable, in place of
/// this process, so its output and exit code are the command's.
fn cmd_conform(args: &[String]) -> anyhow::Result<Outcome> {
    let exe = std::env::current_exe().context("cannot find the durasim executable")?;
    let sibling = exe.with_file_name(format!("durasim-conform{}", std::env::consts::EXE_SUFFIX));
    if !sibling.exists() {
        return Err(bad(format!(
            "durasim conform needs the durasim-conform program next to durasim ({} is missing); build it with `cargo build --release` (the workspace builds both) or `cargo build --release -p durasim-conform`",
            sibling.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = std::process::Command::new(&sibling).args(args).exec();
        Err(anyhow!("cannot run {}: {err}", sibling.display()))
    }
    #[cfg(not(unix))]
    {
        let _ = args;
        Err(bad(
            "durasim conform needs Unix (it kills processes with SIGKILL)",
        ))
    }
}

/// Reads and validates a scenario file; every failure is bad input.
pub fn load_scenario(path: &Path) -> anyhow::Result<(Scenario, String)> {
    let text = crate::limits::read_capped(path, crate::limits::MAX_SCENARIO_BYTES, "scenario file")
        .map_err(bad)?;
    let file = path.display().to_string();
    let scenario = Scenario::parse(&file, &text).map_err(|e| bad(e.to_string()))?;
    // Printed before any output directory exists (a closed stderr ends the process).
    let warnings = crate::scenario_warnings::warnings(&scenario, &file, &text);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if !warnings.is_empty() && DENY_WARNINGS.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(bad(format!(
            "{file}: {} warning{} and --deny-warnings is set",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        )));
    }
    Ok((scenario, text))
}

/// Applies `--bug` names on top of the scenario's `[bugs]`.
pub fn apply_bug_flags(bugs: &mut crate::scenario::Bugs, names: &[String]) -> anyhow::Result<()> {
    for name in names {
        if !crate::bugs::enable(bugs, name) {
            return Err(bad(format!(
                "--bug {name:?}: no such bug switch; allowed: {}",
                crate::bugs::names().join(", ")
            )));
        }
    }
    Ok(())
}

fn reproduce_command(file: &Path, seed: u64, jobs: Option<u64>, flags: &[String]) -> String {
    let mut cmd = format!("durasim run {} --seed {seed}", file.display());
    if let Some(j) = jobs {
        cmd.push_str(&format!(" --jobs {j}"));
    }
    for b in flags {
        cmd.push_str(&format!(" --bug {b}"));
    }
    cmd
}

fn cmd_run(args: &RunArgs) -> anyhow::Result<Outcome> {
    let (scenario, text) = load_scenario(&args.scenario)?;
    let mut request = RunRequest::for_scenario(&scenario);
    apply_bug_flags(&mut request.bugs, &args.bugs)?;
    if let Some(seed) = args.seed {
        request.seed = seed;
    }
    if let Some(jobs) = args.jobs {
        crate::limits::check_jobs("--jobs", jobs).map_err(bad)?;
        request.jobs = Some(jobs);
    }
    request.keep_trace = args.trace || args.freeze.is_some();
    request.keep_trace |= needs_history(args);
    request.progress = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let out_path = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&scenario.name, "")?,
    };
    if let Some(f) = &args.freeze {
        crate::sweep::check_freeze_target(f)?;
    }
    let out = OutputDir::create(&out_path, Kind::Run).map_err(output_error)?;
    let attempt_rows: Option<Box<dyn std::io::Write>> = if args.no_rows {
        None
    } else {
        let f = std::fs::File::create(out.file("attempts.csv"))
            .context("cannot create attempts.csv")?;
        Some(Box::new(std::io::BufWriter::new(f)))
    };
    let mut report = run_once(&scenario, &request, attempt_rows);
    let mut frozen = None;
    if let Some(path) = &args.freeze {
        frozen = Some(crate::sweep::freeze_run(
            &scenario,
            &request,
            &report,
            path,
            &args.scenario,
        )?);
        if !args.trace && !needs_history(args) {
            report.trace = None;
        }
    }
    report
        .metrics
        .finish_rows()
        .map_err(|e| anyhow!("cannot write attempts.csv: {e}"))?;
    let unmet = check_expectations(&scenario, &report);
    let reproduce = reproduce_command(&args.scenario, request.seed, request.jobs, &args.bugs);
    let file = args.scenario.display().to_string();
    let identity = RunIdentity {
        scenario_name: &scenario.name,
        scenario_file: &file,
        scenario_text: &text,
        jobs_override: request.jobs,
        bugs: crate::bugs::enabled(&request.bugs),
        seed: request.seed,
        reproduce: reproduce.clone(),
    };
    let summary = summarize(&report, &unmet, identity);
    // The history for charts and the Chrome trace; trace.jsonl only when asked for.
    let wants_jsonl = args
        .trace_format
        .map_or(args.trace, |f| f == TraceFormat::Jsonl);
    let history = if wants_jsonl {
        None
    } else {
        report.trace.take()
    };
    write_outputs(&out, &report, &summary, &text, args.no_rows)?;
    write_extra_outputs(&out, &report, history.as_deref(), &summary, args)?;
    let written = out.commit().map_err(output_error)?;
    // Nothing is printed on stdout before the outputs are in place: a reader that goes away
    // (`| head`) ends the process by SIGPIPE, and must find no temporary directory behind.
    if let Some(line) = frozen {
        println!("{line}");
    }
    print_summary(&summary, &report, &written, args.quiet);
    if args.chart && !args.quiet {
        println!("  report     {}", written.join("index.html").display());
    }
    let ok = unmet.is_empty();
    if !ok {
        println!("reproduce: {reproduce}");
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// `--chart` and `--trace-format chrome` need the run's history in memory.
fn needs_history(args: &RunArgs) -> bool {
    args.chart || args.trace_format.is_some()
}

/// Writes what `--trace-format chrome` and `--chart` ask for into the run's directory.
fn write_extra_outputs(
    out: &OutputDir,
    report: &RunReport,
    history: Option<&[crate::history::Record]>,
    summary: &Summary,
    args: &RunArgs,
) -> anyhow::Result<()> {
    let history = history.or(report.trace.as_deref());
    if args.trace_format == Some(TraceFormat::Chrome) {
        let trace = history.context("no history was kept for the Chrome trace")?;
        crate::report::chrome_trace::write_chrome_trace(
            &out.file("trace.json"),
            trace,
            &report.outcome.names,
            &summary.scenario,
            summary.seed,
            &summary.trace_hash,
        )
        .context("cannot write trace.json")?;
    }
    if args.chart {
        if let Some(trace) = history {
            crate::report::chart::data::write_extracts(out.path(), trace)?;
        }
        crate::report::chart::chart_dir(
            out.path(),
            out.path(),
            crate::report::chart::Format::Png,
            history,
        )?;
    }
    Ok(())
}

/// `durasim chart DIR`: the charts and the report of a finished run or sweep.
fn cmd_chart(
    dir: &Path,
    out: Option<&Path>,
    format: crate::report::chart::Format,
) -> anyhow::Result<Outcome> {
    if !dir.is_dir() {
        return Err(bad(format!("{}: not a directory", dir.display())));
    }
    if !dir.join("summary.json").is_file() && !dir.join("sweep.json").is_file() {
        return Err(bad(format!(
            "{}: neither summary.json (a run) nor sweep.json (a sweep) is there",
            dir.display()
        )));
    }
    let same = |o: &Path| {
        o == dir || matches!((o.canonicalize(), dir.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    // In place: a new copy of DIR (hard links) with the charts added, swapped in when complete.
    // Elsewhere: a new directory of its own.
    let staged = match out {
        Some(o) if !same(o) => OutputDir::create(o, Kind::Chart),
        _ => OutputDir::extend(dir, |f| f == "index.html" || f.starts_with("charts/")),
    };
    let staged = staged.map_err(|e| match e {
        OutputError::Refused(m) if out.is_none() => bad(format!(
            "{m}\n(`durasim chart DIR` adds charts/ and index.html to DIR only if durasim wrote DIR; \
             --out NEWDIR writes them elsewhere)"
        )),
        e => output_error(e),
    })?;
    let report = crate::report::chart::chart_dir(dir, staged.path(), format, None)
        .map_err(|e| bad(format!("{e:#}")))?;
    let temp = staged.path().to_path_buf();
    let written = staged.commit().map_err(output_error)?;
    let moved = |p: &Path| written.join(p.strip_prefix(&temp).unwrap_or(p));
    for c in &report.charts {
        for f in &c.files {
            println!("chart   {}", moved(f).display());
        }
    }
    for m in &report.missing {
        println!("missing {m}");
    }
    println!("report  {}", moved(&report.html).display());
    Ok(Outcome::Ok)
}

pub fn write_outputs(
    out: &OutputDir,
    report: &RunReport,
    summary: &Summary,
    text: &str,
    no_rows: bool,
) -> anyhow::Result<()> {
    let names = &report.outcome.names;
    std::fs::write(
        out.file("summary.json"),
        serde_json::to_string_pretty(summary)? + "\n",
    )
    .context("cannot write summary.json")?;
    std::fs::write(out.file("scenario.toml"), text).context("cannot write scenario.toml")?;
    let depth = std::fs::File::create(out.file("depth.csv")).context("cannot create depth.csv")?;
    report
        .metrics
        .write_depth_csv(std::io::BufWriter::new(depth))
        .context("cannot write depth.csv")?;
    let outbox =
        std::fs::File::create(out.file("outbox.csv")).context("cannot create outbox.csv")?;
    report
        .metrics
        .write_outbox_csv(std::io::BufWriter::new(outbox))
        .context("cannot write outbox.csv")?;
    let retries =
        std::fs::File::create(out.file("retries.csv")).context("cannot create retries.csv")?;
    report
        .metrics
        .write_retries_csv(std::io::BufWriter::new(retries))
        .context("cannot write retries.csv")?;
    let tenants =
        std::fs::File::create(out.file("tenants.csv")).context("cannot create tenants.csv")?;
    report
        .metrics
        .write_tenants_csv(std::io::BufWriter::new(tenants), names)
        .context("cannot write tenants.csv")?;
    if !no_rows {
        let jobs = std::fs::File::create(out.file("jobs.csv")).context("cannot create jobs.csv")?;
        report
            .metrics
            .write_jobs_csv(std::io::BufWriter::new(jobs), names)
            .context("cannot write jobs.csv")?;
    }
    if let Some(trace) = &report.trace {
        write_trace(&out.file("trace.jsonl"), trace, names).context("cannot write trace.jsonl")?;
    }
    Ok(())
}

pub fn print_summary(s: &Summary, report: &RunReport, dir: &Path, quiet: bool) {
    let held = s.invariants.iter().filter(|i| i.holds).count();
    let verdict = if s.expectations_met { "PASS" } else { "FAIL" };
    if quiet {
        println!(
            "{verdict} {} seed {} trace {} ({held}/{} invariants hold)",
            s.scenario,
            s.seed,
            s.trace_hash,
            s.invariants.len()
        );
        return;
    }
    let m = &s.metrics;
    println!(
        "{verdict}  {}  seed {}  trace {}",
        s.scenario, s.seed, s.trace_hash
    );
    println!(
        "  run        {} history events, {} ms virtual, {:.3} s wall ({:.0} events/s){}",
        s.events,
        s.virtual_time_ms,
        s.wall_s,
        s.events_per_wall_s,
        if s.quiescent { "" } else { ", TIME LIMIT HIT" }
    );
    let j = &s.jobs;
    println!(
        "  jobs       enqueued {}  acked {}  dead-lettered {}  cancelled {}  unfinished {}",
        j.enqueued, j.acked, j.dead_lettered, j.cancelled, j.unfinished
    );
    let e = &s.effects;
    println!(
        "  effects    extract calls {}  results {}  deduped commits {}  outbox events {}  applied {}  duplicates absorbed {}",
        e.extract_calls, e.results_committed, e.deduped_commits, e.outbox_events, e.consumer_applied, e.consumer_duplicates
    );
    let l = &s.leases;
    println!(
        "  leases     granted {}  expired {}  heartbeats {}  stale rejections {}  crashes {}/{} (worker/relay)",
        l.granted, l.expired, l.heartbeats, l.stale_rejections, s.crashes.worker, s.crashes.relay
    );
    println!(
        "  latency    queueWaitMs p50 {} p95 {} p99 {} | inferenceMs p50 {} | reviewWaitMs p50 {} | depth {}..{}",
        m.queue_wait_ms.p50, m.queue_wait_ms.p95, m.queue_wait_ms.p99, m.inference_ms.p50, m.review_wait_ms.p50, m.queue_depth.min, m.queue_depth.max
    );
    print_verdicts(&s.invariants, "ms");
    if s.expectations_met {
        println!("  expect     met");
    } else {
        for u in &s.unmet_expectations {
            println!(
                "  expect     {}: expected {}, got {}",
                u.field, u.expected, u.actual
            );
        }
    }
    let _ = report;
    println!("  outputs    {}", dir.display());
}

/// The verdict block: how many invariants hold, then each violated one with its first violation
/// and the records that prove it. `run` and `verify` print the same block.
pub fn print_verdicts(invariants: &[crate::report::summary::InvariantSummary], unit: &str) {
    let held = invariants.iter().filter(|i| i.holds).count();
    println!("  invariants {held}/{} hold", invariants.len());
    for i in invariants.iter().filter(|i| !i.holds) {
        let f = i
            .first_violation
            .as_ref()
            .expect("a violated invariant has a first violation");
        println!(
            "    VIOLATED {} ({} times); first at {} {unit}{}{}: {}",
            i.name,
            i.violations,
            f.at_ms,
            f.job.map(|j| format!(", job-{j}")).unwrap_or_default(),
            f.key
                .as_ref()
                .map(|k| format!(", key {k}"))
                .unwrap_or_default(),
            f.message
        );
        for ev in &f.evidence {
            println!("      evidence: {ev}");
        }
    }
}

/// `durasim verify FILE`: reads a history (streaming, bounded), judges it with the checker `run`
/// uses, prints the verdict block. Exit 0 when every invariant holds, 1 on a violation, 2 when
/// the file cannot be read as a history.
fn cmd_verify(path: &Path) -> anyhow::Result<Outcome> {
    use crate::history::reader::{HistoryReader, Limits};
    let mut reader =
        HistoryReader::open(path, Limits::default()).map_err(|e| bad(e.to_string()))?;
    let mut checker = crate::check::Checker::new();
    let mut hash = TraceHash::default();
    let (mut end, mut quiescent) = (0, false);
    while let Some(r) = reader.next_record().map_err(|e| bad(e.to_string()))? {
        hash.add(&r);
        checker.observe_record(&r);
        end = r.at;
        if let crate::history::Event::RunEnded { quiescent: q } = r.event {
            quiescent = q;
        }
    }
    let report = checker.finish();
    let config = reader
        .config()
        .expect("a history read to its end has a header")
        .clone();
    let unit = config.time_unit.suffix();
    let mut invariants = crate::report::summary::invariant_summaries(&report, reader.names());
    for f in invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.evidence.iter_mut().for_each(|e| reader.relabel(e));
    }
    let verdict = if report.holds() { "PASS" } else { "FAIL" };
    println!(
        "{verdict}  {}  trace {}",
        path.display(),
        TraceHash::hex(hash.finish())
    );
    println!(
        "  history    {} records, {end} {unit} recorded{}{}",
        hash.records(),
        config
            .seed
            .map(|s| format!(", seed {s}"))
            .unwrap_or_default(),
        if quiescent { "" } else { ", NOT QUIESCENT" }
    );
    print_verdicts(&invariants, unit);
    for i in &invariants {
        let job = i.first_violation.as_ref().and_then(|f| f.job);
        if let Some(label) = job.and_then(|j| reader.job_label(crate::ids::JobId(j))) {
            println!(
                "  ids        job-{} is {label} in the file",
                job.unwrap_or(0)
            );
        }
    }
    Ok(if report.holds() {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

/// What `replay` reads back from `DIR/summary.json`, checked as strictly as the flags it stands
/// for: the scenario it runs is `DIR/scenario.toml`, and only if its digest is the recorded one.
fn replay_request(dir: &Path) -> anyhow::Result<(PathBuf, Scenario, RunRequest, ReplayInfo)> {
    use crate::limits::{read_capped, MAX_SUMMARY_BYTES};
    let summary_path = dir.join("summary.json");
    let text = read_capped(&summary_path, MAX_SUMMARY_BYTES, "summary.json").map_err(bad)?;
    let info: ReplayInfo = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "{}: not a durasim summary ({})",
            summary_path.display(),
            crate::messages::plain(&e.to_string())
        ))
    })?;
    let field =
        |name: &str, msg: String| bad(format!("{}: field `{name}`: {msg}", summary_path.display()));
    if info.trace_hash.len() != 16 || !info.trace_hash.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(field(
            "traceHash",
            format!(
                "{} is not a trace hash (16 hex digits)",
                crate::scenario::clip(&info.trace_hash)
            ),
        ));
    }
    if let Some(j) = info.jobs_override {
        crate::limits::check_jobs("jobsOverride", j).map_err(|m| field("jobsOverride", m))?;
    }
    let scenario_path = dir.join("scenario.toml");
    let (scenario, scenario_text) = load_scenario(&scenario_path)?;
    let digest = blake3::hash(scenario_text.as_bytes()).to_hex().to_string();
    if digest != info.scenario_digest {
        return Err(bad(format!(
            "{}: does not match the scenarioDigest recorded in {} (recorded {}, this file {}): \
             the directory was edited after the run, so a replay would not re-run what was recorded",
            scenario_path.display(),
            summary_path.display(),
            crate::scenario::clip(&info.scenario_digest),
            &digest[..16]
        )));
    }
    let mut request = RunRequest::for_scenario(&scenario);
    request.bugs = crate::scenario::Bugs::default();
    apply_bug_flags(&mut request.bugs, &info.bugs)?;
    request.seed = info.seed;
    request.jobs = info.jobs_override;
    Ok((scenario_path, scenario, request, info))
}

fn cmd_replay(dir: &Path) -> anyhow::Result<Outcome> {
    let (scenario_path, scenario, mut request, info) = replay_request(dir)?;
    let recorded_trace = dir.join("trace.jsonl");
    request.keep_trace = recorded_trace.is_file();
    let report = run_once(&scenario, &request, None);
    let hash = TraceHash::hex(report.outcome.trace_hash);
    let shown = scenario_path.display();
    if hash == info.trace_hash {
        println!(
            "identical: {shown} seed {} trace {hash} ({} events)",
            info.seed, report.outcome.records
        );
        return Ok(Outcome::Ok);
    }
    println!(
        "DIVERGED: {shown} seed {}: recorded trace {}, replay {hash}",
        info.seed, info.trace_hash
    );
    let Some(trace) = &report.trace else {
        println!("(the original run has no trace.jsonl; re-run it with --trace to see the first diverging event)");
        return Ok(Outcome::Violated);
    };
    // The recorded trace is read a line at a time: it can be far larger than memory.
    let file = crate::limits::open_regular(&recorded_trace, "trace.jsonl").map_err(bad)?;
    let mut reader = std::io::BufReader::new(file);
    let mut old = String::new();
    let names = &report.outcome.names;
    for (i, r) in trace.iter().enumerate() {
        let now = to_json_line(r, names);
        let more = crate::limits::read_line_capped(&mut reader, &mut old, &recorded_trace, i + 1)
            .map_err(bad)?;
        if more && old == now {
            continue;
        }
        println!("first diverging event: #{i}");
        let old = if more {
            crate::messages::clip_line(&old)
        } else {
            "<end of recorded trace>".to_string()
        };
        println!("  recorded: {old}");
        println!("  replay:   {now}");
        return Ok(Outcome::Violated);
    }
    if crate::limits::read_line_capped(&mut reader, &mut old, &recorded_trace, trace.len() + 1)
        .map_err(bad)?
    {
        println!(
            "first diverging event: #{}\n  recorded: {}\n  replay:   <end of replayed trace>",
            trace.len(),
            crate::messages::clip_line(&old)
        );
    }
    Ok(Outcome::Violated)
}

fn cmd_check(paths: &[PathBuf]) -> anyhow::Result<Outcome> {
    let mut errors = Vec::new();
    for p in paths {
        match load_scenario(p) {
            Ok((s, _)) => println!("ok      {} ({})", p.display(), s.name),
            Err(e) => {
                println!("invalid {e}");
                errors.push(e.to_string());
            }
        }
    }
    if errors.is_empty() {
        Ok(Outcome::Ok)
    } else {
        Err(bad(format!(
            "{} of {} scenario files are invalid",
            errors.len(),
            paths.len()
        )))
    }
}

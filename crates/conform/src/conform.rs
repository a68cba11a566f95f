//! `durasim conform SCENARIO --store ...`: one run end to end against a real store.
//!
//! Owns: the command line, what a real run supports (and the clear refusal of what it does
//! not), setting up the store (schema, pgmq's install, the run's clock), running the harness,
//! judging the store's history with the library's checker, writing the same outputs as
//! `durasim run` plus `history.jsonl` and `conform.json` (kills, throughput, and the same
//! scenario simulated, side by side), and the verdict's exit code.
//! Does not: judge anything itself.

use crate::harness::{Harness, RunFacts};
use crate::plan;
use crate::spec::Spec;
use crate::store::{Kind, Store};
use anyhow::{anyhow, Context, Result};
use clap::Parser;
use durasim::check::Checker;
use durasim::cli::{load_scenario, output_error, BadInput, Outcome};
use durasim::history::reader::{HistoryReader, Limits};
use durasim::history::TraceHash;
use durasim::observe::counters::Counter;
use durasim::observe::metrics::Metrics;
use durasim::report::output_dir::{Kind as OutKind, OutputDir};
use durasim::report::summary::{summarize, RunIdentity};
use durasim::run::{check_expectations, run_once, Observers, RunReport, RunRequest};
use durasim::scenario::{Expect, Scenario};
use durasim::sim::RunOutcome;
use serde_json::json;
use std::path::PathBuf;

const CONFORM_HELP: &str = "Examples:
  durasim conform scenarios/conform-kills.toml --store sqlite:/tmp/kills.db
  durasim conform scenarios/zombie-worker.toml --store pgmq
  durasim conform scenarios/chaos.toml --store postgres --seed 3 --bug no_fencing

Exit codes:
  0 every invariant holds on the history the store recorded, and the scenario's [expect] block
    agrees (on real stores only `violations`, `sometimes` and `unfinished = 0` are enforced)
  1 a violation or an unmet expectation
  2 bad input: a malformed or invalid scenario, a scenario that needs a simulator-only feature,
    a bad flag or store, an output durasim may not replace, or no PostgreSQL to start; nothing
    is written";

#[derive(Parser, Debug, Clone)]
#[command(
    name = "durasim conform",
    about = "Run a scenario against a real store (SQLite, PostgreSQL or pgmq) with real processes and real SIGKILLs, and judge the store's history with durasim's checker",
    after_help = CONFORM_HELP
)]
pub struct ConformArgs {
    /// The scenario file (scenarios/*.toml)
    pub scenario: PathBuf,
    /// sqlite:PATH (a new database file), postgres (a throwaway server), postgres://URL (a new
    /// database on that server, dropped afterwards), pgmq, or pgmq:postgres://URL
    #[arg(long)]
    pub store: String,
    /// Seed (default: the scenario's `seed`)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the scenario's arrivals.jobs
    #[arg(long)]
    pub jobs: Option<u64>,
    /// Turn a bug switch on (repeatable): no_fencing, tenantless_keys, naive_dual_write,
    /// no_consumer_dedupe, no_idempotency
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Force a kill: JOB:ATTEMPT:POINT (repeatable), e.g. 0:1:mid_commit
    #[arg(long = "kill", value_name = "JOB:ATTEMPT:POINT")]
    pub kills: Vec<String>,
    /// Output directory (default: reports/<scenario name>-conform-<store>/)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Give up after this many seconds of wall time (default 120)
    #[arg(long, default_value_t = 120)]
    pub time_limit_s: u64,
    /// Print only the verdict line
    #[arg(long)]
    pub quiet: bool,
}

/// The bug switches implemented against real code.
pub const REAL_BUGS: [&str; 5] = [
    "no_fencing",
    "tenantless_keys",
    "naive_dual_write",
    "no_consumer_dedupe",
    "no_idempotency",
];

fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(BadInput(msg.into()))
}

/// Where the run's data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreArg {
    Sqlite(PathBuf),
    Postgres(Option<String>),
    Pgmq(Option<String>),
}

impl StoreArg {
    pub fn parse(s: &str) -> Result<StoreArg> {
        let url = |u: &str| u.starts_with("postgres://") || u.starts_with("postgresql://");
        Ok(match s {
            "postgres" | "postgresql" => StoreArg::Postgres(None),
            "pgmq" => StoreArg::Pgmq(None),
            u if url(u) => StoreArg::Postgres(Some(u.to_string())),
            _ => match s.split_once(':') {
                Some(("sqlite", path)) if !path.is_empty() => StoreArg::Sqlite(PathBuf::from(path)),
                Some(("pgmq", u)) if url(u) => StoreArg::Pgmq(Some(u.to_string())),
                _ => return Err(bad(format!("--store {}: allowed: sqlite:PATH, postgres, postgres://URL, pgmq, pgmq:postgres://URL", durasim::scenario::clip(s)))),
            },
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            StoreArg::Sqlite(_) => Kind::Sqlite,
            StoreArg::Postgres(_) => Kind::Postgres,
            StoreArg::Pgmq(_) => Kind::Pgmq,
        }
    }
}

/// What a real run cannot do, with the reason; `None` when the scenario runs.
pub fn unsupported(s: &Scenario) -> Option<String> {
    let why = if s.dlq.capacity.is_some() || s.dlq.reprocess_limit.is_some() {
        "[dlq] capacity / reprocess_limit: the real stores keep every DLQ entry and do not rate-limit reprocess (beyond the chapter; simulated only)"
    } else if s.outbox.retention_ms.is_some() {
        "[outbox] retention_ms: the real outbox keeps published rows (retention is simulated only)"
    } else if s.consumer.dedupe_window_ms.is_some() {
        "[consumer] dedupe_window_ms: the real consumer remembers every event id (the window is simulated only)"
    } else if s
        .script
        .iter()
        .any(|e| e.fault == durasim::scenario::FaultKind::MutatePayload)
    {
        "mutate_payload: a real queue row is not rewritten under a running job here (simulated only)"
    } else if s.arrivals.jobs + s.burst_jobs() + s.enqueue.len() as u64 > 20_000 {
        "more than 20,000 jobs: a real run takes real time (bench-size workloads are for the simulator)"
    } else {
        return None;
    };
    Some(why.to_string())
}

fn with_dbname(url: &str, db: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let host_end = head[scheme_end..]
        .find('/')
        .map_or(head.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &head[..host_end])
}

/// Entry point: `args` are the words after `conform` (or the hidden `__worker` / `__relay`
/// subcommands the harness uses for its processes).
pub fn main_with(args: Vec<String>) -> Result<Outcome> {
    match args.first().map(String::as_str) {
        Some("__worker") | Some("__relay") => {
            let spec_path = args.get(1).ok_or_else(|| anyhow!("missing spec"))?;
            let slot: u32 = args
                .get(2)
                .ok_or_else(|| anyhow!("missing slot"))?
                .parse()?;
            let generation: u32 = args
                .get(3)
                .ok_or_else(|| anyhow!("missing generation"))?
                .parse()?;
            // Die with the harness, whatever ends it (an error, a signal, a SIGKILL): a worker
            // left polling a store nobody judges would be a leak.
            // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            if std::os::unix::process::parent_id() == 1 {
                return Ok(Outcome::Ok); // the harness is already gone
            }
            let spec: Spec = serde_json::from_str(&std::fs::read_to_string(spec_path)?)?;
            if args[0] == "__worker" {
                crate::child::worker(&spec, slot)?;
            } else {
                crate::child::relay(&spec, slot, generation)?;
            }
            Ok(Outcome::Ok)
        }
        _ => {
            let argv = std::iter::once("durasim conform".to_string()).chain(args);
            let parsed = match ConformArgs::try_parse_from(argv) {
                Ok(a) => a,
                Err(e) if !e.use_stderr() => {
                    let _ = e.print();
                    return Ok(Outcome::Ok);
                }
                Err(e) => return Err(bad(e.to_string().trim_end().to_string())),
            };
            conform(&parsed)
        }
    }
}

/// A PostgreSQL server for one run: its URL and, if we started it, the server itself.
struct Pg {
    _server: Option<crate::server::Server>,
    admin: String,
    db: String,
}

impl Pg {
    fn open(url: Option<&str>) -> Result<Pg> {
        let (server, admin) = match url {
            Some(u) => (None, u.to_string()),
            None => {
                let s = crate::server::Server::start()?;
                let u = format!(
                    "postgres://postgres@localhost/postgres?host={}",
                    s.dir().display()
                );
                (Some(s), u)
            }
        };
        let db = format!(
            "durasim_conform_{}_{}",
            std::process::id(),
            crate::db::mono_us() % 1_000_000_000
        );
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .with_context(|| format!("cannot connect to PostgreSQL at {admin}"))?;
        c.batch_execute(&format!("CREATE DATABASE {db}"))?;
        Ok(Pg {
            _server: server,
            admin,
            db,
        })
    }

    fn url(&self) -> String {
        with_dbname(&self.admin, &self.db)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db));
        }
    }
}

/// Installs pgmq from the SQL the `pgmq` crate embeds, and creates the pipeline's queue.
fn install_pgmq(url: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        // Our own pool: pgmq's URL parser wants a TCP host, a port and a password; sqlx's
        // understands `?host=/socket/dir`.
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await
            .map_err(|e| anyhow!("pgmq: cannot connect: {e}"))?;
        let q = pgmq::PGMQueueExt::new_with_pool(pool).await;
        q.install_sql_from_embedded()
            .await
            .map_err(|e| anyhow!("pgmq: install failed: {e}"))?;
        Ok::<(), anyhow::Error>(())
    })
}

fn prepare(store: &mut Store, kind: Kind) -> Result<()> {
    if kind == Kind::Sqlite {
        store.db.batch(&crate::schema::sqlite())
    } else {
        store.db.batch(&crate::schema::postgres())?;
        if kind == Kind::Pgmq {
            store.db.batch(&format!(
                "SELECT pgmq.create('{}')",
                crate::store::PGMQ_QUEUE
            ))?;
        }
        store.db.batch("INSERT INTO run VALUES (clock_timestamp())")
    }
}

pub fn conform(args: &ConformArgs) -> Result<Outcome> {
    let (mut scenario, text) = load_scenario(&args.scenario)?;
    let store_arg = StoreArg::parse(&args.store)?;
    let kind = store_arg.kind();
    durasim::cli::apply_bug_flags(&mut scenario.bugs, &args.bugs)?;
    let bugs: Vec<&'static str> = durasim::bugs::enabled(&scenario.bugs);
    if let Some(b) = bugs.iter().find(|b| !REAL_BUGS.contains(b)) {
        return Err(bad(format!(
            "--bug {b}: not implemented against real stores; allowed: {}",
            REAL_BUGS.join(", ")
        )));
    }
    if let Some(why) = unsupported(&scenario) {
        return Err(bad(format!(
            "{}: conform cannot run this scenario: {why}",
            args.scenario.display()
        )));
    }
    for k in &args.kills {
        plan::ForcedKill::parse(k).map_err(bad)?;
    }
    if let Some(j) = args.jobs {
        if j > 20_000 {
            return Err(bad(format!(
                "--jobs {j}: at most 20000 against a real store"
            )));
        }
    }
    let seed = args.seed.unwrap_or(scenario.seed);
    let out_path = match &args.out {
        Some(p) => p.clone(),
        None => durasim::cli::default_out(&scenario.name, &format!("-conform-{}", kind.name()))?,
    };
    if let StoreArg::Sqlite(p) = &store_arg {
        if p.exists() {
            return Err(bad(format!("{}: exists; conform creates a new SQLite database and never replaces a file (choose another path, or move or remove it yourself)", p.display())));
        }
    }
    let out = OutputDir::create(&out_path, OutKind::Run).map_err(output_error)?;
    let lease_ms = if kind == Kind::Pgmq {
        scenario.queue.lease_ms.div_ceil(1000) * 1000
    } else {
        scenario.queue.lease_ms
    };
    let pg = match &store_arg {
        StoreArg::Postgres(u) | StoreArg::Pgmq(u) => Some(Pg::open(u.as_deref())?),
        StoreArg::Sqlite(_) => None,
    };
    let target = match (&store_arg, &pg) {
        (StoreArg::Sqlite(p), _) => p.display().to_string(),
        (_, Some(pg)) => pg.url(),
        _ => unreachable!(),
    };
    if kind == Kind::Pgmq {
        install_pgmq(&target)?;
    }
    let workdir = tempdir_for_spec()?;
    let mut spec = Spec {
        scenario_file: args.scenario.display().to_string(),
        scenario_text: text.clone(),
        seed,
        jobs: args.jobs,
        kind: kind.name().to_string(),
        target,
        t0_us: 0,
        bugs: bugs.iter().map(|b| b.to_string()).collect(),
        kills: args.kills.clone(),
        lease_ms,
    };
    let mut store = spec.open(&scenario)?;
    prepare(&mut store, kind)?;
    spec.t0_us = crate::db::mono_us();
    if let crate::db::Db::Sqlite { t0, .. } = &mut store.db {
        *t0 = spec.t0_us;
    }
    let spec_path = workdir.join("spec.json");
    std::fs::write(&spec_path, serde_json::to_string(&spec)?)?;
    let requests = plan::requests(&scenario, seed, args.jobs, spec.bug("tenantless_keys"));
    let harness = Harness::new(&spec, &spec_path, store)?;
    let run = harness.run(requests, args.time_limit_s * 1000);
    let _ = std::fs::remove_dir_all(&workdir);
    let (mut store, facts) = run?;
    let rows = store.history()?;
    drop(store);
    drop(pg);
    // pgmq's visibility timeouts are whole seconds: the lease and the retry delays the
    // application asks for are rounded up, and the header says what was applied.
    let secs = |ms: u64| {
        if kind == Kind::Pgmq {
            ms.div_ceil(1000) * 1000
        } else {
            ms
        }
    };
    let applied = crate::export::Applied {
        seed,
        workers: scenario.workers.count,
        lease_ms,
        heartbeat_ms: scenario.queue.heartbeat_ms,
        deadline_ms: scenario.queue.deadline_ms,
        attempts_max: scenario.queue.max_attempts,
        backoff_base_ms: secs(scenario.retry.backoff_base_ms),
        backoff_cap_ms: secs(scenario.retry.backoff_cap_ms),
        jitter: scenario.retry.jitter,
        visible_at_lease_end: kind == Kind::Pgmq,
    };
    let path = out.file("history.jsonl");
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&path).context("cannot create history.jsonl")?,
    );
    crate::export::write(
        &mut file,
        &crate::export::header(&applied, false),
        &rows,
        false,
    )?;
    std::io::Write::flush(&mut file)?;
    drop(file);
    let mut in_ms = Vec::new();
    crate::export::write(
        &mut in_ms,
        &crate::export::header(&applied, true),
        &rows,
        true,
    )?;
    judge(
        args, &scenario, &text, seed, kind, &facts, &path, &in_ms, out,
    )
}

fn tempdir_for_spec() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "durasim-conform-{}-{}",
        std::process::id(),
        crate::db::mono_us()
    ));
    std::fs::create_dir(&dir).context("cannot create a temporary directory")?;
    Ok(dir)
}

fn reproduce(args: &ConformArgs, seed: u64) -> String {
    let mut cmd = format!(
        "durasim conform {} --store {} --seed {seed}",
        args.scenario.display(),
        args.store
    );
    for b in &args.bugs {
        cmd.push_str(&format!(" --bug {b}"));
    }
    for k in &args.kills {
        cmd.push_str(&format!(" --kill {k}"));
    }
    cmd
}

/// The figures the model-against-reality table compares.
pub fn figures(r: &RunReport) -> serde_json::Value {
    let m = &r.metrics;
    let enq = m.jobs.enqueued.max(1) as f64;
    let q = m.queue_wait.stats();
    json!({
        "enqueued": m.jobs.enqueued,
        "ackedFraction": m.jobs.acked as f64 / enq,
        "deadLetteredFraction": m.jobs.dead_lettered as f64 / enq,
        "cancelledFraction": m.jobs.cancelled as f64 / enq,
        "attemptsPerJob": m.leases.granted as f64 / enq,
        "extractCallsPerJob": m.effects.extract_calls as f64 / enq,
        "dedupedCommits": m.effects.deduped_commits,
        "duplicatesAbsorbed": m.effects.consumer_duplicates,
        "workerCrashes": m.crashes.worker,
        "relayCrashes": m.crashes.relay,
        "leasesExpired": m.leases.expired,
        "staleRejections": m.leases.stale_rejections,
        "queueWaitMs": {"p50": q.p50, "p95": q.p95, "p99": q.p99},
        "jobAgeMs": {"p50": m.job_age.stats().p50, "p95": m.job_age.stats().p95, "p99": m.job_age.stats().p99},
    })
}

#[allow(clippy::too_many_arguments)]
fn judge(
    args: &ConformArgs,
    scenario: &Scenario,
    text: &str,
    seed: u64,
    kind: Kind,
    facts: &RunFacts,
    history: &std::path::Path,
    in_ms: &[u8],
    out: OutputDir,
) -> Result<Outcome> {
    // The verdict: the library's reader reads the file the store's history was written to
    // (µs), exactly as `durasim verify` would, and its checker judges it. A history the reader
    // refuses is a defect of this harness.
    let refused = |e| anyhow!("the store's history does not read back: {e}");
    let mut reader = durasim::files::open_history(history, Limits::default()).map_err(refused)?;
    let mut verdict = Checker::new();
    let mut hash = TraceHash::default();
    let mut last = 0;
    while let Some(r) = reader.next_record().map_err(refused)? {
        hash.add(&r);
        last = r.at;
        verdict.observe_record(&r);
    }
    let names = reader.names().clone();
    // The verdicts stay in the history's µs: their messages say µs, and so do the first
    // violations `conform` prints; `summary.json`'s `atMs` is divided below.
    let check = verdict.finish();
    // The figures: the same history in ms, through the same metrics as `durasim run`.
    let mut reader = HistoryReader::from_reader(
        "history (ms)",
        std::io::Cursor::new(in_ms),
        Limits::default(),
    );
    let jobs = rows_hint(history);
    let attempt_rows: Box<dyn std::io::Write> = Box::new(std::io::BufWriter::new(
        std::fs::File::create(out.file("attempts.csv")).context("cannot create attempts.csv")?,
    ));
    let mut observers = Observers {
        checker: Checker::with_capacity(jobs),
        metrics: Metrics::new(scenario.workers.count, jobs, Some(attempt_rows)),
        trace: None,
        trace_filter: None,
        history: None,
        progress: None,
    };
    while let Some(r) = reader.next_record().map_err(refused)? {
        durasim::history::Observer::observe(&mut observers, &r);
    }
    let outcome = RunOutcome {
        trace_hash: hash.finish(),
        records: hash.records(),
        heap_events: 0,
        virtual_time_ms: last / 1000,
        quiescent: facts.settled,
        names,
    };
    let mut report = RunReport {
        outcome,
        check,
        metrics: observers.metrics,
        trace: None,
        wall_s: facts.wall_s,
        replay_hash: None,
        history_written: None,
    };
    report
        .metrics
        .finish_rows()
        .map_err(|e| anyhow!("cannot write attempts.csv: {e}"))?;
    // A real run is judged on its invariants and the `sometimes` paths it must reach; the
    // scenario's exact counts were written for the simulator's timing.
    let mut judged = scenario.clone();
    judged.expect = Expect {
        violations: scenario.expect.violations.clone(),
        sometimes: scenario.expect.sometimes.clone(),
        ..Expect::default()
    };
    judged.expect.counts.set(Counter::Unfinished, Some(0));
    let unmet = check_expectations(&judged, &report);
    let reproduce = reproduce(args, seed);
    let file = args.scenario.display().to_string();
    let summary = summarize(
        &report,
        &unmet,
        RunIdentity {
            scenario_name: &scenario.name,
            scenario_file: &file,
            scenario_text: text,
            jobs_override: args.jobs,
            bugs: durasim::bugs::enabled(&scenario.bugs),
            seed,
            reproduce: reproduce.clone(),
        },
    );
    // `summary.json` states its first violations in ms (`atMs`), as `run`'s.
    let mut in_ms = summary.clone();
    for f in in_ms
        .invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.at_ms /= 1000;
    }
    durasim::report::run_dir::write_outputs(&out, &report, &in_ms, text, false)?;
    // The same scenario, seed and bug switches, simulated: the model beside reality.
    let mut request = RunRequest::for_scenario(scenario);
    request.seed = seed;
    request.jobs = args.jobs;
    let simulated = run_once(scenario, &request, None);
    let jobs_per_s = report.metrics.jobs.enqueued as f64 / facts.wall_s.max(1e-9);
    let conform = json!({
        "store": kind.name(),
        "facts": facts,
        "jobsPerS": (jobs_per_s * 10.0).round() / 10.0,
        "measured": figures(&report),
        "simulated": figures(&simulated),
        "simulatedViolations": simulated.check.violated().iter().map(|i| i.name()).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.file("conform.json"),
        serde_json::to_string_pretty(&conform)? + "\n",
    )?;
    let written = out.commit().map_err(output_error)?;
    durasim::cli::print_summary_in(&summary, &written, args.quiet, "µs");
    if !args.quiet {
        let kills: Vec<String> = facts
            .worker_kills
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect();
        println!(
            "  store      {}: {} workers, {} relay(s); {} SIGKILLs ({}; relay {}), {} stalls; {:.1} jobs/s",
            kind.name(),
            facts.workers,
            facts.relays,
            facts.worker_kills.values().sum::<u64>() + facts.relay_kills,
            if kills.is_empty() { "none".to_string() } else { kills.join(", ") },
            facts.relay_kills,
            facts.stalls,
            jobs_per_s
        );
    }
    if !args.quiet {
        for (label, r) in [("simulated", &simulated), ("measured", &report)] {
            println!("  {label:<10} {}", side_by_side(r));
        }
    }
    let ok = unmet.is_empty();
    if !ok {
        println!("reproduce: {reproduce}");
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// One line of the model-against-reality comparison.
fn side_by_side(r: &RunReport) -> String {
    let m = &r.metrics;
    let enq = m.jobs.enqueued.max(1) as f64;
    let pct = |x: u64| 100.0 * x as f64 / enq;
    let q = m.queue_wait.stats();
    format!(
        "acked {:.1}% dlq {:.1}% cancelled {:.1}% | attempts/job {:.3} | deduped commits {} duplicates absorbed {} | queueWaitMs p50 {} p95 {} p99 {}",
        pct(m.jobs.acked),
        pct(m.jobs.dead_lettered),
        pct(m.jobs.cancelled),
        m.leases.granted as f64 / enq,
        m.effects.deduped_commits,
        m.effects.consumer_duplicates,
        q.p50,
        q.p95,
        q.p99
    )
}

/// How many jobs to size the checker for: the history's lines bound it.
fn rows_hint(path: &std::path::Path) -> usize {
    std::fs::metadata(path)
        .map_or(0, |m| (m.len() / 200) as usize)
        .min(1 << 20)
}

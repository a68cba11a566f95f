//! `durasim conform SCENARIO --store ...`: one run end to end against a real store.
//!
//! Owns: the entry point (the command, or the hidden worker and relay subcommands) and one run's
//! sequence: check what the scenario asks for, set up the store, run the harness, write the
//! store's history as a history file (µs, and in ms for the figures), then judge it.
//! Beside it, one file a concept: `conform/args.rs` (the command line, what a real run
//! supports), `conform/setup.rs` (a database, pgmq's install, the schema, the run's clock),
//! `conform/judge.rs` (the checker's verdict, the outputs, the model beside reality).
//! Does not: judge anything itself.

mod args;
mod judge;
mod setup;

pub use args::{unsupported, unsupported_profile, ConformArgs, StoreArg, REAL_BUGS};
pub use judge::figures;

use crate::harness::Harness;
use crate::kills::KillMode;
use crate::plan;
use crate::spec::Spec;
use crate::store::Kind;
use anyhow::{anyhow, Context, Result};
use args::bad;
use clap::Parser;
use durasim::shell::cli::{load_scenario, output_error, Outcome};
use durasim::shell::report::output_dir::{Kind as OutKind, OutputDir};
use durasim::vocab::bugs::Bug;
use judge::judge;
use setup::{install_pgmq, prepare, Pg};
use std::path::PathBuf;

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

pub fn conform(args: &ConformArgs) -> Result<Outcome> {
    let (scenario, text) = load_scenario(&args.scenario)?;
    let store_arg = StoreArg::parse(&args.store)?;
    let kind = store_arg.kind();
    let mut bugs = scenario.bugs;
    durasim::shell::cli::apply_bug_flags(&mut bugs, &args.bugs)?;
    if let Some(b) = bugs.iter().find(|b| !REAL_BUGS.contains(b)) {
        let real: Vec<&str> = REAL_BUGS.iter().map(|b| b.name()).collect();
        return Err(bad(format!(
            "--bug {}: not implemented against real stores; allowed: {}",
            b.name(),
            real.join(", ")
        )));
    }
    // The run's switches are the scenario's: a real store runs what its file says.
    let scenario = scenario
        .edited(|f| f.bugs = bugs)
        .map_err(|e| bad(e.to_string()))?;
    if let Some(why) = unsupported(&scenario).or_else(|| unsupported_profile(&scenario, kind)) {
        return Err(bad(format!(
            "{}: conform cannot run this scenario: {why}",
            args.scenario.display()
        )));
    }
    for k in &args.kills {
        plan::ForcedKill::parse(k).map_err(bad)?;
    }
    match (args.kill_mode, args.kill_mean_ms) {
        (KillMode::Cooperative, Some(_)) => {
            return Err(bad("--kill-mean-ms: only with --kills random (the cooperative mode kills at the scenario's seeded points)"));
        }
        (_, Some(0)) => {
            return Err(bad(
                "--kill-mean-ms 0: the mean time between kills is at least 1 ms",
            ))
        }
        (KillMode::Random, mean) => {
            let rates = crate::kills::rates(&scenario, mean);
            if let Some(why) = crate::kills::refusal(&scenario, &rates, !args.kills.is_empty()) {
                return Err(bad(format!("{}: {why}", args.scenario.display())));
            }
        }
        (KillMode::Cooperative, None) => {}
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
        None => {
            durasim::shell::cli::default_out(&scenario.name, &format!("-conform-{}", kind.name()))?
        }
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
        bugs,
        kills: args.kills.clone(),
        lease_ms,
        kill_mode: args.kill_mode,
        kill_mean_ms: args.kill_mean_ms,
    };
    let mut store = spec.open(&scenario)?;
    prepare(&mut store, kind)?;
    spec.t0_us = crate::db::mono_us();
    if let crate::db::Db::Sqlite { t0, .. } = &mut store.db {
        *t0 = spec.t0_us;
    }
    let spec_path = workdir.join("spec.json");
    std::fs::write(&spec_path, serde_json::to_string(&spec)?)?;
    let requests = plan::requests(&scenario, seed, args.jobs, spec.bug(Bug::TenantlessKeys));
    let harness = Harness::new(&spec, &spec_path, store)?;
    let run = harness.run(requests, args.time_limit_s * 1000);
    let _ = std::fs::remove_dir_all(&workdir);
    let (mut store, mut facts) = run?;
    let rows = store.history()?;
    if args.kill_mode == KillMode::Random {
        facts.kills_landed = crate::kills::landed(&rows);
    }
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

//! `durasim explore`: the bounded-exhaustive search of a tiny scenario.
//!
//! Owns: its flags (faults, grid, kinds, bug switches, threads, output), the output directory
//! (`explore.json`, and `counterexample.toml` when one was found), the printed answer with the
//! schedules and states a wall-clock second, and the exit code.
//! Does not: enumerate or run schedules (`sweep::explore`).

use super::args::ExploreArgs;
use super::input::{apply_bug_flags, check_bugs_apply, load_scenario};
use super::{bad, default_out, output_error, Outcome};
use crate::shell::report::manifest::Kind;
use crate::shell::report::output_dir::OutputDir;
use crate::sweep::explore::{explore, Bound, ExploreError, KIND_NAMES};
use crate::vocab::bugs::BugSet;
use std::time::Instant;

/// `durasim explore`.
pub fn cmd_explore(args: &ExploreArgs) -> anyhow::Result<Outcome> {
    let (scenario, _) = load_scenario(&args.scenario)?;
    let file = args.scenario.display().to_string();
    let mut bugs = BugSet::default();
    apply_bug_flags(&mut bugs, &args.bugs)?;
    bugs = bugs.iter().chain(scenario.bugs.iter()).collect();
    check_bugs_apply(bugs, &scenario, &file)?;
    if let Some(t) = args.threads {
        crate::base::limits::check_threads(t).map_err(|e| bad(e.to_string()))?;
    }
    let mut kinds = Vec::new();
    for name in args.kinds.iter().flat_map(|k| k.split(',')) {
        let name = name.trim();
        match KIND_NAMES.iter().position(|k| *k == name) {
            Some(i) => kinds.push(i),
            None => {
                return Err(bad(format!(
                    "--kinds: unknown fault kind {name:?}; allowed: {}",
                    KIND_NAMES.join(", ")
                )))
            }
        }
    }
    let bound = Bound {
        faults: args.faults,
        grid_ms: args.grid,
        kinds,
        bugs,
        threads: args.threads.unwrap_or(0),
        reorders: args.reorders,
    };
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&scenario.name, "-explore")?,
    };
    let dir = OutputDir::create(&out, Kind::Sweep).map_err(output_error)?;
    let started = Instant::now();
    let found = match explore(&scenario, &bound) {
        Ok(f) => f,
        Err(ExploreError::Refused(m)) => return Err(bad(format!("{file}: {m}"))),
        Err(ExploreError::Pool(e)) => return Err(e.into()),
    };
    let wall_s = started.elapsed().as_secs_f64().max(1e-9);
    let sp = &found.space;
    let json = serde_json::json!({
        "scenarioFile": file,
        "faults": bound.faults,
        "gridMs": sp.grid_ms,
        "horizonMs": sp.horizon_ms,
        "gridPoints": sp.grid_points,
        "kinds": match bound.kinds.is_empty() {
            true => KIND_NAMES.to_vec(),
            false => bound.kinds.iter().map(|&i| KIND_NAMES[i]).collect(),
        },
        "heldMs": sp.held_ms,
        "placements": sp.atoms.len(),
        "schedules": sp.schedules,
        "bugs": bugs.names(),
        "proven": found.counterexample.is_none(),
        "reorders": bound.reorders,
        "schedulesRun": found.schedules_run,
        "runs": found.runs,
        "runsPruned": found.pruned,
        "states": found.states,
        "distinctStates": found.distinct_states,
        "dedupBy": "model state hash at each tie, within a schedule",
        "wallSeconds": wall_s,
        "statesPerSecond": found.states as f64 / wall_s,
        "counterexample": found.counterexample.as_ref().map(|c| serde_json::json!({
            "faults": c.faults.iter().map(|a| a.describe()).collect::<Vec<_>>(),
            "ties": c.ties,
            "invariant": c.invariant,
            "message": c.message,
            "file": "counterexample.toml",
        })),
    });
    let text = serde_json::to_string_pretty(&json).expect("json") + "\n";
    let write = |name: &str, body: &str| {
        std::fs::write(dir.file(name), body)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.file(name).display()))
    };
    write("explore.json", &text)?;
    if let Some(c) = &found.counterexample {
        write("counterexample.toml", &c.file)?;
    }
    let out = dir.commit().map_err(output_error)?;
    let bug_note = match bugs.names() {
        b if b.is_empty() => String::new(),
        b => format!(" bug {}", b.join(",")),
    };
    println!(
        "{} faults <= {}, reorders <= {}, grid {} ms over {} ms ({} grid times), {} placements{bug_note}",
        scenario.name,
        bound.faults,
        bound.reorders,
        sp.grid_ms,
        sp.horizon_ms,
        sp.grid_points,
        sp.atoms.len()
    );
    match &found.counterexample {
        None => println!(
            "PROVEN  no counterexample within the bound: {} schedules, {} distinct states ({} runs, {} pruned at a state seen before)",
            found.schedules_run, found.distinct_states, found.runs, found.pruned
        ),
        Some(c) => {
            println!(
                "COUNTEREXAMPLE  {} faults: {}",
                c.faults.len(),
                c.faults
                    .iter()
                    .map(|a| a.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            if !c.ties.is_empty() {
                println!(
                    "  ORDER    {} non-default choices of simultaneous events ([run] ties = {:?})",
                    c.ties.len(),
                    c.ties
                );
            }
            println!("  VIOLATED {}: {}", c.invariant, c.message);
            println!(
                "  after {} schedules, {} distinct states ({} runs, {} pruned)",
                found.schedules_run, found.distinct_states, found.runs, found.pruned
            );
            println!(
                "  reproduce: durasim run {}",
                out.join("counterexample.toml").display()
            );
        }
    }
    println!(
        "  speed      {:.0} schedules/s, {:.0} runs/s, {:.0} states/s ({} states hashed, {:.2} s)",
        found.schedules_run as f64 / wall_s,
        found.runs as f64 / wall_s,
        found.states as f64 / wall_s,
        found.states,
        wall_s
    );
    println!("  outputs    {}", out.display());
    Ok(match found.counterexample {
        None => Outcome::Ok,
        Some(_) => Outcome::Violated,
    })
}

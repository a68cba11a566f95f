//! `durasim sweep --guided` and `--seeds-to-detect`: a guided search over a seed range, and the
//! seeds-to-detect table of uniform and guided searches per bug switch.
//!
//! Owns: the flags these modes refuse, the guided search's output directory (`guided.json`, and
//! `guided-failure.toml` when a run failed), the printed summary and table, the exit code.
//! Does not: search (`sweep::guided`).

use super::args::SweepArgs;
use super::{bad, default_out, output_error, Outcome};
use crate::shell::report::manifest::Kind;
use crate::shell::report::output_dir::OutputDir;
use crate::sweep::guided::{explore, seeds_to_detect, Detect, Guided};
use crate::sweep::Plan;
use crate::vocab::probes::PROBE_COUNT;

/// Runs the guided mode the flags ask for (the plan is built and checked by `cmd_sweep`).
pub fn cmd_guided(args: &SweepArgs, plan: Plan) -> anyhow::Result<Outcome> {
    let mode = match args.seeds_to_detect {
        Some(_) => "--seeds-to-detect",
        None => "--guided",
    };
    if plan.shard.is_some() {
        return Err(bad(format!(
            "{mode}: a guided search runs in one process and has no shards; leave out --shard"
        )));
    }
    if args.junit.is_some() {
        return Err(bad(format!(
            "{mode}: writes no JUnit report; leave out --junit"
        )));
    }
    if let Some(n) = args.seeds_to_detect {
        if !(1..=100).contains(&n) {
            return Err(bad(format!(
                "--seeds-to-detect {n}: the number of searches per switch must be 1 to 100"
            )));
        }
        if args.require_coverage || args.out.is_some() {
            return Err(bad(
                "--seeds-to-detect prints a table and writes nothing: leave out --out and --require-coverage",
            ));
        }
        let bugs: Vec<_> = plan.bugs.iter().collect();
        let rows = seeds_to_detect(&plan, &bugs, n)?;
        print_table(&plan, n, &rows);
        return Ok(Outcome::Ok);
    }
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&plan.scenario.name, "-guided")?,
    };
    let dir = OutputDir::create(&out, Kind::Sweep).map_err(output_error)?;
    let g = explore(&plan, true, false)?;
    let unreached = PROBE_COUNT - g.probes_reached;
    let coverage_failed = args.require_coverage && unreached > 0;
    let json = serde_json::json!({
        "scenarioFile": plan.scenario_file,
        "seeds": [plan.seeds.0, plan.seeds.1],
        "swarm": plan.swarm,
        "bugs": plan.bugs.names(),
        "passed": g.first_failure.is_none() && !coverage_failed,
        "runs": g.runs,
        "fresh": g.fresh,
        "mutants": g.mutants,
        "failedRuns": g.failed_runs,
        "corpus": g.corpus,
        "probesReached": g.probes_reached,
        "probesTotal": PROBE_COUNT,
        "sometimesReached": g.sometimes_reached,
        "sometimesTotal": g.sometimes_total,
        "firstFailure": g.first_failure.as_ref().map(|f| serde_json::json!({
            "run": f.run,
            "invariant": f.invariant,
            "message": f.message,
            "origin": f.origin,
            "file": "guided-failure.toml",
        })),
    });
    let text = serde_json::to_string_pretty(&json).expect("json") + "\n";
    let write = |name: &str, body: &str| {
        std::fs::write(dir.file(name), body)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.file(name).display()))
    };
    write("guided.json", &text)?;
    if let Some(f) = &g.first_failure {
        write("guided-failure.toml", &f.file)?;
    }
    let out = dir.commit().map_err(output_error)?;
    print_guided(&plan, &g, coverage_failed, &out);
    Ok(match g.first_failure.is_none() && !coverage_failed {
        true => Outcome::Ok,
        false => Outcome::Violated,
    })
}

fn print_guided(plan: &Plan, g: &Guided, coverage_failed: bool, out: &std::path::Path) {
    let verdict = match g.first_failure.is_none() && !coverage_failed {
        true => "PASS",
        false => "FAIL",
    };
    let bugs = plan.bugs.names();
    println!(
        "{verdict}  {} seeds {}..{} guided{}{}: {} runs ({} fresh, {} mutants), {} failed; corpus {}",
        plan.scenario.name,
        plan.seeds.0,
        plan.seeds.1,
        if plan.swarm { " swarm" } else { "" },
        if bugs.is_empty() {
            String::new()
        } else {
            format!(" bug {}", bugs.join(","))
        },
        g.runs,
        g.fresh,
        g.mutants,
        g.failed_runs,
        g.corpus,
    );
    println!(
        "  coverage   probes {}/{} reached, sometimes {}/{}",
        g.probes_reached, PROBE_COUNT, g.sometimes_reached, g.sometimes_total
    );
    if coverage_failed {
        println!(
            "  COVERAGE GATE FAILED: {} probes never reached",
            PROBE_COUNT - g.probes_reached
        );
    }
    if let Some(f) = &g.first_failure {
        println!(
            "  VIOLATED {} first at run {}: {}",
            f.invariant, f.run, f.message
        );
        println!("    from {}", f.origin);
        println!(
            "    reproduce: durasim run {}",
            out.join("guided-failure.toml").display()
        );
    }
    println!("  outputs    {}", out.display());
}

fn mean(xs: &[Option<u64>], cap: u64) -> (String, usize) {
    let found = xs.iter().filter(|x| x.is_some()).count();
    let sum: u64 = xs.iter().map(|x| x.unwrap_or(cap)).sum();
    let m = sum as f64 / xs.len().max(1) as f64;
    let text = match found == xs.len() {
        true => format!("{m:.0}"),
        false => format!(">{m:.0} ({found}/{} found)", xs.len()),
    };
    (text, found)
}

fn print_table(plan: &Plan, n: u64, rows: &[Detect]) {
    let len = plan.seeds.1 - plan.seeds.0;
    println!(
        "seeds-to-detect, {} {}: mean runs to the first failure over {n} searches of at most {len} runs each",
        plan.scenario.name,
        if plan.swarm { "(swarm)" } else { "" }
    );
    println!();
    println!("| bug switch | uniform | guided | uniform / guided |");
    println!("|---|---:|---:|---:|");
    for r in rows {
        let (u, _) = mean(&r.uniform, len);
        let (g, _) = mean(&r.guided, len);
        let su: u64 = r.uniform.iter().map(|x| x.unwrap_or(len)).sum();
        let sg: u64 = r.guided.iter().map(|x| x.unwrap_or(len)).sum();
        println!(
            "| `{}` | {u} | {g} | {:.1}x |",
            r.bug.name(),
            su as f64 / sg.max(1) as f64
        );
    }
}

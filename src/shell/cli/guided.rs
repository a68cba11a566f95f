//! `durasim sweep --guided` and `--seeds-to-detect`: a guided search over a seed range, and the
//! seeds-to-detect table of uniform and guided searches per bug switch.
//!
//! Owns: the flags these modes refuse, reading `--corpus DIR`, the guided search's output
//! directory (`guided.json`, the kept runs as `corpus/NNNNN.toml`, and `guided-failure.toml`
//! when a run failed), the printed summary and table, the exit code.
//! Does not: search (`sweep::guided`).

use super::args::SweepArgs;
use super::{bad, default_out, output_error, Outcome};
use crate::base::limits::{MAX_CORPUS_BYTES, MAX_CORPUS_FILES, MAX_SCENARIO_BYTES};
use crate::scenario::Scenario;
use crate::shell::report::manifest::Kind;
use crate::shell::report::output_dir::OutputDir;
use crate::sweep::corpus::from_corpus;
use crate::sweep::detect::{seeds_to_detect, CorpusSource, Detection};
use crate::sweep::guided::{explore, Candidate, Guided};
use crate::sweep::Plan;
use crate::vocab::probes::PROBE_COUNT;
use std::path::Path;

/// `--corpus DIR`: its `*.toml` files in name order (other files are left alone), each a
/// scenario that validates and names no bug switch (the sweep's `--bug` switches apply to all).
fn load_corpus(dir: &Path, plan: &Plan) -> anyhow::Result<Vec<Candidate>> {
    let shown = dir.display();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        bad(format!(
            "--corpus {shown}: cannot read the directory: {e} (give the corpus directory an \
             earlier guided sweep wrote, DIR/corpus)"
        ))
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| bad(format!("--corpus {shown}: cannot read: {e}")))?;
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "toml") {
            names.push(path);
            if names.len() > MAX_CORPUS_FILES {
                return Err(bad(format!(
                    "--corpus {shown}: more than {MAX_CORPUS_FILES} .toml files; a corpus has \
                     at most {MAX_CORPUS_FILES} (a guided sweep keeps at most 1024)"
                )));
            }
        }
    }
    names.sort();
    if names.is_empty() {
        return Err(bad(format!(
            "--corpus {shown}: no .toml file in it; a corpus is the directory of scenario files \
             a guided sweep writes as DIR/corpus"
        )));
    }
    let mut total = 0u64;
    let mut out = Vec::with_capacity(names.len());
    for path in names {
        let file = path.display().to_string();
        let text = crate::shell::files::read_capped(&path, MAX_SCENARIO_BYTES, "corpus file")
            .map_err(|e| bad(e.to_string()))?;
        total += text.len() as u64;
        if total > MAX_CORPUS_BYTES {
            return Err(bad(format!(
                "--corpus {shown}: its .toml files hold more than {} MiB together, more than a \
                 corpus durasim reads",
                MAX_CORPUS_BYTES >> 20
            )));
        }
        let scenario = Scenario::parse(&file, &text).map_err(|e| bad(e.to_string()))?;
        super::input::check_cost(&scenario, None, &file, &text)?;
        if !scenario.file().bugs.is_empty() {
            return Err(bad(format!(
                "{file}: a corpus file names bug switches ({}); the sweep's --bug switches apply \
                 to every corpus run: remove its [bugs]",
                scenario.file().bugs.names().join(", ")
            )));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(file);
        out.push(from_corpus(plan, &name, scenario));
    }
    Ok(out)
}

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
        let corpus = match &args.corpus {
            Some(d) => Some(load_corpus(d, &plan)?),
            None => None,
        };
        let table = seeds_to_detect(&plan, &bugs, n, corpus)?;
        print_table(&plan, n, &table);
        return Ok(Outcome::Ok);
    }
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&plan.scenario.name, "-guided")?,
    };
    let start = match &args.corpus {
        Some(d) => {
            super::input::check_apart("--corpus", d, "--out", &out)?;
            load_corpus(d, &plan)?
        }
        None => Vec::new(),
    };
    let dir = OutputDir::create(&out, Kind::Sweep).map_err(output_error)?;
    let g = explore(&plan, &start, true, false)?;
    let unreached = PROBE_COUNT - g.probes_reached;
    let coverage_failed = args.require_coverage && unreached > 0;
    let json = serde_json::json!({
        "scenarioFile": plan.scenario_file,
        "seeds": [plan.seeds.0, plan.seeds.1],
        "swarm": plan.swarm,
        "bugs": plan.bugs.names(),
        "passed": g.first_failure.is_none() && !coverage_failed,
        "runs": g.runs,
        "replayed": g.replayed,
        "fresh": g.fresh,
        "mutants": g.mutants,
        "failedRuns": g.failed_runs,
        "corpus": g.corpus,
        "corpusDir": "corpus",
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
    std::fs::create_dir(dir.file("corpus"))
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.file("corpus").display()))?;
    for (i, body) in g.kept.iter().enumerate() {
        write(&format!("corpus/{i:05}.toml"), body)?;
    }
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
        "{verdict}  {} seeds {}..{} guided{}{}: {} runs ({}{} fresh, {} mutants), {} failed; corpus {}",
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
        match g.replayed {
            0 => String::new(),
            n => format!("{n} from --corpus, "),
        },
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

fn print_table(plan: &Plan, n: u64, table: &Detection) {
    let len = plan.seeds.1 - plan.seeds.0;
    println!(
        "seeds-to-detect, {} {}: mean runs to the first failure over {n} searches of at most {len} runs each",
        plan.scenario.name,
        if plan.swarm { "(swarm)" } else { "" }
    );
    match &table.corpus {
        CorpusSource::Given(k) => println!("kept corpus: --corpus, {k} runs"),
        CorpusSource::Built { seeds, kept } => println!(
            "kept corpus: {kept} runs a guided search with no bug switch kept over seeds {}..{} \
             ({} runs, made once for every switch and search)",
            seeds.0,
            seeds.1,
            seeds.1 - seeds.0
        ),
    }
    println!();
    println!("| bug switch | uniform | guided | guided, kept corpus | uniform / kept corpus |");
    println!("|---|---:|---:|---:|---:|");
    let sum = |xs: &[Option<u64>]| xs.iter().map(|x| x.unwrap_or(len)).sum::<u64>();
    for r in &table.rows {
        let (u, _) = mean(&r.uniform, len);
        let (g, _) = mean(&r.guided, len);
        let (c, _) = mean(&r.from_corpus, len);
        println!(
            "| `{}` | {u} | {g} | {c} | {:.1}x |",
            r.bug.name(),
            sum(&r.uniform) as f64 / sum(&r.from_corpus).max(1) as f64
        );
    }
}

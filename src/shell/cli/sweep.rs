//! `durasim sweep` and `durasim merge`: many seeds of one scenario, and the shards of one
//! sweep joined.
//!
//! Owns: their flags (seed range, shard, threads, swarm, jobs, bug switches, outputs), refusing
//! outputs durasim may not replace before any work is done, the progress bar, reading the
//! shards' directories, and the exit code (1 when a seed failed or the coverage gate did).
//! Does not: run or aggregate seeds (`sweep`) or lay out the files (`report::sweep_dir`).

use super::args::{MergeArgs, SweepArgs};
use super::input::{apply_bug_flags, check_bugs_apply, load_scenario};
use super::print::print_sweep_summary;
use super::{bad, default_out, output_error, report_error, Outcome};
use crate::shell::report::junit::{check_junit_target, junit_text, write_junit};
use crate::shell::report::output_dir::inspect;
use crate::shell::report::sweep_dir::{
    read_seed_records, read_sweep_json, write_sweep_dir, SweepDirWriter,
};
use crate::sweep::merge::{check_complete, check_shard, merge, ShardResult};
use crate::sweep::{sweep_streaming, Plan, SeedSink, Shard, StreamError, SweepJson, SweepOutput};
use crate::vocab::bugs::BugSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn parse_seeds(text: &str) -> Result<(u64, u64), String> {
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

/// `durasim sweep`.
pub fn cmd_sweep(args: &SweepArgs) -> anyhow::Result<Outcome> {
    let (scenario, text) = load_scenario(&args.scenario)?;
    let seeds = parse_seeds(&args.seeds).map_err(bad)?;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    if args.swarm && scenario.swarm.is_none() {
        return Err(bad(format!(
            "--swarm: {} has no [swarm] section with the ranges to draw from",
            args.scenario.display()
        )));
    }
    if let Some(t) = args.threads {
        crate::base::limits::check_threads(t).map_err(|e| bad(e.to_string()))?;
    }
    if let Some(j) = args.jobs {
        crate::base::limits::check_jobs("--jobs", j).map_err(|e| bad(e.to_string()))?;
        let file = args.scenario.display().to_string();
        super::input::check_cost(&scenario, Some(j), &file, &text)?;
    }
    let mut plan = Plan::new(scenario, &args.scenario.display().to_string(), seeds);
    apply_bug_flags(&mut plan.bugs, &args.bugs)?;
    check_bugs_apply(
        plan.bugs,
        &plan.scenario,
        &args.scenario.display().to_string(),
    )?;
    plan.shard = shard;
    plan.programs = super::programs::program_spec(&args.programs, plan.bugs)?;
    crate::base::limits::check_sweep_seeds(&args.seeds, plan.seed_count())
        .map_err(|e| bad(e.to_string()))?;
    plan.swarm = args.swarm;
    plan.jobs = args.jobs;
    plan.max_events = super::input::budget().max_events;
    plan.threads = args.threads.unwrap_or(0);
    plan.shrink = !args.no_shrink;
    plan.require_coverage = args.require_coverage;
    plan.wall_clock = Some(Instant::now);
    if args.guided || args.seeds_to_detect.is_some() {
        return super::guided::cmd_guided(args, plan);
    }
    if let Some(d) = &args.corpus {
        return Err(bad(format!(
            "--corpus {}: a corpus is for a guided search; add --guided (or --seeds-to-detect N)",
            d.display()
        )));
    }
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&plan.scenario.name, "-sweep")?,
    };
    // Refused before the sweep runs, not after minutes of work (checked again when written).
    let junit = check_targets(&out, args.junit.as_deref())?;
    let bar =
        (!args.quiet && std::io::stderr().is_terminal()).then(|| seeds_bar(plan.seed_count()));
    plan.progress = bar.as_ref().map(|(_, sink)| sink.clone());
    // seeds.jsonl is written as the seeds complete, in seed order: no record is kept.
    let mut writer = SweepDirWriter::create(&out).map_err(report_error)?;
    super::malloc::keep_freed_memory_between_seeds();
    let swept = sweep_streaming(&plan, |r| writer.record(&r));
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    let swept = match swept {
        Ok(s) => s,
        Err(StreamError::Sink(e)) => return Err(report_error(e)),
        Err(StreamError::Sweep(e)) => return Err(e.into()),
    };
    // A program in a role that failed in any seed is bad input: exit 2, with its message.
    if let Some(g) = swept.json.failures.iter().find(|g| g.class == "program") {
        let first = g
            .signatures
            .first()
            .map_or("", |s| s.first_message.as_str());
        return Err(bad(format!(
            "seed {}: {first}",
            g.first_seeds.first().copied().unwrap_or(0)
        )));
    }
    let mut files = swept.files;
    if let Junit::InOut(name) = &junit {
        files.push((name.clone(), junit_text(&swept.json)));
    }
    let out = writer.finish(&swept.json, &files).map_err(report_error)?;
    finish(&swept.json, &out, &junit, args.quiet)
}

/// `durasim merge`: the shards' seeds.jsonl and shrunk files, combined into what one unsharded
/// sweep writes.
pub fn cmd_merge(args: &MergeArgs) -> anyhow::Result<Outcome> {
    let mut shards = Vec::new();
    for dir in &args.dirs {
        let json = read_sweep_json(dir).map_err(|e| bad(e.to_string()))?;
        let shard = ShardResult {
            dir: dir.clone(),
            json,
        };
        check_shard(&shard).map_err(|e| bad(e.to_string()))?;
        shards.push(shard);
    }
    let expected = check_complete(&shards).map_err(|e| bad(e.to_string()))?;
    // The scenario file as recorded; its name and expectations decide the coverage gate.
    let first = &shards[0].json;
    let (scenario, _) = load_scenario(&PathBuf::from(&first.scenario_file)).map_err(|e| {
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
    plan.require_coverage = args.require_coverage;
    plan.bugs = BugSet::EMPTY;
    apply_bug_flags(&mut plan.bugs, &first.bugs)?;
    check_bugs_apply(plan.bugs, &plan.scenario, &first.scenario_file)?;
    let mut records = Vec::new();
    for s in &shards {
        records
            .extend(read_seed_records(&s.dir, s.json.seeds_run).map_err(|e| bad(e.to_string()))?);
    }
    let (json, records, copies) =
        merge(&plan, &shards, records, expected).map_err(|e| bad(e.to_string()))?;
    let mut files = Vec::new();
    for c in &copies {
        let text = crate::shell::files::read_capped(
            &shards[c.shard].dir.join(&c.from),
            crate::base::limits::MAX_SCENARIO_BYTES,
            "shrunk scenario",
        )
        .map_err(|e| bad(e.to_string()))?;
        files.push((c.to.clone(), c.retitle(text)));
    }
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&json.scenario, "-sweep")?,
    };
    for dir in &args.dirs {
        super::input::check_apart("the shard", dir, "--out", &out)?;
    }
    let junit = check_targets(&out, args.junit.as_deref())?;
    if let Junit::InOut(name) = &junit {
        files.push((name.clone(), junit_text(&json)));
    }
    let output = SweepOutput {
        json,
        records,
        files,
    };
    let out = write_sweep_dir(&out, &output).map_err(report_error)?;
    finish(&output.json, &out, &junit, args.quiet)
}

/// Where `--junit FILE` goes.
enum Junit<'a> {
    /// No `--junit`.
    None,
    /// Outside `--out`: a file of its own, replaced only while it has the digest durasim wrote.
    Own(&'a Path),
    /// Inside `--out` (this path relative to it, `/`-separated): a file of that directory, listed
    /// in its manifest with its digest, so the identical command run again replaces it and a
    /// user's edit of it is refused like an edit of any other file there.
    InOut(String),
}

/// Files a sweep's directory holds (or `durasim chart` adds to it): `--junit` may not name one.
const SWEEP_FILES: [&str; 5] = [
    "sweep.json",
    "seeds.jsonl",
    "index.html",
    "charts",
    "shrunk",
];

/// Refuses `--out` and `--junit` targets durasim may not replace, before any work is done
/// (they are checked again when written), and says where the JUnit report goes.
fn check_targets<'a>(out: &Path, junit: Option<&'a Path>) -> anyhow::Result<Junit<'a>> {
    inspect(out).map_err(output_error)?;
    let Some(j) = junit else {
        return Ok(Junit::None);
    };
    let (jl, ol) = (super::input::lexical(j), super::input::lexical(out));
    let Ok(rel) = jl.strip_prefix(&ol) else {
        if ol.starts_with(&jl) {
            return Err(bad(format!(
                "--junit {} and --out {}: the directory would be inside the file; give --junit \
                 another path",
                j.display(),
                out.display()
            )));
        }
        check_junit_target(j).map_err(output_error)?;
        return Ok(Junit::Own(j));
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let first = parts.first().map(String::as_str);
    if first
        .is_none_or(|f| SWEEP_FILES.contains(&f) || f == crate::shell::report::manifest::MANIFEST)
        || parts.iter().any(|p| p.starts_with('.'))
    {
        return Err(bad(format!(
            "--junit {}: inside --out {} it would take the place of a file or directory the sweep \
             writes there ({}, {}) or a hidden one; give it another name",
            j.display(),
            out.display(),
            SWEEP_FILES.join(", "),
            crate::shell::report::manifest::MANIFEST
        )));
    }
    // The directory's check (its manifest lists the report with its digest) covers the file.
    Ok(Junit::InOut(parts.join("/")))
}

/// Writes a sweep's (or a merge's) JUnit report if it lives outside the directory, prints its
/// summary, and says how it ended (its directory is written).
fn finish(json: &SweepJson, out: &Path, junit: &Junit, quiet: bool) -> anyhow::Result<Outcome> {
    if let Junit::Own(junit) = junit {
        write_junit(junit, json).map_err(output_error)?;
    }
    print_sweep_summary(json, out, quiet);
    Ok(if json.passed {
        Outcome::Ok
    } else {
        Outcome::Violated
    })
}

/// A terminal progress bar over the seeds, and the sink that moves it.
fn seeds_bar(seeds: u64) -> (indicatif::ProgressBar, SeedSink) {
    let bar = indicatif::ProgressBar::new(seeds);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos}/{len} seeds [{bar:40}] {per_sec} eta {eta} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let shown = bar.clone();
    let failed = AtomicU64::new(0);
    let sink = SeedSink(Arc::new(move |seed_failed| {
        if seed_failed {
            let n = failed.fetch_add(1, Ordering::Relaxed) + 1;
            shown.set_message(format!("{n} failed"));
        }
        shown.inc(1);
    }));
    (bar, sink)
}

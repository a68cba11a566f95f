//! The shrunk scenarios of a sweep: which failures are shrunk, their files and their names.
//!
//! Owns: shrinking the first seed of each failure signature (at most `MAX_SHRINKS`, in parallel,
//! in a fixed order), each result's path (`shrunk/INVARIANT[-K].toml`), name, description and
//! header, and recording it in `sweep.json`.
//! Does not: shrink one scenario (`shrink`) or write the files (`report::sweep_dir`).

use super::shrink::{self, Target};
use super::summary::{ShrunkInfo, SweepJson};
use super::{freeze, seed_setup, Plan, MAX_SHRINKS};
use crate::check::Invariant;
use rayon::prelude::*;

/// The file name of a group's shrunk scenario, relative to the output directory.
pub fn shrunk_path(invariant: &str, k: usize) -> String {
    if k == 0 {
        format!("shrunk/{invariant}.toml")
    } else {
        format!("shrunk/{invariant}-{}.toml", k + 1)
    }
}

/// `shrunk/NAME.toml` with NAME a plain file name: what [`shrunk_path`] writes.
pub fn is_shrunk_path(p: &str) -> bool {
    p.strip_prefix("shrunk/")
        .and_then(|n| n.strip_suffix(".toml"))
        .is_some_and(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        })
}

/// Shrinks the first failure of each group (at most `MAX_SHRINKS`), in parallel, in a fixed order.
pub fn shrink_groups(plan: &Plan, json: &mut SweepJson) -> Vec<(String, String)> {
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
            let bugs = plan.bugs.names().join(", ");
            let header = format!(
                "Shrunk by `durasim sweep` from {} seed {seed}{}{}: breaks {what}.\nJobs are explicit [[enqueue]] entries once shrunk, faults explicit [[script]] entries; every\nrandom fault rate is 0.\nReproduce: durasim run <this file>{}",
                plan.scenario_file,
                if plan.swarm { " (swarm)" } else { "" },
                if bugs.is_empty() { String::new() } else { format!(" with bug {bugs}") },
                plan.programs.as_ref().map(|p| p.flags()).unwrap_or_default(),
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

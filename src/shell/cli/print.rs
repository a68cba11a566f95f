//! What the shell prints: the human summaries of a run, a verification, a sweep, and the bug
//! switches.
//!
//! Owns: the verdict lines (`PASS`/`FAIL`, the counts, each violated invariant with its first
//! violation and evidence) as a terminal shows them.
//! Does not: decide anything; it prints what `summary.json` and `sweep.json` say.

use crate::check::Sometimes;
use crate::run::RunReport;
use crate::shell::report::summary::{InvariantSummary, Summary};
use crate::sweep::{FaultCoverage, SweepJson};
use crate::vocab::counters::{Counter, Group};
use std::path::Path;

/// `durasim bugs`: every switch, what catches it, where its defect lives, the shipped scenario
/// that shows it, and the defect it plants (`vocab::bugs::TABLE`). `scripts/bug-table.sh` reads
/// the first two columns.
pub fn print_bugs() {
    println!(
        "{:<23} {:<25} {:<13} {:<26} defect",
        "switch", "caught by", "site", "demo"
    );
    for b in crate::vocab::bugs::Bug::ALL {
        let sites: Vec<&str> = b.sites().iter().map(|s| s.name()).collect();
        println!(
            "{:<23} {:<25} {:<13} {:<26} {}",
            b.name(),
            b.caught_by(),
            sites.join("+"),
            b.demo(),
            b.defect()
        );
    }
}

/// Prints the human summary of a run (its times in ms).
pub fn print_summary(s: &Summary, report: &RunReport, dir: &Path, quiet: bool) {
    let _ = report;
    print_summary_in(s, dir, quiet, "ms");
}

/// Prints the human summary of a run whose violations' times are in `unit` (`durasim conform`
/// judges its store's history in µs, and its first violations stay in µs).
pub fn print_summary_in(s: &Summary, dir: &Path, quiet: bool, unit: &str) {
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
    if let Some(roles) = &s.roles {
        // In the pipeline's order.
        let roles: Vec<String> = ["worker", "relay", "consumer"]
            .iter()
            .filter_map(|r| Some((r, roles.get(r)?)))
            .map(|(r, who)| match who.as_str() {
                "durasim" => format!("{r} durasim's own"),
                cmd => format!("{r} EXTERNAL `{cmd}`"),
            })
            .collect();
        println!("  roles      {}", roles.join(", "));
    }
    print_counts(&|c| s.counts.get(c));
    println!(
        "  latency    queueWaitMs p50 {} p95 {} p99 {} | inferenceMs p50 {} | reviewWaitMs p50 {} | depth {}..{}",
        m.queue_wait_ms.p50, m.queue_wait_ms.p95, m.queue_wait_ms.p99, m.inference_ms.p50, m.review_wait_ms.p50, m.queue_depth.min, m.queue_depth.max
    );
    print_verdicts(&s.invariants, unit);
    let unmet: Vec<(&str, &str, &str)> = s
        .unmet_expectations
        .iter()
        .map(|u| (u.field.as_str(), u.expected.as_str(), u.actual.as_str()))
        .collect();
    print_expect(&unmet);
    println!("  outputs    {}", dir.display());
}

/// The counts lines of a run's (or a verified history's) summary: a line per group of counters
/// (jobs, effects, leases with the crashes), `count` giving each counter's figure.
pub fn print_counts(count: &dyn Fn(Counter) -> u64) {
    // A line per group, its counters that have words in the table (`vocab/counters.rs`).
    for group in [Group::Jobs, Group::Effects, Group::Leases] {
        let key = group.key().expect("a group with an object");
        let mut line = format!("  {key:<10}");
        for (c, _) in Counter::of_group(group) {
            if let Some(words) = c.words() {
                line.push_str(&format!(" {words} {} ", count(c)));
            }
        }
        if group == Group::Leases {
            let [w, r, c] = [
                Counter::WorkerCrashes,
                Counter::RelayCrashes,
                Counter::ConsumerCrashes,
            ]
            .map(count);
            line.push_str(&format!(" crashes {w}/{r}/{c} (worker/relay/consumer)"));
        }
        println!("{}", line.trim_end());
    }
}

/// Which `sometimes` properties the history reached (how many times) and which it never did:
/// whether crashes, dedupes, duplicates and the rest happened at all.
pub fn print_sometimes(reached: &[(Sometimes, u64)]) {
    let count = |s: Sometimes| reached.iter().find(|(r, _)| *r == s).map_or(0, |(_, n)| *n);
    let (hit, never): (Vec<Sometimes>, Vec<Sometimes>) =
        Sometimes::ALL.iter().partition(|s| count(**s) > 0);
    let hit: Vec<String> = hit
        .iter()
        .map(|s| format!("{} {}", s.name(), count(*s)))
        .collect();
    let never: Vec<&str> = never.iter().map(|s| s.name()).collect();
    println!(
        "  sometimes  reached: {}",
        if hit.is_empty() {
            "none".into()
        } else {
            hit.join(", ")
        }
    );
    println!(
        "             never: {}",
        if never.is_empty() {
            "none".into()
        } else {
            never.join(", ")
        }
    );
}

/// The expectations line(s): `met`, or each unmet one as (field, expected, actual).
pub fn print_expect(unmet: &[(&str, &str, &str)]) {
    if unmet.is_empty() {
        println!("  expect     met");
    }
    for (field, expected, actual) in unmet {
        println!("  expect     {field}: expected {expected}, got {actual}");
    }
}

/// The verdict block: how many invariants hold, then each violated one with its first violation
/// and the records that prove it. `run` and `verify` print the same block.
pub fn print_verdicts(invariants: &[InvariantSummary], unit: &str) {
    print_verdicts_spelled(invariants, unit, &|s| s.to_string())
}

/// [`print_verdicts`] with each violation's line passed through `spell` (`verify`: the file's own
/// ids in place of the reader's numbers).
pub fn print_verdicts_spelled(
    invariants: &[InvariantSummary],
    unit: &str,
    spell: &dyn Fn(&str) -> String,
) {
    let held = invariants.iter().filter(|i| i.holds).count();
    println!("  invariants {held}/{} hold", invariants.len());
    for i in invariants.iter().filter(|i| !i.holds) {
        let f = i
            .first_violation
            .as_ref()
            .expect("a violated invariant has a first violation");
        let line = format!(
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
        println!("{}", spell(&line));
        for ev in &f.evidence {
            println!("      evidence: {ev}");
        }
    }
}

/// The program flags (` --worker CMD` ...) that end a reproduce line: a shrunk failure
/// reproduces with the same programs.
fn program_flags(reproduce: &str) -> &str {
    [" --worker ", " --relay ", " --consumer "]
        .iter()
        .filter_map(|f| reproduce.find(f))
        .min()
        .map_or("", |i| &reproduce[i..])
}

/// Prints the human summary of a sweep (or a merge).
pub fn print_sweep_summary(json: &SweepJson, out: &Path, quiet: bool) {
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
                    "      shrunk ({} jobs, {} workers, {} faults): durasim run {}{}",
                    sh.to.jobs,
                    sh.to.workers,
                    sh.to.faults,
                    out.join(&sh.path).display(),
                    program_flags(&s.reproduce)
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
        let unreached: Vec<&str> = c
            .probes
            .iter()
            .filter(|p| p.seeds == 0)
            .map(|p| p.name.as_str())
            .collect();
        println!(
            "             probes: {}/{} reached{}{}",
            c.probes_reached,
            c.probes.len(),
            if c.probes_required {
                " (all required)"
            } else {
                ""
            },
            if unreached.is_empty() || c.probes_required {
                String::new()
            } else {
                format!("; never: {}", unreached.join(", "))
            }
        );
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

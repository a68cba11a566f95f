//! Agreement on every shipped scenario (`scenarios/*.toml`, `scenarios/incidents/*.toml`) under
//! every bug switch (`durasim::vocab::bugs::TABLE`) and none: the run's own verdicts, `sometimes`
//! counts and figures against the reference's on the run's history.
//!
//! Owns: the scenario × bug-switch matrix. In the suite each run is capped at
//! [`SUITE_JOBS`] jobs; `DURASIM_REF_JOBS=N` caps at N instead (`0`: each scenario's own number
//! of jobs, capped at 5,000), as docs/testing.md says.
//! Does not: judge (the reference does).

use super::{assert_agree, judge, Reported};
use crate::support::{bug_switches, enable_bug, load_file, scenario_files, toml_files};
use durasim::run::{run_once, RunRequest};
use std::path::PathBuf;

/// Jobs a run of the suite's matrix is capped at.
const SUITE_JOBS: u64 = 60;

/// The cap on each run's jobs: the suite's, or `DURASIM_REF_JOBS`.
fn job_cap(default_jobs: u64) -> u64 {
    match std::env::var("DURASIM_REF_JOBS")
        .ok()
        .map(|v| v.parse::<u64>())
    {
        None => SUITE_JOBS.min(default_jobs),
        Some(Ok(0)) => default_jobs.min(5_000),
        Some(Ok(n)) => n.min(default_jobs),
        Some(Err(e)) => panic!("DURASIM_REF_JOBS: {e}"),
    }
}

/// Every shipped scenario file.
fn shipped() -> Vec<PathBuf> {
    let mut files = scenario_files();
    files.extend(toml_files("scenarios/incidents"));
    files
}

#[test]
fn every_shipped_scenario_under_every_bug_switch_agrees_with_the_reference() {
    let mut runs = 0;
    for path in shipped() {
        let s = load_file(&path);
        let bugs = std::iter::once(None).chain(bug_switches().iter().map(|b| Some(b.name)));
        for bug in bugs {
            let mut request = RunRequest::for_scenario(&s);
            request.jobs = Some(job_cap(s.arrivals.jobs));
            request.keep_trace = true;
            if let Some(b) = bug {
                enable_bug(&mut request.bugs, b);
            }
            let report = run_once(&s, &request, None);
            let records = report.trace.as_deref().expect("the run kept its trace");
            let reference = judge(
                records,
                Some(&report.outcome.names),
                Some(Reported::of(&report.metrics)),
            );
            let what = format!("{} --bug {}", path.display(), bug.unwrap_or("(none)"));
            assert_agree(&what, records, &report.check, &reference);
            runs += 1;
        }
    }
    assert!(runs >= 40 * 27, "{runs} runs");
}

/// Swarm seed 65488 (durasim's queue with a retry guard by id, a bounded DLQ): job 17 is acked,
/// revived by a zombie's retry the guard takes, dead-lettered, and a later call refused as
/// dead-lettered. Both checkers judge the refusal against what the job became since: the
/// violations are the revival (`terminal_once`), the stale write (`fenced_writes`) and the DLQ's
/// loss (`no_silent_drop`), which the seed's hazards tolerate; none of `rejection_justified`.
#[test]
fn a_refusal_of_a_revived_job_agrees_with_the_reference() {
    swarm_seed_agrees(65488, "dead_lettered", "terminal_once");
}

/// Swarm seed 318304 (durasim's queue, a sweeper writing by id a gap after its read): job 12's
/// holder renews its lease after the sweeper read it expired, the sweeper's write records the
/// lease's end while it is live (`recorded_values_match`, which the rescue race tolerates), and
/// the holder's next calls are refused as ready. Both checkers judge those refusals as borne out
/// by the recorded expiry: none of `rejection_justified`.
#[test]
fn a_refusal_after_a_rescue_race_agrees_with_the_reference() {
    swarm_seed_agrees(318304, "ready", "recorded_values_match");
}

/// Runs the configuration swarm's `seed` as the sweep does, with its whole history kept; the
/// history still holds a call refused as `refused` (else the seed changed shape), both checkers
/// agree on it, and they find `expected` but not `rejection_justified`.
fn swarm_seed_agrees(seed: u64, refused: &str, expected: &str) {
    let space = "scenarios/swarm-everything.toml";
    let mut plan = durasim::sweep::Plan::new(load_file(space), space, (seed, seed + 1));
    plan.swarm = true;
    let (s, mut request, _) = durasim::sweep::seed_setup(&plan, seed);
    request.trace_filter = None;
    let report = run_once(&s, &request, None);
    let records = report.trace.as_deref().expect("the run kept its trace");
    let shaped = records.iter().any(|r| {
        matches!(&r.event, durasim::history::Event::Rejected { reason, .. } if *reason == refused)
    });
    assert!(
        shaped,
        "seed {seed}: the history changed shape: {:?}",
        report.check.violated()
    );
    let reference = judge(
        records,
        Some(&report.outcome.names),
        Some(Reported::of(&report.metrics)),
    );
    assert_agree(
        &format!("swarm seed {seed}"),
        records,
        &report.check,
        &reference,
    );
    let found: Vec<&str> = reference.violated().iter().map(|i| i.name()).collect();
    assert!(found.contains(&expected), "seed {seed}: {found:?}");
    assert!(
        !found.contains(&"rejection_justified"),
        "seed {seed}: {found:?}"
    );
}

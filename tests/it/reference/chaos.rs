//! Agreement on swept chaos seeds: `scenarios/chaos.toml` at consecutive seeds, every seed under
//! one bug switch or none in turn (seed k: none when k is a multiple of the table's length + 1,
//! else switch k mod (length + 1)), so the sweep covers the clean runs and every switch.
//!
//! Owns: the seed sweep. The suite runs [`SUITE_SEEDS`] seeds; `DURASIM_REF_SEEDS=N` runs N
//! (docs/testing.md: the full count is 10,000), from `DURASIM_REF_SEED0` (default 0).
//! Does not: judge (the reference does).

use super::{assert_agree, judge, Reported};
use crate::support::{bug_switches, enable_bug, load};
use durasim::run::{run_once, RunRequest};

/// Seeds the suite sweeps.
const SUITE_SEEDS: u64 = 150;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse().unwrap_or_else(|e| panic!("{name}={v}: {e}"))
    })
}

#[test]
fn chaos_seeds_with_and_without_bug_switches_agree_with_the_reference() {
    let s = load("chaos");
    let seeds = env_number("DURASIM_REF_SEEDS", SUITE_SEEDS);
    let first = env_number("DURASIM_REF_SEED0", 0);
    let bugs = bug_switches();
    let mut violated = 0;
    for seed in first..first + seeds {
        let mut request = RunRequest::for_scenario(&s);
        request.seed = seed;
        request.keep_trace = true;
        let turn = (seed % (bugs.len() as u64 + 1)) as usize;
        let bug = turn.checked_sub(1).map(|b| bugs[b].name);
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
        let what = format!("chaos seed {seed} --bug {}", bug.unwrap_or("(none)"));
        assert_agree(&what, records, &report.check, &reference);
        violated += !reference.violated().is_empty() as u64;
    }
    if seeds != SUITE_SEEDS {
        println!("reference: {seeds} chaos seeds from {first} agree ({violated} with a violation)");
    }
}

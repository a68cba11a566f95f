//! The slow heartbeat (`[faults] slow_heartbeat`, `[[script]] fault = "slow_heartbeat"`): a
//! fault added through the fault kinds' table (`vocab/faults.rs`) and the worker model alone.
//! What it causes is caught where a bug makes it harmful, it replays frozen, and off it changes
//! no trace.

use crate::support::{freeze_run, load, parse, run_traced as run, sometimes, Held};
use durasim::check::{Invariant, Sometimes};
use durasim::history::Event;
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;

/// Four workers, a lease of 1000 ms renewed every 300 ms, extractions of 900 ms, nothing else
/// going wrong; `faults` is appended.
fn random(faults: &str) -> Scenario {
    parse(&format!(
        "name = \"t\"\nseed = 7\n[workers]\ncount = 4\n[queue]\nlease_ms = 1000\nheartbeat_ms = 300\n\
         [stages]\ninference_ms = {{ dist = \"constant\", value = 900 }}\n\
         [arrivals]\njobs = 200\ninterarrival_ms = {{ dist = \"constant\", value = 40 }}\n\
         [faults]\n{faults}\n"
    ))
}

const SLOW: &str =
    "slow_heartbeat = 0.3\nslow_heartbeat_ms = { dist = \"uniform\", min = 400, max = 1500 }";

#[test]
fn a_late_renewal_is_refused_by_the_fence_and_caught_without_it() {
    let s = load("slow-heartbeat");
    let clean = run(&s, None);
    assert!(clean.check.holds(), "{:?}", clean.check.violated());
    let trace = clean.trace.as_ref().unwrap();
    let delayed: Vec<_> = trace
        .iter()
        .filter_map(|r| match &r.event {
            Event::Held(h) if h.fault == Held::SlowHeartbeat => Some((r.at, h.ms)),
            _ => None,
        })
        .collect();
    assert_eq!(
        delayed,
        vec![(300, 1200)],
        "the first heartbeat, held 1200 ms"
    );
    let broken = run(&s, Some("no_fencing"));
    let v = broken.check.verdict(Invariant::FencedWrites);
    assert!(v.count > 0, "no_fencing after a slow heartbeat is caught");
    let first = v.first.as_ref().unwrap();
    assert_eq!(first.at, 1500, "at the late renewal: {}", first.message);
    assert!(first.message.contains("heartbeat"), "{}", first.message);
}

#[test]
fn random_slow_heartbeats_expire_leases_and_only_a_missing_fence_makes_them_harmful() {
    let s = random(SLOW);
    let r = run(&s, None);
    assert!(r.check.holds(), "{:?}", r.check.violated());
    let delayed = sometimes(&r, Sometimes::Held(Held::SlowHeartbeat));
    assert!(delayed > 10, "slow heartbeats struck: {delayed}");
    assert!(sometimes(&r, Sometimes::LeaseExpired) > 0);
    assert!(sometimes(&r, Sometimes::StaleFenceRejected) > 0);
    assert_eq!(r.metrics.held.get(Held::SlowHeartbeat), delayed);
    assert_eq!(r.check.held_figures.get(Held::SlowHeartbeat), delayed);

    let broken = run(&s, Some("no_fencing"));
    assert!(broken.check.verdict(Invariant::FencedWrites).count > 0);
    // Without the fault the same bug does no harm here: no holder is ever late.
    let calm = run(&random(""), Some("no_fencing"));
    assert!(calm.check.holds(), "{:?}", calm.check.violated());
}

#[test]
fn off_it_changes_no_trace_and_on_it_moves_no_other_draw() {
    let base = run(&random(""), None).outcome.trace_hash;
    let zero =
        random("slow_heartbeat = 0.0\nslow_heartbeat_ms = { dist = \"constant\", value = 5000 }");
    assert_eq!(run(&zero, None).outcome.trace_hash, base);
    // Its draws come from the attempt's spare slots: a run with it on draws every other fault
    // (here: stalls and pauses) where the run without it did.
    let others = "stall = 0.1\npause = 0.1";
    let without = run(&random(others), None);
    let with = run(&random(&format!("{others}\n{SLOW}")), None);
    // Each worker's attempts draw the same plans (the jobs they get differ, as the timing does).
    let first_stall_of_each_worker = |r: &RunReport| {
        let mut firsts = std::collections::BTreeMap::new();
        for x in r.trace.as_ref().unwrap() {
            if let Event::Held(e) = &x.event {
                if e.fault == Held::Stall {
                    firsts.entry(e.worker.0).or_insert(e.ms);
                }
            }
        }
        firsts
    };
    let stalls = first_stall_of_each_worker(&without);
    assert!(stalls.len() >= 3, "most workers stalled: {stalls:?}");
    assert_eq!(first_stall_of_each_worker(&with), stalls);
    assert_ne!(with.outcome.trace_hash, without.outcome.trace_hash);
}

#[test]
fn a_run_with_slow_heartbeats_freezes_into_script_entries_that_replay() {
    let s = random(SLOW);
    let mut request = RunRequest::for_scenario(&s);
    request.keep_trace = true;
    let report = run_once(&s, &request, None);
    let frozen = freeze_run(&s, &request, &report, "t.toml").unwrap();
    assert!(
        frozen.text.contains("fault = \"slow_heartbeat\""),
        "{}",
        frozen.text
    );
    assert!(
        frozen.text.contains("slow_heartbeat_ms = "),
        "{}",
        frozen.text
    );
    let again = Scenario::parse("frozen.toml", &frozen.text).unwrap();
    assert_eq!(again.faults.held(Held::SlowHeartbeat).rate, 0.0);
    let replay = run_once(&again, &RunRequest::for_scenario(&again), None);
    assert_eq!(replay.outcome.trace_hash, report.outcome.trace_hash);
}

#[test]
fn a_script_length_belongs_to_its_fault() {
    let e = Scenario::parse(
        "t.toml",
        "name = \"t\"\n[[script]]\nat_ms = 0\nfault = \"pause\"\njob = 0\nslow_heartbeat_ms = 5\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "script[0].slow_heartbeat_ms", "{e}");
    assert_eq!(e.line, Some(6), "{e}");
    let e = Scenario::parse(
        "t.toml",
        "name = \"t\"\n[[script]]\nat_ms = 0\nfault = \"slow_heartbeat\"\njob = 0\n",
    )
    .unwrap_err();
    assert!(e.message.contains("needs `slow_heartbeat_ms`"), "{e}");
    let e =
        Scenario::parse("t.toml", "name = \"t\"\n[faults]\nslow_heartbeat = 2.0\n").unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.line),
        ("faults.slow_heartbeat", Some(3)),
        "{e}"
    );
}

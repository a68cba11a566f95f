//! Every shipped scenario is a regression test; determinism; every bug switch is caught on
//! chaos.toml (on the scenario that shows it: `tests/it/bug_table.rs`).

use crate::support::Counter;
use crate::support::{bug_switches, enable_bug, load, load_file, root, scenario_files, toml_files};
use durasim::check::Invariant;
use durasim::run::{check_expectations, run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;
use durasim::vocab::bugs::Bug;
use std::path::PathBuf;

fn run(s: &Scenario, request: &RunRequest) -> RunReport {
    run_once(s, request, None)
}

/// The bench scenario is run at a reduced size here; full size is the benchmark's job.
fn request_for(s: &Scenario) -> RunRequest {
    let mut r = RunRequest::for_scenario(s);
    if s.name == "bench-pipeline" {
        r.jobs = Some(5_000);
    }
    r
}

#[test]
fn the_contract_scenarios_all_ship() {
    let names: Vec<String> = scenario_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    for required in [
        "incident-crash-before-ack",
        "failure-1-retry-storm",
        "failure-2-nondeterminism",
        "failure-3-dual-write",
        "failure-4-tenant-collision",
        "zombie-worker",
        "relay-republish",
        "deadline-cancel",
        "dlq-reprocess",
        "payload-conflict",
        "synthetic-12",
        "chaos",
        "bench-pipeline",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "scenarios/{required}.toml is missing"
        );
    }
}

/// The folders whose scenario files `every_shipped_scenario_meets_its_expectations` runs: the
/// bundled scenarios, and the conformance harness's pgmq scenarios (simulated here under their
/// profile; `durasim-conform`'s ignored PostgreSQL test runs them on real pgmq), and the recorded
/// queues' workloads under their profiles (`recorders::*` compares them with the real queues).
const EXPECTATIONS_RUN_HERE: [&str; 4] = [
    "scenarios",
    "scenarios/explore",
    "scenarios/reality",
    "crates/conform/scenarios/pgmq",
];

/// The folders whose files other modules run against their `[expect]` blocks, with more checks.
const EXPECTATIONS_RUN_ELSEWHERE: [(&str, &str); 2] = [
    (
        "scenarios/incidents",
        "incidents::every_incident_shows_its_violation_and_every_fix_holds",
    ),
    (
        "scenarios/validation",
        "queueing_theory (each file's [expect] block, then its figures against theory)",
    ),
];

#[test]
fn every_shipped_scenario_meets_its_expectations() {
    for path in EXPECTATIONS_RUN_HERE.iter().flat_map(toml_files) {
        let s = load_file(&path);
        assert!(
            !s.description.trim().is_empty(),
            "{} states its point in `description`",
            s.name
        );
        assert_ne!(
            s.expect,
            Default::default(),
            "{} has an [expect] block",
            s.name
        );
        let report = run(&s, &request_for(&s));
        let unmet = check_expectations(s.expectations(), &report);
        assert!(unmet.is_empty(), "{}: unmet expectations {unmet:?}", s.name);
    }
}

/// Every folder of the repository that holds scenario files (`scenarios/` and a crate's
/// `scenarios/`, at any depth) is run against its `[expect]` blocks by a test: a new folder
/// cannot go unrun.
#[test]
fn every_folder_of_scenario_files_is_run_against_its_expectations() {
    fn folders_with_toml(dir: PathBuf, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let mut has_toml = false;
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                folders_with_toml(p, out);
            } else {
                has_toml |= p.extension().is_some_and(|x| x == "toml");
            }
        }
        if has_toml {
            out.push(dir.strip_prefix(root()).unwrap().display().to_string());
        }
    }
    let mut found = Vec::new();
    folders_with_toml(root().join("scenarios"), &mut found);
    for c in std::fs::read_dir(root().join("crates")).unwrap() {
        folders_with_toml(c.unwrap().path().join("scenarios"), &mut found);
    }
    found.sort();
    let mut run: Vec<String> = EXPECTATIONS_RUN_HERE
        .iter()
        .copied()
        .chain(EXPECTATIONS_RUN_ELSEWHERE.iter().map(|(f, _)| *f))
        .map(str::to_string)
        .collect();
    run.sort();
    assert_eq!(
        found, run,
        "a folder of scenario files that no test runs: add it to EXPECTATIONS_RUN_HERE, or name \
         the test that runs it in EXPECTATIONS_RUN_ELSEWHERE"
    );
}

#[test]
fn same_seed_gives_the_same_trace_hash() {
    for path in scenario_files() {
        let s = load_file(&path);
        if s.bugs.contains(Bug::NondeterministicStep) {
            continue; // that scenario exists to diverge
        }
        let r = request_for(&s);
        let a = run(&s, &r).outcome.trace_hash;
        let b = run(&s, &r).outcome.trace_hash;
        assert_eq!(a, b, "{} is not deterministic", s.name);
    }
}

/// Golden hashes: a dependency update that changes random draws, or any change of behaviour,
/// shows up here. Update them only in a commit that says why.
#[test]
fn golden_trace_hashes() {
    let cases = [
        ("incident-crash-before-ack", None, 1, "a12fc0682193dc23"),
        ("chaos", None, 0, "a8ada98a69bed6f9"),
        ("bench-pipeline", Some(5_000), 42, "85ed9cd2c751f317"),
    ];
    for (name, jobs, seed, golden) in cases {
        let s = load(name);
        let mut r = RunRequest::for_scenario(&s);
        r.seed = seed;
        r.jobs = jobs;
        let hash = format!("{:016x}", run(&s, &r).outcome.trace_hash);
        assert_eq!(
            hash, golden,
            "golden trace hash of {name} seed {seed} changed"
        );
    }
}

#[test]
fn different_seeds_give_different_traces() {
    let s = load("chaos");
    let mut hashes: Vec<u64> = (0..20)
        .map(|seed| {
            let mut r = RunRequest::for_scenario(&s);
            r.seed = seed;
            run(&s, &r).outcome.trace_hash
        })
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    assert_eq!(hashes.len(), 20);
}

#[test]
fn the_nondeterministic_step_diverges_between_runs_of_one_seed() {
    let s = load("failure-2-nondeterminism");
    let r = RunRequest::for_scenario(&s);
    assert_ne!(
        run(&s, &r).outcome.trace_hash,
        run(&s, &r).outcome.trace_hash
    );
    let fixed = s
        .edited(|f| f.bugs.remove(Bug::NondeterministicStep))
        .unwrap();
    let r = RunRequest::for_scenario(&fixed);
    assert_eq!(
        run(&fixed, &r).outcome.trace_hash,
        run(&fixed, &r).outcome.trace_hash
    );
}

/// A short sweep of chaos.toml with each switch: every one is caught within the first 40 seeds,
/// and no seed fails without a switch.
#[test]
fn chaos_catches_every_bug_switch_within_a_few_seeds() {
    let s = load("chaos");
    let seeds = 0..40u64;
    for seed in seeds.clone() {
        let mut r = RunRequest::for_scenario(&s);
        r.seed = seed;
        let report = run(&s, &r);
        assert!(
            report.check.holds(),
            "chaos seed {seed} fails with no bug: {:?}",
            report.check.first_violation()
        );
    }
    for b in bug_switches().iter().filter(|b| b.caught_by != "replay") {
        let invariant = Invariant::parse(b.caught_by).unwrap();
        let caught = seeds.clone().find(|&seed| {
            let mut r = RunRequest::for_scenario(&s);
            r.seed = seed;
            enable_bug(&mut r.bugs, b.name);
            run(&s, &r).check.verdict(invariant).count > 0
        });
        assert!(
            caught.is_some(),
            "{} not caught by {} in chaos seeds 0..40",
            b.name,
            b.caught_by
        );
    }
}

#[test]
fn synthetic_12_keeps_three_numbers_per_document_apart() {
    let s = load("synthetic-12");
    let report = run(&s, &RunRequest::for_scenario(&s));
    let m = &report.metrics;
    assert_eq!(m.inference.stats().count, 12);
    assert_eq!((m.inference.stats().min, m.inference.stats().max), (40, 40));
    assert_eq!(
        (m.review_wait.stats().min, m.review_wait.stats().max),
        (90, 90)
    );
    assert_eq!(m.queue_wait.stats().count, 12);
    assert!(
        m.queue_wait.stats().max > 0,
        "queue wait is the number that reflects real control logic"
    );
    let depths: Vec<u64> = m.depth.iter().map(|(_, d)| *d).collect();
    assert_eq!(
        depths,
        vec![1, 2, 3, 4, 6, 7, 6, 5, 4, 3, 2, 1],
        "peaks mid-batch"
    );
}

// ---- beyond the chapter (issue 6) -------------------------------------------------------------

/// A full DLQ evicts its oldest entries; each eviction before a reprocess is a lost job, which
/// the checker reports under no_silent_drop from the `dlq_evicted` records alone.
#[test]
fn dlq_eviction_is_a_silent_drop_and_a_sized_dlq_holds() {
    let s = load("dlq-eviction");
    let r = run(&s, &RunRequest::for_scenario(&s));
    assert_eq!(r.check.violated(), vec![Invariant::NoSilentDrop]);
    let v = r.check.verdict(Invariant::NoSilentDrop);
    assert_eq!(
        (v.count, r.metrics.counts.get(Counter::DlqEvicted)),
        (20, 20)
    );
    let first = v.first.as_ref().unwrap();
    assert_eq!(
        first.job.map(|j| j.0),
        Some(0),
        "the oldest entry goes first"
    );
    assert!(first.message.contains("evicted"), "{}", first.message);
    assert_eq!(r.metrics.counts.get(Counter::DlqSizeMax), 10);

    let safe = load("dlq-capacity-safe");
    let r = run(&safe, &RunRequest::for_scenario(&safe));
    assert!(r.check.holds(), "{:?}", r.check.first_violation());
    assert_eq!(
        (
            r.metrics.counts.get(Counter::DlqEvicted),
            r.metrics.counts.get(Counter::DlqSizeMax)
        ),
        (0, 30)
    );
}

/// A consumer with a bounded dedupe window: a republish inside it is absorbed, one past its end
/// is applied again and no_duplicate_effect catches it; a window longer than the relay's worst
/// recovery holds.
#[test]
fn a_republish_after_the_dedupe_window_slips_through_and_is_caught() {
    let s = load("dedupe-window-slip");
    let r = run(&s, &RunRequest::for_scenario(&s));
    assert_eq!(r.check.violated(), vec![Invariant::NoDuplicateEffect]);
    let first = r
        .check
        .verdict(Invariant::NoDuplicateEffect)
        .first
        .clone()
        .unwrap();
    assert_eq!(
        first.at, 1250,
        "the second republish, 1200 ms after the first sighting"
    );
    assert_eq!(
        (
            r.metrics.counts.get(Counter::ConsumerApplied),
            r.metrics.counts.get(Counter::ConsumerDuplicates)
        ),
        (2, 1)
    );
    let safe = load("dedupe-window-safe");
    let r = run(&safe, &RunRequest::for_scenario(&safe));
    assert!(r.check.holds(), "{:?}", r.check.first_violation());
    assert_eq!(r.metrics.counts.get(Counter::ConsumerDuplicates), 2);
}

/// The swarm sweep of dedupe-window-sweep.toml: each seed records the window and recovery delay
/// it drew, windows shorter than one recovery fail, and windows of three recoveries or more hold.
#[test]
fn the_dedupe_window_sweep_separates_safe_and_unsafe_settings() {
    use durasim::sweep::{run_seed, Plan};
    let s = load("dedupe-window-sweep");
    let mut plan = Plan::new(s, "scenarios/dedupe-window-sweep.toml", (0, 120));
    plan.swarm = true;
    let (mut short_failed, mut short, mut long_failed) = (0, 0, 0);
    for seed in 0..120 {
        let r = run_seed(&plan, seed);
        let d = r.swarm.expect("a swarm seed records its draw");
        let ratio = d.dedupe_window_ms.unwrap() as f64 / d.relay_restart_ms.unwrap() as f64;
        let failed = r
            .failures
            .iter()
            .any(|f| f.invariant == "no_duplicate_effect");
        assert!(
            r.failures
                .iter()
                .all(|f| f.invariant == "no_duplicate_effect"),
            "seed {seed}: {:?}",
            r.failures
        );
        if ratio < 1.0 {
            short += 1;
            short_failed += failed as u32;
        } else if ratio >= 3.0 {
            long_failed += failed as u32;
        }
    }
    assert!(
        short > 10 && short_failed * 10 >= short * 8,
        "{short_failed} of {short}"
    );
    assert_eq!(long_failed, 0);
}

/// An operator automation reprocessing the same dead document in a loop: the per-tenant limit
/// refuses it past 3 per 5 s (every refusal recorded with its operator and reason), leaves the
/// other tenant alone, and loses nothing. Without the limit the loop runs every time.
#[test]
fn a_reprocess_loop_is_rate_limited_per_tenant_and_nothing_is_lost() {
    use durasim::history::Event;
    let s = load("reprocess-rate-limit");
    let mut request = RunRequest::for_scenario(&s);
    request.keep_trace = true;
    let r = run(&s, &request);
    assert!(r.check.holds(), "{:?}", r.check.first_violation());
    let c = &r.metrics.counts;
    assert_eq!(
        (
            c.get(Counter::Reprocessed),
            c.get(Counter::ReprocessRateLimited)
        ),
        (7, 14)
    );
    let refusals: Vec<_> = r
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|rec| match &rec.event {
            Event::ReprocessRefused {
                operator, reason, ..
            } => Some((operator.as_deref().unwrap_or(""), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(refusals.len(), 14);
    assert!(refusals
        .iter()
        .all(|&(o, reason)| o == "dlq-bot" && reason == "rate_limited"));
    assert_eq!(r.metrics.counts.get(Counter::Unfinished), 0);

    let unlimited = s.edited(|f| f.dlq = Default::default()).unwrap();
    let r = run(&unlimited, &RunRequest::for_scenario(&unlimited));
    assert!(r.check.holds());
    let c = &r.metrics.counts;
    assert_eq!(
        (
            c.get(Counter::Reprocessed),
            c.get(Counter::ReprocessRefused)
        ),
        (21, 0)
    );
}

/// Outbox retention: the table levels off at arrival rate x retention instead of growing with
/// every event ever published, and pruning published rows breaks no invariant.
#[test]
fn outbox_retention_bounds_the_rows_and_without_it_they_grow() {
    let s = load("outbox-retention");
    let r = run(&s, &RunRequest::for_scenario(&s));
    assert!(r.check.holds(), "{:?}", r.check.first_violation());
    let c = &r.metrics.counts;
    let rows = [
        Counter::OutboxRowsMax,
        Counter::OutboxPruned,
        Counter::OutboxRowsFinal,
    ];
    assert_eq!(rows.map(|o| c.get(o)), [505, 2505, 495]);
    let last_half: Vec<u64> = r.metrics.outbox_rows[10..]
        .iter()
        .map(|(_, n)| *n)
        .collect();
    assert!(
        last_half.iter().all(|&n| (400..=520).contains(&n)),
        "{last_half:?}"
    );

    let forever = s.edited(|f| f.outbox = Default::default()).unwrap();
    let r = run(&forever, &RunRequest::for_scenario(&forever));
    assert!(r.check.holds());
    assert_eq!(
        (
            r.metrics.counts.get(Counter::OutboxRowsMax),
            r.metrics.counts.get(Counter::OutboxPruned)
        ),
        (3000, 0)
    );
    let rows: Vec<u64> = r.metrics.outbox_rows.iter().map(|(_, n)| *n).collect();
    assert!(rows.windows(2).all(|w| w[0] <= w[1]), "never shrinks");
}

/// A provider outage with and without jitter: without it the retries come in synchronised
/// waves (most 100 ms windows of the outage are silent) and the herd returns at once when the
/// provider recovers; with full jitter they are spread out and the queue stays empty after.
#[test]
fn retry_storms_are_synchronised_without_jitter_and_spread_with_it() {
    let none = load("retry-storm-no-jitter");
    let full = load("retry-storm-full-jitter");
    let a = run(&none, &RunRequest::for_scenario(&none));
    let b = run(&full, &RunRequest::for_scenario(&full));
    for r in [&a, &b] {
        assert!(r.check.holds(), "{:?}", r.check.first_violation());
        assert_eq!(r.metrics.counts.get(Counter::Acked), 1000);
    }
    let (wa, wb) = (&a.metrics.retries, &b.metrics.retries);
    assert!(wa.quiet_windows_in_outage.unwrap() > 50, "{wa:?}");
    assert_eq!(wb.quiet_windows_in_outage, Some(0), "{wb:?}");
    assert!(wa.depth_max_after_recovery.unwrap() > 100);
    assert_eq!(wb.depth_max_after_recovery, Some(0));
    assert!(wa.drained_at_ms > wb.drained_at_ms);
    // Measured, not the folklore: the worker pool caps the rate, and full jitter retries sooner.
    let (ca, cb) = (&a.metrics.counts, &b.metrics.counts);
    let (total, peak) = (Counter::RetriesTotal, Counter::RetriesPeakPerS);
    assert!(cb.get(total) > ca.get(total) && cb.get(peak) >= ca.get(peak));
    // The waves: every retry-carrying window of the capped phase is followed by silence.
    let per_s = a.metrics.retries_per_s();
    assert_eq!(per_s.iter().sum::<u64>(), ca.get(total));
}

/// A noisy tenant's burst starves the others in a first-come-first-served queue: the per-tenant
/// queueWaitMs shows it (and without the burst they wait nothing).
#[test]
fn a_noisy_tenants_burst_shows_in_the_other_tenants_queue_wait() {
    let s = load("noisy-tenant");
    let r = run(&s, &RunRequest::for_scenario(&s));
    assert!(r.check.holds(), "{:?}", r.check.first_violation());
    let t = &r.metrics.tenants;
    assert_eq!(
        t.iter().map(|t| t.enqueued).collect::<Vec<_>>(),
        [3500, 500, 500]
    );
    for quiet in &t[1..] {
        assert_eq!(quiet.acked, 500);
        assert!(
            quiet.queue_wait.stats().p95 > 15_000,
            "{:?}",
            quiet.queue_wait.stats()
        );
    }
    let calm = s.edited(|f| f.burst.clear()).unwrap();
    let r = run(&calm, &RunRequest::for_scenario(&calm));
    for quiet in &r.metrics.tenants[1..] {
        assert_eq!(quiet.queue_wait.stats().p95, 0);
    }
}

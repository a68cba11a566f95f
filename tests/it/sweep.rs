//! Sweeps: determinism across threads and shards, bug switches caught, shrinking that
//! reproduces, panic isolation, the coverage gate, swarm mode and `run --freeze`.

use crate::support::{bug_switches, sweep_json_without_timing};
use crate::support::{durasim, enable_bug, load_file as load, read, shrunk_files, temp_path};
use durasim::check::Invariant;
use durasim::run::{check_expectations, run_once, RunRequest};
use durasim::scenario::Scenario;
use durasim::sweep::{self, Plan, SweepJson, SweepOutput};
use std::path::Path;

const CHAOS: &str = "scenarios/chaos.toml";

fn plan(path: &str, seeds: (u64, u64), bug: Option<&str>) -> Plan {
    let mut p = Plan::new(load(path), path, seeds);
    if let Some(b) = bug {
        enable_bug(&mut p.bugs, b);
    }
    p
}

/// sweep.json without its wall-clock figures.
fn timeless(j: &SweepJson) -> serde_json::Value {
    let mut v = serde_json::to_value(j).unwrap();
    v.as_object_mut().unwrap().remove("throughput");
    v
}

fn same_output(a: &SweepOutput, b: &SweepOutput) {
    assert_eq!(timeless(&a.json), timeless(&b.json));
    assert_eq!(a.records, b.records);
    assert_eq!(a.files, b.files);
}

#[test]
fn the_result_does_not_depend_on_the_thread_count() {
    let mut p = plan(CHAOS, (0, 48), Some("no_fencing"));
    p.threads = 1;
    let one = sweep::sweep(&p).unwrap();
    p.threads = 2;
    let two = sweep::sweep(&p).unwrap();
    assert!(one.json.seeds_failed > 0);
    assert!(!one.files.is_empty(), "a failure is shrunk");
    same_output(&one, &two);
    let mut clean = plan(CHAOS, (0, 64), None);
    clean.threads = 1;
    let a = sweep::sweep(&clean).unwrap();
    clean.threads = 2;
    let b = sweep::sweep(&clean).unwrap();
    assert!(a.json.passed, "{:#?}", a.json.failures);
    same_output(&a, &b);
}

#[test]
fn streamed_records_come_in_seed_order_with_a_bounded_reorder_buffer() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let mut p = plan(CHAOS, (5, 125), Some("no_fencing"));
    p.threads = 1;
    let whole = sweep::sweep(&p).unwrap();
    for threads in [2, 3] {
        p.threads = threads;
        let finished = Arc::new(AtomicU64::new(0));
        let seen = finished.clone();
        p.progress = Some(sweep::SeedSink(Arc::new(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })));
        let mut streamed = Vec::new();
        let mut most_waiting = 0;
        let swept = sweep::sweep_streaming(&p, |r| {
            // Seeds run but not yet handed on (this one included): what the buffer holds.
            let waiting = finished.load(Ordering::SeqCst) - streamed.len() as u64;
            most_waiting = most_waiting.max(waiting);
            streamed.push(r);
            Ok::<(), std::io::Error>(())
        })
        .unwrap();
        assert_eq!(streamed, whole.records, "{threads} threads");
        assert_eq!(timeless(&swept.json), timeless(&whole.json));
        assert_eq!(swept.files, whole.files);
        assert!(
            most_waiting <= sweep::REORDER_AHEAD_PER_THREAD * threads as u64,
            "{most_waiting} records waited with {threads} threads"
        );
    }
}

#[test]
fn a_sink_that_fails_stops_the_sweep() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let mut p = plan(CHAOS, (0, 2000), None);
    p.threads = 2;
    let ran = Arc::new(AtomicU64::new(0));
    let counter = ran.clone();
    p.progress = Some(sweep::SeedSink(Arc::new(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    })));
    let mut handed = 0;
    let result = sweep::sweep_streaming(&p, |r| {
        handed += 1;
        if r.seed == 9 {
            return Err(std::io::Error::other("disk full"));
        }
        Ok(())
    });
    match result {
        Err(sweep::StreamError::Sink(e)) => assert_eq!(e.to_string(), "disk full"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("the sink's error is returned"),
    }
    assert_eq!(handed, 10, "no record after the refused one");
    let ran = ran.load(Ordering::SeqCst);
    assert!(
        ran <= 10 + sweep::REORDER_AHEAD_PER_THREAD * 2 + 2,
        "{ran} seeds ran after the sink failed at the 10th"
    );
}

#[test]
fn four_shards_merged_equal_the_unsharded_sweep() {
    let whole = temp_path!("whole");
    let o = durasim(&[
        "sweep",
        CHAOS,
        "--seeds",
        "0..40",
        "--bug",
        "no_fencing",
        "--quiet",
        "--out",
        whole.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let mut dirs = Vec::new();
    for i in 0..4 {
        let d = temp_path!(&format!("shard{i}"));
        let shard = format!("{i}/4");
        let o = durasim(&[
            "sweep",
            CHAOS,
            "--seeds",
            "0..40",
            "--bug",
            "no_fencing",
            "--shard",
            &shard,
            "--quiet",
            "--out",
            d.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        dirs.push(d);
    }
    let merged = temp_path!("merged");
    let mut args = vec!["merge", "--quiet", "--out", merged.to_str().unwrap()];
    // Out of order on purpose.
    for d in dirs.iter().rev() {
        args.push(d.to_str().unwrap());
    }
    let o = durasim(&args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        sweep_json_without_timing(&whole),
        sweep_json_without_timing(&merged)
    );
    assert_eq!(
        read(&whole.join("seeds.jsonl")),
        read(&merged.join("seeds.jsonl"))
    );
    assert!(!shrunk_files(&whole).is_empty());
    assert_eq!(shrunk_files(&whole), shrunk_files(&merged));
    // A missing shard is bad input.
    let o = durasim(&[
        "merge",
        "--quiet",
        "--out",
        merged.to_str().unwrap(),
        dirs[0].to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_bug_switch_is_caught_by_a_short_sweep_of_chaos() {
    for b in bug_switches() {
        let mut p = plan(CHAOS, (0, 100), Some(b.name));
        p.shrink = false;
        let out = sweep::sweep(&p).unwrap();
        assert!(!out.json.passed, "{} passed", b.name);
        assert!(
            out.json.failures.iter().any(|g| g.invariant == b.caught_by),
            "{}: expected {}, got {:?}",
            b.name,
            b.caught_by,
            out.json
                .failures
                .iter()
                .map(|g| &g.invariant)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn shrunk_scenarios_reproduce_their_failure() {
    for bug in [
        "no_fencing",
        "naive_dual_write",
        "unbounded_retries",
        "nondeterministic_step",
    ] {
        let p = plan(CHAOS, (0, 16), Some(bug));
        let out = sweep::sweep(&p).unwrap();
        assert!(!out.files.is_empty(), "{bug}: nothing shrunk");
        for g in &out.json.failures {
            for s in &g.signatures {
                let Some(info) = &s.shrunk else { continue };
                let text = &out.files.iter().find(|(p, _)| *p == info.path).unwrap().1;
                let scenario = Scenario::parse(&info.path, text).unwrap();
                assert!(
                    scenario.faults.crash == 0.0
                        && scenario.faults.held.iter().all(|h| h.rate == 0.0)
                        && scenario.faults.transient_error == 0.0
                );
                assert!(
                    scenario.faults.permanent_error == 0.0
                        && scenario.faults.struck.iter().all(|r| *r == 0.0)
                );
                assert!(
                    info.to.jobs <= info.from.jobs && info.to.faults <= info.from.faults,
                    "{bug}: {info:?}"
                );
                let r = run_once(&scenario, &RunRequest::for_scenario(&scenario), None);
                assert_eq!(
                    check_expectations(scenario.expectations(), &r),
                    vec![],
                    "{bug}: {}",
                    info.path
                );
                if let Some(i) = Invariant::parse(&g.invariant) {
                    assert!(r.check.violated().contains(&i), "{bug}: {}", info.path);
                } else {
                    assert_eq!(g.invariant, "replay");
                }
            }
        }
    }
    // And through the binary: `durasim run` on the written file exits 0 (its [expect] is met)
    // and reports the violation.
    let dir = temp_path!("shrunk-run");
    let o = durasim(&[
        "sweep",
        CHAOS,
        "--seeds",
        "0..8",
        "--bug",
        "no_fencing",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let file = dir.join("shrunk/fenced_writes.toml");
    let o = durasim(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        dir.join("run").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let summary = read(&dir.join("run/summary.json"));
    assert!(summary.contains("\"fenced_writes\""), "{summary}");
}

#[test]
fn a_sink_that_panics_ends_the_sweep_with_its_panic_on_any_thread_count() {
    // The sink runs on whichever thread finished the seed that let records go on; its panic
    // must stop the other threads (none may wait for the window forever) and reach the caller.
    for threads in [1, 2, 3] {
        let mut p = plan(CHAOS, (0, 400), None);
        p.threads = threads;
        let handed = std::sync::atomic::AtomicU64::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sweep::sweep_streaming(&p, |r| {
                assert!(r.seed != 7, "sink refuses seed 7");
                handed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<(), std::io::Error>(())
            })
        }));
        assert!(
            result.is_err(),
            "{threads} threads: the panic reaches the caller"
        );
        assert_eq!(
            handed.into_inner(),
            7,
            "{threads} threads: seeds 0..7 were handed on"
        );
    }
}

#[test]
fn sweep_files_are_byte_identical_for_one_two_and_three_threads() {
    // The command line's files, not only the library's values: seeds.jsonl, sweep.json (its
    // throughput aside) and the shrunk scenarios, with a bug switch so seeds fail and shrink.
    let base = temp_path!("threads-bytes");
    let mut dirs = Vec::new();
    for threads in ["1", "2", "3"] {
        let dir = base.join(threads);
        let o = durasim(&[
            "sweep",
            CHAOS,
            "--seeds",
            "3..163",
            "--bug",
            "no_fencing",
            "--threads",
            threads,
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        dirs.push(dir);
    }
    let listing = |d: &Path| {
        let mut files = Vec::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(p) = todo.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap().path();
                if e.is_dir() {
                    todo.push(e);
                } else {
                    files.push(e.strip_prefix(d).unwrap().to_path_buf());
                }
            }
        }
        files.sort();
        files
    };
    let files = listing(&dirs[0]);
    assert!(files.iter().any(|f| f.starts_with("shrunk")), "{files:?}");
    for dir in &dirs[1..] {
        assert_eq!(listing(dir), files, "{}", dir.display());
        for f in &files {
            let (a, b) = (dirs[0].join(f), dir.join(f));
            if f == Path::new("sweep.json") {
                let json = |p: &Path| {
                    let mut v: serde_json::Value =
                        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
                    v.as_object_mut().unwrap().remove("throughput");
                    v
                };
                assert_eq!(json(&a), json(&b), "{}", b.display());
            } else if f == Path::new("durasim-manifest.json") {
                // sweep.json's digest differs with its throughput (wall clock).
                let json = |p: &Path| {
                    let mut v: serde_json::Value =
                        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
                    v["digests"].as_object_mut().unwrap().remove("sweep.json");
                    v
                };
                assert_eq!(json(&a), json(&b), "{}", b.display());
            } else {
                assert!(
                    std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                    "{}",
                    b.display()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_panicking_seed_is_reported_and_the_sweep_goes_on() {
    let mut p = plan(CHAOS, (0, 12), None);
    p.panic_on_seed = Some(5);
    p.threads = 2;
    let out = sweep::sweep(&p).unwrap();
    assert_eq!(out.json.seeds_run, 12);
    assert_eq!(out.json.seeds_failed, 1);
    let g = &out.json.failures[0];
    assert_eq!(
        (
            g.invariant.as_str(),
            g.class.as_str(),
            g.first_seeds.as_slice()
        ),
        ("panic", "crash", &[5u64][..])
    );
    assert!(g.signatures[0]
        .first_message
        .contains("injected test panic at seed 5"));
    assert!(!out.json.passed);
}

#[test]
fn a_configured_fault_that_never_fires_fails_the_coverage_gate() {
    let p = plan("tests/data/sweep-dead-injector.toml", (0, 50), None);
    let out = sweep::sweep(&p).unwrap();
    assert_eq!(out.json.seeds_failed, 0);
    assert!(!out.json.passed);
    assert_eq!(out.json.coverage.gate, "failed");
    assert!(
        out.json
            .coverage
            .problems
            .iter()
            .any(|m| m.contains("fault `crash`")),
        "{:?}",
        out.json.coverage.problems
    );
    let o = durasim(&[
        "sweep",
        "tests/data/sweep-dead-injector.toml",
        "--seeds",
        "0..20",
        "--quiet",
        "--out",
        temp_path!("dead").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("COVERAGE GATE FAILED"));
    // The clean chaos sweep reaches everything its faults imply.
    let out = sweep::sweep(&plan(CHAOS, (0, 200), None)).unwrap();
    assert!(
        out.json.passed,
        "{:?} {:?}",
        out.json.coverage.problems, out.json.failures
    );
    assert!(
        out.json
            .coverage
            .sometimes
            .iter()
            .filter(|s| s.required)
            .count()
            >= 8
    );
}

#[test]
fn swarm_seeds_draw_their_own_settings_and_replay_alone() {
    let s = load(CHAOS);
    let text = "name = \"x\"\n[swarm]\ncrash = [0.0, 0.1]\nstall = [0.0, 0.08]\nrelay_crash = [0.0, 0.1]\nworkers = [1, 8]\nlease_ms = [300, 1200]\nheartbeat_ms = [50, 400]\ncrash_points = [\"after_lease\", \"after_extract\", \"after_commit_before_ack\"]\n";
    let swarm = Scenario::parse("swarm.toml", text).unwrap().swarm.clone();
    let s = s.edited(|f| f.swarm = swarm).unwrap();
    let mut p = Plan::new(s, CHAOS, (0, 24));
    p.swarm = true;
    p.threads = 2;
    let out = sweep::sweep(&p).unwrap();
    let draws: Vec<_> = out
        .records
        .iter()
        .map(|r| r.swarm.clone().unwrap())
        .collect();
    assert!(draws.iter().any(|d| d.workers != draws[0].workers));
    assert!(draws
        .iter()
        .all(|d| d.heartbeat_ms < d.lease_ms && (1..=8).contains(&d.workers)));
    p.threads = 1;
    same_output(&out, &sweep::sweep(&p).unwrap());
    // One seed alone gives the same record as inside the range.
    assert_eq!(sweep::run_seed(&p, 13), out.records[13]);
}

#[test]
fn freeze_writes_an_explicit_scenario_that_replays() {
    let dir = temp_path!("freeze");
    std::fs::create_dir_all(&dir).unwrap();
    let frozen = dir.join("frozen.toml");
    // Constant durations: the frozen run has the same timing, verdicts and counts.
    let o = durasim(&[
        "run",
        "scenarios/incident-crash-before-ack.toml",
        "--quiet",
        "--out",
        dir.join("a").to_str().unwrap(),
        "--freeze",
        frozen.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("replay identical trace"), "{stdout}");
    let o = durasim(&[
        "run",
        frozen.to_str().unwrap(),
        "--quiet",
        "--out",
        dir.join("b").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let s = Scenario::parse("f", &read(&frozen)).unwrap();
    assert_eq!(s.script.len(), 1);
    assert_eq!(s.script[0].attempt, Some(1));
}

/// Drawn durations, every fault kind, relay crashes, collisions: the frozen file (rates 0, the
/// fired faults scripted) still consumes each stream as the seeded run did, so it replays with
/// the same trace hash, which it pins in `[expect] trace_hash`.
#[test]
fn freeze_of_chaos_replays_with_the_identical_trace_hash() {
    let dir = temp_path!("freeze-chaos");
    std::fs::create_dir_all(&dir).unwrap();
    for seed in ["3", "11"] {
        let frozen = dir.join(format!("frozen-{seed}.toml"));
        let a = dir.join(format!("a{seed}"));
        let o = durasim(&[
            "run",
            "scenarios/chaos.toml",
            "--seed",
            seed,
            "--quiet",
            "--out",
            a.to_str().unwrap(),
            "--freeze",
            frozen.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("replay identical trace"), "{stdout}");
        let s = Scenario::parse("f", &read(&frozen)).unwrap();
        assert!(s.script.len() > 5, "chaos fires many faults");
        assert_eq!(s.faults.crash, 0.0);
        let hash = s.expect.trace_hash.clone().expect("pinned");
        let b = dir.join(format!("b{seed}"));
        let o = durasim(&[
            "run",
            frozen.to_str().unwrap(),
            "--quiet",
            "--out",
            b.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        let summary = read(&b.join("summary.json"));
        assert!(summary.contains(&hash), "{hash} not in {summary}");
        assert!(read(&a.join("summary.json")).contains(&hash));
    }
}

/// The most jobs a shrunk scenario may keep (issue 11: "a small scripted scenario, at most ~10
/// jobs").
const SHRUNK_JOBS: u64 = 10;

/// Every bug switch's failures shrink to a small scenario: for each switch, a sweep of 8 chaos
/// seeds from the first one it fails, every failure group (every invariant it breaks, each
/// signature) shrunk, and each shrunk file at most `SHRUNK_JOBS` jobs that still breaks its
/// invariant when run as written. (docs/sweeps.md's table comes from the same sweeps.)
#[test]
fn every_bug_switch_shrinks_to_a_few_jobs() {
    let mut report = Vec::new();
    for b in bug_switches() {
        let first = (0..64)
            .find(|&seed| {
                let mut p = plan(CHAOS, (seed, seed + 1), Some(b.name));
                p.shrink = false;
                !sweep::sweep(&p).unwrap().json.failures.is_empty()
            })
            .unwrap_or_else(|| panic!("{} never fails on chaos seeds 0..64", b.name));
        let p = plan(CHAOS, (first, first + 8), Some(b.name));
        let out = sweep::sweep(&p).unwrap();
        assert!(!out.json.failures.is_empty(), "{}", b.name);
        for g in &out.json.failures {
            for s in &g.signatures {
                let info = s.shrunk.as_ref().unwrap_or_else(|| {
                    panic!(
                        "--bug {}: {} seed {} not shrunk",
                        b.name, g.invariant, s.first_seed
                    )
                });
                report.push(format!(
                    "{} {} seed {}: {} jobs",
                    b.name, g.invariant, s.first_seed, info.to.jobs
                ));
                assert!(
                    info.to.jobs <= SHRUNK_JOBS,
                    "--bug {}: {} seed {} shrank to {:?}",
                    b.name,
                    g.invariant,
                    s.first_seed,
                    info.to
                );
                let text = &out.files.iter().find(|(p, _)| *p == info.path).unwrap().1;
                let scenario = Scenario::parse(&info.path, text).unwrap();
                let r = run_once(&scenario, &RunRequest::for_scenario(&scenario), None);
                assert_eq!(
                    check_expectations(scenario.expectations(), &r),
                    vec![],
                    "{}",
                    info.path
                );
            }
        }
    }
    println!("{}", report.join("\n"));
}

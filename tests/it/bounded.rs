//! Bounded by construction: no accepted input can exhaust the machine or overwrite a user's
//! edit. Issue 26's "What was seen" 1 to 7, each a test named after what it protects.
//!
//! `DURASIM_TEST_BIN=/path/to/durasim cargo test --test it bounded::` runs the tests that go
//! through the binary against another build (an older one, to see each case fail there).

use crate::support::{durasim, durasim_within, lone_durasim, temp_dir, text, write};

/// Case 7: `durasim conform --help` exited 2 when the companion program was missing; its help
/// never needs it.
#[test]
fn conform_help_needs_no_companion_program() {
    let dir = temp_dir!("conform-help");
    for flag in ["--help", "-h"] {
        let o = lone_durasim(&dir, &["conform", flag]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        for needle in [
            "--store",
            "--seed",
            "Exit codes",
            "durasim-conform",
            "cargo build",
        ] {
            assert!(t.contains(needle), "conform {flag}: lacks {needle:?}: {t}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The flags it lists are the harness's own (built beside durasim by `cargo test`).
    let harness = crate::support::durasim(&["conform", "--help"]);
    let shown = text(&harness);
    assert_eq!(harness.status.code(), Some(0), "{shown}");
    for flag in durasim::shell::cli::args::CONFORM_FLAGS
        .split_whitespace()
        .filter(|w| w.starts_with("--"))
    {
        assert!(shown.contains(flag), "the harness has no {flag}: {shown}");
    }
}

/// Case 6: `durasim sweep` panicked (exit 101, no per-seed results) when a run's history held a
/// write whose fence no lease handed out (`sweep/freeze.rs` looked the lease up by job and
/// fence). A defect of the model under test is a verdict of its seed; the sweep goes on.
#[test]
fn an_inconsistent_history_is_a_verdict_not_a_crash_of_the_sweep() {
    use durasim::history::Event;
    use durasim::sweep::{self, freeze::HISTORY_CONSISTENT, Plan};
    /// A model that records its failed attempts with a fence no lease handed out.
    fn foreign_fences(_seed: u64, trace: &mut Vec<durasim::history::Record>) {
        for r in trace.as_mut_slice() {
            if let Event::AttemptFailed { fence, .. } | Event::WorkerCrashed { fence, .. } =
                &mut r.event
            {
                fence.0 += 1_000_000;
            }
        }
    }
    let path = "scenarios/chaos.toml";
    let mut plan = Plan::new(crate::support::load_file(path), path, (0, 12));
    plan.threads = 2;
    plan.edit_history = Some(foreign_fences);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sweep::sweep(&plan).unwrap()
    }))
    .expect("the sweep must not panic on an inconsistent history");
    assert_eq!(out.json.seeds_run, 12);
    assert_eq!(out.records.len(), 12, "every seed has its record");
    let g = out
        .json
        .failures
        .iter()
        .find(|g| g.invariant == HISTORY_CONSISTENT)
        .unwrap_or_else(|| panic!("no {HISTORY_CONSISTENT} group: {:?}", out.json.failures));
    assert_eq!(g.class, "safety");
    assert!(
        g.signatures[0]
            .first_message
            .contains("no lease handed out"),
        "{}",
        g.signatures[0].first_message
    );
    assert!(!out.json.passed);
    // `--freeze` of such a run is refused as a verdict too, never a panic.
    let s = crate::support::load_file(path);
    let mut request = durasim::run::RunRequest::for_scenario(&s);
    request.keep_trace = true;
    let mut report = durasim::run::run_once(&s, &request, None);
    foreign_fences(0, report.trace.as_mut().unwrap());
    let e = crate::support::freeze_run(&s, &request, &report, path).unwrap_err();
    assert!(e.to_string().starts_with("inconsistent history: "), "{e}");
}

/// Case 1: scenarios `check` accepted whose run grew without bound (a relay tick and a depth
/// sample a period over 10^12 virtual ms; a sample a millisecond; a heartbeat a millisecond of a
/// 10^12 ms extraction). Each is refused before any work, naming the fields that multiply and
/// the bound; `--max-events` raises the budget; `check --verbose` prints the estimate.
#[test]
fn a_scenario_whose_run_would_exhaust_the_machine_is_refused_before_it_starts() {
    let dir = temp_dir!("cost-bound");
    let far = write(
        &dir,
        "far.toml",
        "name = \"far\"\n[arrivals]\njobs = 0\n[[enqueue]]\nat_ms = 999999999000\ntenant = \"acme\"\n\
         document = \"d\"\n[run]\ntime_limit_ms = 1000000000000\n",
    );
    let dense = write(
        &dir,
        "dense.toml",
        "name = \"dense\"\n[metrics]\ndepth_sample_ms = 1\n[run]\ntime_limit_ms = 30000000\n",
    );
    let beats = write(
        &dir,
        "beats.toml",
        "name = \"beats\"\n[arrivals]\njobs = 1\n[queue]\nheartbeat_ms = 1\nlease_ms = 10\n\
         [stages]\ninference_ms = { dist = \"constant\", value = 1000000000000 }\n\
         [relay]\ninterval_ms = 1000000000\n[metrics]\ndepth_sample_ms = 1000000000\n\
         [run]\ntime_limit_ms = 1000000000000\n",
    );
    for (file, needles) in [
        (
            &far,
            &[
                "run.time_limit_ms 1000000000000",
                "depth_sample_ms 100",
                "far.toml:9",
            ][..],
        ),
        (
            &dense,
            &[
                "depth_sample_ms 1)",
                "30000001 depth samples",
                "dense.toml:3",
            ][..],
        ),
        (
            &beats,
            &[
                "heartbeats",
                "queue.heartbeat_ms 1",
                "--max-events 1000000000",
            ][..],
        ),
    ] {
        for cmd in [
            &["check", file.as_str()][..],
            &["run", file, "--out", "never"][..],
        ] {
            let o = durasim_within(&dir, cmd, std::time::Duration::from_secs(60));
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {t}");
            for n in needles {
                assert!(t.contains(n), "{cmd:?}: lacks {n:?}: {t}");
            }
        }
    }
    assert!(!dir.join("never").exists());
    // Raised, the budget admits it; the estimate is printed term by term.
    let o = durasim_within(
        &dir,
        &["check", "--verbose", &dense, "--max-events", "4000000000"],
        std::time::Duration::from_secs(60),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for n in [
        "30000001 depth samples",
        "relay ticks",
        "kernel events at most",
        "bytes held",
    ] {
        assert!(t.contains(n), "check --verbose lacks {n:?}: {t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 1: every bundled scenario is within the default budget, and its bound is an upper bound
/// of what its run takes.
#[test]
fn every_bundled_scenario_is_within_the_budget_and_its_bound_holds() {
    let budget = durasim::scenario::Budget::default();
    for path in crate::support::scenario_files() {
        let s = crate::support::load_file(&path);
        let cost = s.cost(None);
        assert_eq!(cost.refusal(budget), None, "{}", path.display());
        if s.name == "bench-pipeline" {
            continue;
        }
        let report = durasim::run::run_once(&s, &durasim::run::RunRequest::for_scenario(&s), None);
        assert!(
            report.outcome.heap_events <= cost.events,
            "{}: {} events, bound {}",
            path.display(),
            report.outcome.heap_events,
            cost.events
        );
        assert!(!report.outcome.over_budget);
    }
}

/// Case 1: a run that passes its budget anyway (the bound counts an unlimited job's attempts as
/// 1000; this one retries for ever) stops there with exit 2 and writes nothing.
#[test]
fn a_run_past_its_budget_stops_with_nothing_written() {
    let dir = temp_dir!("past-budget");
    let forever = write(
        &dir,
        "forever.toml",
        "name = \"forever\"\n[arrivals]\njobs = 1\n[queue]\nmax_attempts = \"unlimited\"\n\
         heartbeat_ms = 1000000\nlease_ms = 2000000\ndeadline_ms = 1000000000000\n\
         [retry]\nbackoff_base_ms = 1\nbackoff_cap_ms = 1\n[faults]\ntransient_error = 1.0\n\
         [relay]\ninterval_ms = 10000000\n[metrics]\ndepth_sample_ms = 10000000\n\
         [run]\ntime_limit_ms = 1000000000\n",
    );
    let o = durasim_within(
        &dir,
        &["run", &forever, "--out", "out", "--max-events", "50000"],
        std::time::Duration::from_secs(60),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("passed --max-events 50000"), "{t}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(left, ["forever.toml"], "partial output left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 1: a run killed where no handler sees it (the OOM killer, SIGKILL) left its
/// `.NAME.partial-PID-N` sibling for ever. The next run that writes NAME removes the siblings
/// of processes that are gone, and leaves those of a live process (this test's own) alone.
#[test]
fn stale_partial_siblings_of_dead_processes_are_removed_by_the_next_run() {
    let dir = temp_dir!("stale-partials");
    // A process that is gone: a child that has exited and been waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    let live = std::process::id();
    for stale in [
        format!(".out.partial-{dead}-0"),
        format!(".out.partial-{dead}"),
    ] {
        std::fs::create_dir(dir.join(&stale)).unwrap();
        std::fs::write(dir.join(&stale).join("depth.csv"), "timeMs,depth\n").unwrap();
    }
    std::fs::create_dir(dir.join(format!(".out.partial-{live}-0"))).unwrap();
    std::fs::create_dir(dir.join(format!(".other.partial-{dead}-0"))).unwrap();
    let scenario = crate::support::root().join("scenarios/chaos.toml");
    let o = durasim_within(
        &dir,
        &[
            "run",
            &scenario.display().to_string(),
            "--out",
            "out",
            "--quiet",
        ],
        std::time::Duration::from_secs(120),
    );
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", text(&o));
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    let mut want = vec![
        format!(".other.partial-{dead}-0"),
        format!(".out.partial-{live}-0"),
        "out".to_string(),
    ];
    want.sort();
    assert_eq!(left, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 3: `--freeze FILE` recognised durasim's file by its first line, so a frozen scenario the
/// user then edited was replaced without a word; so was an edited file a run directory's
/// manifest lists. Each now carries the digest durasim wrote, and an edit is refused (exit 2,
/// naming it) with nothing replaced.
#[test]
fn a_users_edit_of_a_durasim_output_is_never_replaced() {
    let dir = temp_dir!("edits");
    let scenario = crate::support::root().join("scenarios/chaos.toml");
    let scenario = scenario.display().to_string();
    let run_to = |out: &str, extra: &[&str]| {
        let mut args = vec!["run", scenario.as_str(), "--out", out, "--quiet"];
        args.extend_from_slice(extra);
        durasim_within(&dir, &args, std::time::Duration::from_secs(120))
    };
    let run = |extra: &[&str]| run_to("out", extra);
    let first = run(&["--freeze", "frozen.toml"]);
    assert!(
        first.status.code().is_some_and(|c| c < 2),
        "{}",
        text(&first)
    );
    // Unedited, both are replaced.
    let again = run(&["--freeze", "frozen.toml"]);
    assert!(
        again.status.code().is_some_and(|c| c < 2),
        "{}",
        text(&again)
    );
    // The frozen scenario, edited.
    let frozen = dir.join("frozen.toml");
    let edited = crate::support::read(&frozen).replace("seed = ", "# my note\nseed = ");
    std::fs::write(&frozen, &edited).unwrap();
    let o = run_to("out2", &["--freeze", "frozen.toml"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("frozen.toml") && t.contains("edited"), "{t}");
    assert_eq!(crate::support::read(&frozen), edited);
    assert!(
        !dir.join("out2").exists(),
        "work was done before the refusal"
    );
    // A file of the run's directory, edited.
    let summary = dir.join("out/summary.json");
    let mut text_now = crate::support::read(&summary);
    text_now.push('\n');
    std::fs::write(&summary, &text_now).unwrap();
    let o = run(&[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("summary.json") && t.contains("edited"), "{t}");
    assert_eq!(crate::support::read(&summary), text_now);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 4: `--freeze DIR/f.toml --out DIR` exited 2 only after writing `f.toml` and creating
/// `DIR`, and `merge s0 s1 --out s0` replaced an input shard. Both are refused before any work,
/// with nothing written.
#[test]
fn an_output_that_would_destroy_another_or_an_input_is_refused_before_any_work() {
    let dir = temp_dir!("apart");
    let scenario = crate::support::root().join("scenarios/chaos.toml");
    let scenario = scenario.display().to_string();
    let o = durasim_within(
        &dir,
        &[
            "run", &scenario, "--freeze", "d/f.toml", "--out", "d", "--quiet",
        ],
        std::time::Duration::from_secs(60),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--freeze d/f.toml and --out d"), "{t}");
    assert!(!dir.join("d").exists(), "work was done before the refusal");
    for shard in ["0/2", "1/2"] {
        let out = format!("s{}", &shard[..1]);
        let o = durasim_within(
            &dir,
            &[
                "sweep", &scenario, "--seeds", "0..4", "--shard", shard, "--out", &out, "--quiet",
            ],
            std::time::Duration::from_secs(120),
        );
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", text(&o));
    }
    let before = crate::support::read(&dir.join("s0/sweep.json"));
    let o = durasim_within(
        &dir,
        &["merge", "s0", "s1", "--out", "s0", "--quiet"],
        std::time::Duration::from_secs(60),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("the shard s0 and --out s0"), "{t}");
    assert_eq!(crate::support::read(&dir.join("s0/sweep.json")), before);
    // A --junit file that can never be written is refused before the sweep runs.
    let o = durasim_within(
        &dir,
        &[
            "sweep",
            &scenario,
            "--seeds",
            "0..4",
            "--junit",
            "/proc/x.xml",
            "--out",
            "s2",
        ],
        std::time::Duration::from_secs(60),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("/proc/x.xml"), "{t}");
    assert!(!dir.join("s2").exists(), "the sweep ran before the refusal");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 4: a `--junit FILE` inside `--out DIR` worked once, then the identical command was
/// refused (DIR's manifest did not list it; `deploy/k8s-sweep.yaml`'s merge step does exactly
/// this). The report is now a file of DIR, listed in its manifest with its digest: the same
/// command runs again, an edit of the report is still refused, and names the sweep writes are
/// refused before any work.
#[test]
fn a_junit_report_inside_the_output_directory_is_part_of_its_manifest() {
    let dir = temp_dir!("junit-inside");
    let scenario = crate::support::root().join("scenarios/chaos.toml");
    let scenario = scenario.display().to_string();
    let limit = std::time::Duration::from_secs(120);
    let sweep = |out: &str, junit: &str| {
        durasim_within(
            &dir,
            &[
                "sweep", &scenario, "--seeds", "0..3", "--out", out, "--junit", junit, "--quiet",
            ],
            limit,
        )
    };
    for _ in 0..2 {
        let o = sweep("d", "d/junit.xml");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&crate::support::read(&dir.join("d/durasim-manifest.json"))).unwrap();
    assert!(
        manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "junit.xml"),
        "{manifest}"
    );
    assert!(manifest["digests"]["junit.xml"].is_string(), "{manifest}");
    let report = crate::support::read(&dir.join("d/junit.xml"));
    assert!(report.contains("<testsuites name=\"durasim\""), "{report}");
    // Written by another spelling of the same place, the report is still the directory's.
    let o = sweep("./d", "d/../d/junit.xml");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = crate::support::read(&dir.join("d/junit.xml"));
    assert!(report.contains("<testsuites name=\"durasim\""), "{report}");
    assert!(!dir.join("d/d").exists());
    // A user's edit of the report is refused, naming it, and kept.
    let edited = report.replace("durasim", "mine");
    std::fs::write(dir.join("d/junit.xml"), &edited).unwrap();
    let o = sweep("d", "d/junit.xml");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("junit.xml"), "{t}");
    assert_eq!(crate::support::read(&dir.join("d/junit.xml")), edited);
    // A name the sweep writes itself, or a file that would hold the directory, is refused
    // before the sweep runs.
    for (out, junit) in [
        ("e", "e/sweep.json"),
        ("e", "e/shrunk/j.xml"),
        ("e", "e/durasim-manifest.json"),
        ("e/f", "e"),
    ] {
        let o = sweep(out, junit);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out} {junit}: {t}");
        assert!(t.contains(&format!("--junit {junit}")), "{t}");
        assert!(!dir.join("e").exists(), "the sweep ran before the refusal");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reprocess of a key at the last version a key may have (65535) has no next version: it is
/// refused as `version_exhausted` (the run goes on, every invariant holds, `verify` of the
/// history agrees), never a panic.
#[test]
fn a_reprocess_past_the_last_key_version_is_refused_not_a_crash() {
    let dir = temp_dir!("last-version");
    let file = write(
        &dir,
        "last.toml",
        "name = \"last-version\"\ndescription = \"x\"\n\
         [arrivals]\njobs = 0\n\
         [[enqueue]]\nat_ms = 0\ntenant = \"acme\"\ndocument = \"doc-1\"\nversion = 65534\n\
         [faults]\npermanent_error = 1.0\n\
         [[operator]]\nat_ms = 5000\naction = \"reprocess_dlq\"\noperator = \"ana\"\njob = 0\n\
         follow = true\nrepeat = 1\nevery_ms = 5000\n",
    );
    let out = dir.join("out");
    let o = durasim(&["run", &file, "--trace", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
    assert!(trace.contains(r#""key":"acme:doc-1:v65535""#), "{trace}");
    assert!(trace.contains(r#""reason":"version_exhausted""#), "{trace}");
    let v = durasim(&["verify", out.join("trace.jsonl").to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
}

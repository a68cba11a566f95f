//! The binary as a user meets it: exit codes, bad input, outputs, replay.

use crate::support::{bin, bug_switches, durasim, scenario_files, temp_dir, text, write, BIN};
use std::path::Path;
use std::process::Command;

#[test]
fn run_writes_every_output_and_exits_zero() {
    let dir = temp_dir!("outputs");
    let out = dir.join("run");
    let o = durasim(&[
        "run",
        "scenarios/incident-crash-before-ack.toml",
        "--out",
        out.to_str().unwrap(),
        "--trace",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // stderr is a pipe here, not a terminal: no progress bar.
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("jobs settled"),
        "{}",
        text(&o)
    );
    for f in [
        "summary.json",
        "jobs.csv",
        "attempts.csv",
        "depth.csv",
        "trace.jsonl",
        "scenario.toml",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in [
        "scenario",
        "seed",
        "traceHash",
        "virtualTimeMs",
        "events",
        "jobs",
        "effects",
        "leases",
        "crashes",
        "dlq",
        "reprocessed",
        "metrics",
        "invariants",
        "scenarioDigest",
        "durasimVersion",
    ] {
        assert!(summary.get(key).is_some(), "summary.json lacks {key}");
    }
    for m in ["queueWaitMs", "inferenceMs", "reviewWaitMs", "jobAgeMs"] {
        for f in ["count", "min", "p50", "p95", "p99", "max", "mean"] {
            assert!(summary["metrics"][m].get(f).is_some(), "metrics.{m}.{f}");
        }
    }
    assert_eq!(
        summary["invariants"].as_array().unwrap().len(),
        durasim::check::Invariant::ALL.len()
    );
    assert_eq!(summary["effects"]["dedupedCommits"], 1);
    let attempts = std::fs::read_to_string(out.join("attempts.csv")).unwrap();
    assert_eq!(
        attempts.lines().count(),
        3,
        "header + two attempts:\n{attempts}"
    );
    assert!(attempts.lines().nth(1).unwrap().ends_with("crashed"));

    let o = durasim(&["replay", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("identical"));
}

#[test]
fn a_violation_exits_one_with_a_reproduction_command() {
    let dir = temp_dir!("violation");
    let o = durasim(&[
        "run",
        "scenarios/zombie-worker.toml",
        "--bug",
        "no_fencing",
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(t.contains("VIOLATED fenced_writes"), "{t}");
    assert!(
        t.contains("reproduce: durasim run scenarios/zombie-worker.toml --seed 1 --bug no_fencing"),
        "{t}"
    );
}

#[test]
fn replay_reports_the_first_diverging_event() {
    let dir = temp_dir!("diverge");
    let out = dir.join("r");
    let o = durasim(&[
        "run",
        "scenarios/failure-2-nondeterminism.toml",
        "--out",
        out.to_str().unwrap(),
        "--trace",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = durasim(&["replay", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(
        t.contains("DIVERGED") && t.contains("first diverging event"),
        "{t}"
    );
    assert!(
        t.contains("extract_done"),
        "the model's answer is what diverges: {t}"
    );
}

/// Each bad input: exit 2, the file, the line where TOML gives one, the field, what is allowed,
/// no panic, and no output directory.
#[test]
fn bad_input_exits_two_with_a_clear_message_and_no_outputs() {
    let dir = temp_dir!("bad");
    let base = "name = \"bad\"\n[arrivals]\ntenants = [\"acme\"]\njobs = 2\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("malformed.toml", "name = \"bad\"\n[arrivals\n".to_string(), vec![":2", "malformed.toml"]),
        ("unknown-key.toml", format!("{base}[queue]\nlease_ms = 10\nleese_ms = 3\n"), vec![":7", "queue.leese_ms", "lease_ms", "heartbeat_ms"]),
        ("wrong-type.toml", format!("{base}[workers]\ncount = \"many\"\n"), vec![":6", "count"]),
        ("out-of-range.toml", format!("{base}[faults]\ncrash = 1.5\n"), vec![":6", "faults.crash", "between 0 and 1"]),
        ("bad-tenant.toml", "name = \"bad\"\n[arrivals]\ntenants = [\"Acme Corp\"]\n".to_string(), vec![":3", "arrivals.tenants", "^[a-z][a-z0-9-]{1,32}$"]),
        ("bad-job.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 9\n"), vec![":9", "script[0].job", "jobs 0 to 1"]),
        ("bad-point.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"before_lunch\"\njob = 0\n"), vec![":8", "script[0].point", "after_commit_before_ack"]),
        ("bad-fault.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"meteor\"\njob = 0\n"), vec![":7", "meteor", "relay_crash"]),
        // `attempt` picks a worker's attempt: a fault that strikes none refuses it (it was ignored).
        ("attempt-relay.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"relay_crash\"\nattempt = 2\n"), vec![":8", "script[0].attempt", "relay_crash strikes no worker's attempt", "first relay tick", "crash, stall, transient_error"]),
        ("attempt-consumer.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"consumer_crash\"\njob = 0\nattempt = 1\n"), vec![":9", "script[0].attempt", "consumer_crash", "first relayed event of `job`", "slow_heartbeat"]),
        ("attempt-mutate.toml", format!("{base}[[script]]\nat_ms = 0\nfault = \"mutate_payload\"\njob = 0\nattempt = 1\n"), vec![":9", "script[0].attempt", "mutate_payload", "payload at `at_ms`"]),
        ("bad-dist.toml", format!("{base}[stages]\ninference_ms = {{ dist = \"uniform\", min = 9, max = 1 }}\n"), vec![":6", "stages.inference_ms", "min <= max"]),
        ("bad-expect.toml", format!("{base}[expect]\nviolations = [\"all_good\"]\n"), vec![":6", "expect.violations", "fenced_writes"]),
    ];
    for (file, body, needles) in cases {
        let path = write(&dir, file, &body);
        let out = dir.join(format!("out-{file}"));
        let o = durasim(&["run", &path, "--out", out.to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{file}: {t}");
        assert!(!t.contains("panicked"), "{file}: {t}");
        assert!(t.contains(file), "{file}: message names the file: {t}");
        for n in needles {
            assert!(t.contains(n), "{file}: message lacks {n:?}: {t}");
        }
        assert!(!out.exists(), "{file}: an output directory was left behind");
        let o = durasim(&["check", &path]);
        assert_eq!(o.status.code(), Some(2), "check {file}");
    }
}

#[test]
fn bad_flags_exit_two() {
    let dir = temp_dir!("flags");
    let out = dir.join("o");
    for args in [
        vec![
            "run",
            "scenarios/chaos.toml",
            "--bug",
            "no_such_bug",
            "--out",
            out.to_str().unwrap(),
        ],
        vec!["run", "scenarios/chaos.toml", "--seed", "minus-one"],
        vec!["run", "scenarios/chaos.toml", "--frobnicate"],
        vec!["run", "scenarios/does-not-exist.toml"],
        vec!["replay", "/nonexistent/dir"],
        vec!["launch"],
    ] {
        let o = durasim(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(!t.contains("panicked"), "{args:?}: {t}");
    }
    let o = durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--bug",
        "no_such_bug",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&o).contains("no_fencing"),
        "lists the allowed switches"
    );
    assert!(!out.exists());
}

#[test]
fn check_accepts_every_shipped_scenario_and_bugs_lists_every_switch() {
    let mut args = vec!["check".to_string()];
    args.extend(scenario_files().iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = durasim(&refs);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = durasim(&["bugs"]);
    assert_eq!(o.status.code(), Some(0));
    // A header line, then one line per switch, each starting with its name, in the list's order.
    let printed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    let listed: Vec<&str> = bug_switches().iter().map(|b| b.name).collect();
    assert_eq!(printed, listed);
    assert!(listed.len() >= 20);
}

/// The keys of issue 6 (DLQ limits, dedupe window, relay restart, outbox retention, outage,
/// bursts) go through the same validation: exit 2, the file, the line, the field, what is allowed.
#[test]
fn bad_beyond_the_chapter_keys_exit_two_with_the_field_and_what_is_allowed() {
    let dir = temp_dir!("bad6");
    let base = "name = \"bad\"\n[arrivals]\ntenants = [\"acme\"]\njobs = 2\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "dlq-typo.toml",
            format!("{base}[dlq]\ncapacty = 10\n"),
            vec![":6", "dlq.capacty", "capacity", "reprocess_limit"],
        ),
        (
            "dlq-zero.toml",
            format!("{base}[dlq]\ncapacity = 0\n"),
            vec![":6", "dlq.capacity", ">= 1"],
        ),
        (
            "dlq-window.toml",
            format!("{base}[dlq]\nreprocess_window_ms = 100\n"),
            vec![":6", "dlq.reprocess_window_ms", "reprocess_limit"],
        ),
        (
            "operator-repeat.toml",
            format!(
                "{base}[[operator]]\nat_ms = 0\naction = \"reprocess_dlq\"\njob = 0\nrepeat = 3\n"
            ),
            vec![":9", "operator[0].repeat", "every_ms > 0"],
        ),
        (
            "consumer-zero.toml",
            format!("{base}[consumer]\ndedupe_window_ms = 0\n"),
            vec![":6", "consumer.dedupe_window_ms", "> 0"],
        ),
        (
            "consumer-typo.toml",
            format!("{base}[consumer]\ndedupe_window = 10\n"),
            vec![":6", "consumer.dedupe_window", "dedupe_window_ms"],
        ),
        (
            "relay-restart.toml",
            format!("{base}[relay]\nrestart_ms = 0\n"),
            vec![":6", "relay.restart_ms", "> 0"],
        ),
        (
            "swarm-window.toml",
            format!("{base}[swarm]\ndedupe_window_ms = [900, 100]\n"),
            vec![":6", "swarm.dedupe_window_ms", "min <= max"],
        ),
        (
            "outbox-zero.toml",
            format!("{base}[outbox]\nretention_ms = 0\n"),
            vec![":6", "outbox.retention_ms", "> 0"],
        ),
        (
            "outage-order.toml",
            format!("{base}[faults]\noutage = {{ from_ms = 9, to_ms = 3 }}\n"),
            vec![":6", "faults.outage", "from_ms < to_ms"],
        ),
        (
            "burst-zero.toml",
            format!("{base}[[burst]]\nat_ms = 0\ntenant = \"acme\"\njobs = 0\n"),
            vec![":8", "burst[0].jobs", "between 1 and"],
        ),
        (
            "burst-tenant.toml",
            format!("{base}[[burst]]\nat_ms = 0\ntenant = \"Acme\"\njobs = 5\n"),
            vec![":7", "burst[0].tenant", "^[a-z][a-z0-9-]{1,32}$"],
        ),
        (
            "outage-typo.toml",
            format!("{base}[faults]\noutage = {{ from = 1, to_ms = 3 }}\n"),
            vec![":6", "from_ms"],
        ),
    ];
    for (file, body, needles) in cases {
        let path = write(&dir, file, &body);
        let o = durasim(&["run", &path, "--out", dir.join("out").to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{file}: {t}");
        assert!(!t.contains("panicked"), "{file}: {t}");
        for n in needles {
            assert!(t.contains(n), "{file}: expected {n:?} in {t}");
        }
        assert!(!dir.join("out").exists(), "{file}: no output directory");
    }
}

/// A reader that goes away (`durasim ... | head`) ends the run quietly, without a panic.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let dir = temp_dir!("sigpipe");
    let mut child = Command::new(bin())
        .args([
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..50",
            "--bug",
            "no_fencing",
        ])
        .args(["--no-shrink", "--out", dir.join("s").to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Every subcommand's `--help` shows a short example and its exit codes, and the flags they share
/// are worded the same way.
#[test]
fn every_subcommand_help_has_an_example_and_the_exit_codes() {
    let mut out_lines = Vec::new();
    for cmd in [
        "run", "replay", "check", "sweep", "merge", "chart", "bugs", "verify",
    ] {
        let o = durasim(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}");
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(t.contains("Example"), "{cmd} --help has no example:\n{t}");
        assert!(
            t.contains(&format!("durasim {cmd}")),
            "{cmd}: the example runs it:\n{t}"
        );
        assert!(
            t.contains("Exit codes"),
            "{cmd} --help has no exit codes:\n{t}"
        );
        assert!(t.contains("--deny-warnings"), "{cmd}");
        if cmd != "bugs" {
            assert!(t.contains("2 "), "{cmd}: exit 2 explained:\n{t}");
        }
        // run, sweep, merge and chart: one wording for --out.
        if ["run", "sweep", "merge", "chart"].contains(&cmd) {
            let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains("--out <DIR> Output directory (default: ")
                    && flat.contains("replaced only if durasim wrote it"),
                "{cmd}: {t}"
            );
            out_lines.push(cmd);
        }
    }
    assert_eq!(out_lines.len(), 4);
    let o = durasim(&["--help"]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("an expected violation") && t.contains("Exit codes"),
        "{t}"
    );
}

#[test]
fn conform_without_its_program_says_how_to_build_it() {
    // A durasim with no durasim-conform next to it (the workspace builds both side by side).
    let dir = temp_dir!("conform-missing");
    let o = crate::support::lone_durasim(
        &dir,
        &["conform", "scenarios/zombie-worker.toml", "--store", "pgmq"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("durasim-conform") && err.contains("cargo build"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn conform_runs_its_program_and_keeps_its_exit_code() {
    // `cargo test` in the workspace's root builds durasim-conform next to durasim; `cargo test -p
    // durasim` alone does not, and this test then fails rather than pass without running.
    let sibling = Path::new(BIN).with_file_name("durasim-conform");
    assert!(
        sibling.exists(),
        "{} is not built: run `cargo test` in the workspace's root (it builds both programs), or \
         `cargo build -p durasim-conform` first",
        sibling.display()
    );
    let o = durasim(&["conform", "scenarios/chaos.toml", "--store", "mongodb"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--store \"mongodb\": allowed: sqlite:PATH, postgres"),
        "{}",
        text(&o)
    );
}

/// `early_expiry` moves the chapter's exact expiry timer; under a profile that ends leases
/// otherwise (bullmq's two-pass stalled checker, River's rescuer) the run would pass with the
/// switch silently off: `--bug` and `[bugs]` both refuse it, exit 2, naming the file, the flag
/// or field, the profile and what is allowed. Under the exact timer it runs and is caught.
#[test]
fn early_expiry_under_a_profile_without_the_exact_timer_is_refused() {
    let dir = temp_dir!("early-expiry");
    let file = "scenarios/incidents/bullmq-631-fixed.toml";
    let o = durasim(&[
        "run",
        file,
        "--bug",
        "early_expiry",
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for part in [
        file,
        "--bug early_expiry",
        "profile \"bullmq\"",
        "expiry \"two_pass\"",
        "allowed: a profile (or [queue] keys) with expiry \"timer\" and on_expiry \"ready\"",
    ] {
        assert!(t.contains(part), "{part:?} in {t}");
    }
    assert!(!dir.join("r").exists());
    // The same switch in the file's [bugs] is refused at parse, with its line and field.
    let src = std::fs::read_to_string(file).unwrap() + "\n[bugs]\nearly_expiry = true\n";
    let bad = dir.join("bullmq-early.toml");
    std::fs::write(&bad, src).unwrap();
    let o = durasim(&["check", bad.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("bugs.early_expiry") && t.contains("profile \"bullmq\""),
        "{t}"
    );
    // Under the exact timer the switch acts, and the checker catches it.
    let o = durasim(&[
        "run",
        "scenarios/zombie-worker.toml",
        "--bug",
        "early_expiry",
        "--out",
        dir.join("z").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

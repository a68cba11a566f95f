//! No input or flag panics, aborts, hangs or allocates without bound, and every message is short,
//! plain and points at the field: issue 10's "What was seen" 2, 3, 5, 6 and 7, each a test named
//! after what it protects.
//!
//! `DURASIM_TEST_BIN=/path/to/durasim cargo test --test it bounds::` runs these against another
//! binary (an older build, to see each case fail there).

use crate::support::{durasim_within, root, temp_dir, text, write};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// durasim in the repository's root, failing the test if it runs for more than a minute.
fn durasim(args: &[&str]) -> Output {
    durasim_within(&root(), args, Duration::from_secs(60))
}

/// Exit 2 with a message, no panic, within a few seconds.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let o = durasim_within(&root(), args, Duration::from_secs(10));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
    assert!(!t.contains("panicked"), "{args:?}: {t}");
    for n in needles {
        assert!(t.contains(n), "{args:?}: message lacks {n:?}: {t}");
    }
    t
}

const INCIDENT: &str = "scenarios/incident-crash-before-ack.toml";

/// `--seeds 0..18446744073709551615` panicked (capacity overflow), `--seeds 0..4294967296` aborted
/// allocating 32 GiB, `--threads 10000` ran for minutes.
#[test]
fn sweep_seed_ranges_and_threads_are_bounded_before_any_work() {
    let out = temp_dir!("seeds");
    let o = out.join("o");
    let o = o.to_str().unwrap();
    for range in ["0..18446744073709551615", "0..4294967296", "5..1000006"] {
        let t = refused(
            &[
                "sweep",
                "scenarios/chaos.toml",
                "--seeds",
                range,
                "--out",
                o,
            ],
            &["--seeds", "at most 1000000", "--shard"],
        );
        assert!(t.lines().count() < 5, "{t}");
    }
    refused(
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..18446744073709551615",
            "--shard",
            "3/100000",
            "--out",
            o,
        ],
        &["at most 1000000"],
    );
    refused(
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..10",
            "--threads",
            "10000",
            "--out",
            o,
        ],
        &["--threads 10000", "between 1 and"],
    );
    refused(
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..10",
            "--shard",
            "0/4294967295",
            "--out",
            o,
        ],
        &["--shard"],
    );
    refused(
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..10",
            "--jobs",
            "1000000000000",
            "--out",
            o,
        ],
        &["--jobs", "at most 10000000 jobs"],
    );
    refused(
        &["run", INCIDENT, "--jobs", "1000000000000", "--out", o],
        &["--jobs", "at most 10000000 jobs"],
    );
    assert!(!out.join("o").exists());
    // A huge range is fine when one shard of it is small: nothing is listed.
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..18446744073709551615",
        "--shard",
        "1/9223372036854775807",
        "--out",
        o,
    ]);
    assert_eq!(r.status.code(), Some(2), "N is bounded: {}", text(&r));
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..300000",
        "--shard",
        "7/100000",
        "--no-shrink",
        "--quiet",
        "--out",
        o,
    ]);
    assert!(
        r.status.code() == Some(0) || r.status.code() == Some(1),
        "{}",
        text(&r)
    );
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("o/sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["seedsRun"], 3, "{sweep}");
    let seeds: Vec<u64> = std::fs::read_to_string(out.join("o/seeds.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seeds, vec![7, 100_007, 200_007]);
}

/// A run's directory, to edit what replay reads.
fn recorded_run(name: &str) -> PathBuf {
    let dir = temp_dir!(name).join("r");
    let o = durasim(&["run", INCIDENT, "--out", dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    dir
}

fn edit_summary(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join("summary.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// An edited `jobsOverride` of 10^12 ate 12 GB; an edited `scenarioDigest` still reported
/// "identical"; a fake `scenarioFile` was printed while `DIR/scenario.toml` ran.
#[test]
fn replay_checks_what_it_reads_and_names_the_file_it_runs() {
    let dir = recorded_run("replay-jobs");
    let d = dir.to_str().unwrap();
    edit_summary(&dir, |v| {
        v["jobsOverride"] = serde_json::json!(1_000_000_000_000u64)
    });
    refused(
        &["replay", d],
        &["jobsOverride", "at most 10000000", "summary.json"],
    );

    let dir = recorded_run("replay-digest");
    let d = dir.to_str().unwrap();
    edit_summary(&dir, |v| {
        v["scenarioDigest"] = serde_json::json!("0".repeat(64))
    });
    refused(&["replay", d], &["scenarioDigest", "scenario.toml"]);

    let dir = recorded_run("replay-edited");
    let d = dir.to_str().unwrap();
    let toml = dir.join("scenario.toml");
    let body = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, body.replace("seed = 1", "seed = 1\n# edited")).unwrap();
    refused(&["replay", d], &["scenarioDigest", "edited"]);

    let dir = recorded_run("replay-file");
    let d = dir.to_str().unwrap();
    edit_summary(&dir, |v| {
        v["scenarioFile"] = serde_json::json!("/etc/fake-scenario.toml")
    });
    let o = durasim(&["replay", d]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains(&format!("{d}/scenario.toml")),
        "names the file it runs: {t}"
    );
    assert!(!t.contains("fake-scenario"), "{t}");

    let dir = recorded_run("replay-hash");
    let d = dir.to_str().unwrap();
    edit_summary(&dir, |v| {
        v["traceHash"] = serde_json::json!("x".repeat(100_000))
    });
    let t = refused(&["replay", d], &["traceHash"]);
    assert!(t.len() < 1000, "{t}");
}

/// `check /dev/zero` hung: no size cap, no check for a regular file.
#[test]
fn only_regular_files_of_bounded_size_are_read() {
    let dir = temp_dir!("files");
    let fifo = dir.join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a fresh path in our own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let big = dir.join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(17 << 20).unwrap();
    for path in [
        "/dev/zero",
        "/dev/urandom",
        fifo.to_str().unwrap(),
        dir.to_str().unwrap(),
    ] {
        refused(&["check", path], &[path, "not a regular file"]);
        refused(
            &["run", path, "--out", dir.join("o").to_str().unwrap()],
            &["not a regular file"],
        );
    }
    refused(
        &["check", big.to_str().unwrap()],
        &["larger than any scenario file"],
    );
    // replay and merge read what a directory holds the same way.
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    std::os::unix::fs::symlink("/dev/zero", run.join("summary.json")).unwrap();
    refused(&["replay", run.to_str().unwrap()], &["not a regular file"]);
    std::os::unix::fs::symlink("/dev/zero", run.join("sweep.json")).unwrap();
    refused(&["merge", run.to_str().unwrap()], &["not a regular file"]);
    assert!(!dir.join("o").exists());
}

const BASE: &str = "name = \"b\"\n[arrivals]\ntenants = [\"acme\"]\njobs = 2\n";

/// Messages echoed a whole 100 KB value, used serde's jargon ("expected internally tagged enum
/// Dist", "wanted exactly 1 element, more than 1 element"), and wrote field paths two ways.
#[test]
fn messages_are_short_plain_and_use_one_path_syntax() {
    let dir = temp_dir!("messages");
    let long = "x".repeat(100_000);
    let cases = [
        (
            "long-tenant.toml",
            format!("name = \"b\"\n[arrivals]\ntenants = [\"{long}\"]\n"),
            vec!["arrivals.tenants", "100000 characters"],
        ),
        (
            "long-type.toml",
            format!("{BASE}[queue]\nlease_ms = \"{long}\"\n"),
            vec!["queue.lease_ms", "whole number", "100000 characters"],
        ),
        (
            "long-point.toml",
            format!("{BASE}[[script]]\nat_ms = 0\nfault = \"crash\"\njob = 0\npoint = \"{long}\"\n"),
            vec!["script[0].point", "100000 characters", "after_lease"],
        ),
        (
            "dist.toml",
            format!("{BASE}[stages]\ninference_ms = 40\n"),
            vec!["stages.inference_ms", "distribution", "dist = \"constant\""],
        ),
        (
            "enum-table.toml",
            format!("{BASE}[retry]\njitter = {{ none = 1, full = 2 }}\n"),
            vec!["retry.jitter", "one word in quotes"],
        ),
        (
            "unknown-in-array.toml",
            format!("{BASE}[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\n[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njobb = 0\n"),
            vec!["script[1].jobb", ":14"],
        ),
        (
            "bad-job.toml",
            format!("{BASE}[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 9\n"),
            vec!["script[0].job", ":9"],
        ),
        (
            // Found by `cargo fuzz run scenario`: escapes of control characters in a key
            // counted as one character each, so the message grew to 1,261 characters.
            "control-key.toml",
            format!("name = \"b\"\ndescript{} = \"x\"\n", "\u{15}".repeat(60)),
            vec!["field `descript\\u{15}", "…"],
        ),
        (
            "range.toml",
            format!("{BASE}[swarm]\ncrash = [0.1, 0.2, 0.3]\n"),
            vec!["swarm.crash", "exactly two"],
        ),
    ];
    for (file, body, needles) in cases {
        let p = write(&dir, file, &body);
        let t = refused(&["check", &p], &needles);
        assert!(t.len() < 600, "{file}: {} bytes: {t}", t.len());
        for jargon in [
            "internally tagged",
            "enum ",
            "struct ",
            "variant",
            "wanted exactly",
            "sequence",
            "script.0",
            "script.1",
        ] {
            assert!(!t.contains(jargon), "{file}: {jargon:?} in {t}");
        }
    }
}

/// Accepted silently: operator id "BAD OP", a `[[script]]` at u64::MAX ms, a 50,000-character
/// document id, a name containing U+202E, heartbeat_ms >= lease_ms.
#[test]
fn identifiers_and_times_have_documented_ranges_and_suspicious_settings_warn() {
    let dir = temp_dir!("ids");
    let op = "[[operator]]\nat_ms = 5000\naction = \"reprocess_dlq\"\njob = 0\n";
    let refused_cases = [
        (
            "operator.toml",
            format!("{BASE}{op}operator = \"BAD OP\"\n"),
            vec!["operator[0].operator", "a-z, A-Z, 0-9"],
        ),
        (
            "document.toml",
            format!("{BASE}[[enqueue]]\nat_ms = 0\ntenant = \"acme\"\ndocument = \"{}\"\n", "d".repeat(50_000)),
            vec!["enqueue[0].document", "1 to 128 characters", "50000 characters"],
        ),
        (
            "name.toml",
            "name = \"evil\u{202e}gnp\"\n".to_string(),
            vec!["field `name`", "\\u{202e}"],
        ),
        (
            "forever.toml",
            format!("{BASE}[[script]]\nat_ms = 18446744073709551615\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\n"),
            vec!["script[0].at_ms", "at most 1000000000000 ms"],
        ),
        (
            "sigma.toml",
            format!("{BASE}[stages]\ninference_ms = {{ dist = \"lognormal\", median = 5, sigma = 1e300 }}\n"),
            vec!["stages.inference_ms", "sigma"],
        ),
    ];
    for (file, body, needles) in refused_cases {
        let p = write(&dir, file, &body);
        let t = refused(&["check", &p], &needles);
        assert!(!t.contains('\u{202e}'), "{t}");
        assert!(t.len() < 600, "{t}");
    }
    // Valid but suspicious: a warning, the run goes on; --deny-warnings refuses.
    let warned = [
        ("heartbeat.toml", format!("{BASE}[queue]\nlease_ms = 300\nheartbeat_ms = 300\n"), "queue.heartbeat_ms"),
        (
            "late.toml",
            format!("{BASE}[run]\ntime_limit_ms = 60000\n[[script]]\nat_ms = 90000\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\n"),
            "script[0].at_ms",
        ),
        ("deadline.toml", format!("{BASE}[queue]\ndeadline_ms = 10\n"), "queue.deadline_ms"),
    ];
    for (file, body, field) in warned {
        let p = write(&dir, file, &body);
        let out = dir.join(format!("out-{file}"));
        let o = durasim(&["run", &p, "--quiet", "--out", out.to_str().unwrap()]);
        let t = text(&o);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{file}: {t}"
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.starts_with("warning: ") && stderr.contains(field),
            "{file}: {t}"
        );
        assert!(out.join("summary.json").exists(), "{file}: the run went on");
        for args in [
            vec!["run", &p, "--deny-warnings", "--out", out.to_str().unwrap()],
            vec!["--deny-warnings", "check", &p],
            vec![
                "sweep",
                &p,
                "--seeds",
                "0..2",
                "--deny-warnings",
                "--out",
                out.to_str().unwrap(),
            ],
        ] {
            refused(&args, &["warning: ", field, "--deny-warnings"]);
        }
    }
}

/// A tenant listed twice in `arrivals.tenants` panicked in the name table at run time; it is
/// refused at validation, naming the field and the tenant.
#[test]
fn a_tenant_listed_twice_is_refused_not_a_panic() {
    let dir = temp_dir!("dup-tenant");
    let f = write(
        &dir,
        "dup.toml",
        "name = \"dup\"\nseed = 1\n[arrivals]\ntenants = [\"acme\", \"acme\"]\njobs = 2\n",
    );
    let f = f.as_str();
    refused(
        &["check", f],
        &["arrivals.tenants", "`acme` is listed twice"],
    );
    let out = dir.join("o");
    refused(
        &["run", f, "--out", out.to_str().unwrap()],
        &["arrivals.tenants", "`acme` is listed twice"],
    );
}

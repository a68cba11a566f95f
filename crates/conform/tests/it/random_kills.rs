//! `--kills random`: SIGKILLs at seeded wall-clock moments with no handshake, on SQLite (always)
//! and PostgreSQL (ignored, run by `cargo test -- --ignored`). The history must stay true (a
//! crash names only the job and token the worker reported, never a point; a relay crash no
//! count), a correct pipeline must pass, and a bug switch must still be caught.

use crate::support::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

/// Many short attempts, so that random kills land in every step of one (the lease, the notes,
/// the commit and its COMMIT, the ack) and between them; 150 jobs take well under 2 s.
const TIGHT: &str = r#"
name = "tight"
seed = 1
[workers]
count = 2
restart_ms = 20
[queue]
lease_ms = 150
heartbeat_ms = 50
deadline_ms = 30000
max_attempts = 50
[stages]
inference_ms = { dist = "constant", value = 1 }
validate_ms = { dist = "constant", value = 0 }
review_ms = { dist = "constant", value = 5 }
[arrivals]
tenants = ["acme", "globex"]
jobs = 150
interarrival_ms = { dist = "constant", value = 3 }
[relay]
interval_ms = 2
[expect]
violations = []
"#;

fn tight(t: &TempDir) -> String {
    let p = t.path("tight.toml");
    std::fs::write(&p, TIGHT).unwrap();
    p.display().to_string()
}

/// What every run under `--kills random` must show: the crashes recorded with only what the
/// harness knew, each tied job leased to that worker with that token before it, the kills
/// counted in `conform.json` and printed.
fn assert_true_random_history(run: &Run) {
    assert!(
        run.stdout.contains(" SIGKILLs at random ("),
        "{}",
        run.stdout
    );
    let facts = &run.conform["facts"];
    assert_eq!(facts["killMode"], "random");
    let crashes = of_type(&run.history, "worker_crashed");
    let relays = of_type(&run.history, "relay_crashed");
    let kills = facts["randomKills"].as_array().unwrap();
    assert_eq!(kills.len(), crashes.len() + relays.len());
    assert!(
        crashes.len() >= 5,
        "too few kills to mean anything: {}",
        crashes.len()
    );
    let mut leased: BTreeSet<(i64, i64, i64)> = BTreeSet::new();
    let mut tied = 0;
    for r in &run.history {
        if r["type"] == "leased" {
            let k = |f: &str| r[f].as_i64().unwrap();
            leased.insert((k("job"), k("worker"), k("fence")));
        }
        if r["type"] == "worker_crashed" {
            assert!(r.get("point").is_none(), "a random kill has no point: {r}");
            if r.get("job").is_some() {
                tied += 1;
                let k = |f: &str| r[f].as_i64().unwrap();
                assert!(
                    leased.contains(&(k("job"), k("worker"), k("fence"))),
                    "a crash names a lease the worker was given before it: {r}"
                );
            } else {
                assert!(r.get("fence").is_none(), "{r}");
            }
        }
    }
    assert!(tied > 0, "some kill found a worker holding a job");
    for r in relays {
        assert!(
            r.get("unmarked").is_none(),
            "a relay's unmarked rows are unknown: {r}"
        );
    }
    let counted: u64 = facts["workerKills"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(counted as usize, crashes.len());
}

fn random(run_args: &[&str], extra: &[&str], out: &std::path::Path) -> Run {
    let mut args: Vec<&str> = run_args.to_vec();
    args.extend(["--kills", "random"]);
    args.extend(extra);
    conform(&args, out)
}

#[test]
fn sqlite_random_kills_keep_the_history_true_and_the_pipeline_passes() {
    let t = TempDir::new("random-sqlite");
    let db = format!("sqlite:{}", t.path("r.db").display());
    let run = random(
        &[&tight(&t), "--store", &db],
        &["--kill-mean-ms", "40"],
        &t.path("r"),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_true_random_history(&run);
    assert_eq!(of_type(&run.history, "result_committed").len(), 150);
}

#[test]
fn sqlite_random_kills_still_catch_a_bug_switch() {
    let t = TempDir::new("random-sqlite-bug");
    let db = format!("sqlite:{}", t.path("b.db").display());
    // Every second request is another tenant's same document: with tenantless keys it is
    // deduplicated onto the first tenant's job, whatever the kills do.
    let text = TIGHT.replace("jobs = 150", "jobs = 60\ndocument_collision = 0.5");
    let p = t.path("collide.toml");
    std::fs::write(&p, text).unwrap();
    let run = random(
        &[
            &p.display().to_string(),
            "--store",
            &db,
            "--bug",
            "tenantless_keys",
        ],
        &["--kill-mean-ms", "40"],
        &t.path("b"),
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(violated(&run), ["tenant_isolation"], "{}", run.stdout);
}

/// `durasim-conform ARGS --store sqlite:...`: exit 2, an error containing `what`, nothing written.
fn assert_refused(tag: &str, args: &[&str], what: &str) {
    let t = TempDir::new(tag);
    let db = t.path("refused.db");
    let o = Command::new(BIN)
        .current_dir(root())
        .args(args)
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .arg("--out")
        .arg(t.path("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(what), "{err}");
    assert!(
        !db.exists() && !t.path("out").exists(),
        "nothing is written"
    );
}

#[test]
fn what_the_random_mode_cannot_do_is_refused() {
    let kills = scenario("conform-kills.toml");
    assert_refused(
        "random-forced",
        &[&kills, "--kills", "random", "--kill", "0:1:mid_commit"],
        "--kill forces a kill at an announced point",
    );
    assert_refused(
        "random-mean",
        &[&kills, "--kill-mean-ms", "50"],
        "--kill-mean-ms: only with --kills random",
    );
    assert_refused(
        "random-zero",
        &[&kills, "--kills", "random", "--kill-mean-ms", "0"],
        "at least 1 ms",
    );
    assert_refused(
        "random-script",
        &[
            &scenario("incident-crash-before-ack.toml"),
            "--kills",
            "random",
        ],
        "incident-crash-before-ack.toml: [[script]] fault = \"crash\"",
    );
    assert_refused(
        "random-norate",
        &[&scenario("failure-4-tenant-collision.toml"), "--kills", "random"],
        "failure-4-tenant-collision.toml: --kills random: the scenario's [faults] crash and relay_crash are 0",
    );
    assert_refused(
        "random-mode",
        &[&kills, "--kills", "sometimes"],
        "possible values: cooperative, random",
    );
}

#[test]
#[ignore = "needs PostgreSQL: .ci/run installs it and runs the ignored tests"]
fn postgres_random_kills_keep_the_history_true_and_the_pipeline_passes() {
    let (server, url) = throwaway_server("the PostgreSQL random-kill test");
    let t = TempDir::new("random-pg");
    let run = random(
        &[&tight(&t), "--store", &url],
        &["--kill-mean-ms", "40"],
        &t.path("tight"),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_true_random_history(&run);
    // The scenario's own rates: 100 jobs of conform-kills, kills drawn from crash and relay_crash.
    let kills = random(
        &[
            &scenario("conform-kills.toml"),
            "--store",
            &url,
            "--jobs",
            "100",
        ],
        &[],
        &t.path("kills"),
    );
    assert_eq!(kills.code, 0, "{}", kills.stdout);
    assert_true_random_history(&kills);
    let rates: &Value = &kills.conform["facts"]["killRates"];
    assert!(rates["workerMeanMs"].as_f64().unwrap() > 0.0, "{rates}");
    drop(server);
}

/// Every example of `durasim-conform --help` runs (exit 0 or 1, never 2: one named a scenario
/// conform refuses once), each with a fresh SQLite file and output directory; the PostgreSQL and
/// pgmq ones on throwaway servers of their own, as the examples say.
#[test]
#[ignore = "needs PostgreSQL: .ci/run installs it and runs the ignored tests"]
fn every_help_example_runs() {
    assert!(
        durasim_conform::server::find_bin().is_some(),
        "no PostgreSQL found: the help's PostgreSQL examples cannot run, and this test fails"
    );
    let o = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let examples: Vec<&str> = help
        .split("Examples:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  durasim conform "))
        .collect();
    assert!(examples.len() >= 4, "{help}");
    assert!(
        examples.iter().any(|e| e.contains("--kills random")),
        "{help}"
    );
    let t = TempDir::new("help-examples");
    for (i, e) in examples.iter().enumerate() {
        let args: Vec<String> = e
            .split_whitespace()
            .skip(2)
            .map(|a| match a.strip_prefix("sqlite:") {
                Some(_) => format!("sqlite:{}", t.path(&format!("{i}.db")).display()),
                None => a.to_string(),
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = conform(&args, &t.path(&format!("out{i}")));
        assert!(run.code == 0 || run.code == 1, "{e}: {}", run.stdout);
    }
}

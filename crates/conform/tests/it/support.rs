//! What the conformance tests share: the `durasim-conform` program run as a user would, with its
//! outputs read back (exit code, `history.jsonl`, `conform.json`, the verdict lines), a
//! temporary directory removed at the end, and a throwaway PostgreSQL.
//! Does not: share a server between tests (each PostgreSQL test starts its own).
#![allow(dead_code)] // each module uses its own subset

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_durasim-conform");

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn scenario(name: &str) -> String {
    root().join("scenarios").join(name).display().to_string()
}

pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let d =
            std::env::temp_dir().join(format!("durasim-conform-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    pub fn path(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub history: Vec<Value>,
    pub conform: Value,
}

pub fn conform(args: &[&str], out: &Path) -> Run {
    let o = Command::new(BIN)
        .args(args)
        .arg("--out")
        .arg(out)
        .current_dir(root())
        .output()
        .expect("durasim-conform runs");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let code = o.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "exit {code}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let history = std::fs::read_to_string(out.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let conform =
        serde_json::from_str(&std::fs::read_to_string(out.join("conform.json")).unwrap()).unwrap();
    Run {
        code,
        stdout,
        history,
        conform,
    }
}

pub fn of_type<'h>(h: &'h [Value], t: &str) -> Vec<&'h Value> {
    h.iter().filter(|r| r["type"] == t).collect()
}

pub fn violated(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("VIOLATED "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// A throwaway PostgreSQL for one test, and its URL. A test that needs it is `#[ignore]`d (run
/// by `cargo test -- --ignored`, as `.ci/run` does after installing PostgreSQL); without
/// PostgreSQL it fails here, saying what did not run. It never passes unrun.
#[track_caller]
pub fn throwaway_server(what: &str) -> (durasim_conform::server::Server, String) {
    assert!(
        durasim_conform::server::find_bin().is_some(),
        "no PostgreSQL found ($DURASIM_PG_BIN, /usr/lib/postgresql/*/bin, PATH; install it: \
         apt-get install postgresql): {what} cannot run, and this test fails rather than pass"
    );
    let server = durasim_conform::server::Server::start().expect("a throwaway PostgreSQL starts");
    let url = format!(
        "postgres://postgres@localhost/postgres?host={}",
        server.dir().display()
    );
    (server, url)
}

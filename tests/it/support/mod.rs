//! What the integration tests share, in one place: the repository's root, the `durasim` binary
//! run as a user runs it (its output as text, with a time limit), temporary directories, the
//! bundled scenarios loaded and listed, the bug switches as the public list states them, and
//! outside tools a test needs (an ignored test fails, loudly, without its tool).
//!
//! Owns: test helpers only. `alloc` is the binary's counting allocator (a step's peak bytes);
//! `history` runs a scenario keeping its history file and judges a history as `durasim verify`
//! does; `gen_history` is the property-test generator of arbitrary well-formed histories (the
//! reference checker's agreement tests); `splitmix` is the fuzz smokes' generator;
//! `scenario_props` and `history_props` are the fuzz properties, shared with
//! `fuzz/fuzz_targets/{scenario,history}.rs` (which `#[path]`-include them).
//!
//! `DURASIM_TEST_BIN=/path/to/durasim cargo test --test it bounds::` runs the tests that go
//! through the binary against another build (an older one, to see each case fail there).

// Each module uses only some of these.
#![allow(dead_code)]

pub mod alloc;
pub mod gen_history;
pub mod history;
pub mod history_props;
pub mod scenario_props;
pub mod splitmix;

use durasim::check::Sometimes;
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;
use durasim::vocab::bugs::{Bug, BugRow, BugSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

// ---- the library's inner items the tests name ------------------------------------------------
// The tests reach the library through its modules' own items and re-exports (`durasim::run`,
// `check`, `scenario`, `sweep`, `history`). These inner items have no such re-export; they are
// named here, once, so that a move inside the library changes this list and no test.

pub use durasim::base::rng::{unit_of, Purpose, Stream};
pub use durasim::profile::backoff::bounds as backoff_bounds;
pub use durasim::shell::report::summary::{summarize, RunIdentity};
pub use durasim::sweep::freeze::freeze_run;
pub use durasim::sweep::swarm::draw as swarm_draw;
pub use durasim::vocab::counters::Counter;
pub use durasim::vocab::faults::{Held, Struck};

// ---- the repository and the binary -----------------------------------------------------------

/// The repository's root (the `durasim` package's manifest directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `durasim` binary this build made.
pub const BIN: &str = env!("CARGO_BIN_EXE_durasim");

/// The binary the tests run: `DURASIM_TEST_BIN` when set, else [`BIN`].
pub fn bin() -> String {
    std::env::var("DURASIM_TEST_BIN").unwrap_or_else(|_| BIN.to_string())
}

/// `durasim ARGS` in the repository's root (so `scenarios/...` paths read as in a checkout).
pub fn durasim(args: &[&str]) -> Output {
    durasim_in(&root(), args)
}

/// `durasim ARGS` in `cwd`.
pub fn durasim_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", bin()))
}

/// `durasim ARGS` in `cwd`, killed (and the test failed) if it takes longer than `limit`: a
/// hang or unbounded work fails the test instead of stalling the suite.
pub fn durasim_within(cwd: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin()));
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still running after {limit:?} (hang or unbounded work): {}",
                text(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `durasim ARGS` in the repository's root, run from a copy of the binary alone in `dir` (no
/// `durasim-conform` beside it).
pub fn lone_durasim(dir: &Path, args: &[&str]) -> Output {
    let lone = dir.join("durasim");
    std::fs::copy(bin(), &lone).unwrap();
    // Another test of this binary may fork while the copy's file is still open for writing; the
    // child holds that descriptor until it execs, and exec of the copy then fails with "text
    // file busy" (ETXTBSY) for that moment. Retry, as Rust's own test suite does.
    let mut tries = 0;
    loop {
        match Command::new(&lone)
            .args(args)
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
        {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    }
}

/// What a process printed: stdout, then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A process's exit code and its two outputs, labelled: for a failing assertion's message.
pub fn shown(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that a process exited 0.
pub fn ok(o: &Output) {
    assert!(o.status.success(), "{}", shown(o));
}

// ---- temporary directories ---------------------------------------------------------------------

/// A fresh path for a test's files: `<temp>/durasim-it-<pid>/<module>/<name>`, with nothing
/// there (anything left by an earlier run removed); its parent exists. `create` makes it an
/// empty directory. The module's path keeps two modules' names apart in the one process; the
/// pid keeps two runs of the suite apart. Use [`temp_dir!`] and [`temp_path!`].
pub fn fresh(module: &str, name: &str, create: bool) -> PathBuf {
    let module = module.split("::").skip(1).collect::<Vec<_>>().join("/");
    let p = std::env::temp_dir()
        .join(format!("durasim-it-{}", std::process::id()))
        .join(module)
        .join(name);
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    std::fs::create_dir_all(if create { &p } else { p.parent().unwrap() }).unwrap();
    p
}

/// `temp_dir!("name")`: a fresh, empty directory of the calling module (see [`fresh`]).
macro_rules! temp_dir {
    ($name:expr) => {
        $crate::support::fresh(module_path!(), $name, true)
    };
}
/// `temp_path!("name")`: a fresh path of the calling module, not yet created (for an output
/// directory durasim must make itself).
macro_rules! temp_path {
    ($name:expr) => {
        $crate::support::fresh(module_path!(), $name, false)
    };
}
pub(crate) use {temp_dir, temp_path};

/// Writes `body` to `dir/name`; the file's path as text.
pub fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

/// A file's text; the path in the message when it cannot be read.
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A scratch working directory with the bundled scenarios linked in, so a command's default
/// outputs (`reports/...`) land there, never in the checkout.
pub fn sandbox(dir: PathBuf) -> PathBuf {
    std::os::unix::fs::symlink(root().join("scenarios"), dir.join("scenarios")).unwrap();
    dir
}

/// A sweep directory's `sweep.json` without its wall-clock figures (`throughput`).
pub fn sweep_json_without_timing(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&read(&dir.join("sweep.json"))).unwrap();
    v.as_object_mut().unwrap().remove("throughput");
    v
}

/// A sweep directory's shrunk scenarios (`shrunk/`), as (file name, text), sorted.
pub fn shrunk_files(dir: &Path) -> Vec<(String, String)> {
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

// ---- scenarios ---------------------------------------------------------------------------------

/// A bundled scenario's file: `scenarios/NAME.toml`.
pub fn scenario_path(name: &str) -> PathBuf {
    root().join("scenarios").join(format!("{name}.toml"))
}

/// A bundled scenario by name (`load("chaos")` is `scenarios/chaos.toml`).
pub fn load(name: &str) -> Scenario {
    load_file(scenario_path(name))
}

/// A scenario file, its path relative to the repository's root or absolute.
/// A sweep plan of the configuration swarm (`scenarios/swarm-everything.toml` with `--swarm`)
/// over `seeds` under `bugs`, unshrunk.
pub fn swarm_plan(seeds: (u64, u64), bugs: BugSet) -> durasim::sweep::Plan {
    let space = "scenarios/swarm-everything.toml";
    let mut p = durasim::sweep::Plan::new(load_file(space), space, seeds);
    p.swarm = true;
    p.bugs = bugs;
    p.shrink = false;
    p
}

pub fn load_file(path: impl AsRef<Path>) -> Scenario {
    let path = path.as_ref();
    let text = read(&root().join(path));
    Scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario written in the test (errors name `t.toml`).
pub fn parse(text: &str) -> Scenario {
    Scenario::parse("t.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

/// The `.toml` files of a folder (relative to the repository's root), sorted.
pub fn toml_files(dir: impl AsRef<Path>) -> Vec<PathBuf> {
    let dir = root().join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Every bundled scenario: `scenarios/*.toml`.
pub fn scenario_files() -> Vec<PathBuf> {
    toml_files("scenarios")
}

// ---- runs in process ----------------------------------------------------------------------------

/// Runs `s` with its defaults and the bug switch `bug` on, keeping the trace.
pub fn run_traced(s: &Scenario, bug: Option<&str>) -> RunReport {
    let mut r = RunRequest::for_scenario(s);
    r.keep_trace = true;
    if let Some(b) = bug {
        enable_bug(&mut r.bugs, b);
    }
    run_once(s, &r, None)
}

/// How many times a run saw `s` happen.
pub fn sometimes(r: &RunReport, s: Sometimes) -> u64 {
    r.check
        .sometimes
        .iter()
        .find(|(x, _)| *x == s)
        .unwrap_or_else(|| panic!("{s:?} is not counted"))
        .1
}

// ---- the bug switches ------------------------------------------------------------------------

/// Every bug switch, in the table's order (what `durasim bugs` prints). The one place the tests
/// read the library's table.
pub fn bug_switches() -> &'static [BugRow] {
    &durasim::vocab::bugs::TABLE
}

/// Turns the switch `name` on; a name the table lacks fails the test.
pub fn enable_bug(bugs: &mut BugSet, name: &str) {
    bugs.insert(Bug::parse(name).unwrap_or_else(|_| panic!("no bug switch {name:?}")));
}

// ---- outside tools -----------------------------------------------------------------------------

/// Where an outside tool's executable is: on the PATH, or in /usr/sbin or /sbin (daemons).
pub fn on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Fails the test unless every tool (a name on the PATH, or an absolute path) is installed. A
/// test that needs an outside tool is `#[ignore]`d, so `cargo test` leaves it out; run with
/// `--ignored` and without its tool it must fail, never pass. `install` says how to get them.
#[track_caller]
pub fn require_tools(tools: &[&str], install: &str) {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            if t.starts_with('/') {
                !Path::new(t).is_file()
            } else {
                on_path(t).is_none()
            }
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not installed: {} ({install}). This test needs it: without it the test fails, it never \
         passes unrun (.ci/run installs it, then runs `cargo test -- --ignored`)",
        missing.join(", ")
    );
}

/// Runs `f` with its panics silent (the default hook prints each one), on this thread only:
/// other tests of the binary, on other threads, keep theirs.
pub fn quiet_panics<T>(f: impl FnOnce() -> T) -> T {
    use std::cell::Cell;
    thread_local!(static QUIET: Cell<bool> = const { Cell::new(false) });
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    QUIET.with(|q| q.set(true));
    let _reset = Reset;
    f()
}

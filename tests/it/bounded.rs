//! Bounded by construction: no accepted input can exhaust the machine or overwrite a user's
//! edit. Issue 26's "What was seen" 1 to 7, each a test named after what it protects.
//!
//! `DURASIM_TEST_BIN=/path/to/durasim cargo test --test it bounded::` runs the tests that go
//! through the binary against another build (an older one, to see each case fail there).

use crate::support::{lone_durasim, temp_dir, text};

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

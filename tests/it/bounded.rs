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

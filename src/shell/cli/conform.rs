//! `durasim conform`: the same scenario against a real store, by the `durasim-conform` program.
//!
//! Owns: finding `durasim-conform` next to this executable and running it in place of this
//! process, and `durasim conform --help` when that program is missing (the help never needs it).
//! The harness lives in its own crate (`crates/conform`) so that its database clients stay out
//! of the simulator's dependency tree.
//! Does not: run anything itself.

use super::{bad, Outcome};
use anyhow::{anyhow, Context};

/// The conformance harness lives in its own program (its database clients stay out of this
/// library): `durasim conform` runs `durasim-conform`, found next to this executable, in place of
/// this process, so its output and exit code are the command's.
pub fn cmd_conform(args: &[String]) -> anyhow::Result<Outcome> {
    let exe = std::env::current_exe().context("cannot find the durasim executable")?;
    let sibling = exe.with_file_name(format!("durasim-conform{}", std::env::consts::EXE_SUFFIX));
    if !sibling.exists() {
        if asks_for_help(args) {
            print!("{}", help_without_harness(&sibling));
            return Ok(Outcome::Ok);
        }
        return Err(bad(format!(
            "durasim conform needs the durasim-conform program next to durasim ({} is missing); build it with `cargo build --release` (the workspace builds both) or `cargo build --release -p durasim-conform`",
            sibling.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = std::process::Command::new(&sibling).args(args).exec();
        Err(anyhow!("cannot run {}: {err}", sibling.display()))
    }
    #[cfg(not(unix))]
    {
        let _ = args;
        Err(bad(
            "durasim conform needs Unix (it kills processes with SIGKILL)",
        ))
    }
}

/// `--help` or `-h` before any `--` (what the harness's own parser would answer with its help).
fn asks_for_help(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--help" || a == "-h")
}

/// `durasim conform --help` without the harness: the command's usage, flags, examples and exit
/// codes (the harness prints the same flags with clap's layout), and how to build it.
fn help_without_harness(sibling: &std::path::Path) -> String {
    format!(
        "Run a scenario against a real store (SQLite, PostgreSQL or pgmq) with real processes and \
         real SIGKILLs, and judge the store's history with durasim's checker\n\n\
         Usage: durasim conform [OPTIONS] --store <STORE> <SCENARIO>\n\n{}\n\n{}\n\n\
         Note: the runs themselves need the durasim-conform program next to durasim ({} is \
         missing); build it with `cargo build --release` (the workspace builds both) or \
         `cargo build --release -p durasim-conform`.\n",
        super::args::CONFORM_FLAGS,
        super::args::CONFORM_HELP,
        sibling.display()
    )
}

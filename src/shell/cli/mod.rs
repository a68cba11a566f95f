//! The shell: the command line, the files it reads and writes, what it prints, and the exit code.
//!
//! Owns: parsing arguments (`args`), reading scenario files and a user's flags (`input`), one
//! file a command (`run`, `replay`, `verify`, `chart`, `sweep` with `merge`, `explore`, `conform`), printing
//! the human summaries (`print`), and mapping outcomes to exit codes (0 holds, 1 violated or
//! unmet, 2 bad input). Together with `report/` (and `files.rs`, which both use to read), the
//! only place that touches the file system, reads the wall clock or prints; the only user of
//! `anyhow`.
//! Does not: simulate, judge or aggregate anything (`run`, `check`, `sweep` do), or lay out an
//! output file (`report` does).

pub mod args;
pub mod chart;
pub mod conform;
pub mod explore;
pub mod guided;
pub mod input;
pub mod malloc;
pub mod print;
pub mod programs;
pub mod replay;
pub mod run;
pub mod sweep;
pub mod verify;

pub use args::{Cli, Command};
pub use input::{apply_bug_flags, load_scenario};
pub use print::{print_summary, print_summary_in};

use crate::shell::report::output_dir::OutputError;
use crate::shell::report::ReportError;
use anyhow::anyhow;
use std::path::PathBuf;

/// How a command ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    Ok,
    Violated,
}

/// A problem with the user's input: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(BadInput(msg.into()))
}

/// An output directory that may not be replaced is bad input (exit 2, like every error).
pub fn output_error(e: OutputError) -> anyhow::Error {
    match e {
        OutputError::Refused(m) => bad(m),
        io => anyhow!(io),
    }
}

/// A report that could not be written or read back; a refused output directory is bad input.
fn report_error(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Output(e) => output_error(e),
        e => anyhow!(e),
    }
}

/// `reports/<name><suffix>`: the default output directory. Scenario names are validated slugs
/// (see `scenario::validate_name`), so this never leaves `reports/`; checked again here because
/// a directory outside it must never be the default.
pub fn default_out(name: &str, suffix: &str) -> anyhow::Result<PathBuf> {
    crate::scenario::validate_name(name).map_err(|m| {
        bad(format!(
            "scenario name {}: {m}; cannot be the default output directory",
            crate::scenario::clip(name)
        ))
    })?;
    Ok(PathBuf::from("reports").join(format!("{name}{suffix}")))
}

pub fn exit_code(result: &anyhow::Result<Outcome>) -> i32 {
    match result {
        Ok(Outcome::Ok) => 0,
        Ok(Outcome::Violated) => 1,
        Err(_) => 2,
    }
}

pub fn main_with(cli: Cli) -> anyhow::Result<Outcome> {
    input::deny_warnings(cli.deny_warnings);
    input::max_events(cli.max_events)?;
    match cli.command {
        Command::Run(args) => run::cmd_run(&args),
        Command::Replay { dir } => replay::cmd_replay(&dir),
        Command::Check { scenarios, verbose } => input::cmd_check(&scenarios, verbose),
        Command::Sweep(args) => sweep::cmd_sweep(&args),
        Command::Merge(args) => sweep::cmd_merge(&args),
        Command::Explore(args) => explore::cmd_explore(&args),
        Command::Chart { dir, out, format } => chart::cmd_chart(&dir, out.as_deref(), format.0),
        Command::Conform { args } => conform::cmd_conform(&args),
        Command::Verify { file, out, expect } => {
            verify::cmd_verify(&file, out.as_deref(), expect.as_deref())
        }
        Command::Program => {
            // Ends when durasim closes the pipe (or kills the process).
            if let Ok(c) =
                crate::shell::client::Client::connect(Box::new(crate::shell::client::Stdio))
            {
                let _ = crate::shell::client::reference::run(c);
            }
            Ok(Outcome::Ok)
        }
        Command::Bugs => {
            print::print_bugs();
            Ok(Outcome::Ok)
        }
    }
}

//! `--worker CMD`, `--relay CMD`, `--consumer CMD` and `--program-timeout-s S` of `run` and
//! `sweep`: which roles are external programs (docs/worker-protocol.md).
//!
//! Owns: the flags, checking them (a command is not empty; the limit is a number of seconds in
//! range; a bug switch whose defect lives in a role the programs replace is refused: a
//! program's defects are its own), and the run request's [`ProgramSpec`] they make.
//! Does not: start or drive a program (`shell::programs`, `sim::program`).

use super::bad;
use crate::sim::program::{ProgramSpec, Role};
use crate::vocab::bugs::{BugSet, BugSite};
use std::time::Duration;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProgramArgs {
    /// Run the worker role as CMD, your own program speaking docs/worker-protocol.md over stdin
    /// and stdout (one process per worker; a crash SIGKILLs it); the other roles are then
    /// durasim's own programs unless given too
    #[arg(long, value_name = "CMD")]
    pub worker: Option<String>,
    /// Run the relay role as CMD (see --worker)
    #[arg(long, value_name = "CMD")]
    pub relay: Option<String>,
    /// Run the consumer role as CMD (see --worker)
    #[arg(long, value_name = "CMD")]
    pub consumer: Option<String>,
    /// Wall-clock seconds a program may take to answer one message before the run fails with
    /// exit 2 (default 10)
    #[arg(long, value_name = "S")]
    pub program_timeout_s: Option<f64>,
}

/// The request's programs (`None` when no role is external), with `bugs` checked against them.
pub fn program_spec(args: &ProgramArgs, bugs: BugSet) -> anyhow::Result<Option<ProgramSpec>> {
    let commands = [
        args.worker.clone(),
        args.relay.clone(),
        args.consumer.clone(),
    ];
    for (role, cmd) in Role::ALL.iter().zip(&commands) {
        if cmd.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(bad(format!("--{}: the command is empty", role.name())));
        }
    }
    let timeout = match args.program_timeout_s {
        None => super::super::programs::DEFAULT_TIMEOUT,
        Some(s) if (0.1..=3600.0).contains(&s) => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(bad(format!(
                "--program-timeout-s {s}: expected 0.1 to 3600 seconds"
            )))
        }
    };
    if commands.iter().all(Option::is_none) {
        if args.program_timeout_s.is_some() {
            return Err(bad(
                "--program-timeout-s: no program is given (--worker, --relay or --consumer)",
            ));
        }
        return Ok(None);
    }
    let replaced = [
        BugSite::Worker,
        BugSite::Outbox,
        BugSite::Consumer,
        BugSite::Retry,
    ];
    if let Some(b) = bugs
        .iter()
        .find(|b| b.row().sites.iter().any(|s| replaced.contains(s)))
    {
        return Err(bad(format!(
            "--bug {}: its defect lives in durasim's own {} ({}), which a run with programs does not use; a program's defects are its own",
            b.name(),
            b.row().sites[0].name(),
            b.row().sites[0].path()
        )));
    }
    Ok(Some(super::super::programs::spec(commands, timeout)))
}

/// The summary's `roles`: each role's command, or `durasim` for durasim's own program.
pub fn roles(spec: &ProgramSpec) -> Vec<(&'static str, String)> {
    Role::ALL
        .iter()
        .map(|&r| {
            let who = spec
                .command(r)
                .map_or("durasim".to_string(), str::to_string);
            (r.name(), who)
        })
        .collect()
}

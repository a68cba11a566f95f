//! The programs of a run with `--worker`, `--relay` or `--consumer`: a child process for each
//! external role (`process.rs`), durasim's own program on a thread for each other role
//! (`inproc.rs`), behind the kernel's seam (`sim::program::ProgramHost`).
//!
//! Owns: [`spec`], which turns the command line's commands and the wall-clock limit into the
//! run request's [`ProgramSpec`] (one host per run, so every seed of a sweep and every
//! candidate of a shrink starts its own programs).
//! Does not: drive anything in virtual time (the kernel does, `sim::program`).

pub mod inproc;
pub mod process;

use crate::sim::program::{Program, ProgramFault, ProgramHost, ProgramSpec, Role};
use std::sync::Arc;
use std::time::Duration;

/// How long a program may take to answer one message (its calls, then `idle`) by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts each role's program: the external command given for it, or durasim's own.
struct Host {
    commands: [Option<String>; 3],
    timeout: Duration,
}

impl ProgramHost for Host {
    fn start(&mut self, role: Role, instance: u32) -> Result<Box<dyn Program>, ProgramFault> {
        match &self.commands[role as usize] {
            Some(cmd) => Ok(Box::new(process::ProcessProgram::spawn(
                cmd,
                role,
                instance,
                self.timeout,
            )?)),
            None => Ok(Box::new(inproc::InProcess::start(role, self.timeout))),
        }
    }
}

/// The run request's programs: `commands` per role in `Role::ALL` order (`None`: durasim's
/// own), each message answered within `timeout` of wall-clock time.
pub fn spec(commands: [Option<String>; 3], timeout: Duration) -> ProgramSpec {
    let c = commands.clone();
    ProgramSpec {
        commands,
        host: Arc::new(move || {
            Box::new(Host {
                commands: c.clone(),
                timeout,
            })
        }),
    }
}

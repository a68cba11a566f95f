//! Programs in a role: the seam through which the kernel runs someone else's worker, relay or
//! consumer (docs/worker-protocol.md), in lockstep and in virtual time.
//!
//! Owns: the seam ([`Program`]: one message in, the lines the program wrote until it said
//! `idle` out; [`ProgramHost`]: starts one for a role; [`ProgramSpec`]: what a run request
//! carries), and, as `impl Sim` blocks, everything the kernel does for programs: delivering
//! messages one at a time (`drive.rs`, with the holds of a pause or a stall and the kills of a
//! crash), the queue and model calls of a worker (`worker.rs`), the store's transactions and
//! what a commit records in the history (`store_calls.rs`), the relay's publishes and the
//! consumer's deliveries (`delivery.rs`). The words of the protocol are in `protocol.rs`.
//! A run with a [`ProgramSpec`] runs every role as a program (the roles not given on the
//! command line by durasim's own, in-process); a run without one is the kernel's own worker,
//! relay and consumer, untouched.
//! Does not: spawn, read or write a process, or read the wall clock (the shell's driver,
//! `shell::programs`, implements [`Program`] over a child's pipes); decide what a fault is (the
//! injector's plan does, as for the built-in worker).

mod delivery;
mod drive;
pub mod protocol;
mod state;
mod store_calls;
mod worker;

pub use protocol::Role;
pub(super) use state::Programs;

use serde_json::Value;
use std::sync::Arc;

/// A line a program wrote, read as JSON, with its number in the program's output (1 = first).
#[derive(Clone, Debug, Hash)]
pub struct Sent {
    pub line: u64,
    pub value: Value,
}

/// Why a program cannot go on (it wrote what is not JSON, exited, stayed silent, or made a call
/// out of protocol): the run stops, and the command exits 2 with this message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Hash)]
#[error("{0}")]
pub struct ProgramFault(pub String);

/// One running program (a process, or a program in durasim's own process).
pub trait Program {
    /// Hands the program one message and returns the lines it wrote until it said `idle`
    /// (`{"call":"idle"}` itself left out).
    fn deliver(&mut self, message: &Value) -> Result<Vec<Sent>, ProgramFault>;
    /// Kills it at once (SIGKILL): it writes nothing more.
    fn kill(&mut self);
    /// How messages name it: its command, and its process id.
    fn describe(&self) -> String;
}

/// Starts programs for one run.
pub trait ProgramHost {
    /// A new program playing `role` (`instance`: the worker's number; 0 for the relay and the
    /// consumer).
    fn start(&mut self, role: Role, instance: u32) -> Result<Box<dyn Program>, ProgramFault>;
}

/// What a run request carries to run its roles as programs: the command of each external one,
/// and how to make a host for one run.
#[derive(Clone)]
pub struct ProgramSpec {
    /// Per role, in [`Role::ALL`]'s order: the command of an external program, or `None` for
    /// durasim's own.
    pub commands: [Option<String>; 3],
    pub host: Arc<dyn Fn() -> Box<dyn ProgramHost> + Send + Sync>,
}

impl ProgramSpec {
    /// The external program's command for `role`, if it is one.
    pub fn command(&self, role: Role) -> Option<&str> {
        self.commands[role as usize].as_deref()
    }

    /// The command line's flags that give these programs (` --worker 'node w.mjs'`), for the
    /// lines that reproduce a run.
    pub fn flags(&self) -> String {
        let mut out = String::new();
        for role in Role::ALL {
            if let Some(cmd) = self.command(role) {
                out.push_str(&format!(" --{} {}", role.name(), shell_quoted(cmd)));
            }
        }
        out
    }
}

/// `text` as one word of a POSIX shell: as it is when that is safe, else in single quotes.
pub fn shell_quoted(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

impl std::fmt::Debug for ProgramSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramSpec")
            .field("commands", &self.commands)
            .finish_non_exhaustive()
    }
}

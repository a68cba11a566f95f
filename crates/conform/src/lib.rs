//! durasim-conform: the same scenario against real stores — SQLite, PostgreSQL and pgmq — with
//! real worker and relay processes and real SIGKILLs, judged by durasim's unchanged checker.
//!
//! Layers: `plan` (what the seed decides), `store` + `schema` + `db` (the pipeline as
//! transactions, each appending its history record), `child` (the worker and relay processes),
//! `harness` (spawn, kill, stall, respawn, produce), `kills` (the kill modes), `server` (a throwaway PostgreSQL),
//! `export` (the store's history as a history file), `conform` (one run end to end: outputs,
//! verdict, model against reality).
//! Does not: change the simulator library; it only uses it.

pub mod child;
pub mod conform;
pub mod db;
pub mod export;
pub mod harness;
pub mod kills;
pub mod plan;
pub mod schema;
pub mod server;
pub mod spec;
pub mod store;

pub use conform::{main_with, ConformArgs};

/// Set by SIGINT, SIGTERM or SIGHUP (see `main.rs`): the harness stops its processes, stops and
/// removes its throwaway server and its temporary output, then the program ends.
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
pub use durasim::shell::cli::Outcome;

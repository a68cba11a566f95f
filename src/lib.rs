//! durasim: a deterministic discrete-event simulator of a durable job pipeline, with a checker
//! that proves each business effect happens exactly once.
//!
//! Layers, from the inside out: `vocab` (the history's words: keys, payloads, configuration),
//! `model` (pure state machines), `sim` (virtual time, events, faults), `history` (what
//! happened), `check` (invariants over the history), `observe` (metrics, progress), `run` (one
//! run end to end), `sweep` (many seeds), then the shell: `report` (the files a run or a sweep
//! leaves, and the views drawn from them), `files` (reading what a user hands over) and `cli`
//! (arguments, printing, exit codes).
//!
//! The core is every module but the shell's three. `clippy.toml` lists what the core must not
//! use (the file system, the wall clock, unordered-map iteration, printing), and the restriction
//! lint `clippy::iter_over_hash_type` catches the `for` loop over a hash map that a method list
//! cannot see; the attribute just below makes those lints errors in the whole library, and only the shell's modules allow them,
//! so ARCHITECTURE.md's absences are checked by `cargo clippy` and a new module starts in the
//! core. Unit tests (`cfg(test)`) may read files.

#![cfg_attr(
    not(test),
    deny(
        clippy::disallowed_methods,
        clippy::disallowed_types,
        clippy::disallowed_macros,
        clippy::iter_over_hash_type
    )
)]
// No `unsafe` in the library: the one exception, glibc's malloc settings for a sweep, allows it
// on its own function (`cli/malloc.rs`).
#![deny(unsafe_code)]

// The shell: arguments, files, printing, the wall clock.
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros,
    clippy::iter_over_hash_type
)]
pub mod cli;
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros,
    clippy::iter_over_hash_type
)]
pub mod files;
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros,
    clippy::iter_over_hash_type
)]
pub mod report;

// The core.
pub mod bugs;
pub mod check;
pub mod fastmap;
pub mod history;
pub mod history_fuzz;
pub mod ids;
pub mod key_index;
pub mod limits;
pub mod messages;
pub mod model;
pub mod observe;
pub mod observer_thread;
pub mod profile;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod scenario_fuzz;
pub mod scenario_warnings;
pub mod sim;
pub mod sweep;
pub mod verify;
pub mod vocab;

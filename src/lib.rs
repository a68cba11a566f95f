//! durasim: a deterministic discrete-event simulator of a durable job pipeline, with a checker
//! that proves each business effect happens exactly once.
//!
//! Floors, from the bottom: `base` (time, ids, RNG streams, input ranges, messages), `vocab`
//! (the history's words: keys and their index, payloads, configuration, codes, faults,
//! counters, the bug switches), `model` and `profile` (pure state machines of the pipeline, and the queue
//! semantics profiles they follow), `sim` (virtual time, events, faults), `history` (what
//! happened), `check` (invariants over the history), `observe` (metrics, progress), `scenario`
//! (the scenario file), `run` (one run end to end, and `verify` of a recorded history), `sweep`
//! (many seeds), and on top `shell` (command line, files, reports).
//!
//! The core is every module but `shell`. `clippy.toml` lists what the core must not use (the
//! file system, the wall clock, unordered-map iteration, printing), and the restriction lint
//! `clippy::iter_over_hash_type` catches the `for` loop over a hash map that a method list
//! cannot see; the attribute just below makes those lints errors in the whole library, and only
//! `shell` allows them, so ARCHITECTURE.md's absences are checked by `cargo clippy` and a new
//! module starts in the core. Unit tests (`cfg(test)`) may read files.

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
// on its own function (`shell/cli/malloc.rs`).
#![deny(unsafe_code)]

// The shell: arguments, files, printing, the wall clock.
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros,
    clippy::iter_over_hash_type
)]
pub mod shell;

// The core, floor by floor from the bottom: foundations; the history's words; the model and the
// queue profiles it takes; the kernel; the history, the checker and the observers; the scenario
// file; one run and many seeds.
pub mod base;
pub mod vocab;

pub mod model;
pub mod profile;

pub mod sim;

pub mod check;
pub mod history;
pub mod observe;

pub mod scenario;

pub mod run;
pub mod sweep;

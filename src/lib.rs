//! durasim: a deterministic discrete-event simulator of a durable job pipeline, with a checker
//! that proves each business effect happens exactly once.
//!
//! Layers, from the inside out: `vocab` (the history's words: keys, payloads, configuration),
//! `model` (pure state machines), `sim` (virtual time, events,
//! faults), `history` (what happened), `check` (invariants over the history), `observe`
//! (metrics and files), `run` (one run end to end), `cli` (the shell).

pub mod bugs;
pub mod check;
pub mod cli;
pub mod fastmap;
pub mod history;
pub mod ids;
pub mod key_index;
pub mod limits;
pub mod messages;
pub mod model;
pub mod observe;
pub mod report;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod scenario_fuzz;
pub mod scenario_warnings;
pub mod sim;
pub mod sweep;
pub mod vocab;

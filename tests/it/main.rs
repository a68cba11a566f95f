//! durasim's integration tests, as one test binary (`cargo test --test it`; a module or a test by
//! its path: `cargo test --test it sweep::`, `cargo test --test it scenarios::golden_trace_hashes`).
//! Each module is named after what it protects; what they share (the repository's root, the
//! `durasim` binary, loading a bundled scenario, temporary directories, a run's history file,
//! the public bug-switch list, outside tools) lives once, in `support/`.
//!
//! Tests drive durasim through its public entry points where they can: the `durasim` binary as a
//! user runs it, and the library's `run`, `scenario`, `check` and `sweep` items. The few that
//! need a module's inside (the model's queue driven through the kernel's loop, the history
//! writer and reader, the fuzz properties) name it in one place.
//!
//! A test that needs an outside tool (headless Chromium, a Slurm cluster, actionlint,
//! kubernetes-validate) is `#[ignore = "needs TOOL: ..."]`: `cargo test` lists it as ignored,
//! `cargo test -- --ignored` runs it, and without its tool it fails with what to install. It
//! never passes without running. `.ci/run` installs the tools, then runs both.

mod support;

mod architecture;
mod bounded;
mod bounds;
mod bug_table;
mod cli;
mod corpus;
mod deploy;
mod exploration;
mod faults;
mod fuzz;
mod history;
mod history_v2;
mod incidents;
mod model;
mod observer_thread;
mod outputs;
mod profile_table;
mod programs;
mod queueing_theory;
mod readme;
mod recorders;
mod reference;
mod report;
mod scenarios;
mod sweep;
mod timeline;

//! The shell, the library's only top floor: the command line (`cli/`), every file a command
//! writes or reads back (`report/`), and reading what a user hands over (`files.rs`).
//!
//! Owns: arguments, files, printing, exit codes and the wall clock. Does not: simulate or judge
//! anything; it calls the core and turns its results into files and text. Nothing in the core
//! names it.

pub mod cli;
pub mod client;
pub mod files;
pub mod programs;
pub mod report;

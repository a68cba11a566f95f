//! Reports: what a run or a sweep leaves on disk, and the views drawn from it.
//!
//! Owns: output directories written whole or not at all (`output_dir`, judging a target by its
//! `manifest`), a run's files
//! (`run_dir`: summary.json, the CSVs, trace.jsonl; `summary`: the summary's shape), a sweep's
//! (`sweep_dir`: sweep.json, seeds.jsonl, shrunk scenarios; `junit`), the Perfetto / Chrome trace
//! (`chrome_trace`), the charts (`chart`), the job timeline (`timeline`, from the history
//! `history_source` replays) and the HTML report (`html`).
//! Does not: simulate, judge or re-run anything. It formats what a run or a sweep returned, or
//! reads back what one wrote (a sweep's charts read the per-seed figures in seeds.jsonl).
//! Prints nothing and parses no arguments (the shell, `cli`, does).

pub mod chart;
pub mod chrome_trace;
pub mod error;
pub mod history_ms;
pub mod history_source;
pub mod html;
pub mod junit;
pub mod manifest;
pub mod output_dir;
pub mod render;
pub mod run_dir;
pub mod summary;
pub mod sweep_dir;
pub mod timeline;

pub use error::ReportError;

//! Observers of a run's history that only count: metrics and progress (the figures they count
//! are named in `vocab/counters.rs`). No simulation logic, no files, no drawing (`shell/report/`
//! writes and draws what they counted).

pub use crate::vocab::latency;
pub mod metrics;
pub mod open_jobs;
pub mod pending_reviews;
pub mod progress;
pub mod series;

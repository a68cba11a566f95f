//! Observers of a run's history that only count: metrics and progress, and the names of the
//! counts a scenario's `[expect]` can pin (`counters.rs`). No simulation logic, no
//! files, no drawing (`report/` writes and draws what they counted).

pub mod counters;
pub mod counts;
pub mod latency;
pub mod metrics;
pub mod progress;

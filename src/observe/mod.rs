//! Observers of a run's history that only count: metrics and progress. No simulation logic, no
//! files, no drawing (`report/` writes and draws what they counted).

pub mod counts;
pub mod latency;
pub mod metrics;
pub mod progress;

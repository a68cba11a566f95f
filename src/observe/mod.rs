//! Metrics, summaries and output files. No simulation logic lives here.

pub mod metrics;

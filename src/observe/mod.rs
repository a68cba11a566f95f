//! Metrics, summaries and output files. No simulation logic lives here.

pub mod chart;
pub mod chrome_trace;
pub mod html;
pub mod metrics;
pub mod output_dir;
pub mod summary;

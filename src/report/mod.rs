//! Reports: what a run or a sweep leaves on disk, and the views drawn from it.

pub mod chart;
pub mod chrome_trace;
pub mod html;
pub mod junit;
pub mod output_dir;
pub mod summary;

//! The kernel: clock, (time, seq) event queue, closed event enum, faults and the run loop.

pub mod arrivals;
pub mod event_queue;
pub mod faults;
pub mod kernel;

pub use kernel::{RunOptions, RunOutcome, Sim};

//! The functional core: plain state machines for the pipeline's concepts.
//!
//! Nothing here reads a clock, draws a random number or does I/O. Time enters as `now`; chance
//! enters as an already-decided input (an `AttemptPlan`, a jitter draw).

pub mod consumer;
pub mod dead_letter;
pub mod job_rows;
pub mod outbox;
pub mod profiled_queue;
pub mod queue;
pub mod retry;
pub mod semantics;
pub mod store;
pub mod worker;

#[cfg(test)]
mod tests;

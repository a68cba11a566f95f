//! The kernel: clock, (time, seq) event queue, closed event enum, faults and the run loop.
//!
//! The kernel's state and loop live in `kernel.rs`; the handlers for each kind of event are
//! split by concept over `intake.rs`, `attempts.rs`, `lease_end.rs`, `terminal.rs`,
//! `delivery.rs` and `operator.rs` (each an `impl Sim` block). The queue is behind the seam
//! `model::semantics::QueueSemantics`; `run_scenario` picks its implementation.

pub mod arrivals;
mod attempts;
mod delivery;
pub mod event_queue;
pub mod faults;
mod intake;
pub mod kernel;
mod lease_end;
mod operator;
mod payloads;
pub mod program;
pub mod request;
mod state;
mod terminal;
pub mod tie_break;
mod validity;

pub use kernel::{run_scenario, run_scenario_tied, RunOutcome, Sim};
pub use request::RunRequest;

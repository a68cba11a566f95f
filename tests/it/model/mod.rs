//! The model's queue semantics, seen from outside: another queue implementation plugged into the
//! kernel's loop (`queue_semantics`), and the queue's options (`[queue] attempts_count`,
//! `unique`, `[dlq] retention_ms`, a profile's retry formulas) each run, written to the history's
//! header, and judged by the checker from that header.
//!
//! The model's unit tests stay beside the private items they test: `src/model/tests/` (cases that
//! kill mutation-testing survivors), `src/model/queue/tests.rs` and
//! `src/model/profiled_queue/tests.rs`. What goes through a run, a history or the checker is here.

mod attempts_count;
mod dlq_retention;
mod queue_semantics;
mod retry_formulas;
mod unique_modes;

//! Invariants over the recorded history only (always / eventually / sometimes).

pub mod checker;
pub mod invariant;

pub use checker::{CheckReport, Checker, Verdict, Violation};
pub use invariant::{Invariant, Kind, Sometimes};

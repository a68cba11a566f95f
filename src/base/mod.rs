//! The foundations every floor stands on: virtual time and ids, the seeded RNG streams, the
//! lookup maps' hasher, the documented ranges of user input, and how values are shown in
//! messages.
//!
//! Owns: nothing of the domain. Does not: import any other module of the library.

pub mod fastmap;
pub mod ids;
pub mod limits;
pub mod messages;
pub mod rng;
pub mod state_hash;

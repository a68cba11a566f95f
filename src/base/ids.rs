//! Identifiers and virtual time.
//!
//! Owns: the small `Copy` names the whole simulator passes around (jobs, workers, fencing
//! tokens, outbox event ids, tenants, documents) and the unit of virtual time.
//! Does not: validate tenant names (see `vocab::key`) or hand out ids (the queue, the outbox
//! and the kernel do, each for its own kind).

use std::fmt;

/// Virtual time in integer milliseconds since the start of a run. No wall clock ever enters it.
pub type SimTime = u64;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty), $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl $name {
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A job in the queue, numbered in order of creation from 0.
    JobId(u32),
    "job-"
);
id_type!(
    /// A simulated worker slot; a crashed worker comes back under the same id as a new process.
    WorkerId(u32),
    "worker-"
);
id_type!(
    /// A fencing token: a global monotonic counter bumped on every lease.
    Fence(u64),
    "fence-"
);
id_type!(
    /// An outbox event id, numbered from 1 in order of commit.
    EventId(u64),
    "event-"
);
id_type!(
    /// Index of a validated tenant in the run's tenant table.
    TenantId(u16),
    "tenant#"
);
id_type!(
    /// A document. Generated documents render as `doc-N`; named ones via the document table.
    DocumentId(u32),
    "doc#"
);
id_type!(
    /// An operation (part of a payload), by its index in the run's operation table.
    OperationId(u16),
    "op#"
);

impl OperationId {
    /// The simulator's one operation, `extract`: first in every operation table.
    pub const EXTRACT: OperationId = OperationId(0);
}

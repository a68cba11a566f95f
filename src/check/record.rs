//! One record per job, holding the job's track and, when the job is the first the history
//! enqueued under its key, the key's track: under `unique = "forever"` (the chapter's default) a
//! key has exactly one job, so the two are one record of 80 bytes (a 56-byte job track, a 44-byte
//! key track and a 16-byte key-index entry before), and the key's payload and its job number are
//! stored once.
//!
//! Owns: [`Record`] (the packed fields, read and written by `job_track.rs` for the job's part and
//! by `key_track.rs` for the key's), its flag bits, and [`Side`]: the side table that keeps
//! exactly every value too wide for its packed field, by record and field.
//! Does not: decide what a field means (the tracks do) or find a record (`tracks.rs`).

use crate::ids::SimTime;
use std::collections::BTreeMap;

/// A job's record (80 bytes, aligned to 4). The job's part: times as offsets from the enqueue
/// time (+1: 0 is the time 0), the token as `u32`, holder and lease count as `u16`, the key as
/// its parts (always valid, live or finished: the checker's index reads keys back from here).
/// The payload: the key's when the record holds its key's track ([`HOME`]), else the job's.
/// The key's part (meaningful only with [`HOME`], or in an orphan key's record): the first
/// commit's time as an offset from the enqueue time, the applied time as an offset from the
/// first commit's, counts as `u8`. [`WIDE`] (or [`WIDE16`], [`WIDE8`]) in a field: the exact
/// value is in the [`Side`] table.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Record {
    pub enqueued_at: [u32; 2],
    /// The job's visible time; while the job is live ([`LIVE`]), the slab slot of its plain track.
    pub visible_from: u32,
    pub leased_at: u32,
    pub renewed_at: u32,
    pub terminal_at: u32,
    pub fence: u32,
    pub document: u32,
    pub content: [u32; 2],
    pub first_output: [u32; 2],
    pub first_at: u32,
    pub applied_at: u32,
    pub result_event: u32,
    /// The next record in its document's chain of the checker's index on keys (`tracks.rs`).
    pub next: u32,
    pub holder: u16,
    pub leases: u16,
    pub version: u16,
    pub tenant: u16,
    pub operation: u16,
    /// The job's flags (below).
    pub flags: u16,
    /// The key's flags and the record's sharing bits (below).
    pub key_flags: u16,
    pub results: u8,
    pub events: u8,
}

// The job's flag bits.
pub(super) const EXISTS: u16 = 1;
pub(super) const RENEWED: u16 = 1 << 1;
pub(super) const LEASE_HELD: u16 = 1 << 2;
pub(super) const AUDITED: u16 = 1 << 3;
pub(super) const REPROCESSED: u16 = 1 << 4;
pub(super) const HAS_FAILURE: u16 = 1 << 5;
pub(super) const HAS_REPROCESSED_FROM: u16 = 1 << 6;
pub(super) const PLACE_SHIFT: u16 = 7; // 2 bits
pub(super) const TERMINAL_SHIFT: u16 = 9; // 2 bits, 0: none
pub(super) const DLQ_SHIFT: u16 = 11; // 2 bits
/// The job is live: its plain track is in the slab, at the slot kept in `visible_from`, and no
/// other field of the job's part but the key, the tenant and the enqueue time means anything.
pub(super) const LIVE: u16 = 1 << 13;
/// The key's tenant is the job's (`tenancy_isolation` holds); else [`KEY_TENANT_NONE`] or the
/// side table.
pub(super) const KEY_TENANT_OWN: u16 = 1 << 14;
pub(super) const KEY_TENANT_NONE: u16 = 1 << 15;

// The key's flag bits (the low four are the plain `KeyTrack`'s).
pub(super) const ENQUEUED: u16 = 1;
pub(super) const HAS_RESULT_EVENT: u16 = 2;
pub(super) const APPLIED: u16 = 4;
pub(super) const REVIEWED: u16 = 8;
/// The record holds its job's key's track: the job was the first enqueued under a key no
/// record had named before.
pub(super) const HOME: u16 = 1 << 4;
pub(super) const HAS_NEWEST: u16 = 1 << 5;
/// The key's newest job is not the record's job: it is in the side table.
pub(super) const NEWEST_APART: u16 = 1 << 6;
/// The key's first committer is not the record's job: it is in the side table.
pub(super) const FIRST_JOB_APART: u16 = 1 << 7;
/// The effect was applied from another event than the result event: it is in the side table.
pub(super) const APPLIED_EVENT_APART: u16 = 1 << 8;
/// A finished job whose payload is not its key's (a `payload_mutated`, a replace, a commit of
/// another payload under the key): the job's payload is in the rare table (`tracks.rs`).
pub(super) const JOB_PAYLOAD_APART: u16 = 1 << 9;

/// A packed field whose value is in the side table.
pub(super) const WIDE: u32 = u32::MAX;
pub(super) const WIDE16: u16 = u16::MAX;
pub(super) const WIDE8: u8 = u8::MAX;

/// The side table's field numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(super) enum Field {
    VisibleFrom,
    LeasedAt,
    RenewedAt,
    TerminalAt,
    Fence,
    Holder,
    Leases,
    KeyTenant,
    FirstAt,
    AppliedAt,
    ResultEvent,
    AppliedEvent,
    FirstJob,
    Newest,
    Results,
    Events,
}

pub(super) fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

pub(super) fn join(v: [u32; 2]) -> u64 {
    v[0] as u64 | (v[1] as u64) << 32
}

/// Values too wide for their packed field, by record and field: exact, and empty in a run whose
/// times stay within 2^32 - 2 units of each job's enqueue, whose tokens and event ids fit 32
/// bits, whose holders and lease counts fit 16 bits and counts 8, whose keys embed their job's
/// tenant and whose keys each have one job. A stale value (the field fits again) stays but is
/// not read: the packed field says where the value is.
#[derive(Clone, Debug, Default)]
pub(super) struct Side(BTreeMap<(u32, Field), u64>);

impl Side {
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn get(&self, id: u32, field: Field) -> u64 {
        *self
            .0
            .get(&(id, field))
            .expect("a field apart from its packed form has its value in the side table")
    }

    pub fn put(&mut self, id: u32, field: Field, v: u64) {
        self.0.insert((id, field), v);
    }

    /// A time stored as an offset + 1 from `base` (0: the time 0).
    pub fn time(&self, id: u32, field: Field, base: u64, packed: u32) -> SimTime {
        match packed {
            0 => 0,
            WIDE => self.get(id, field),
            d => base + (d as u64 - 1),
        }
    }

    pub fn put_time(&mut self, id: u32, field: Field, base: u64, v: SimTime) -> u32 {
        if v == 0 {
            return 0;
        }
        match v.checked_sub(base).filter(|d| *d < (WIDE - 1) as u64) {
            Some(d) => d as u32 + 1,
            None => {
                self.put(id, field, v);
                WIDE
            }
        }
    }

    /// A time stored as an offset from `base` (for times that are read only once set).
    pub fn offset(&self, id: u32, field: Field, base: u64, packed: u32) -> SimTime {
        match packed {
            WIDE => self.get(id, field),
            d => base + d as u64,
        }
    }

    pub fn put_offset(&mut self, id: u32, field: Field, base: u64, v: SimTime) -> u32 {
        match v.checked_sub(base).filter(|d| *d < WIDE as u64) {
            Some(d) => d as u32,
            None => {
                self.put(id, field, v);
                WIDE
            }
        }
    }

    pub fn number(&self, id: u32, field: Field, packed: u32) -> u64 {
        match packed {
            WIDE => self.get(id, field),
            n => n as u64,
        }
    }

    pub fn put_number(&mut self, id: u32, field: Field, v: u64) -> u32 {
        if v < WIDE as u64 {
            v as u32
        } else {
            self.put(id, field, v);
            WIDE
        }
    }

    pub fn number16(&self, id: u32, field: Field, packed: u16) -> u64 {
        match packed {
            WIDE16 => self.get(id, field),
            n => n as u64,
        }
    }

    pub fn put_number16(&mut self, id: u32, field: Field, v: u64) -> u16 {
        if v < WIDE16 as u64 {
            v as u16
        } else {
            self.put(id, field, v);
            WIDE16
        }
    }

    pub fn number8(&self, id: u32, field: Field, packed: u8) -> u32 {
        match packed {
            WIDE8 => self.get(id, field) as u32,
            n => n as u32,
        }
    }

    pub fn put_number8(&mut self, id: u32, field: Field, v: u32) -> u8 {
        if v < WIDE8 as u32 {
            v as u8
        } else {
            self.put(id, field, v as u64);
            WIDE8
        }
    }
}

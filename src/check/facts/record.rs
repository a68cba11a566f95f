//! One record per job, holding the job's track and, when the job is the first the history
//! enqueued under its key, the key's track: under `unique = "forever"` (the chapter's default) a
//! key has exactly one job, so the two are one record of 56 bytes, and the key's payload and its
//! job number are stored once (docs/memory-layout.md). The job's renewal time is kept exactly,
//! as an offset from its lease time.
//!
//! Owns: [`PackedTrack`] (the packed fields, read and written by `job_track.rs` for the job's part and
//! by `key_track.rs` for the key's), its flag bits, [`Side`]: the side table that keeps exactly
//! every value too wide for its packed field, by record and field, and the payloads' contents
//! that are not 0, and [`Epochs`]: the enqueue times' bases, by runs of job ids.
//! Does not: decide what a field means (the tracks do) or find a record (`tracks.rs`).

use crate::base::ids::SimTime;
use std::collections::BTreeMap;

/// A job's record (56 bytes, aligned to 4). The job's part: the enqueue time as an offset from
/// its run's base ([`Epochs`]), the other times as offsets from the enqueue time (+1: 0 is the
/// time 0), the renewal as an offset from the lease time, the token as `u32`, holder and lease
/// count as `u8`, the key as its parts (always valid, live or finished: the checker's index
/// reads keys back from here). The payload: the key's when the record holds its key's track
/// ([`HOME`]), else the job's; its operation here, its content a flag when 0, else in the side
/// table ([`CONTENT_APART`]). The key's part (meaningful only with [`HOME`], or in an orphan
/// key's record): the first commit's time as an offset from the enqueue time, its output and
/// event, the count of results as 3 bits of `key_flags`. [`WIDE`] (or [`WIDE8`], [`WIDE3`]) in a
/// field: the exact value is in the [`Side`] table. Every field is exact: no value reads back as
/// a stand-in for another.
#[derive(Clone, Copy, Debug, Default, Hash)]
pub(super) struct PackedTrack {
    /// The enqueue time, as an offset from the base of the run of job ids the job is in
    /// ([`Epochs`]); [`WIDE`]: in the side table.
    pub enqueued_at: u32,
    /// The job's visible time; while the job is live ([`LIVE`]), the slab slot of its plain track.
    pub visible_from: u32,
    pub leased_at: u32,
    pub terminal_at: u32,
    pub fence: u32,
    pub document: u32,
    pub first_output: [u32; 2],
    pub first_at: u32,
    /// The job's last renewal, as an offset from its lease time ([`WIDE`]: in the side table).
    pub renewed_at: u32,
    pub result_event: u32,
    pub version: u16,
    pub tenant: u16,
    pub operation: u16,
    /// The job's flags (below).
    pub flags: u16,
    /// The key's flags, the record's sharing bits and the key's counts (below).
    pub key_flags: u16,
    pub holder: u8,
    pub leases: u8,
}

// The job's flag bits. A record holds a job (an `enqueued` record created it) exactly when it is
// [`LIVE`] or has its terminal record (a finished job's track is packed only then).
/// The job's latest lease committed its result or deduplicated onto the key's
/// (`acked_with_result`).
pub(super) const OWN_RESULT: u16 = 1;
pub(super) const RENEWED: u16 = 1 << 1;
pub(super) const LEASE_HELD: u16 = 1 << 2;
/// The job has parts in the rare table (`tracks.rs`, `job_track::Rare`): a pending failure, a
/// reprocess link or flag, a payload that is not its record's.
pub(super) const HAS_RARE: u16 = 1 << 3;
// Bits 4 to 6 are free.
pub(super) const PLACE_SHIFT: u16 = 7; // 2 bits
pub(super) const TERMINAL_SHIFT: u16 = 9; // 2 bits, 0: none
pub(super) const TERMINAL_MASK: u16 = 3 << TERMINAL_SHIFT;
pub(super) const DLQ_SHIFT: u16 = 11; // 2 bits
/// The job is live: its plain track is in the slab, at the slot kept in `visible_from`, and no
/// other field of the job's part but the key, the tenant and the enqueue time means anything.
pub(super) const LIVE: u16 = 1 << 13;
/// The key's tenant is the job's (`tenancy_isolation` holds); else [`KEY_TENANT_NONE`] or the
/// side table.
pub(super) const KEY_TENANT_OWN: u16 = 1 << 14;
pub(super) const KEY_TENANT_NONE: u16 = 1 << 15;

/// Whether the record holds a job.
#[inline]
pub(super) fn holds_job(r: &PackedTrack) -> bool {
    r.flags & (LIVE | TERMINAL_MASK) != 0
}

// The key's flag bits (the low four are the plain `KeyTrack`'s).
pub(super) const ENQUEUED: u16 = 1;
/// The key's first commit wrote an outbox event (`result_event`).
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
/// The effect was applied from another event than the first commit's: it is in the side table.
pub(super) const APPLIED_EVENT_APART: u16 = 1 << 8;
/// The key has commits after its first, or events published directly: in the key rare table
/// (`tracks.rs`).
pub(super) const KEY_RARE: u16 = 1 << 9;
/// The key's results committed (3 bits; [`WIDE3`]: in the side table).
pub(super) const RESULTS_SHIFT: u16 = 10;
// Bits 13 and 14 are free.
/// The stored payload's content is not 0 (the default content of a generated document): it is
/// in the side table's contents ([`Side::content`]).
pub(super) const CONTENT_APART: u16 = 1 << 15;

impl PackedTrack {
    /// The key's results count as packed (3 bits).
    #[inline]
    pub fn results3(&self) -> u8 {
        ((self.key_flags >> RESULTS_SHIFT) & 7) as u8
    }

    #[inline]
    pub fn set_results3(&mut self, v: u8) {
        self.key_flags =
            (self.key_flags & !(7 << RESULTS_SHIFT)) | ((v as u16 & 7) << RESULTS_SHIFT);
    }
}

/// A packed field whose value is in the side table.
pub(super) const WIDE: u32 = u32::MAX;
pub(super) const WIDE8: u8 = u8::MAX;
pub(super) const WIDE3: u8 = 7;

/// The side table's field numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub(super) enum Field {
    EnqueuedAt,
    VisibleFrom,
    LeasedAt,
    RenewedAt,
    TerminalAt,
    Fence,
    Holder,
    Leases,
    KeyTenant,
    FirstAt,
    ResultEvent,
    AppliedEvent,
    FirstJob,
    Newest,
    Results,
}

pub(super) fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

pub(super) fn join(v: [u32; 2]) -> u64 {
    v[0] as u64 | (v[1] as u64) << 32
}

/// Values too wide for their packed field, by record and field: exact, and empty in a run whose
/// times stay within 2^32 - 2 units of each job's enqueue, whose jobs are enqueued in the order
/// of their ids, whose tokens and event ids fit 32 bits, whose holders and lease counts are
/// below 255 and a key's results below 7, whose keys embed their job's tenant and whose keys
/// each have one job. A stale value (the field fits again) stays but is
/// not read: the packed field says where the value is.
#[derive(Clone, Debug, Default, Hash)]
pub(super) struct Side(BTreeMap<(u32, Field), u64>, Contents);

/// The stored payloads' contents that are not 0, by record: in a map while they are few, in a
/// column by record once they are a quarter of the records or more (a history whose every
/// payload has a content of its own costs its 8 bytes a record, as in the record before).
#[derive(Clone, Debug, Default, Hash)]
struct Contents {
    map: BTreeMap<u32, u64>,
    column: Vec<u64>,
}

impl Contents {
    fn get(&self, id: u32) -> u64 {
        match self.column.is_empty() {
            true => *self
                .map
                .get(&id)
                .expect("a content apart from its record is kept"),
            false => self.column[id as usize],
        }
    }

    fn put(&mut self, id: u32, v: u64) {
        if !self.column.is_empty() {
            if self.column.len() <= id as usize {
                self.column.resize(id as usize + 1, 0);
            }
            self.column[id as usize] = v;
            return;
        }
        self.map.insert(id, v);
        let span = *self.map.last_key_value().expect("not empty").0 as usize + 1;
        if self.map.len() >= 1024 && self.map.len() * 4 >= span {
            let mut column = vec![0; span];
            for (id, v) in std::mem::take(&mut self.map) {
                column[id as usize] = v;
            }
            self.column = column;
        }
    }
}

impl Side {
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the contents apart are kept in a column by record.
    #[cfg(test)]
    pub fn contents_in_column(&self) -> bool {
        !self.1.column.is_empty()
    }

    /// The content of the payload record `r` (number `id`) stores.
    #[inline]
    pub fn content(&self, id: u32, r: &PackedTrack) -> u64 {
        match r.key_flags & CONTENT_APART {
            0 => 0,
            _ => self.1.get(id),
        }
    }

    /// Sets the content of the payload record `r` (number `id`) stores.
    #[inline]
    pub fn set_content(&mut self, id: u32, r: &mut PackedTrack, v: u64) {
        if v == 0 {
            r.key_flags &= !CONTENT_APART;
        } else {
            r.key_flags |= CONTENT_APART;
            self.1.put(id, v);
        }
        debug_assert_eq!(self.content(id, r), v, "the content reads back");
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
        let packed = if v == 0 {
            0
        } else {
            match v.checked_sub(base).filter(|d| *d < (WIDE - 1) as u64) {
                Some(d) => d as u32 + 1,
                None => {
                    self.put(id, field, v);
                    WIDE
                }
            }
        };
        debug_assert_eq!(
            self.time(id, field, base, packed),
            v,
            "{field:?} reads back"
        );
        packed
    }

    /// A time stored as an offset from `base` (for times that are read only once set).
    pub fn offset(&self, id: u32, field: Field, base: u64, packed: u32) -> SimTime {
        match packed {
            WIDE => self.get(id, field),
            d => base + d as u64,
        }
    }

    pub fn put_offset(&mut self, id: u32, field: Field, base: u64, v: SimTime) -> u32 {
        let packed = match v.checked_sub(base).filter(|d| *d < WIDE as u64) {
            Some(d) => d as u32,
            None => {
                self.put(id, field, v);
                WIDE
            }
        };
        debug_assert_eq!(
            self.offset(id, field, base, packed),
            v,
            "{field:?} reads back"
        );
        packed
    }

    /// A value packed in a field whose all-ones value `wide` says "in the side table".
    fn narrow(&self, id: u32, field: Field, packed: u64, wide: u64) -> u64 {
        if packed == wide {
            self.get(id, field)
        } else {
            packed
        }
    }

    /// `v` packed for a field whose all-ones value is `wide`: `v` itself when it fits below
    /// `wide`, else `wide`, with `v` put in the side table.
    fn put_narrow(&mut self, id: u32, field: Field, v: u64, wide: u64) -> u64 {
        let packed = if v < wide {
            v
        } else {
            self.put(id, field, v);
            wide
        };
        debug_assert_eq!(
            self.narrow(id, field, packed, wide),
            v,
            "{field:?} reads back"
        );
        packed
    }

    pub fn number(&self, id: u32, field: Field, packed: u32) -> u64 {
        self.narrow(id, field, packed as u64, WIDE as u64)
    }

    pub fn put_number(&mut self, id: u32, field: Field, v: u64) -> u32 {
        self.put_narrow(id, field, v, WIDE as u64) as u32
    }

    pub fn number8(&self, id: u32, field: Field, packed: u8) -> u32 {
        self.narrow(id, field, packed as u64, WIDE8 as u64) as u32
    }

    pub fn put_number8(&mut self, id: u32, field: Field, v: u32) -> u8 {
        self.put_narrow(id, field, v as u64, WIDE8 as u64) as u8
    }

    /// A count packed in 3 bits ([`WIDE3`]: in the side table).
    pub fn count3(&self, id: u32, field: Field, packed: u8) -> u32 {
        self.narrow(id, field, packed as u64, WIDE3 as u64) as u32
    }

    pub fn put_count3(&mut self, id: u32, field: Field, v: u32) -> u8 {
        self.put_narrow(id, field, v as u64, WIDE3 as u64) as u8
    }
}

/// The bases of the jobs' enqueue times, by runs of job ids: a job's record keeps its enqueue
/// time as a 32-bit offset from the base of the run its id is in. A run starts at a job whose
/// time does not fit the run before (2^31 units before it: a time may go back that much within a
/// run, a store's clock; forward, as far as 32 bits reach). Exact for any history: a job created
/// out of the order of ids whose time does not fit its run has its time in the side table.
/// Few runs: one for a millisecond history up to 49 days, one every 35 minutes of a
/// microsecond one.
#[derive(Clone, Debug, Default, Hash)]
pub(super) struct Epochs {
    /// The first job of each run, increasing, and the run's base.
    starts: Vec<u32>,
    bases: Vec<u64>,
}

/// How far before a run's first enqueue its base is.
const BACK: u64 = 1 << 31;

impl Epochs {
    /// The base of the run `job` is in (a job whose offset is not [`WIDE`] has one).
    #[inline]
    pub fn base(&self, job: u32) -> u64 {
        match self.starts.last() {
            Some(&s) if s <= job => self.bases[self.bases.len() - 1],
            _ => self.bases[self.starts.partition_point(|s| *s <= job) - 1],
        }
    }

    /// The packed enqueue time of `job` enqueued at `at` ([`WIDE`]: it goes to the side table).
    /// `last`: no job with a greater id exists, so a run may start at `job`.
    pub fn put(&mut self, job: u32, at: SimTime, last: bool) -> u32 {
        let n = self.starts.partition_point(|s| *s <= job);
        if n > 0 {
            let d = at.checked_sub(self.bases[n - 1]);
            if let Some(d) = d.filter(|d| *d < WIDE as u64) {
                return d as u32;
            }
        }
        if !last {
            return WIDE;
        }
        debug_assert!(n == self.starts.len() && self.starts.last() != Some(&job));
        let base = at.saturating_sub(BACK);
        self.starts.push(job);
        self.bases.push(base);
        (at - base) as u32
    }

    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.starts.len()
    }
}

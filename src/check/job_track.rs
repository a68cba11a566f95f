//! The checker's per-job memory: what it must remember about every job it has seen, stored
//! compactly.
//!
//! Owns: [`JobTrack`] (the fields the invariant families read, as a plain value), its packed
//! form (56 bytes a job instead of 152: times as offsets from the job's enqueue time, tokens as
//! `u32`, the holder and the lease count as `u16`, every flag in one `u16`, the key as its
//! parts; the rare value that does not fit its packed field is kept exactly in a side table, and
//! so are the parts a finished job seldom has: a pending failed attempt, the job it reprocesses),
//! and [`JobTracks`]: a job without a
//! terminal record is *live* and its track is kept plain in a small slab (read and changed in
//! place on the hot path); when it reaches its terminal state it is packed and its slab slot
//! reused, so the slab holds as many tracks as there are unfinished jobs.
//! Why every field is kept for the whole run, and not freed when the job ends, is written down in
//! ARCHITECTURE.md ("What the checker remembers"): a record may name a job after its terminal
//! state (a zombie's write, a late republish, a dedupe onto it, a reprocess), and judging it
//! needs the job's token, holder, times and payload as they were.
//! Does not: judge anything (the families do) or know the model.

use crate::ids::{DocumentId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use crate::vocab::key::IdempotencyKey;
use std::collections::BTreeMap;

use super::checker::PayloadId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Terminal {
    Acked,
    DeadLettered,
    Cancelled,
}

/// Where a job stands for the queue depth: the checker's own view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Not visible yet (a delayed enqueue, a retry's backoff).
    Waiting,
    /// Visible and not leased: counted in the depth.
    Ready,
    Leased,
    Done,
}

/// The job's DLQ entry, as the checker tracks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DlqEntry {
    None,
    Held,
    Evicted,
}

/// A failed attempt waiting for its decision: its token, its error, when.
#[derive(Clone, Copy, Debug)]
pub(super) struct Failure {
    pub fence: Fence,
    pub at: SimTime,
    /// The error, as its index in `vocab::codes::ERRORS`.
    error: u8,
}

impl Failure {
    pub fn new(fence: Fence, error: &str, at: SimTime) -> Failure {
        let error = crate::vocab::codes::ERRORS
            .iter()
            .position(|e| *e == error)
            .unwrap_or(crate::vocab::codes::ERRORS.len() - 1) as u8;
        Failure { fence, at, error }
    }

    pub fn error(&self) -> &'static str {
        crate::vocab::codes::ERRORS[self.error as usize]
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct JobTrack {
    pub tenant: TenantId,
    pub key: IdempotencyKey,
    /// The payload as enqueued, or as last changed by `payload_mutated`.
    pub payload: PayloadId,
    pub enqueued_at: SimTime,
    /// Recomputed: enqueue time + the configured deadline (not stored: recomputed on reading).
    pub deadline_at: SimTime,
    /// When the job may next be leased: the enqueue's visible time, or a retry's.
    pub visible_from: SimTime,
    /// The token of the latest lease (meaningful once `leases > 0`) and its holder.
    pub fence: Fence,
    pub holder: WorkerId,
    pub leased_at: SimTime,
    /// The latest lease's last renewal (the lease itself, or a heartbeat): it is live through
    /// `renewed_at + lease`.
    pub renewed_at: SimTime,
    /// A heartbeat renewed the latest lease.
    pub renewed: bool,
    /// The latest lease has not been released (ack, retry, dead-letter, cancel) or validly
    /// recorded as expired.
    pub lease_held: bool,
    pub leases: u32,
    pub place: Place,
    pub terminal: Option<(Terminal, SimTime)>,
    pub failure: Option<Failure>,
    pub dlq: DlqEntry,
    pub reprocessed_from: Option<JobId>,
    pub audited: bool,
    /// An audited reprocess created a successor: the work goes on under another job.
    pub reprocessed: bool,
}

impl JobTrack {
    /// The end of the latest lease, recomputed: its last renewal + the configured lease.
    pub fn lease_end(&self, config: &crate::vocab::config::RunConfig) -> SimTime {
        self.renewed_at.saturating_add(config.lease)
    }
}

/// A job's track as stored. Times are offsets from `enqueued_at` (+1; 0 is the time 0, which
/// unset times hold), the token `u32`, the holder and the lease count `u16`; [`WIDE`] (or
/// [`WIDE16`]) in a field means "the exact value is in the side table". A pending failure and a
/// `reprocessed_from` link are in [`JobTracks::rare`] (flags `HAS_FAILURE`,
/// `HAS_REPROCESSED_FROM`): a finished job has a failure only after a zombie's failed attempt,
/// and only a reprocess's successor has the link.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    enqueued_at: u64,
    content: u64,
    visible_from: u32,
    leased_at: u32,
    renewed_at: u32,
    terminal_at: u32,
    fence: u32,
    document: u32,
    holder: u16,
    leases: u16,
    version: u16,
    /// The key's tenant (`u16::MAX`: a key with none).
    key_tenant: u16,
    tenant: u16,
    operation: u16,
    flags: u16,
}

/// A packed field whose value is in the side table.
const WIDE: u32 = u32::MAX;
/// A packed `u16` field whose value is in the side table.
const WIDE16: u16 = u16::MAX;

/// The parts of a packed track a finished job seldom has (see [`Packed`]).
#[derive(Clone, Copy, Debug, Default)]
struct Rare {
    failure: Option<Failure>,
    reprocessed_from: Option<JobId>,
}

// The flag bits: which optional parts are present, and the small enums.
const EXISTS: u16 = 1;
const RENEWED: u16 = 1 << 1;
const LEASE_HELD: u16 = 1 << 2;
const AUDITED: u16 = 1 << 3;
const REPROCESSED: u16 = 1 << 4;
const HAS_FAILURE: u16 = 1 << 5;
const HAS_REPROCESSED_FROM: u16 = 1 << 6;
const PLACE_SHIFT: u16 = 7; // 2 bits
const TERMINAL_SHIFT: u16 = 9; // 2 bits, 0: none
const DLQ_SHIFT: u16 = 11; // 2 bits

/// The side table's field numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Field {
    VisibleFrom,
    LeasedAt,
    RenewedAt,
    TerminalAt,
    Fence,
    Holder,
    Leases,
}

/// Set in a packed track whose job is live: its plain track is in the slab, at the index kept in
/// `enqueued_at`, and no other packed field means anything.
const LIVE: u16 = 1 << 13;

/// Every job's track, indexed by job id.
#[derive(Clone, Debug, Default)]
pub(super) struct JobTracks {
    packed: Vec<Packed>,
    /// The live jobs' plain tracks; `free` lists the slots to reuse (last freed first).
    live: Vec<JobTrack>,
    free: Vec<u32>,
    /// Values too wide for their packed field, by job and field: exact, and empty in any run
    /// whose times stay within 49 days (in ms) of each job's enqueue, whose tokens fit 32 bits
    /// and whose holders and lease counts fit 16 bits.
    wide: BTreeMap<(u32, Field), u64>,
    /// A finished job's pending failure and `reprocessed_from` link, by job, when it has one.
    rare: BTreeMap<u32, Rare>,
}

impl JobTracks {
    pub fn reserve(&mut self, jobs: usize) {
        self.packed.reserve(jobs);
    }

    pub fn len(&self) -> usize {
        self.packed.len()
    }

    #[inline]
    fn exists(&self, job: JobId) -> Option<&Packed> {
        self.packed
            .get(job.index())
            .filter(|p| p.flags & EXISTS != 0)
    }

    /// The job's track, if an `enqueued` record created it. `deadline` is the configured one.
    #[inline]
    pub fn get(&self, job: JobId, deadline: SimTime) -> Option<JobTrack> {
        let p = self.exists(job)?;
        Some(match p.flags & LIVE {
            0 => self.unpack(job.0, p, deadline),
            _ => self.live[p.enqueued_at as usize],
        })
    }

    /// Reads the job's track (without copying it when live). The job must exist: every record
    /// names only jobs an earlier `enqueued` created (the reader refuses any other history, and
    /// the kernel cannot write one).
    #[inline]
    pub fn read_known<R>(
        &self,
        job: JobId,
        deadline: SimTime,
        f: impl FnOnce(&JobTrack) -> R,
    ) -> R {
        let Some(p) = self.exists(job) else {
            panic!("history names {job} before it was enqueued")
        };
        match p.flags & LIVE {
            0 => f(&self.unpack(job.0, p, deadline)),
            _ => f(&self.live[p.enqueued_at as usize]),
        }
    }

    /// Creates or replaces the job's track: plain in the slab while it has no terminal record,
    /// packed from then on.
    pub fn set(&mut self, job: JobId, t: &JobTrack) {
        if self.packed.len() <= job.index() {
            self.packed.resize(job.index() + 1, Packed::default());
        }
        let p = self.packed[job.index()];
        let slot = (p.flags & LIVE != 0).then_some(p.enqueued_at as u32);
        match (slot, t.terminal.is_none()) {
            (Some(slot), true) => self.live[slot as usize] = *t,
            (None, true) => {
                let slot = match self.free.pop() {
                    Some(slot) => {
                        self.live[slot as usize] = *t;
                        slot
                    }
                    None => {
                        self.live.push(*t);
                        (self.live.len() - 1) as u32
                    }
                };
                self.packed[job.index()] = Packed {
                    enqueued_at: slot as u64,
                    flags: EXISTS | LIVE,
                    ..Packed::default()
                };
            }
            (slot, false) => {
                if let Some(slot) = slot {
                    self.free.push(slot);
                }
                let p = self.pack(job.0, t);
                self.packed[job.index()] = p;
            }
        }
    }

    /// Changes the job's track in place; `None` if it was never enqueued.
    #[inline]
    pub fn update<R>(
        &mut self,
        job: JobId,
        deadline: SimTime,
        change: impl FnOnce(&mut JobTrack) -> R,
    ) -> Option<R> {
        let p = self.exists(job)?;
        if p.flags & LIVE != 0 {
            let slot = p.enqueued_at as usize;
            let r = change(&mut self.live[slot]);
            if self.live[slot].terminal.is_some() {
                let t = self.live[slot];
                self.set(job, &t);
            }
            return Some(r);
        }
        let mut t = self.unpack(job.0, p, deadline);
        let r = change(&mut t);
        self.set(job, &t);
        Some(r)
    }

    /// Where the job stands for the depth (`None`: never enqueued).
    #[inline]
    pub fn place(&self, job: JobId) -> Option<Place> {
        let p = self.exists(job)?;
        Some(match p.flags & LIVE {
            0 => place_of(p.flags),
            _ => self.live[p.enqueued_at as usize].place,
        })
    }

    #[inline]
    pub fn set_place(&mut self, job: JobId, place: Place) {
        if let Some(p) = self.packed.get_mut(job.index()) {
            if p.flags & LIVE != 0 {
                self.live[p.enqueued_at as usize].place = place;
            } else {
                p.flags = (p.flags & !(3 << PLACE_SHIFT)) | ((place as u16) << PLACE_SHIFT);
            }
        }
    }

    /// Plain tracks held (the unfinished jobs at most, and never more than were ever unfinished
    /// at once).
    #[cfg(test)]
    pub fn live_capacity(&self) -> usize {
        self.live.len()
    }

    /// Whether the job has its terminal record, and its leases (`None`: never enqueued), read
    /// without unpacking: the end-of-run figures visit every job.
    pub fn ended_and_leases(&self, job: JobId) -> Option<(bool, u64)> {
        let p = self.exists(job)?;
        Some(match p.flags & LIVE {
            0 => (
                (p.flags >> TERMINAL_SHIFT) & 3 != 0,
                self.number16(job.0, Field::Leases, p.leases),
            ),
            _ => {
                let t = &self.live[p.enqueued_at as usize];
                (t.terminal.is_some(), t.leases as u64)
            }
        })
    }

    /// Whether the end-of-run checks have anything to say about the job: it has no terminal
    /// record, or it was created by a reprocess with no audit entry.
    pub fn needs_finish_check(&self, job: JobId) -> bool {
        self.exists(job).is_some_and(|p| {
            p.flags & LIVE != 0 || (p.flags & HAS_REPROCESSED_FROM != 0 && p.flags & AUDITED == 0)
        })
    }

    fn wide(&self, job: u32, field: Field) -> u64 {
        *self
            .wide
            .get(&(job, field))
            .expect("a wide packed field has its value in the side table")
    }

    fn time(&self, job: u32, field: Field, base: u64, packed: u32) -> SimTime {
        match packed {
            0 => 0,
            WIDE => self.wide(job, field),
            d => base + (d as u64 - 1),
        }
    }

    fn put_time(&mut self, job: u32, field: Field, base: u64, v: SimTime) -> u32 {
        if v == 0 {
            return 0;
        }
        match v.checked_sub(base).filter(|d| *d < (WIDE - 1) as u64) {
            Some(d) => d as u32 + 1,
            None => {
                self.wide.insert((job, field), v);
                WIDE
            }
        }
    }

    fn number(&self, job: u32, field: Field, packed: u32) -> u64 {
        match packed {
            WIDE => self.wide(job, field),
            n => n as u64,
        }
    }

    fn put_number(&mut self, job: u32, field: Field, v: u64) -> u32 {
        if v < WIDE as u64 {
            v as u32
        } else {
            self.wide.insert((job, field), v);
            WIDE
        }
    }

    fn number16(&self, job: u32, field: Field, packed: u16) -> u64 {
        match packed {
            WIDE16 => self.wide(job, field),
            n => n as u64,
        }
    }

    fn put_number16(&mut self, job: u32, field: Field, v: u64) -> u16 {
        if v < WIDE16 as u64 {
            v as u16
        } else {
            self.wide.insert((job, field), v);
            WIDE16
        }
    }

    /// The rare parts of a packed track whose flags say it has some.
    fn rare(&self, job: u32) -> Rare {
        *self
            .rare
            .get(&job)
            .expect("a packed track flagged with a failure or a reprocess link has it in `rare`")
    }

    fn unpack(&self, job: u32, p: &Packed, deadline: SimTime) -> JobTrack {
        let base = p.enqueued_at;
        let f = p.flags;
        let terminal = match (f >> TERMINAL_SHIFT) & 3 {
            0 => None,
            k => Some((
                [Terminal::Acked, Terminal::DeadLettered, Terminal::Cancelled][k as usize - 1],
                self.time(job, Field::TerminalAt, base, p.terminal_at),
            )),
        };
        let rare = match f & (HAS_FAILURE | HAS_REPROCESSED_FROM) {
            0 => Rare::default(),
            _ => self.rare(job),
        };
        JobTrack {
            tenant: TenantId(p.tenant),
            key: IdempotencyKey {
                tenant: (p.key_tenant != u16::MAX).then_some(TenantId(p.key_tenant)),
                document: DocumentId(p.document),
                version: p.version as u32,
            },
            payload: PayloadId {
                operation: OperationId(p.operation),
                content: p.content,
            },
            enqueued_at: base,
            deadline_at: base.saturating_add(deadline),
            visible_from: self.time(job, Field::VisibleFrom, base, p.visible_from),
            fence: Fence(self.number(job, Field::Fence, p.fence)),
            holder: WorkerId(self.number16(job, Field::Holder, p.holder) as u32),
            leased_at: self.time(job, Field::LeasedAt, base, p.leased_at),
            renewed_at: self.time(job, Field::RenewedAt, base, p.renewed_at),
            renewed: f & RENEWED != 0,
            lease_held: f & LEASE_HELD != 0,
            leases: self.number16(job, Field::Leases, p.leases) as u32,
            place: place_of(f),
            terminal,
            failure: rare.failure,
            dlq: [DlqEntry::None, DlqEntry::Held, DlqEntry::Evicted]
                [((f >> DLQ_SHIFT) & 3) as usize],
            reprocessed_from: rare.reprocessed_from,
            audited: f & AUDITED != 0,
            reprocessed: f & REPROCESSED != 0,
        }
    }

    fn pack(&mut self, job: u32, t: &JobTrack) -> Packed {
        let base = t.enqueued_at;
        let mut flags = EXISTS | ((t.place as u16) << PLACE_SHIFT) | ((t.dlq as u16) << DLQ_SHIFT);
        for (on, bit) in [
            (t.renewed, RENEWED),
            (t.lease_held, LEASE_HELD),
            (t.audited, AUDITED),
            (t.reprocessed, REPROCESSED),
            (t.failure.is_some(), HAS_FAILURE),
            (t.reprocessed_from.is_some(), HAS_REPROCESSED_FROM),
        ] {
            if on {
                flags |= bit;
            }
        }
        let (terminal_kind, terminal_at) = match t.terminal {
            None => (0, 0),
            Some((k, at)) => (k as u16 + 1, at),
        };
        flags |= terminal_kind << TERMINAL_SHIFT;
        if t.failure.is_some() || t.reprocessed_from.is_some() {
            let rare = Rare {
                failure: t.failure,
                reprocessed_from: t.reprocessed_from,
            };
            self.rare.insert(job, rare);
        } else if !self.rare.is_empty() {
            self.rare.remove(&job);
        }
        // Versions are at most 65,535 (`vocab::key::MAX_VERSION`), tenants and operations u16.
        debug_assert!(t.key.version <= u16::MAX as u32);
        Packed {
            enqueued_at: base,
            content: t.payload.content,
            visible_from: self.put_time(job, Field::VisibleFrom, base, t.visible_from),
            leased_at: self.put_time(job, Field::LeasedAt, base, t.leased_at),
            renewed_at: self.put_time(job, Field::RenewedAt, base, t.renewed_at),
            terminal_at: self.put_time(job, Field::TerminalAt, base, terminal_at),
            fence: self.put_number(job, Field::Fence, t.fence.0),
            holder: self.put_number16(job, Field::Holder, t.holder.0 as u64),
            leases: self.put_number16(job, Field::Leases, t.leases as u64),
            document: t.key.document.0,
            version: t.key.version as u16,
            key_tenant: t.key.tenant.map_or(u16::MAX, |x| x.0),
            tenant: t.tenant.0,
            operation: t.payload.operation.0,
            flags,
        }
    }
}

fn place_of(flags: u16) -> Place {
    [Place::Waiting, Place::Ready, Place::Leased, Place::Done]
        [((flags >> PLACE_SHIFT) & 3) as usize]
}

#[cfg(test)]
mod tests;

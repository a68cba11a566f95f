//! The checker's per-job facts: what it must remember about every job it has seen, stored
//! compactly.
//!
//! Owns: [`JobTrack`] (the facts the rules read, as a plain value: every field exact, or absent
//! by type — a job never leased has no [`Lease`], not a lease at time 0) and the job's part of
//! its packed record (`record.rs`: times as offsets from the job's enqueue time, the renewal as
//! one from the lease time, tokens as `u32`, the holder and the lease count as `u8`, every flag
//! in one `u16`, the key as its parts; the rare value that does not fit its packed field is kept
//! exactly in the side table, and so are the parts a finished job seldom has: a pending failed
//! attempt, the job it reprocesses, its reprocess flags, a payload that is not its record's). A
//! job without a terminal record is *live*: its track is kept plain in a small slab
//! (`tracks.rs`), read and changed in place on the hot path, and packed into its record when it
//! reaches its terminal state (a debug build reads every packed track back and compares).
//! Why every field is kept for the whole run, and not freed when the job ends, is written down in
//! docs/memory-layout.md: a record may name a job after its terminal state (a zombie's write, a
//! late republish, a dedupe onto it, a reprocess), and judging it needs the job's token, holder,
//! times and payload as they were.
//! Does not: judge anything (the rules do), change a fact (the reducer, `facts/mod.rs`, does),
//! know the model, or find a record (`tracks.rs`).

use super::key_track::PayloadId;
use super::record::*;
use crate::base::ids::{DocumentId, Fence, JobId, SimTime, TenantId, WorkerId};
use crate::vocab::config::RunConfig;
use crate::vocab::key::IdempotencyKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) enum Terminal {
    Acked,
    DeadLettered,
    Cancelled,
}

/// Where a job stands for the queue depth: the checker's own view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) enum Place {
    /// Not visible yet (a delayed enqueue, a retry's backoff).
    Waiting,
    /// Visible and not leased: counted in the depth.
    Ready,
    Leased,
    Done,
}

/// The job's DLQ entry, as the checker tracks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) enum DlqEntry {
    None,
    Held,
    Evicted,
}

/// A failed attempt waiting for its decision: its token, its error, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) struct Failure {
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

/// The job's latest lease: its token, its holder, when it was taken and last renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) struct Lease {
    pub fence: Fence,
    pub holder: WorkerId,
    pub at: SimTime,
    /// Its last renewal (the lease itself, or an accepted heartbeat): it is live through
    /// `renewed_at + lease`.
    pub renewed_at: SimTime,
    /// An accepted heartbeat renewed it.
    pub renewed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) struct JobTrack {
    pub tenant: TenantId,
    pub key: IdempotencyKey,
    /// The payload as enqueued, or as last changed by `payload_mutated` or a replace.
    pub payload: PayloadId,
    pub enqueued_at: SimTime,
    /// When the job may next be leased: the enqueue's visible time, or a retry's.
    pub visible_from: SimTime,
    /// The latest lease (none: never leased).
    pub lease: Option<Lease>,
    /// The latest lease has not been released (ack, retry, dead-letter, cancel) or validly
    /// recorded as expired (false without a lease).
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
    /// Since its latest lease, the job committed a result or deduplicated onto the key's, by that
    /// lease's holder (`acked_with_result`).
    pub own_result: bool,
}

impl JobTrack {
    /// A job as its enqueue record leaves it: never leased, no terminal record.
    pub fn enqueued(
        tenant: TenantId,
        key: IdempotencyKey,
        payload: PayloadId,
        enqueued_at: SimTime,
        visible_from: SimTime,
        reprocessed_from: Option<JobId>,
    ) -> JobTrack {
        JobTrack {
            tenant,
            key,
            payload,
            enqueued_at,
            visible_from,
            lease: None,
            lease_held: false,
            leases: 0,
            place: if visible_from <= enqueued_at {
                Place::Ready
            } else {
                Place::Waiting
            },
            terminal: None,
            failure: None,
            dlq: DlqEntry::None,
            reprocessed_from,
            audited: false,
            reprocessed: false,
            own_result: false,
        }
    }

    /// Recomputed: the enqueue time + the configured deadline (never, `SimTime::MAX`, when the
    /// header states none).
    pub fn deadline_at(&self, config: &RunConfig) -> SimTime {
        config
            .deadline
            .map_or(SimTime::MAX, |d| self.enqueued_at.saturating_add(d))
    }

    /// The latest lease's token (none: never leased).
    pub fn fence(&self) -> Option<Fence> {
        self.lease.map(|l| l.fence)
    }

    /// The end of the latest lease, recomputed: its last renewal + the configured lease.
    pub fn lease_end(&self, config: &RunConfig) -> Option<SimTime> {
        self.lease
            .map(|l| l.renewed_at.saturating_add(config.lease))
    }

    /// The latest lease, if it is held.
    pub fn held(&self) -> Option<&Lease> {
        self.lease.as_ref().filter(|_| self.lease_held)
    }
}

/// The parts of a finished job's track it seldom has, kept by job in the rare table
/// (`tracks.rs`) when present ([`HAS_RARE`]): a pending failed attempt (after a terminal record,
/// only a zombie's failed attempt leaves one), the job a reprocess's successor came from and
/// whether its audit entry came, whether the job was reprocessed, and a payload that is not its
/// record's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(in crate::check) struct Rare {
    pub failure: Option<Failure>,
    pub reprocessed_from: Option<JobId>,
    pub audited: bool,
    pub reprocessed: bool,
    pub payload: Option<PayloadId>,
}

impl Rare {
    pub fn is_empty(&self) -> bool {
        *self == Rare::default()
    }
}

/// Writes a new job's key and tenant into its record (they never change). The key's tenant is
/// the job's unless the history broke `tenant_isolation`: then the side table has it.
pub(super) fn write_key(
    job: u32,
    r: &mut PackedTrack,
    key: &IdempotencyKey,
    tenant: TenantId,
    side: &mut Side,
) {
    // Versions are at most 65,535 (`vocab::key::MAX_VERSION`), tenants u16.
    assert!(key.version <= u16::MAX as u32, "a key version above 65,535");
    r.document = key.document.0;
    r.version = key.version as u16;
    r.tenant = tenant.0;
    r.flags &= !(KEY_TENANT_OWN | KEY_TENANT_NONE);
    match key.tenant {
        Some(t) if t == tenant => r.flags |= KEY_TENANT_OWN,
        None => r.flags |= KEY_TENANT_NONE,
        Some(t) => side.put(job, Field::KeyTenant, t.0 as u64),
    }
    debug_assert_eq!(key_of(job, r, side), *key, "the key reads back");
}

/// The key the job was enqueued under, read back from its record.
#[inline]
pub(super) fn key_of(job: u32, r: &PackedTrack, side: &Side) -> IdempotencyKey {
    let tenant = match r.flags & (KEY_TENANT_OWN | KEY_TENANT_NONE) {
        KEY_TENANT_OWN => Some(TenantId(r.tenant)),
        KEY_TENANT_NONE => None,
        _ => Some(TenantId(side.get(job, Field::KeyTenant) as u16)),
    };
    IdempotencyKey {
        tenant,
        document: DocumentId(r.document),
        version: r.version as u32,
    }
}

/// Whether the job was enqueued under `key` (without building its key).
#[inline]
pub(super) fn has_key(job: u32, r: &PackedTrack, key: &IdempotencyKey, side: &Side) -> bool {
    r.document == key.document.0
        && r.version as u32 == key.version
        && match (r.flags & (KEY_TENANT_OWN | KEY_TENANT_NONE), key.tenant) {
            (KEY_TENANT_OWN, Some(t)) => t.0 == r.tenant,
            (KEY_TENANT_NONE, None) => true,
            (KEY_TENANT_OWN | KEY_TENANT_NONE, _) => false,
            (_, t) => t.map(|t| t.0 as u64) == Some(side.get(job, Field::KeyTenant)),
        }
}

/// Whether the record's job has its terminal record, and its leases, read without unpacking
/// (the record must not be live).
pub(super) fn ended_and_leases(job: u32, r: &PackedTrack, side: &Side) -> (bool, u64) {
    (
        (r.flags >> TERMINAL_SHIFT) & 3 != 0,
        side.number8(job, Field::Leases, r.leases) as u64,
    )
}

/// A finished job's track from its record; `base` (its enqueue time), `payload` and `rare` are
/// found by the caller (`tracks.rs`: the payload may be its key's).
pub(super) fn unpack(
    job: u32,
    r: &PackedTrack,
    side: &Side,
    base: SimTime,
    payload: PayloadId,
    rare: Rare,
) -> JobTrack {
    debug_assert!(r.flags & LIVE == 0, "a live job's track is in the slab");
    let f = r.flags;
    let terminal = match (f >> TERMINAL_SHIFT) & 3 {
        0 => None,
        k => Some((
            [Terminal::Acked, Terminal::DeadLettered, Terminal::Cancelled][k as usize - 1],
            side.time(job, Field::TerminalAt, base, r.terminal_at),
        )),
    };
    let leases = side.number8(job, Field::Leases, r.leases);
    let lease = (leases > 0).then(|| {
        let at = side.time(job, Field::LeasedAt, base, r.leased_at);
        Lease {
            fence: Fence(side.number(job, Field::Fence, r.fence)),
            holder: WorkerId(side.number8(job, Field::Holder, r.holder)),
            at,
            renewed_at: side.offset(job, Field::RenewedAt, at, r.renewed_at),
            renewed: f & RENEWED != 0,
        }
    });
    JobTrack {
        tenant: TenantId(r.tenant),
        key: key_of(job, r, side),
        payload,
        enqueued_at: base,
        visible_from: side.time(job, Field::VisibleFrom, base, r.visible_from),
        lease,
        lease_held: f & LEASE_HELD != 0,
        leases,
        place: place_of(f),
        terminal,
        failure: rare.failure,
        dlq: [DlqEntry::None, DlqEntry::Held, DlqEntry::Evicted][((f >> DLQ_SHIFT) & 3) as usize],
        reprocessed_from: rare.reprocessed_from,
        audited: rare.audited,
        reprocessed: rare.reprocessed,
        own_result: f & OWN_RESULT != 0,
    }
}

/// Packs a finished job's track into its record's job part (the key, tenant and enqueue time
/// were written at the enqueue and stay; the payload and the rare parts are the caller's, who
/// sets [`HAS_RARE`]). `enqueued_at` is the record's.
pub(super) fn pack(
    job: u32,
    r: &mut PackedTrack,
    t: &JobTrack,
    side: &mut Side,
    enqueued_at: SimTime,
) {
    debug_assert!(
        t.enqueued_at == enqueued_at && t.tenant.0 == r.tenant && t.key == key_of(job, r, side),
        "a job's key, tenant and enqueue time never change"
    );
    debug_assert_eq!(
        t.leases > 0,
        t.lease.is_some(),
        "a leased job has its lease"
    );
    let base = t.enqueued_at;
    let mut flags = (r.flags & (KEY_TENANT_OWN | KEY_TENANT_NONE))
        | ((t.place as u16) << PLACE_SHIFT)
        | ((t.dlq as u16) << DLQ_SHIFT);
    let renewed = t.lease.is_some_and(|l| l.renewed);
    for (on, bit) in [
        (renewed, RENEWED),
        (t.lease_held, LEASE_HELD),
        (t.own_result, OWN_RESULT),
    ] {
        if on {
            flags |= bit;
        }
    }
    let (terminal_kind, terminal_at) = match t.terminal {
        // A record holds a job when live or finished: only a finished track is packed.
        None => unreachable!("a live job's track is not packed"),
        Some((k, at)) => (k as u16 + 1, at),
    };
    flags |= terminal_kind << TERMINAL_SHIFT;
    r.visible_from = side.put_time(job, Field::VisibleFrom, base, t.visible_from);
    r.terminal_at = side.put_time(job, Field::TerminalAt, base, terminal_at);
    match t.lease {
        Some(l) => {
            r.leased_at = side.put_time(job, Field::LeasedAt, base, l.at);
            r.renewed_at = side.put_offset(job, Field::RenewedAt, l.at, l.renewed_at);
            r.fence = side.put_number(job, Field::Fence, l.fence.0);
            r.holder = side.put_number8(job, Field::Holder, l.holder.0);
        }
        None => (r.leased_at, r.renewed_at, r.fence, r.holder) = (0, 0, 0, 0),
    }
    r.leases = side.put_number8(job, Field::Leases, t.leases);
    r.flags = flags | (r.flags & HAS_RARE);
}

pub(super) fn place_of(flags: u16) -> Place {
    [Place::Waiting, Place::Ready, Place::Leased, Place::Done]
        [((flags >> PLACE_SHIFT) & 3) as usize]
}

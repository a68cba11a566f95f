//! The checker's per-job memory: what it must remember about every job it has seen, stored
//! compactly.
//!
//! Owns: [`JobTrack`] (the fields the invariant families read, as a plain value) and the job's
//! part of its packed record (`record.rs`: times as offsets from the job's enqueue time, tokens
//! as `u32`, the holder and the lease count as `u8`, every flag in one `u16`, the key as its
//! parts; the rare value that does not fit its packed field is kept exactly in the side table,
//! and so are the parts a finished job seldom has: a pending failed attempt, the job it
//! reprocesses, a payload that is not its key's, a renewal time that may still be read). A job
//! without a terminal record is *live*: its track is kept plain in a small slab (`tracks.rs`),
//! read and changed in place on the hot path, and packed into its record when it reaches its
//! terminal state.
//! Why every field is kept for the whole run, and not freed when the job ends, is written down in
//! ARCHITECTURE.md ("What the checker remembers"): a record may name a job after its terminal
//! state (a zombie's write, a late republish, a dedupe onto it, a reprocess), and judging it
//! needs the job's token, holder, times and payload as they were.
//! Does not: judge anything (the families do), know the model, or find a record (`tracks.rs`).

use super::checker::PayloadId;
use super::record::*;
use crate::base::ids::{DocumentId, Fence, JobId, SimTime, TenantId, WorkerId};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

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
    /// The payload hash the checker recomputed at the enqueue from the history's names, the
    /// job's key's document and its payload, while the job is live and its payload unchanged
    /// (`recorded.rs`: a commit's recorded hash is compared with it instead of a second
    /// recomputation). Not kept once the job ends: a later record recomputes.
    pub derived_hash: Option<PayloadHash>,
}

impl JobTrack {
    /// A job as its enqueue record leaves it: waiting, never leased, no terminal record.
    pub fn enqueued(
        tenant: TenantId,
        key: IdempotencyKey,
        payload: PayloadId,
        enqueued_at: SimTime,
        deadline_at: SimTime,
        visible_from: SimTime,
    ) -> JobTrack {
        JobTrack {
            tenant,
            key,
            payload,
            enqueued_at,
            deadline_at,
            visible_from,
            fence: Fence(0),
            holder: WorkerId(0),
            leased_at: 0,
            renewed_at: 0,
            renewed: false,
            lease_held: false,
            leases: 0,
            place: Place::Waiting,
            terminal: None,
            failure: None,
            dlq: DlqEntry::None,
            reprocessed_from: None,
            audited: false,
            reprocessed: false,
            derived_hash: None,
        }
    }

    /// The end of the latest lease, recomputed: its last renewal + the configured lease.
    pub fn lease_end(&self, config: &crate::vocab::config::RunConfig) -> SimTime {
        self.renewed_at.saturating_add(config.lease)
    }
}

/// The parts of a finished job's track it seldom has, kept by job in the rare table
/// (`tracks.rs`) when present: a pending failed attempt (after a terminal record, only a
/// zombie's failed attempt leaves one), the job a reprocess's successor came from, and a payload
/// that is not its key's.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rare {
    pub failure: Option<Failure>,
    pub reprocessed_from: Option<JobId>,
    pub payload: Option<PayloadId>,
}

impl Rare {
    pub fn is_empty(&self) -> bool {
        self.failure.is_none() && self.reprocessed_from.is_none() && self.payload.is_none()
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

/// A finished job's track from its record; `base` (its enqueue time), `renewed_at` (`None`: its
/// lease time, unless [`RENEWAL_APART`]), `payload` and `rare` are found by the caller
/// (`tracks.rs`: the payload may be its key's), `deadline` is the configured one.
#[allow(clippy::too_many_arguments)]
pub(super) fn unpack(
    job: u32,
    r: &PackedTrack,
    side: &Side,
    base: SimTime,
    renewed_at: Option<SimTime>,
    payload: PayloadId,
    rare: Rare,
    deadline: SimTime,
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
    let leased_at = side.time(job, Field::LeasedAt, base, r.leased_at);
    JobTrack {
        tenant: TenantId(r.tenant),
        key: key_of(job, r, side),
        payload,
        enqueued_at: base,
        deadline_at: base.saturating_add(deadline),
        visible_from: side.time(job, Field::VisibleFrom, base, r.visible_from),
        fence: Fence(side.number(job, Field::Fence, r.fence)),
        holder: WorkerId(side.number8(job, Field::Holder, r.holder)),
        leased_at,
        renewed_at: renewed_at.unwrap_or(leased_at),
        renewed: f & RENEWED != 0,
        lease_held: f & LEASE_HELD != 0,
        leases: side.number8(job, Field::Leases, r.leases),
        place: place_of(f),
        terminal,
        failure: rare.failure,
        dlq: [DlqEntry::None, DlqEntry::Held, DlqEntry::Evicted][((f >> DLQ_SHIFT) & 3) as usize],
        reprocessed_from: rare.reprocessed_from,
        audited: f & AUDITED != 0,
        reprocessed: f & REPROCESSED != 0,
        derived_hash: None,
    }
}

/// Packs a finished job's track into its record's job part (the key, tenant and enqueue time
/// were written at the enqueue and stay; the payload, the rare parts and the renewal time are
/// the caller's: the renewal is read back as the lease time unless the caller keeps it apart).
/// `enqueued_at` is the record's.
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
    let base = t.enqueued_at;
    let mut flags = (r.flags & (KEY_TENANT_OWN | KEY_TENANT_NONE))
        | ((t.place as u16) << PLACE_SHIFT)
        | ((t.dlq as u16) << DLQ_SHIFT);
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
        // A record holds a job when live or finished: only a finished track is packed.
        None => unreachable!("a live job's track is not packed"),
        Some((k, at)) => (k as u16 + 1, at),
    };
    flags |= terminal_kind << TERMINAL_SHIFT;
    r.visible_from = side.put_time(job, Field::VisibleFrom, base, t.visible_from);
    r.leased_at = side.put_time(job, Field::LeasedAt, base, t.leased_at);
    r.terminal_at = side.put_time(job, Field::TerminalAt, base, terminal_at);
    r.fence = side.put_number(job, Field::Fence, t.fence.0);
    r.holder = side.put_number8(job, Field::Holder, t.holder.0);
    r.leases = side.put_number8(job, Field::Leases, t.leases);
    r.flags = flags;
}

pub(super) fn place_of(flags: u16) -> Place {
    [Place::Waiting, Place::Ready, Place::Leased, Place::Done]
        [((flags >> PLACE_SHIFT) & 3) as usize]
}

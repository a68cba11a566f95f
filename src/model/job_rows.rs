//! The queue's rows: what the queue knows of each job, whole while the job is live and compact
//! once it has finished.
//!
//! Owns: the job's state and the per-job values its rules need for the whole run (payload hash,
//! tenant, createdAt, and once finished its last fence and attempt count), in a dense
//! column by job id (8 bytes); the live part (visibleAt, leaseUntil, the fence and attempt count while
//! they move, the expiry and stall flags) in a slab slot that a finished job hands back for the
//! next job to reuse. A queue whose finished jobs can be reopened (a profile's by-id write or
//! rescue; [`JobRows::keep_finished_whole`]) keeps a finished job's slot instead.
//! Does not: decide anything (the queue does), or know keys (the queue's key index does).
//!
//! Exact, not approximated: createdAt is kept as a 16-bit offset from the createdAt of the first
//! job of its block of 64 (jobs are created in time order, so the offset is never negative; one
//! past 65,534 goes to a side map); a finished job's fence above
//! 2^32 - 2 and attempt count above 62 go to side maps. Whether a row is whole is not stored:
//! it is while the job has not finished, and always in a queue that keeps finished rows whole.
//! The payload hash and the tenant are not stored when they are what the job's key implies (the
//! default payload of a generated document, [`default_payload`]; the key's tenant): a bit each,
//! and the value in a side map by job when it is not (a mutated or replaced payload, an explicit
//! one, a named document, a tenantless key): almost every job of a big run is a generated
//! arrival (8 + 2 bytes a job before).

use crate::base::ids::{DocumentId, Fence, JobId, OperationId, SimTime, TenantId};
use crate::base::state_hash::StateMap;
use crate::vocab::key::{IdempotencyKey, KeyNames};
use crate::vocab::payload::{payload_hash, PayloadHash};
use crate::vocab::probes::{Probe, Probes};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Generated documents (`doc-N`) are numbered below this, named ones above (`vocab::key`'s
/// `NAMED_BASE`; a test holds the two together).
const GENERATED_BELOW: u32 = 1 << 31;

/// The payload hash of a generated document's default payload (operation `extract`, content 0,
/// `Payload::of`): what a generated arrival carries, computed from the document number alone
/// (a generated document's name is `doc-N` in every run). `None` for a named document, whose
/// name is the run's. The queue's rows and the outbox's results keep a payload only when it is
/// not this.
///
/// The hashes of recent documents are remembered, per thread, in a direct-mapped table of
/// `MEMO` entries (a pure function's values: what is remembered cannot differ from what would
/// be computed): a job's enqueue, its commit (the queue's payload read, the outbox's check) and
/// the kernel's own hash of a generated arrival's payload ask for the same document within a
/// few seconds of simulated time, so most of them compute nothing.
#[inline]
pub fn default_payload(document: DocumentId) -> Option<PayloadHash> {
    const MEMO: usize = 2048;
    static NAMES: OnceLock<KeyNames> = OnceLock::new();
    thread_local! {
        /// (document, its default payload hash) by `document % MEMO`; `u32::MAX` is no
        /// generated document.
        static RECENT: RefCell<[(u32, u64); MEMO]> = const { RefCell::new([(u32::MAX, 0); MEMO]) };
    }
    if document.0 >= GENERATED_BELOW {
        return None;
    }
    let at = document.0 as usize % MEMO;
    let hash = RECENT.with_borrow_mut(|recent| match recent[at] {
        (d, hash) if d == document.0 => hash,
        _ => {
            let hash = payload_hash(
                NAMES.get_or_init(KeyNames::default),
                document,
                OperationId::EXTRACT,
                0,
            )
            .0;
            recent[at] = (document.0, hash);
            hash
        }
    });
    Some(PayloadHash(hash))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting for `visible_at` (first enqueue in the future, or a retry backoff).
    Waiting,
    /// Visible and not under a live lease: counted in the queue depth.
    Ready,
    Leased,
    Acked,
    DeadLettered,
    Cancelled,
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Acked | JobState::DeadLettered | JobState::Cancelled
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Ready => "ready",
            JobState::Leased => "leased",
            JobState::Acked => "acked",
            JobState::DeadLettered => "dead_lettered",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// A job as the queue sees it, put together from its rows. A finished job whose row is compact
/// holds no lease and waits for nothing: its `visible_at` and `lease_until` read 0 and its
/// flags false (nothing reads them: every use looks at the state first).
#[derive(Clone, Copy, Debug, Hash)]
pub struct Job {
    pub key: IdempotencyKey,
    /// The key's slot in the queue's unique index (dense, in first-enqueue order).
    pub key_slot: u32,
    pub tenant: TenantId,
    pub payload: PayloadHash,
    pub created_at: SimTime,
    pub visible_at: SimTime,
    pub lease_until: SimTime,
    pub fence: Fence,
    pub attempt: u32,
    pub state: JobState,
    /// The lease ran out and nobody has re-leased the job since.
    pub lease_expired: bool,
    /// The next pick files the job in the DLQ instead of leasing it (BullMQ's job stalled more
    /// than `maxStalledCount`).
    pub doomed: bool,
}

/// The part of a job's row that only a live job needs (or, where finished jobs can be
/// reopened, every job).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Live {
    pub visible_at: SimTime,
    pub lease_until: SimTime,
    pub fence: Fence,
    pub attempt: u32,
    pub lease_expired: bool,
    pub doomed: bool,
}

/// A finished job's fence that does not fit in 32 bits is in `far_fences`.
const FAR: u32 = u32::MAX;
/// In `Kept::bits`: the attempt count of a compact row (`FAR_ATTEMPTS`: see `far_attempts`).
const ATTEMPT_MASK: u8 = 0x3F;
const FAR_ATTEMPTS: u8 = ATTEMPT_MASK;
/// In `Kept::bits`: the payload is not the key's document's default (see `apart_payloads`).
const PAYLOAD_APART: u8 = 0x80;
/// In `Kept::bits`: the tenant is not the key's (see `apart_tenants`).
const TENANT_APART: u8 = 0x40;

/// Jobs a createdAt base is kept for (`JobRows::blocks`).
const BLOCK: usize = 64;
/// A createdAt offset that does not fit 16 bits: see `far_created`.
const FAR_CREATED: u16 = u16::MAX;

/// What the queue keeps of every job for the whole run: 8 bytes.
#[derive(Clone, Copy, Debug, Hash)]
struct Kept {
    /// createdAt less its block's base (`FAR_CREATED`: see `far_created`).
    created: u16,
    state: JobState,
    /// `PAYLOAD_APART`, `TENANT_APART`, and once compact the attempt count in the low six bits
    /// (while whole it is the live row's).
    bits: u8,
    /// While the row is whole: its slot in `live`. Once compact: the fence (`FAR`: see
    /// `far_fences`).
    slot_or_fence: u32,
}

#[derive(Clone, Debug, Default, Hash)]
pub struct JobRows {
    kept: Vec<Kept>,
    live: Vec<Live>,
    /// Slots of `live` handed back by finished jobs, reused last in, first out.
    free: Vec<u32>,
    /// The createdAt of the first job of each block of `BLOCK` jobs.
    blocks: Vec<SimTime>,
    /// createdAt offsets from the block's base that do not fit 16 bits, by job.
    far_created: BTreeMap<u32, u64>,
    far_fences: BTreeMap<u32, u64>,
    far_attempts: BTreeMap<u32, u32>,
    /// Payloads that are not their key's default, by job.
    apart_payloads: StateMap<u32, PayloadHash>,
    /// Tenants that are not their key's (a tenantless key), by job.
    apart_tenants: StateMap<u32, TenantId>,
    /// The newest job's createdAt.
    last_created: SimTime,
    /// Finished jobs keep their live row (a queue that can reopen them).
    keep_whole: bool,
    /// Which packings and slot reuses happened (`vocab::probes`).
    pub probes: Probes,
}

impl JobRows {
    pub fn with_capacity(jobs: usize) -> JobRows {
        JobRows {
            kept: Vec::with_capacity(jobs),
            blocks: Vec::with_capacity(jobs.div_ceil(BLOCK)),
            ..JobRows::default()
        }
    }

    /// Finished jobs keep their whole row from now on: a queue that can reopen a finished job
    /// (a profile's by-id write or rescue) needs its clocks back. Set before any job exists.
    pub fn keep_finished_whole(&mut self) {
        assert!(self.is_empty(), "set before the first job");
        self.keep_whole = true;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Slots in the live slab (live rows, plus the free ones waiting for reuse).
    pub fn live_slots(&self) -> usize {
        self.live.len()
    }

    /// A new job, `JobId(len)`, under `key`, in state `Waiting`. Jobs are created in time order.
    #[inline]
    pub fn push(
        &mut self,
        key: &IdempotencyKey,
        tenant: TenantId,
        payload: PayloadHash,
        created_at: SimTime,
        live: Live,
    ) -> JobId {
        let id = self.kept.len() as u32;
        assert!(id != u32::MAX, "more than 2^32 - 1 jobs");
        assert!(
            created_at >= self.last_created,
            "job {id} created at {created_at}, before the job created before it"
        );
        self.last_created = created_at;
        if (id as usize).is_multiple_of(BLOCK) {
            self.blocks.push(created_at);
        }
        let created = match u16::try_from(created_at - self.blocks[id as usize / BLOCK]) {
            Ok(offset) if offset != FAR_CREATED => offset,
            _ => {
                self.probes.hit(Probe::RowsSpillCreatedAt);
                self.far_created.insert(id, created_at);
                FAR_CREATED
            }
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.probes.hit(Probe::RowsSlotReused);
                self.live[s as usize] = live;
                s
            }
            None => {
                self.probes.hit(Probe::RowsSlotNew);
                self.live.push(live);
                (self.live.len() - 1) as u32
            }
        };
        let mut bits = 0;
        if key.tenant != Some(tenant) {
            self.apart_tenants.insert(id, tenant);
            bits |= TENANT_APART;
        }
        if default_payload(key.document) != Some(payload) {
            self.probes.hit(Probe::RowsSpillPayload);
            self.apart_payloads.insert(id, payload);
            bits |= PAYLOAD_APART;
        }
        self.kept.push(Kept {
            created,
            state: JobState::Waiting,
            bits,
            slot_or_fence: slot,
        });
        JobId(id)
    }

    #[inline]
    pub fn state(&self, job: JobId) -> JobState {
        self.kept[job.index()].state
    }

    /// The job's payload hash; `document` is its key's.
    #[inline]
    pub fn payload(&self, job: JobId, document: DocumentId) -> PayloadHash {
        match self.kept[job.index()].bits & PAYLOAD_APART {
            0 => default_payload(document).expect("a payload kept as the default has one"),
            _ => self.apart_payloads[&job.0],
        }
    }

    /// The job's payload changes (a replace, a mutation); `document` is its key's.
    #[inline]
    pub fn set_payload(&mut self, job: JobId, document: DocumentId, payload: PayloadHash) {
        let k = &mut self.kept[job.index()];
        if default_payload(document) == Some(payload) {
            if k.bits & PAYLOAD_APART != 0 {
                self.probes.hit(Probe::RowsPayloadBackToDefault);
                self.apart_payloads.remove(&job.0);
            }
            k.bits &= !PAYLOAD_APART;
        } else {
            self.probes.hit(Probe::RowsSpillPayload);
            k.bits |= PAYLOAD_APART;
            self.apart_payloads.insert(job.0, payload);
        }
    }

    /// The job's tenant; `key` is its key.
    #[inline]
    fn tenant(&self, job: JobId, k: &Kept, key: &IdempotencyKey) -> TenantId {
        match (k.bits & TENANT_APART, key.tenant) {
            (0, Some(t)) => t,
            _ => self.apart_tenants[&job.0],
        }
    }

    #[inline]
    pub fn created_at(&self, job: JobId) -> SimTime {
        match self.kept[job.index()].created {
            FAR_CREATED => self.far_created_at(job),
            offset => self.blocks[job.index() / BLOCK] + offset as u64,
        }
    }

    #[cold]
    #[inline(never)]
    fn far_created_at(&self, job: JobId) -> SimTime {
        self.far_created[&job.0]
    }

    /// The job's row is whole (live, or finished in a queue that keeps finished rows whole).
    #[inline]
    pub fn is_whole(&self, job: JobId) -> bool {
        self.whole(&self.kept[job.index()])
    }

    #[inline]
    fn whole(&self, k: &Kept) -> bool {
        self.keep_whole || !k.state.is_terminal()
    }

    /// The live part of a whole row.
    #[inline]
    pub fn live(&self, job: JobId) -> &Live {
        let k = &self.kept[job.index()];
        assert!(self.whole(k), "job {}'s row is compact: it finished", job.0);
        &self.live[k.slot_or_fence as usize]
    }

    #[inline]
    pub fn live_mut(&mut self, job: JobId) -> &mut Live {
        let k = &self.kept[job.index()];
        assert!(self.whole(k), "job {}'s row is compact: it finished", job.0);
        &mut self.live[k.slot_or_fence as usize]
    }

    /// The live part of the job if it is in `state` (a state that is not an end: such a job's
    /// row is always whole).
    #[inline]
    pub fn live_in(&self, job: JobId, state: JobState) -> Option<&Live> {
        debug_assert!(!state.is_terminal());
        let k = &self.kept[job.index()];
        (k.state == state).then(|| &self.live[k.slot_or_fence as usize])
    }

    /// A job that has not ended: its live part; one that has: its end.
    #[inline]
    pub fn unfinished(&self, job: JobId) -> Result<&Live, JobState> {
        let k = &self.kept[job.index()];
        match k.state.is_terminal() {
            true => Err(k.state),
            false => Ok(&self.live[k.slot_or_fence as usize]),
        }
    }

    /// The job's `lease_until`: 0 once its row is compact (it holds no lease).
    #[inline]
    pub fn lease_until(&self, job: JobId) -> SimTime {
        let k = &self.kept[job.index()];
        match self.whole(k) {
            true => self.live[k.slot_or_fence as usize].lease_until,
            false => 0,
        }
    }

    /// The job's latest fence, whole row or compact.
    #[inline]
    pub fn fence(&self, job: JobId) -> Fence {
        let k = &self.kept[job.index()];
        match (self.whole(k), k.slot_or_fence) {
            (true, slot) => self.live[slot as usize].fence,
            (false, FAR) => Fence(self.far_fences[&job.0]),
            (false, f) => Fence(f as u64),
        }
    }

    /// A state change of a job that is not finishing (a finished job's row must be whole: only
    /// a queue that keeps finished rows whole reopens one).
    #[inline]
    pub fn set_state(&mut self, job: JobId, state: JobState) {
        assert!(!state.is_terminal(), "a job finishes through `finish`");
        let whole = self.is_whole(job);
        let k = &mut self.kept[job.index()];
        assert!(
            whole,
            "job {} is {} and its row compact: it cannot become {}",
            job.0,
            k.state.name(),
            state.name()
        );
        k.state = state;
    }

    /// The job ends in `state`; its live slot goes back to the slab unless finished rows are
    /// kept whole.
    #[inline]
    pub fn finish(&mut self, job: JobId, state: JobState) {
        assert!(state.is_terminal(), "{} is not an end", state.name());
        let keep_whole = self.keep_whole;
        let k = &mut self.kept[job.index()];
        assert!(
            !k.state.is_terminal(),
            "job {} is {}: a terminal job never changes state (to {})",
            job.0,
            k.state.name(),
            state.name()
        );
        k.state = state;
        if keep_whole {
            self.probes.hit(Probe::RowsFinishKeptWhole);
            return;
        }
        self.probes.hit(Probe::RowsFinishCompact);
        let slot = k.slot_or_fence;
        let live = self.live[slot as usize];
        let attempt = match u8::try_from(live.attempt) {
            Ok(a) if a < FAR_ATTEMPTS => a,
            _ => {
                self.probes.hit(Probe::RowsSpillAttempts);
                self.far_attempts.insert(job.0, live.attempt);
                FAR_ATTEMPTS
            }
        };
        k.bits = (k.bits & !ATTEMPT_MASK) | attempt;
        k.slot_or_fence = match u32::try_from(live.fence.0) {
            Ok(f) if f != FAR => f,
            _ => {
                self.far_fences.insert(job.0, live.fence.0);
                FAR
            }
        };
        self.free.push(slot);
    }

    /// The job as the queue sees it, under `key` in `key_slot` of the unique index.
    #[inline]
    pub fn job(&self, job: JobId, key_slot: u32, key: IdempotencyKey) -> Job {
        let k = self.kept[job.index()];
        let live = match self.whole(&k) {
            true => self.live[k.slot_or_fence as usize],
            false => Live {
                fence: self.fence(job),
                attempt: match k.bits & ATTEMPT_MASK {
                    FAR_ATTEMPTS => self.far_attempts[&job.0],
                    a => a as u32,
                },
                ..Live::default()
            },
        };
        Job {
            key,
            key_slot,
            tenant: self.tenant(job, &k, &key),
            payload: self.payload(job, key.document),
            created_at: self.created_at(job),
            visible_at: live.visible_at,
            lease_until: live.lease_until,
            fence: live.fence,
            attempt: live.attempt,
            state: k.state,
            lease_expired: live.lease_expired,
            doomed: live.doomed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(fence: u64, attempt: u32) -> Live {
        Live {
            visible_at: 5,
            lease_until: 9,
            fence: Fence(fence),
            attempt,
            lease_expired: true,
            doomed: false,
        }
    }

    fn key() -> IdempotencyKey {
        IdempotencyKey::new(TenantId(1), crate::base::ids::DocumentId(3), 1).unwrap()
    }

    #[test]
    fn a_kept_row_is_8_bytes() {
        assert_eq!(std::mem::size_of::<Kept>(), 8);
    }

    /// createdAt comes back exactly within a block and across blocks, at and past the 16-bit
    /// offset's edge.
    #[test]
    fn created_at_offsets_at_and_past_16_bits_come_back_exactly() {
        let mut rows = JobRows::with_capacity(10);
        let mut t = 1_000;
        let mut times = Vec::new();
        for i in 0..200u64 {
            t += match i {
                1 => 65_533,   // offset 65,533 in block 0
                2 => 1,        // 65,534: the last that fits
                3 => 1,        // 65,535: kept apart
                64 => 0,       // a block starting at the same time as the job before
                70 => 1 << 40, // far beyond
                _ => i % 3,
            };
            times.push(t);
            rows.push(&key(), TenantId(1), PayloadHash(1), t, Live::default());
        }
        for (i, &t) in times.iter().enumerate() {
            assert_eq!(rows.created_at(JobId(i as u32)), t, "job {i}");
        }
        assert_eq!(rows.blocks.len(), 4);
        assert!(
            rows.far_created.len() >= 62,
            "job 3 and the rest of block 0"
        );
    }

    /// `GENERATED_BELOW` is where `vocab::key` starts numbering named documents.
    #[test]
    fn generated_documents_are_numbered_below_the_named_ones() {
        let mut docs = crate::vocab::key::Documents::default();
        let last = GENERATED_BELOW - 1;
        assert_eq!(docs.named(&format!("doc-{last}")).unwrap().0, last);
        assert_eq!(
            docs.named(&format!("doc-{GENERATED_BELOW}")).unwrap().0,
            GENERATED_BELOW
        );
        assert!(docs.named("invoice").unwrap().0 > GENERATED_BELOW);
        let names = KeyNames::default();
        for d in [0, 7, 123_456, last] {
            let document = DocumentId(d);
            assert_eq!(
                default_payload(document),
                Some(crate::vocab::payload::Payload::of(document).hash(&names))
            );
        }
        assert_eq!(default_payload(DocumentId(GENERATED_BELOW)), None);
    }

    /// A job's payload and tenant are a bit each when they are what its key implies, and come
    /// back exactly when they are not: an explicit payload, a mutated or replaced one (and back
    /// to the default), a named document's, a tenantless key's tenant; compact or whole.
    #[test]
    fn payloads_and_tenants_apart_from_the_keys_come_back_exactly() {
        let mut rows = JobRows::default();
        let names = KeyNames::default();
        let doc = |d| crate::base::ids::DocumentId(d);
        let k = |t: Option<u16>, d| IdempotencyKey {
            tenant: t.map(TenantId),
            document: doc(d),
            version: 1,
        };
        let default = |d| default_payload(doc(d)).unwrap();
        let other = crate::vocab::payload::Payload::from_text(doc(1), "x").hash(&names);
        let named = DocumentId(GENERATED_BELOW + 3);
        let cases = [
            (k(Some(2), 1), TenantId(2), default(1)),
            (k(Some(2), 1), TenantId(2), other),
            (k(None, 5), TenantId(3), default(5)),
            (k(Some(0), 6), TenantId(1), PayloadHash(0)),
            (
                IdempotencyKey {
                    document: named,
                    ..k(Some(0), 0)
                },
                TenantId(0),
                PayloadHash(77),
            ),
        ];
        let jobs: Vec<JobId> = cases
            .iter()
            .map(|(key, t, p)| rows.push(key, *t, *p, 0, live(1, 1)))
            .collect();
        assert_eq!(rows.apart_payloads.len(), 3);
        assert_eq!(rows.apart_tenants.len(), 2);
        for (i, (key, t, p)) in cases.iter().enumerate() {
            let j = rows.job(jobs[i], 0, *key);
            assert_eq!((j.tenant, j.payload), (*t, *p), "case {i}");
            assert_eq!(rows.payload(jobs[i], key.document), *p);
        }
        rows.set_payload(jobs[0], doc(1), other);
        rows.set_payload(jobs[1], doc(1), default(1));
        rows.finish(jobs[0], JobState::Acked);
        rows.finish(jobs[2], JobState::DeadLettered);
        assert_eq!(rows.job(jobs[0], 0, cases[0].0).payload, other);
        assert_eq!(rows.job(jobs[1], 0, cases[1].0).payload, default(1));
        assert_eq!(rows.job(jobs[2], 0, cases[2].0).tenant, TenantId(3));
        assert_eq!(rows.job(jobs[0], 0, cases[0].0).attempt, 1);
        assert_eq!(rows.apart_payloads.len(), 3, "jobs 0, 3 and 4");
    }

    #[test]
    fn a_finished_row_is_compact_keeps_what_its_rules_need_and_hands_its_slot_on() {
        let mut rows = JobRows::default();
        let a = rows.push(&key(), TenantId(1), PayloadHash(7), 100, live(3, 2));
        rows.set_state(a, JobState::Leased);
        rows.finish(a, JobState::Acked);
        assert!(!rows.is_whole(a));
        let j = rows.job(a, 0, key());
        assert_eq!(
            (
                j.payload,
                j.created_at,
                j.fence,
                j.attempt,
                j.state,
                j.tenant
            ),
            (
                PayloadHash(7),
                100,
                Fence(3),
                2,
                JobState::Acked,
                TenantId(1)
            )
        );
        assert_eq!(
            (j.visible_at, j.lease_until, j.lease_expired),
            (0, 0, false)
        );
        let b = rows.push(&key(), TenantId(2), PayloadHash(8), 200, live(4, 1));
        assert_eq!(rows.live_slots(), 1, "the finished job's slot is reused");
        assert_eq!(*rows.live(b), live(4, 1));
        assert_eq!(
            rows.job(a, 0, key()).fence,
            Fence(3),
            "the old row is untouched"
        );
    }

    #[test]
    fn far_fences_and_times_beyond_32_bits_come_back_exactly() {
        let mut rows = JobRows::default();
        let t0 = 3 << 32;
        let a = rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            5,
            live(u32::MAX as u64, 1),
        );
        let b = rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            t0 + 7,
            live(1 << 40, 1),
        );
        let c = rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            t0 + 9,
            live(u32::MAX as u64 - 1, 1),
        );
        let d = rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            (9 << 32) + 1,
            live(6, 1),
        );
        for job in [a, b, c, d] {
            rows.finish(job, JobState::DeadLettered);
        }
        assert_eq!(rows.fence(a), Fence(u32::MAX as u64));
        assert_eq!(rows.fence(b), Fence(1 << 40));
        assert_eq!(rows.fence(c), Fence(u32::MAX as u64 - 1));
        assert_eq!(rows.far_fences.len(), 2);
        let created: Vec<_> = [a, b, c, d].map(|j| rows.created_at(j)).into();
        assert_eq!(created, vec![5, t0 + 7, t0 + 9, (9 << 32) + 1]);
    }

    #[test]
    fn attempt_counts_beyond_8_bits_come_back_exactly_once_compact() {
        let mut rows = JobRows::default();
        let counts = [0, 1, 254, 255, 256, 70_000, u32::MAX];
        let jobs: Vec<JobId> = counts
            .iter()
            .map(|&n| rows.push(&key(), TenantId(0), PayloadHash(1), 0, live(1, n)))
            .collect();
        for &job in &jobs {
            rows.finish(job, JobState::Acked);
        }
        let back: Vec<u32> = jobs
            .iter()
            .map(|&j| rows.job(j, 0, key()).attempt)
            .collect();
        assert_eq!(back, counts);
        assert_eq!(rows.far_attempts.len(), 5, "63 and above");
    }

    #[test]
    #[should_panic(expected = "before the job created before it")]
    fn time_never_goes_backwards_across_jobs() {
        let mut rows = JobRows::default();
        rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            5 << 32,
            Live::default(),
        );
        rows.push(
            &key(),
            TenantId(0),
            PayloadHash(1),
            4 << 32,
            Live::default(),
        );
    }

    #[test]
    #[should_panic(expected = "row compact")]
    fn a_compact_finished_job_is_never_reopened() {
        let mut rows = JobRows::default();
        let a = rows.push(&key(), TenantId(0), PayloadHash(1), 0, Live::default());
        rows.finish(a, JobState::Cancelled);
        rows.set_state(a, JobState::Ready);
    }

    #[test]
    fn a_queue_that_reopens_keeps_finished_rows_whole() {
        let mut rows = JobRows::default();
        rows.keep_finished_whole();
        let a = rows.push(&key(), TenantId(0), PayloadHash(1), 0, live(2, 1));
        rows.finish(a, JobState::Acked);
        assert!(rows.is_whole(a));
        assert_eq!(rows.live(a).lease_until, 9);
        rows.set_state(a, JobState::Waiting);
        assert_eq!(rows.state(a), JobState::Waiting);
    }
}

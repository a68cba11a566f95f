//! The queue's rows: what the queue knows of each job, whole while the job is live and compact
//! once it has finished.
//!
//! Owns: the job's state and the per-job values its rules need for the whole run (payload hash,
//! tenant, createdAt, and once finished its last fence and attempt count), in a dense 20-byte
//! column by job id; the live part (visibleAt, leaseUntil, the fence and attempt count while
//! they move, the expiry and stall flags) in a slab slot that a finished job hands back for the
//! next job to reuse. A queue whose finished jobs can be reopened (a profile's by-id write or
//! rescue; [`JobRows::keep_finished_whole`]) keeps a finished job's slot instead.
//! Does not: decide anything (the queue does), or know keys (the queue's key index does).
//!
//! Exact, not approximated: createdAt is kept as its low 32 bits beside a table of the first job
//! of each 2^32 ms epoch (jobs are created in time order); a finished job's fence above
//! 2^32 - 2 and attempt count above 254 go to side maps. Whether a row is whole is not stored:
//! it is while the job has not finished, and always in a queue that keeps finished rows whole.

use crate::ids::{Fence, JobId, SimTime, TenantId};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
/// A finished job's attempt count that does not fit in 8 bits is in `far_attempts`.
const FAR_ATTEMPTS: u8 = u8::MAX;

/// What the queue keeps of every job for the whole run: 20 bytes (the payload hash as two
/// halves, for 4-byte alignment).
#[derive(Clone, Copy, Debug)]
struct Kept {
    payload: [u32; 2],
    created_low: u32,
    /// While the row is whole: its slot in `live`. Once compact: the fence (`FAR`: see
    /// `far_fences`).
    slot_or_fence: u32,
    tenant: TenantId,
    state: JobState,
    /// Once compact: the attempt count (`FAR_ATTEMPTS`: see `far_attempts`); while whole it is
    /// the live row's.
    attempt: u8,
}

impl Kept {
    #[inline]
    fn payload(&self) -> PayloadHash {
        PayloadHash((self.payload[0] as u64) << 32 | self.payload[1] as u64)
    }
}

#[inline]
fn halves(payload: PayloadHash) -> [u32; 2] {
    [(payload.0 >> 32) as u32, payload.0 as u32]
}

#[derive(Clone, Debug, Default)]
pub struct JobRows {
    kept: Vec<Kept>,
    live: Vec<Live>,
    /// Slots of `live` handed back by finished jobs, reused last in, first out.
    free: Vec<u32>,
    /// (first job, createdAt >> 32) for each 2^32 ms epoch the jobs were created in.
    epochs: Vec<(u32, u32)>,
    far_fences: BTreeMap<u32, u64>,
    far_attempts: BTreeMap<u32, u32>,
    /// The newest job's createdAt.
    last_created: SimTime,
    /// Finished jobs keep their live row (a queue that can reopen them).
    keep_whole: bool,
}

impl JobRows {
    pub fn with_capacity(jobs: usize) -> JobRows {
        JobRows {
            kept: Vec::with_capacity(jobs),
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

    /// A new job, `JobId(len)`, in state `Waiting`. Jobs are created in time order.
    #[inline]
    pub fn push(
        &mut self,
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
        let high = (created_at >> 32) as u32;
        if self.epochs.last().is_none_or(|&(_, h)| h != high) {
            self.epochs.push((id, high));
        }
        let slot = match self.free.pop() {
            Some(s) => {
                self.live[s as usize] = live;
                s
            }
            None => {
                self.live.push(live);
                (self.live.len() - 1) as u32
            }
        };
        self.kept.push(Kept {
            payload: halves(payload),
            created_low: created_at as u32,
            slot_or_fence: slot,
            tenant,
            state: JobState::Waiting,
            attempt: 0,
        });
        JobId(id)
    }

    #[inline]
    pub fn state(&self, job: JobId) -> JobState {
        self.kept[job.index()].state
    }

    #[inline]
    pub fn payload(&self, job: JobId) -> PayloadHash {
        self.kept[job.index()].payload()
    }

    #[inline]
    pub fn set_payload(&mut self, job: JobId, payload: PayloadHash) {
        self.kept[job.index()].payload = halves(payload);
    }

    #[inline]
    pub fn created_at(&self, job: JobId) -> SimTime {
        let low = self.kept[job.index()].created_low as u64;
        let high = match self.epochs.as_slice() {
            [(_, h)] => *h,
            epochs => {
                let i = epochs.partition_point(|&(first, _)| first <= job.0);
                epochs[i - 1].1
            }
        };
        (high as u64) << 32 | low
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
            return;
        }
        let slot = k.slot_or_fence;
        let live = self.live[slot as usize];
        k.attempt = match u8::try_from(live.attempt) {
            Ok(a) if a != FAR_ATTEMPTS => a,
            _ => {
                self.far_attempts.insert(job.0, live.attempt);
                FAR_ATTEMPTS
            }
        };
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
                attempt: match k.attempt {
                    FAR_ATTEMPTS => self.far_attempts[&job.0],
                    a => a as u32,
                },
                ..Live::default()
            },
        };
        Job {
            key,
            key_slot,
            tenant: k.tenant,
            payload: k.payload(),
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
        IdempotencyKey::new(TenantId(1), crate::ids::DocumentId(3), 1).unwrap()
    }

    #[test]
    fn a_kept_row_is_20_bytes() {
        assert_eq!(std::mem::size_of::<Kept>(), 20);
    }

    #[test]
    fn a_finished_row_is_compact_keeps_what_its_rules_need_and_hands_its_slot_on() {
        let mut rows = JobRows::default();
        let a = rows.push(TenantId(1), PayloadHash(7), 100, live(3, 2));
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
        let b = rows.push(TenantId(2), PayloadHash(8), 200, live(4, 1));
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
        let a = rows.push(TenantId(0), PayloadHash(1), 5, live(u32::MAX as u64, 1));
        let b = rows.push(TenantId(0), PayloadHash(1), t0 + 7, live(1 << 40, 1));
        let c = rows.push(
            TenantId(0),
            PayloadHash(1),
            t0 + 9,
            live(u32::MAX as u64 - 1, 1),
        );
        let d = rows.push(TenantId(0), PayloadHash(1), (9 << 32) + 1, live(6, 1));
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
            .map(|&n| rows.push(TenantId(0), PayloadHash(1), 0, live(1, n)))
            .collect();
        for &job in &jobs {
            rows.finish(job, JobState::Acked);
        }
        let back: Vec<u32> = jobs
            .iter()
            .map(|&j| rows.job(j, 0, key()).attempt)
            .collect();
        assert_eq!(back, counts);
        assert_eq!(rows.far_attempts.len(), 4, "255 and above");
    }

    #[test]
    #[should_panic(expected = "before the job created before it")]
    fn time_never_goes_backwards_across_jobs() {
        let mut rows = JobRows::default();
        rows.push(TenantId(0), PayloadHash(1), 5 << 32, Live::default());
        rows.push(TenantId(0), PayloadHash(1), 4 << 32, Live::default());
    }

    #[test]
    #[should_panic(expected = "row compact")]
    fn a_compact_finished_job_is_never_reopened() {
        let mut rows = JobRows::default();
        let a = rows.push(TenantId(0), PayloadHash(1), 0, Live::default());
        rows.finish(a, JobState::Cancelled);
        rows.set_state(a, JobState::Ready);
    }

    #[test]
    fn a_queue_that_reopens_keeps_finished_rows_whole() {
        let mut rows = JobRows::default();
        rows.keep_finished_whole();
        let a = rows.push(TenantId(0), PayloadHash(1), 0, live(2, 1));
        rows.finish(a, JobState::Acked);
        assert!(rows.is_whole(a));
        assert_eq!(rows.live(a).lease_until, 9);
        rows.set_state(a, JobState::Waiting);
        assert_eq!(rows.state(a), JobState::Waiting);
    }
}

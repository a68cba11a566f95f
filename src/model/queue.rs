//! The job queue: at-least-once delivery with leases, heartbeats, deadlines and fencing tokens.
//!
//! Owns: the four clocks of a job (visibleAt, leaseUntil, deadlineAt, createdAt), which worker
//! may act on a job and until when, the fencing token handed out with every lease (a global
//! monotonic counter), the enqueue-time idempotency check under the run's uniqueness mode (the
//! decision is `profile::unique`'s; the queue keeps each key's newest job), and the queue depth.
//! Does not: decide retries (see `retry`), store results or publish events (see `outbox`), or
//! keep dead jobs (see `dead_letter`). It reads no clock: `now` is an argument everywhere.

use crate::base::ids::{Fence, JobId, SimTime, TenantId};
use crate::base::state_hash::StateHeap;
pub use crate::model::job_rows::{Job, JobState};
use crate::model::job_rows::{JobRows, Live};
use crate::profile::unique::{self, Existing, SubmitDecision};
use crate::profile::Unique;
use crate::vocab::bugs::Bug;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::key_index::KeyIndex;
use crate::vocab::payload::PayloadHash;
use crate::vocab::probes::{Probe, Probes};
pub use config::QueueConfig;
use std::cmp::Reverse;

impl Job {
    pub fn deadline_at(&self, config: &QueueConfig) -> SimTime {
        deadline_at(self.created_at, config)
    }
}

#[inline]
fn deadline_at(created_at: SimTime, config: &QueueConfig) -> SimTime {
    if config.bugs.contains(Bug::DeadlineTripled) {
        return created_at + 3 * config.deadline_ms;
    }
    created_at + config.deadline_ms
}

/// What a producer asks for.
#[derive(Clone, Copy, Debug, Hash)]
pub struct EnqueueRequest {
    pub tenant: TenantId,
    pub key: IdempotencyKey,
    pub payload: PayloadHash,
    pub visible_at: SimTime,
    /// An operator's reprocess: it takes a new key version and never replaces a job's payload
    /// (a known key is refused, `EnqueueOutcome::Conflict`, with no write to the queue).
    pub reprocess: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EnqueueOutcome {
    Created(JobId),
    /// Same key, same payload: the existing job stands for this request.
    Deduplicated {
        existing: JobId,
    },
    /// Same key, different payload: refused, never silently reused.
    Conflict {
        existing: JobId,
        existing_payload: PayloadHash,
    },
    /// `unique = "replace"`: the key's pending job took the request's payload in place of
    /// `replaced` (its clocks, fence and attempt count unchanged).
    Replaced {
        existing: JobId,
        replaced: PayloadHash,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseOutcome {
    Leased {
        job: JobId,
        fence: Fence,
        attempt: u32,
        lease_until: SimTime,
        visible_at: SimTime,
        after_expiry: bool,
    },
    /// The job picked was past its deadline: cancelled, terminal, not in the DLQ. Look again.
    Cancelled {
        job: JobId,
        deadline_at: SimTime,
    },
    /// The job picked (after a lease expiry) had used all its attempts. The caller files it in
    /// the DLQ with `max_attempts_exceeded`. Look again.
    AttemptsExhausted {
        job: JobId,
        attempts: u32,
    },
    Empty,
}

/// Why a fenced call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rejection {
    StaleFence { held: Fence, presented: Fence },
    Terminal(JobState),
    NotLeased(JobState),
}

/// Where [`Queue::reopen`] puts a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reopen {
    Ready,
    Hold,
    At(SimTime),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExpiryOutcome {
    /// The lease ran out: the job is ready again with its old `visible_at` (first in line).
    Expired,
    /// A heartbeat moved the lease; check again just after `lease_until`.
    StillLeased { lease_until: SimTime },
    /// The lease this timer watched is gone (released, re-leased or terminal): nothing to do.
    Stale,
}

#[derive(Clone, Debug, Hash)]
pub struct Queue {
    config: QueueConfig,
    /// The jobs' rows: whole while live, compact once finished (`job_rows.rs`).
    rows: JobRows,
    /// Candidates for leasing, by (visible_at, job). Entries can go stale; they are validated
    /// when popped (state Ready and visible_at unchanged).
    ready: StateHeap<Reverse<(SimTime, u32)>>,
    ready_count: usize,
    fence_counter: u64,
    /// The index on keys. Under `unique = "forever"` every new key creates exactly one job and
    /// no other, so a key's slot is its job's id; under the other modes a known key can get
    /// another job, `latest[slot]` is the key's newest and `slot_of[job]` the job's key (kept
    /// only then: 4 bytes a key and 4 a job).
    by_key: KeyIndex,
    latest: Vec<u32>,
    slot_of: Vec<u32>,
    terminal_count: usize,
    /// The queue's decisions taken so far (`vocab::probes`), its rows' and, through the
    /// chapter's queue, its retry policy's.
    pub probes: Probes,
}

impl Queue {
    pub fn new(config: QueueConfig) -> Queue {
        Queue {
            config,
            rows: JobRows::default(),
            ready: StateHeap::default(),
            ready_count: 0,
            fence_counter: 0,
            by_key: KeyIndex::default(),
            latest: Vec::new(),
            slot_of: Vec::new(),
            terminal_count: 0,
            probes: Probes::default(),
        }
    }

    pub fn with_capacity(config: QueueConfig, jobs: usize) -> Queue {
        let mut q = Queue::new(config);
        q.rows = JobRows::with_capacity(jobs);
        q.by_key = KeyIndex::with_capacity(jobs);
        q
    }

    /// Finished jobs keep their whole row (clocks and flags): set by a semantics that can
    /// reopen a finished job or reads a finished job's clocks, before the first job.
    pub fn keep_finished_rows_whole(&mut self) {
        self.rows.keep_finished_whole();
    }

    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Adds the queue's probe counts, and its rows', to `into`.
    pub fn add_probes(&self, into: &mut Probes) {
        into.add(&self.probes);
        into.add(&self.rows.probes);
    }

    /// The job's row, put together (a finished job's compact row reads no clocks: see [`Job`]).
    #[inline]
    pub fn job(&self, job: JobId) -> Job {
        let slot = self.key_slot(job);
        self.rows.job(job, slot, self.by_key.key(slot))
    }

    /// The key in `slot` of the unique index.
    #[inline]
    pub fn key_at(&self, slot: u32) -> IdempotencyKey {
        self.by_key.key(slot)
    }

    /// The slot of the job's key in the unique index (keys are numbered densely in the order
    /// they were first enqueued).
    #[inline]
    pub fn key_slot(&self, job: JobId) -> u32 {
        match self.config.unique {
            Unique::Forever => job.0,
            _ => self.slot_of[job.index()],
        }
    }

    /// The job's latest fence.
    #[inline]
    pub fn fence(&self, job: JobId) -> Fence {
        self.rows.fence(job)
    }

    #[inline]
    pub fn payload(&self, job: JobId) -> PayloadHash {
        self.key_and_payload(job).2
    }

    /// The job's key slot, key and payload (read once: a payload that is its key's document's
    /// default is not stored, and is computed from the key).
    #[inline]
    pub fn key_and_payload(&self, job: JobId) -> (u32, IdempotencyKey, PayloadHash) {
        let slot = self.key_slot(job);
        let key = self.by_key.key(slot);
        (slot, key, self.rows.payload(job, key.document))
    }

    pub fn state(&self, job: JobId) -> JobState {
        self.rows.state(job)
    }

    /// When the job's deadline passes.
    #[inline]
    pub fn deadline_at(&self, job: JobId) -> SimTime {
        deadline_at(self.rows.created_at(job), &self.config)
    }

    /// A leased job's `lease_until`; 0 for a job that holds no lease or whose row is compact.
    #[inline]
    pub fn lease_until(&self, job: JobId) -> SimTime {
        self.rows.lease_until(job)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Visible jobs not under a live lease: the queue depth.
    pub fn depth(&self) -> usize {
        self.ready_count
    }

    pub fn all_terminal(&self) -> bool {
        self.terminal_count == self.rows.len()
    }

    /// The enqueue-time idempotency check, then a new job. `now` becomes createdAt, so
    /// deadlineAt = now + deadline_ms. A job visible in the future waits; the caller is told
    /// when to call [`Queue::make_visible`]. A known key is resolved by the uniqueness mode
    /// against the key's newest job (`profile::unique::decide`).
    pub fn enqueue(&mut self, now: SimTime, request: EnqueueRequest) -> EnqueueOutcome {
        let id = JobId(self.rows.len() as u32);
        let (slot, new) = self.by_key.insert(request.key);
        if !new {
            let existing = self.latest_of(slot);
            // The existing job's key is the request's (the same slot).
            let existing_payload = self.rows.payload(existing, request.key.document);
            let state = self.rows.state(existing);
            let seen = Existing {
                terminal: state.is_terminal(),
                // A job a rescue holds (`Reopen::Hold`) is still under its old lease as the
                // history tells it: the lease's end is recorded only when the hold is over
                // (`sim::lease_end`), or never if the holder's write lands first. Judged
                // waiting here, a submit would be resolved against a state no record shows
                // (swarm seeds 270194, durasim profile, and 300138, oban: a dedupe under
                // `while_waiting` onto a job the history shows leased).
                leased: state == JobState::Leased || self.held(existing),
                ever_leased: self.rows.fence(existing) != Fence(0),
                same_payload: existing_payload == request.payload
                    || self.config.bugs.contains(Bug::ReuseOnConflict),
            };
            let decision = unique::decide(self.config.unique, Some(seen));
            if request.reprocess && decision == SubmitDecision::Replace {
                // The reprocess is refused (`version_exists`) and records nothing of a replace:
                // had it overwritten the waiting job, that job would run with the dead job's
                // payload under a history that says otherwise (swarm seed 317850, sqs, unique
                // = "replace": a commit recorded with a payload no record gave the job).
                return EnqueueOutcome::Conflict {
                    existing,
                    existing_payload,
                };
            }
            self.probes.hit(unique_probe(self.config.unique, decision));
            match decision {
                SubmitDecision::Create => {}
                SubmitDecision::Dedupe => return EnqueueOutcome::Deduplicated { existing },
                SubmitDecision::Conflict => {
                    return EnqueueOutcome::Conflict {
                        existing,
                        existing_payload,
                    }
                }
                SubmitDecision::Replace => {
                    self.rows
                        .set_payload(existing, request.key.document, request.payload);
                    return EnqueueOutcome::Replaced {
                        existing,
                        replaced: existing_payload,
                    };
                }
            }
        }
        if new {
            self.probes.hit(Probe::QueueEnqueueNewKey);
        }
        if self.config.unique == Unique::Forever {
            assert_eq!(slot, id.0, "unique for ever: one job per key");
        } else {
            if new {
                debug_assert_eq!(slot as usize, self.latest.len());
                self.latest.push(id.0);
            } else {
                self.latest[slot as usize] = id.0;
            }
            self.slot_of.push(slot);
        }
        let live = Live {
            visible_at: request.visible_at.max(now),
            ..Live::default()
        };
        let pushed = self
            .rows
            .push(&request.key, request.tenant, request.payload, now, live);
        debug_assert_eq!(pushed, id);
        if request.visible_at <= now {
            self.set_ready(id);
        }
        EnqueueOutcome::Created(id)
    }

    /// The newest job of the key in `slot`.
    fn latest_of(&self, slot: u32) -> JobId {
        match self.config.unique {
            Unique::Forever => JobId(slot),
            _ => JobId(self.latest[slot as usize]),
        }
    }

    /// The job's `visible_at` has come (end of backoff, or a delayed first enqueue).
    /// Returns false when the wake-up is stale (the job moved on meanwhile).
    pub fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool {
        let waiting = self.rows.live_in(job, JobState::Waiting);
        if waiting.is_none_or(|j| j.visible_at != visible_at) || visible_at > now {
            self.probes.hit(Probe::QueueVisibleStale);
            return false;
        }
        self.probes.hit(Probe::QueueVisibleReady);
        self.set_ready(job);
        true
    }

    fn set_ready(&mut self, job: JobId) {
        let state = self.rows.state(job);
        assert!(
            !state.is_terminal(),
            "job {} is {}: a terminal job never becomes ready",
            job.0,
            state.name()
        );
        self.rows.set_state(job, JobState::Ready);
        self.ready_count += 1;
        self.ready
            .push(Reverse((self.rows.live(job).visible_at, job.0)));
    }

    fn finish(&mut self, job: JobId, state: JobState) {
        if self.rows.state(job) == JobState::Ready {
            self.probes.hit(Probe::QueueFinishFromReady);
            self.ready_count = less_one(self.ready_count);
        }
        self.rows.finish(job, state);
        self.terminal_count += 1;
    }

    /// `leaseNext`: take the visible job with the earliest visibleAt (ties by job id). A job past
    /// its deadline is cancelled instead; an expired job out of attempts is handed back for the
    /// DLQ. Either way the caller records it and calls again.
    pub fn lease_next(&mut self, now: SimTime) -> LeaseOutcome {
        while let Some(Reverse((visible_at, id))) = self.ready.pop() {
            let job = JobId(id);
            let j = match self.rows.live_in(job, JobState::Ready) {
                Some(j) if j.visible_at == visible_at => *j,
                _ => {
                    self.probes.hit(Probe::QueueLeaseStaleEntry);
                    continue;
                }
            };
            assert!(visible_at <= now, "job {id} leased before it is visible");
            let deadline_at = self.deadline_at(job);
            if now > deadline_at && !self.config.bugs.contains(Bug::SkipDeadlineCheck) {
                self.probes.hit(Probe::QueueLeaseDeadlineCancel);
                self.finish(job, JobState::Cancelled);
                return LeaseOutcome::Cancelled { job, deadline_at };
            }
            if (j.attempt >= self.config.attempts_max
                && !self.config.bugs.contains(Bug::UnboundedRetries))
                || j.doomed
            {
                self.probes.hit(match j.doomed {
                    true => Probe::QueueLeaseDoomed,
                    false => Probe::QueueLeaseExhausted,
                });
                self.finish(job, JobState::DeadLettered);
                return LeaseOutcome::AttemptsExhausted {
                    job,
                    attempts: j.attempt,
                };
            }
            if !self.config.bugs.contains(Bug::DepthNeverDecrements) {
                self.ready_count = less_one(self.ready_count);
            }
            let reuse = self.config.bugs.contains(Bug::TokenReuse) && j.lease_expired;
            let fence = if reuse {
                j.fence
            } else {
                self.fence_counter += 1;
                Fence(self.fence_counter)
            };
            assert!(fence >= j.fence, "job {id}'s fence went down");
            let lease_until = now + self.config.lease_ms;
            self.rows.set_state(job, JobState::Leased);
            self.probes.hit(match j.lease_expired {
                true => Probe::QueueLeaseAfterExpiry,
                false => Probe::QueueLeaseGranted,
            });
            let jm = self.rows.live_mut(job);
            let after_expiry = jm.lease_expired;
            jm.lease_expired = false;
            jm.attempt += 1;
            jm.fence = fence;
            jm.lease_until = lease_until;
            return LeaseOutcome::Leased {
                job,
                fence,
                attempt: jm.attempt,
                lease_until,
                visible_at,
                after_expiry,
            };
        }
        self.probes.hit(Probe::QueueLeaseEmpty);
        LeaseOutcome::Empty
    }

    /// The fence check shared by every worker call: the token must be the job's current one and
    /// the job must not be terminal. `no_fencing` drops the first half.
    fn check_fence(&mut self, job: JobId, fence: Fence) -> Result<(), Rejection> {
        let held = match self.rows.unfinished(job) {
            Ok(live) => live.fence,
            Err(state) => {
                self.probes.hit(Probe::QueueFenceTerminal);
                return Err(Rejection::Terminal(state));
            }
        };
        if held != fence {
            self.probes.hit(Probe::QueueFenceStale);
            if !self.config.bugs.contains(Bug::NoFencing) {
                return Err(Rejection::StaleFence {
                    held,
                    presented: fence,
                });
            }
        } else {
            self.probes.hit(Probe::QueueFenceCurrent);
        }
        Ok(())
    }

    /// Extends the lease to now + lease_ms, only for the current holder of a live lease.
    pub fn heartbeat(
        &mut self,
        now: SimTime,
        job: JobId,
        fence: Fence,
    ) -> Result<SimTime, Rejection> {
        match self.check_fence(job, fence) {
            Err(Rejection::StaleFence { .. })
                if self.config.bugs.contains(Bug::UnfencedHeartbeat) => {}
            other => other?,
        }
        let state = self.rows.state(job);
        if state != JobState::Leased {
            self.probes.hit(Probe::QueueHeartbeatNotLeased);
            return Err(Rejection::NotLeased(state));
        }
        self.probes.hit(Probe::QueueHeartbeatRenewed);
        let lease_until = now + self.config.lease_ms;
        if !self.config.bugs.contains(Bug::HeartbeatNotStored) {
            self.rows.live_mut(job).lease_until = lease_until;
        }
        Ok(lease_until)
    }

    /// Confirms the job: terminal `acked`.
    pub fn ack(&mut self, _now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.check_fence(job, fence)?;
        self.finish(job, JobState::Acked);
        Ok(())
    }

    /// A retry: the job waits until `visible_at`, then is leased again.
    pub fn retry_at(
        &mut self,
        now: SimTime,
        job: JobId,
        fence: Fence,
        visible_at: SimTime,
    ) -> Result<(), Rejection> {
        self.check_fence(job, fence)?;
        self.probes.hit(Probe::QueueRetryWaits);
        if self.rows.state(job) == JobState::Ready {
            self.ready_count = less_one(self.ready_count);
        }
        self.rows.set_state(job, JobState::Waiting);
        let ignored = self.config.bugs.contains(Bug::BackoffIgnored);
        let j = self.rows.live_mut(job);
        j.visible_at = visible_at;
        j.lease_until = 0;
        j.lease_expired = false;
        if ignored {
            j.visible_at = now;
            self.set_ready(job);
        }
        Ok(())
    }

    /// A dead_letter decision by the lease holder. The caller files the DLQ entry.
    pub fn dead_letter(
        &mut self,
        _now: SimTime,
        job: JobId,
        fence: Fence,
    ) -> Result<(), Rejection> {
        self.check_fence(job, fence)?;
        self.finish(job, JobState::DeadLettered);
        Ok(())
    }

    /// A cancel decision by the lease holder (the deadline passed while it worked).
    pub fn cancel(&mut self, _now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.check_fence(job, fence)?;
        self.finish(job, JobState::Cancelled);
        Ok(())
    }

    /// When a lease that runs until `lease_until` has expired: the moment after it (a lease is
    /// live through its `lease_until`).
    pub fn expiry_time(&self, lease_until: SimTime) -> SimTime {
        if self.config.bugs.contains(Bug::EarlyExpiry) {
            return lease_until;
        }
        lease_until + 1
    }

    /// A lease-expiry timer for the lease `fence` fired at `now`.
    pub fn check_expiry(&mut self, now: SimTime, job: JobId, fence: Fence) -> ExpiryOutcome {
        let lease_until = match self.rows.live_in(job, JobState::Leased) {
            Some(j) if j.fence == fence => j.lease_until,
            _ => {
                self.probes.hit(Probe::QueueExpiryStale);
                return ExpiryOutcome::Stale;
            }
        };
        if self.expiry_time(lease_until) > now {
            self.probes.hit(Probe::QueueExpiryRenewed);
            return ExpiryOutcome::StillLeased { lease_until };
        }
        self.probes.hit(Probe::QueueExpiryExpired);
        self.rows.live_mut(job).lease_expired = true;
        self.set_ready(job);
        ExpiryOutcome::Expired
    }

    // ---- writes a queue without fencing accepts (queue-semantics profiles) ------------------

    /// An accepted ack whatever the token: the job is acked unless it already ended (then the
    /// write changes nothing, as a by-id update on a finished row does).
    pub fn ack_unfenced(&mut self, job: JobId) {
        if self.rows.state(job).is_terminal() {
            self.probes.hit(Probe::QueueAckUnfencedNoop);
        } else {
            self.probes.hit(Probe::QueueAckUnfencedApplied);
            self.finish(job, JobState::Acked);
        }
    }

    /// An accepted dead-letter whatever the token.
    pub fn dead_letter_unfenced(&mut self, job: JobId) {
        if self.rows.state(job).is_terminal() {
            self.probes.hit(Probe::QueueDeadLetterUnfencedNoop);
        } else {
            self.probes.hit(Probe::QueueDeadLetterUnfencedApplied);
            self.finish(job, JobState::DeadLettered);
        }
    }

    /// An accepted renewal whatever the token: a leased job's lease runs to `now + lease_ms`.
    pub fn heartbeat_unfenced(&mut self, now: SimTime, job: JobId) -> Option<SimTime> {
        let lease_ms = self.config.lease_ms;
        if self.rows.state(job) != JobState::Leased {
            self.probes.hit(Probe::QueueHeartbeatUnfencedNotLeased);
            return None;
        }
        self.probes.hit(Probe::QueueHeartbeatUnfencedRenewed);
        let j = self.rows.live_mut(job);
        j.lease_until = now + lease_ms;
        Some(j.lease_until)
    }

    /// Takes a job back from whatever state it is in (a stale retry or a rescue written by id):
    /// a finished job is alive again. `Reopen::Ready`: ready at once, first in line with its old
    /// visible time (`now` if that was still to come: a retry it overrides); `Hold`: waiting, with its old visible time, until [`Queue::release`];
    /// `At(t)`: waiting until `t`. Returns whether it was finished. The one way a terminal job
    /// changes state, and only a profile's by-id write takes it (River's rescuer, Oban's
    /// `error_job`): the history then shows a finished job leased again, `terminal_once`. A
    /// finished job's row must then be whole ([`Queue::keep_finished_rows_whole`]).
    pub fn reopen(&mut self, now: SimTime, job: JobId, how: Reopen, expired: bool) -> bool {
        let state = self.rows.state(job);
        let revived = state.is_terminal();
        if revived {
            self.probes.hit(Probe::QueueReopenRevived);
            self.terminal_count -= 1;
        }
        if state == JobState::Ready {
            self.probes.hit(Probe::QueueReopenFromReady);
            self.ready_count -= 1;
        }
        self.rows.set_state(job, JobState::Waiting);
        let jm = self.rows.live_mut(job);
        jm.lease_until = 0;
        jm.lease_expired = expired;
        if matches!(how, Reopen::Ready | Reopen::Hold) && jm.visible_at > now {
            // A retry had put it off (a holder's retry written before a sweeper's rescue by id
            // landed): the rescue's write wins, and a job ready at once is visible now, not
            // then (else it would sit in the ready line before its time). No probe of its own:
            // only a rescue race (by id, after a gap: a swarm hazard) gets here, too rarely for
            // the coverage gate's 5,000 seeds; `Reopen`'s own probes count the decision.
            jm.visible_at = now;
        }
        match how {
            Reopen::Ready => {
                self.probes.hit(Probe::QueueReopenReady);
                self.set_ready(job);
            }
            Reopen::Hold => self.probes.hit(Probe::QueueReopenHold),
            Reopen::At(at) => {
                jm.visible_at = at;
                self.probes.hit(Probe::QueueReopenAt);
            }
        }
        revived
    }

    /// Hands a job held by [`Queue::reopen`] with `hold` to the ready line, first in line with its
    /// old visible time. False if it is not held (it moved on meanwhile): it is not waiting, or
    /// it waits for a time of its own (its holder's retry, taken by the profile's guard after
    /// the rescue, scheduled it: the kernel makes it visible then, and a release now would put
    /// it in the ready line before its time).
    pub fn release(&mut self, job: JobId) -> bool {
        if !self.held(job) {
            self.probes.hit(Probe::QueueReleaseMovedOn);
            return false;
        }
        self.probes.hit(Probe::QueueReleaseReady);
        self.set_ready(job);
        true
    }

    /// Whether `job` is held by [`Queue::reopen`] with `hold` and not yet released: waiting,
    /// its lease taken back (a holder's retry clears the flag, a release makes it ready).
    fn held(&self, job: JobId) -> bool {
        self.rows
            .live_in(job, JobState::Waiting)
            .is_some_and(|j| j.lease_expired)
    }

    /// The job fails at its next pick, into the DLQ (`maxStalledCount` exceeded).
    pub fn doom(&mut self, job: JobId) {
        self.rows.live_mut(job).doomed = true;
    }

    /// Changes a job's payload in place: the fault `mutate_payload`, standing for a caller that
    /// reuses a key for different content.
    pub fn mutate_payload(&mut self, job: JobId, payload: PayloadHash) {
        let document = self.by_key.key(self.key_slot(job)).document;
        self.probes.hit(Probe::QueueMutatePayload);
        self.rows.set_payload(job, document, payload);
    }
}

/// The probe of a uniqueness decision on a known key, under `mode`.
fn unique_probe(mode: Unique, decision: SubmitDecision) -> Probe {
    use SubmitDecision as D;
    match (mode, decision) {
        (Unique::Forever, D::Conflict) => Probe::UniqueForeverConflict,
        (Unique::Forever, _) => Probe::UniqueForeverDedupe,
        (Unique::None, _) => Probe::UniqueNoneCreate,
        (Unique::WhileActive, D::Create) => Probe::UniqueWhileActiveCreate,
        (Unique::WhileActive, _) => Probe::UniqueWhileActiveDedupe,
        (Unique::ConflictWhileRunning, D::Create) => Probe::UniqueConflictWhileRunningCreate,
        (Unique::ConflictWhileRunning, _) => Probe::UniqueConflictWhileRunningConflict,
        (Unique::Replace, D::Replace) => Probe::UniqueReplaceReplace,
        (Unique::Replace, _) => Probe::UniqueReplaceCreate,
        (Unique::WhileWaiting, D::Create) => Probe::UniqueWhileWaitingCreate,
        (Unique::WhileWaiting, D::Dedupe) => Probe::UniqueWhileWaitingDedupe,
        (Unique::WhileWaiting, _) => Probe::UniqueWhileWaitingConflict,
        (Unique::WhileNew, D::Create) => Probe::UniqueWhileNewCreate,
        (Unique::WhileNew, D::Dedupe) => Probe::UniqueWhileNewDedupe,
        (Unique::WhileNew, _) => Probe::UniqueWhileNewConflict,
    }
}

/// `count - 1`, asserting the depth never goes below zero (on in release, where `-` wraps).
#[inline]
fn less_one(count: usize) -> usize {
    assert!(count > 0, "the queue depth went below zero");
    count - 1
}

mod config;
#[cfg(test)]
mod tests;

//! The queue-semantics seam: everything the kernel asks of a queue, answered in the model's
//! outcome types, and the chapter's queue as its default implementation.
//!
//! Owns: the [`QueueSemantics`] trait (intake, visibility, leases, lease checks and rescues, the
//! holder's writes, the retry policy's judgement and decision of a failure, the dead-letter
//! queue and its retention), the outcome types only the seam has ([`Write`], [`Refused`],
//! [`LeaseCheck`], [`Rescued`]), and [`ChapterQueue`], the queue the chapter describes
//! (`queue.rs` + `retry.rs` + `dead_letter.rs`), which every `durasim`-profile scenario runs on.
//! Does not: schedule anything, draw randomness or record history (the kernel does, from the
//! outcomes returned here, and passes in the draws a method asks for); the outbox and the
//! consumer are the application's side and stay outside the seam.
//!
//! A second queue semantics implements this trait and the kernel runs it through
//! `Sim::with_queue` without a change to its loop: `profiled_queue.rs` (a real queue's profile:
//! leases by visibility timeout or lock TTL, stale writes accepted by id, a rescuer horizon, its
//! own backoff), or a real store's. See ARCHITECTURE.md, "Where to add a queue semantics
//! profile".

use crate::base::ids::{Fence, JobId, SimTime, WorkerId};
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, ExpiryOutcome, Job, LeaseOutcome, Queue, Rejection, Reopen,
};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use crate::vocab::probes::{Probe, Probes};

/// A holder's write (heartbeat, ack, retry, dead-letter) as the queue receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Write {
    /// The worker process writing (a profile may accept a write from the lease's process).
    pub worker: WorkerId,
    pub job: JobId,
    /// The fence the writer presents: its lease's token, perhaps no longer the job's.
    pub fence: Fence,
    /// A draw in [0, 1000) when [`QueueSemantics::write_draws_coin`] asked for one, else 0.
    pub coin: u32,
}

/// Which write a guard judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteOp {
    Heartbeat,
    Ack,
    Retry,
    DeadLetter,
}

/// Why a holder's write changed nothing. The kernel records each as a `rejected` record with
/// the job's current fence: the rejection's reason, `lease_expired` or `ignored`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refused {
    /// Refused by the fence or the job's state, and the writer is told.
    Rejected(Rejection),
    /// The lease is a lock whose TTL ran out: even its holder's write finds no lock.
    LockExpired,
    /// The store took the write and changed nothing (a by-id write to a gone row, a guard
    /// that did not match, a renewal of a job no longer leased).
    Ignored,
}

impl From<Rejection> for Refused {
    #[inline]
    fn from(r: Rejection) -> Refused {
        Refused::Rejected(r)
    }
}

/// What a lease check found; the kernel schedules or records what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseCheck {
    /// Nothing to do: the lease was released, re-leased or finished, or its end is never
    /// detected as things stand.
    Nothing,
    /// Not yet: check again at this time.
    Again(SimTime),
    /// The lease ended and the job is ready again.
    Expired,
    /// The store's rescuer read the job now and writes by id at this time, whatever the job
    /// is by then: the kernel calls [`QueueSemantics::rescue`] then.
    RescueAt(SimTime),
    /// The lease's end is detected now: the kernel calls [`QueueSemantics::rescue`].
    Rescue,
}

/// Where a rescue put the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rescued {
    /// Ready again at once: the lease's end is recorded now.
    Ready,
    /// Held (neither leasable nor in the depth) until this time, when the kernel calls
    /// [`QueueSemantics::release_rescued`] and records the lease's end.
    HeldUntil(SimTime),
}

/// What the kernel asks of a queue. Every method takes `now` where time matters and returns
/// the model's outcome types; the kernel records what they say, schedules what follows and
/// draws the randomness a method asks for (`decide`'s and `rescue`'s jitter, `Write::coin`).
///
/// The contract every implementation keeps (the checker judges the history against it, so a
/// profile that breaks one is caught, not trusted):
/// - job ids are dense and handed out in enqueue order (`JobId(len)` is the next new job);
/// - a terminal job (acked, dead-lettered, cancelled) never changes state again, and every
///   fenced call on it is refused with [`Rejection::Terminal`] — except where the queue's
///   system really revives one (a rescue or a write by id on a finished row, River's rescuer,
///   Oban's `error_job`), which the checker then reports as `terminal_once`;
/// - the fence a lease hands out never decreases across leases of the same job;
/// - [`QueueSemantics::lease_next`] only hands out a job whose `visible_at <= now`;
/// - a method draws nothing: it asks for a draw (`draws_jitter`, `rescue_draws_jitter`,
///   `write_draws_coin`) and takes it as an argument, so a queue that asks for none moves no
///   stream;
/// - what a method learns from a call (the holder of a lease, a failure, when a job finished)
///   is all it knows of the run: it never reads the history.
pub trait QueueSemantics {
    // ---- reads ----------------------------------------------------------------------------

    /// The job's current row (its key, tenant, payload, clocks, fence, attempt and state). A
    /// finished job's clocks read 0 where the queue keeps finished rows compact (it holds no
    /// lease and waits for nothing: see `model::job_rows`).
    fn job(&self, job: JobId) -> Job;
    /// The job's `lease_until`, as [`QueueSemantics::job`] reads it, without the rest.
    fn lease_until(&self, job: JobId) -> SimTime {
        self.job(job).lease_until
    }
    /// The job's key slot, key and payload, as [`QueueSemantics::job`] reads them, without the
    /// rest (the outbox's results table is indexed by the key's slot).
    fn key_and_payload(&self, job: JobId) -> (u32, IdempotencyKey, PayloadHash) {
        let j = self.job(job);
        (j.key_slot, j.key, j.payload)
    }
    /// The job's key alone (a payload the queue does not store is computed when read).
    fn key(&self, job: JobId) -> IdempotencyKey {
        self.key_and_payload(job).1
    }
    /// Jobs ever created.
    fn len(&self) -> usize;
    /// Whether no job was ever created.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Visible jobs not under a live lease.
    fn depth(&self) -> usize;
    /// Every job created so far is terminal.
    fn all_terminal(&self) -> bool;
    /// When the job's deadline passes.
    fn deadline_at(&self, job: JobId) -> SimTime;

    // ---- intake ---------------------------------------------------------------------------

    /// The enqueue-time uniqueness check, then a new job (or why not).
    fn enqueue(&mut self, now: SimTime, request: EnqueueRequest) -> EnqueueOutcome;
    /// The fault `mutate_payload`: the job's payload changes in place.
    fn mutate_payload(&mut self, job: JobId, payload: PayloadHash);

    // ---- visibility, leases, their end ----------------------------------------------------

    /// A waiting job's `visible_at` has come; false when the wake-up is stale.
    fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool;
    /// The next job for idle worker `worker`, or a job cancelled / exhausted on the way (the
    /// caller records it and asks again), or nothing.
    fn lease_next(&mut self, now: SimTime, worker: WorkerId) -> LeaseOutcome;
    /// When the current lease of `job` should first be checked for its end; `None` when this
    /// queue never takes an abandoned job back (no rescuer), as things stand.
    fn lease_check_at(&mut self, job: JobId) -> Option<SimTime>;
    /// A lease check for lease `fence` of `job` at `now`.
    fn check_lease(&mut self, now: SimTime, job: JobId, fence: Fence) -> LeaseCheck;
    /// Whether [`QueueSemantics::rescue`] takes a jitter draw (a rescue after a retry delay).
    fn rescue_draws_jitter(&self) -> bool;
    /// The rescue of `job`, whose lease `fence` ended, at `now`: what the queue's rescuer does
    /// with it. `jitter_draw` is in [0, 1), drawn only when `rescue_draws_jitter` says so.
    fn rescue(&mut self, now: SimTime, job: JobId, fence: Fence, jitter_draw: f64) -> Rescued;
    /// A rescued job's hold is over: it is ready again, unless it moved on meanwhile (false).
    fn release_rescued(&mut self, job: JobId, fence: Fence) -> bool;

    // ---- the holder's writes --------------------------------------------------------------

    /// Whether write `op` with the fence `fence` needs a coin in [0, 1000) (`Write::coin`).
    fn write_draws_coin(&self, op: WriteOp, job: JobId, fence: Fence) -> bool;
    /// The holder renews its lease; the new `lease_until`, or why not.
    fn heartbeat(&mut self, now: SimTime, write: Write) -> Result<SimTime, Refused>;
    fn ack(&mut self, now: SimTime, write: Write) -> Result<(), Refused>;
    fn retry_at(&mut self, now: SimTime, write: Write, visible_at: SimTime) -> Result<(), Refused>;
    /// The queue side of a dead-letter decision; the kernel files the entry in
    /// [`QueueSemantics::dead_letters_mut`].
    fn dead_letter(&mut self, now: SimTime, write: Write) -> Result<(), Refused>;
    /// A cancel is fenced under every semantics.
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection>;

    // ---- failures: the retry policy ------------------------------------------------------

    /// The retry policy (classes, backoff, jitter) this queue decides failures with.
    fn policy(&self) -> &RetryPolicy;
    /// The error the policy judges when `attempt` of `job` failed with `error` at `now`.
    fn judged_error(&self, now: SimTime, job: JobId, attempt: u32, error: ErrorKind) -> ErrorKind {
        self.policy()
            .judged_error(error, attempt, now, self.deadline_at(job))
    }
    /// Lease `attempt` of `job` failed at `now` with the judged `error`: retry (with its delay),
    /// dead-letter or cancel. Called once per failed attempt (a queue counting failures counts
    /// here). `jitter_draw` is in [0, 1), drawn by the kernel only when
    /// [`RetryPolicy::draws_jitter`] says so.
    fn decide(
        &mut self,
        now: SimTime,
        job: JobId,
        attempt: u32,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Decision;

    // ---- dead letters ---------------------------------------------------------------------

    fn dead_letters(&self) -> &DeadLetterQueue;
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue;
    /// When the DLQ entry of `job`, filed at `now`, is deleted by age; `None`: kept.
    fn dlq_expires_at(&mut self, _job: JobId, _now: SimTime) -> Option<SimTime> {
        None
    }
    /// The retention an age deletion follows (recorded with it).
    fn dlq_retention_ms(&self) -> Option<SimTime> {
        None
    }

    // ---- coverage --------------------------------------------------------------------------

    /// Adds the probe counts of every decision this queue, its retry policy and its DLQ took
    /// (`vocab::probes`) to `into`. Called once, when the run ends; a queue that counts none
    /// (a test's, a real store's) adds nothing.
    fn add_probes(&self, _into: &mut Probes) {}
}

/// Counts the retry policy's `decision` in `probes`: the chapter's queue's and a profile's
/// queue's decisions alike.
pub fn count_decision(probes: &mut Probes, decision: Decision) {
    use crate::model::dead_letter::DlqReason;
    probes.hit(match decision {
        Decision::Retry { .. } => Probe::RetryDecideRetry,
        Decision::DeadLetter(DlqReason::PermanentError) => Probe::RetryDecideDeadLetterPermanent,
        Decision::DeadLetter(DlqReason::MaxAttemptsExceeded) => {
            Probe::RetryDecideDeadLetterExhausted
        }
        Decision::Cancel => Probe::RetryDecideCancel,
    });
}

/// Counts how the policy's own delay for failed attempt `attempt` was made: its jitter, and
/// whether it reached the cap.
pub fn count_policy_delay(probes: &mut Probes, policy: &RetryPolicy, attempt: u32) {
    use crate::vocab::config::Jitter;
    probes.hit(match policy.jitter {
        Jitter::None => Probe::RetryJitterNone,
        Jitter::Full => Probe::RetryJitterFull,
        Jitter::Equal => Probe::RetryJitterEqual,
    });
    if policy.backoff_ms_unjittered(attempt) >= policy.backoff_cap_ms {
        probes.hit(Probe::RetryCapped);
    }
}

/// The chapter's queue: leases with heartbeats and a fencing token per lease, expiry just after
/// `lease_until`, unique keys (same payload deduplicates, another conflicts), the retry policy
/// and a dead-letter queue with audited reprocess. The default of every run.
#[derive(Clone, Debug, Hash)]
pub struct ChapterQueue {
    pub queue: Queue,
    pub policy: RetryPolicy,
    pub dlq: DeadLetterQueue,
}

impl QueueSemantics for ChapterQueue {
    #[inline]
    fn job(&self, job: JobId) -> Job {
        self.queue.job(job)
    }
    #[inline]
    fn lease_until(&self, job: JobId) -> SimTime {
        self.queue.lease_until(job)
    }
    #[inline]
    fn key_and_payload(&self, job: JobId) -> (u32, IdempotencyKey, PayloadHash) {
        self.queue.key_and_payload(job)
    }
    #[inline]
    fn key(&self, job: JobId) -> IdempotencyKey {
        self.queue.key_at(self.queue.key_slot(job))
    }
    #[inline]
    fn len(&self) -> usize {
        self.queue.len()
    }
    #[inline]
    fn depth(&self) -> usize {
        self.queue.depth()
    }
    #[inline]
    fn all_terminal(&self) -> bool {
        self.queue.all_terminal()
    }
    #[inline]
    fn deadline_at(&self, job: JobId) -> SimTime {
        self.queue.deadline_at(job)
    }
    #[inline]
    fn enqueue(&mut self, now: SimTime, request: EnqueueRequest) -> EnqueueOutcome {
        self.queue.enqueue(now, request)
    }
    #[inline]
    fn mutate_payload(&mut self, job: JobId, payload: PayloadHash) {
        self.queue.mutate_payload(job, payload)
    }
    #[inline]
    fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool {
        self.queue.make_visible(now, job, visible_at)
    }
    #[inline]
    fn lease_next(&mut self, now: SimTime, _worker: WorkerId) -> LeaseOutcome {
        self.queue.lease_next(now)
    }
    /// Just after `lease_until`: an exact timer.
    #[inline]
    fn lease_check_at(&mut self, job: JobId) -> Option<SimTime> {
        Some(self.queue.expiry_time(self.queue.lease_until(job)))
    }
    #[inline]
    fn check_lease(&mut self, now: SimTime, job: JobId, fence: Fence) -> LeaseCheck {
        match self.queue.check_expiry(now, job, fence) {
            ExpiryOutcome::Stale => LeaseCheck::Nothing,
            ExpiryOutcome::StillLeased { lease_until } => {
                LeaseCheck::Again(self.queue.expiry_time(lease_until))
            }
            ExpiryOutcome::Expired => LeaseCheck::Expired,
        }
    }
    #[inline]
    fn rescue_draws_jitter(&self) -> bool {
        false
    }
    /// The chapter's rescue: the job is ready at once (its check never asks for one: an
    /// expired lease is taken back by `check_lease` itself).
    fn rescue(&mut self, now: SimTime, job: JobId, _fence: Fence, _jitter_draw: f64) -> Rescued {
        self.queue.reopen(now, job, Reopen::Ready, true);
        Rescued::Ready
    }
    fn release_rescued(&mut self, job: JobId, fence: Fence) -> bool {
        self.queue.fence(job) == fence && self.queue.release(job)
    }
    /// Every write is fenced: a stale one is refused, no coin.
    #[inline]
    fn write_draws_coin(&self, _op: WriteOp, _job: JobId, _fence: Fence) -> bool {
        false
    }
    #[inline]
    fn heartbeat(&mut self, now: SimTime, w: Write) -> Result<SimTime, Refused> {
        Ok(self.queue.heartbeat(now, w.job, w.fence)?)
    }
    #[inline]
    fn ack(&mut self, now: SimTime, w: Write) -> Result<(), Refused> {
        Ok(self.queue.ack(now, w.job, w.fence)?)
    }
    #[inline]
    fn retry_at(&mut self, now: SimTime, w: Write, visible_at: SimTime) -> Result<(), Refused> {
        Ok(self.queue.retry_at(now, w.job, w.fence, visible_at)?)
    }
    #[inline]
    fn dead_letter(&mut self, now: SimTime, w: Write) -> Result<(), Refused> {
        Ok(self.queue.dead_letter(now, w.job, w.fence)?)
    }
    #[inline]
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.queue.cancel(now, job, fence)
    }
    #[inline]
    fn policy(&self) -> &RetryPolicy {
        &self.policy
    }
    /// The policy's capped exponential over the lease count.
    #[inline]
    fn decide(
        &mut self,
        _now: SimTime,
        _job: JobId,
        attempt: u32,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Decision {
        let decision = self.policy.decide(error, attempt, jitter_draw);
        count_decision(&mut self.queue.probes, decision);
        if let Decision::Retry { .. } = decision {
            count_policy_delay(&mut self.queue.probes, &self.policy, attempt);
        }
        decision
    }
    #[inline]
    fn dead_letters(&self) -> &DeadLetterQueue {
        &self.dlq
    }
    #[inline]
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue {
        &mut self.dlq
    }
    fn add_probes(&self, into: &mut Probes) {
        self.queue.add_probes(into);
        into.add(&self.dlq.probes);
    }
}

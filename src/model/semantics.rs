//! The queue-semantics seam: everything the kernel asks of a queue, answered in the model's
//! outcome types, and the chapter's queue as its default implementation.
//!
//! Owns: the [`QueueSemantics`] trait (intake, visibility, leases and their expiry, the fenced
//! transitions, the retry policy's judgement of a failure, the dead-letter queue) and
//! [`ChapterQueue`], the queue the chapter describes (`queue.rs` + `retry.rs` +
//! `dead_letter.rs`), which every shipped scenario runs on.
//! Does not: schedule anything, draw randomness or record history (the kernel does, from the
//! outcomes returned here); the outbox and the consumer are the application's side and stay
//! outside the seam.
//!
//! A second queue semantics (a real queue's profile: leases by visibility timeout or lock TTL,
//! stale writes accepted by id, a rescuer horizon, a capped dead set, unique-enqueue modes, its
//! own backoff) implements this trait, and the kernel runs it through `Sim::with_queue` without
//! a change to its loop. See ARCHITECTURE.md, "Where to add a queue semantics profile".

use crate::ids::{Fence, JobId, SimTime};
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, ExpiryOutcome, Job, LeaseOutcome, Queue, Rejection,
};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::vocab::payload::PayloadHash;

/// What the kernel asks of a queue. Every method takes `now` where time matters and returns
/// the model's outcome types; the kernel records what they say and schedules what follows.
///
/// The contract every implementation keeps (the checker judges the history against it, so a
/// profile that breaks one is caught, not trusted):
/// - job ids are dense and handed out in enqueue order (`JobId(len)` is the next new job);
/// - a terminal job (acked, dead-lettered, cancelled) never changes state again, and every
///   fenced call on it is refused with [`Rejection::Terminal`];
/// - the fence a lease hands out never decreases across leases of the same job;
/// - [`QueueSemantics::lease_next`] only hands out a job whose `visible_at <= now`.
pub trait QueueSemantics {
    // ---- reads ----------------------------------------------------------------------------

    /// The job's current row (its key, tenant, payload, clocks, fence, attempt and state).
    fn job(&self, job: JobId) -> &Job;
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

    // ---- visibility, leases, expiry -------------------------------------------------------

    /// A waiting job's `visible_at` has come; false when the wake-up is stale.
    fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool;
    /// The next job for an idle worker, or a job cancelled / exhausted on the way (the caller
    /// records it and asks again), or nothing.
    fn lease_next(&mut self, now: SimTime) -> LeaseOutcome;
    /// The holder renews its lease; the new `lease_until`, or why not.
    fn heartbeat(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<SimTime, Rejection>;
    /// When a lease that runs until `lease_until` should be checked for expiry; `None` when
    /// this queue never takes an abandoned job back (no rescuer).
    fn expiry_check_at(&self, lease_until: SimTime) -> Option<SimTime>;
    /// An expiry check for lease `fence` at `now`.
    fn check_expiry(&mut self, now: SimTime, job: JobId, fence: Fence) -> ExpiryOutcome;

    // ---- the holder's transitions (fenced) -----------------------------------------------

    fn ack(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection>;
    fn retry_at(
        &mut self,
        now: SimTime,
        job: JobId,
        fence: Fence,
        visible_at: SimTime,
    ) -> Result<(), Rejection>;
    /// The queue side of a dead-letter decision; the kernel files the entry in
    /// [`QueueSemantics::dead_letters_mut`].
    fn dead_letter(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection>;
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection>;

    // ---- failures: the retry policy ------------------------------------------------------

    /// The retry policy (classes, backoff, jitter) this queue decides failures with.
    fn policy(&self) -> &RetryPolicy;
    /// The error the policy judges when `attempt` of `job` failed with `error` at `now`.
    fn judged_error(&self, now: SimTime, job: JobId, attempt: u32, error: ErrorKind) -> ErrorKind {
        self.policy()
            .judged_error(error, attempt, now, self.deadline_at(job))
    }
    /// Retry (with its delay), dead-letter or cancel. `jitter_draw` is in [0, 1), drawn by the
    /// kernel only when [`RetryPolicy::draws_jitter`] says so.
    fn decide(&self, error: ErrorKind, attempt: u32, jitter_draw: f64) -> Decision {
        self.policy().decide(error, attempt, jitter_draw)
    }

    // ---- dead letters ---------------------------------------------------------------------

    fn dead_letters(&self) -> &DeadLetterQueue;
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue;

    // ---- queue-semantics profiles ------------------------------------------------------------

    /// The chapter's queue underneath, for the kernel's profile rules (`sim/semantics.rs`: a
    /// write accepted by id, a rescue that holds or revives a job, a stall that dooms it). A
    /// backend that is not built on it returns `None` and runs only the `durasim` profile.
    fn chapter_mut(&mut self) -> Option<&mut Queue> {
        None
    }
}

/// The chapter's queue: leases with heartbeats and a fencing token per lease, expiry just after
/// `lease_until`, unique keys (same payload deduplicates, another conflicts), the retry policy
/// and a dead-letter queue with audited reprocess. The default of every run.
#[derive(Clone, Debug)]
pub struct ChapterQueue {
    pub queue: Queue,
    pub policy: RetryPolicy,
    pub dlq: DeadLetterQueue,
}

impl QueueSemantics for ChapterQueue {
    #[inline]
    fn job(&self, job: JobId) -> &Job {
        self.queue.job(job)
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
        self.queue.job(job).deadline_at(self.queue.config())
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
    fn lease_next(&mut self, now: SimTime) -> LeaseOutcome {
        self.queue.lease_next(now)
    }
    #[inline]
    fn heartbeat(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<SimTime, Rejection> {
        self.queue.heartbeat(now, job, fence)
    }
    #[inline]
    fn expiry_check_at(&self, lease_until: SimTime) -> Option<SimTime> {
        Some(self.queue.expiry_time(lease_until))
    }
    #[inline]
    fn check_expiry(&mut self, now: SimTime, job: JobId, fence: Fence) -> ExpiryOutcome {
        self.queue.check_expiry(now, job, fence)
    }
    #[inline]
    fn ack(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.queue.ack(now, job, fence)
    }
    #[inline]
    fn retry_at(
        &mut self,
        now: SimTime,
        job: JobId,
        fence: Fence,
        visible_at: SimTime,
    ) -> Result<(), Rejection> {
        self.queue.retry_at(now, job, fence, visible_at)
    }
    #[inline]
    fn dead_letter(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.queue.dead_letter(now, job, fence)
    }
    #[inline]
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.queue.cancel(now, job, fence)
    }
    #[inline]
    fn policy(&self) -> &RetryPolicy {
        &self.policy
    }
    #[inline]
    fn dead_letters(&self) -> &DeadLetterQueue {
        &self.dlq
    }
    #[inline]
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue {
        &mut self.dlq
    }
    fn chapter_mut(&mut self) -> Option<&mut Queue> {
        Some(&mut self.queue)
    }
}

//! A real queue's semantics behind the seam: the chapter's queue, run by a profile's rules.
//!
//! Owns: [`ProfiledQueue`], the [`QueueSemantics`] implementation of every scenario whose
//! resolved `[queue]` profile differs from the chapter's queue ([`ProfiledQueue::needed`]):
//! the verdict on each holder's write under the profile's guard (accepted, rejected, ignored by
//! the store; a lock whose TTL ran out), when a lease's end is detected (a sweeper, a two-pass
//! checker, worker liveness, never) and what a rescue does (ready, after the retry delay, a
//! stall that dooms the job; a sweeper's late write by id), the attempt the retry policy counts
//! (leases, or failures) and the profile's backoff formula, DLQ retention, and the per-job facts
//! these rules need (who holds the job, when it finished, its stalls and failures), learnt from
//! the calls the kernel makes.
//! Does not: schedule, draw or record (the kernel does, from the outcomes returned here: jitter
//! draws and the `may_apply` coin are passed in), or restate a mechanism: the guard's verdict,
//! the detection time, the delay and the retention come from `profile::guard`, `detection`,
//! `backoff`, `retention`. Fenced writes (every guard `reject`, no lock TTL) and a timer expiry
//! with a ready rescue go through the chapter's queue unchanged.

use crate::base::ids::{Fence, JobId, SimTime, WorkerId};
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, Job, JobState, LeaseOutcome, Rejection, Reopen,
};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::model::semantics::{
    ChapterQueue, LeaseCheck, QueueSemantics, Refused, Rescued, Write, WriteOp,
};
use crate::profile::detection::{detected_at, LeaseView};
use crate::profile::guard::{self, Verdict, WriteContext};
use crate::profile::stall::Stalls;
use crate::profile::{
    backoff, retention, AttemptsCount, BackoffFormula, Effective, ExpiryKind, JitterMode, OnExpiry,
    RescueWrite, Semantics, WriteGuard,
};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use crate::vocab::probes::{Probe, Probes};

/// What the profile's rules need to know of a job beyond its row.
#[derive(Clone, Copy, Debug, Default, Hash)]
struct JobFacts {
    /// The worker process that took the current lease.
    holder: u32,
    /// When the job first finished (acked, dead-lettered, cancelled).
    finished_at: Option<SimTime>,
    stalls: Stalls,
    /// Failed attempts (what BullMQ and Sidekiq count).
    failures: u32,
}

/// The chapter's queue under a profile's rules (`[queue] profile` and its keys, resolved).
#[derive(Clone, Debug, Hash)]
pub struct ProfiledQueue {
    chapter: ChapterQueue,
    sem: Semantics,
    eff: Effective,
    /// Every write is fenced as the chapter's (all guards `reject`, no lock TTL).
    plain_writes: bool,
    /// Expiry is the chapter's exact timer and a rescue makes the job ready at once.
    plain_expiry: bool,
    jobs: Vec<JobFacts>,
    /// The profile's decisions taken so far (`vocab::probes`).
    probes: Probes,
}

/// Every guard `reject` and no lock TTL: writes are fenced as the chapter's.
fn plain_writes(sem: &Semantics) -> bool {
    let s = &sem.stale;
    [s.heartbeat, s.ack, s.retry, s.dead_letter]
        .iter()
        .all(|g| *g == WriteGuard::Reject)
        && !sem.lock_ttl
}

/// The chapter's exact expiry timer, and a rescue that makes the job ready at once.
fn plain_expiry(sem: &Semantics) -> bool {
    sem.expiry.kind == ExpiryKind::Timer && sem.on_expiry == OnExpiry::Ready
}

impl ProfiledQueue {
    /// Whether a run under `sem` needs the profile's rules: otherwise the chapter's queue is the
    /// same queue (fenced writes, the exact timer, `exp2` backoff, attempts counted by leases, a
    /// DLQ that keeps its entries), and runs without them.
    pub fn needed(sem: &Semantics) -> bool {
        !(plain_writes(sem) && plain_expiry(sem))
            || sem.backoff.formula != BackoffFormula::Exp2
            || sem.attempts_count != AttemptsCount::Leases
            || sem.dlq.retention_ms.is_some()
    }

    /// Whether leases under `sem` end at the chapter's exact timer (the timer expiry and a
    /// ready rescue), the only end the `early_expiry` bug switch moves.
    pub fn exact_timer(sem: &Semantics) -> bool {
        plain_expiry(sem)
    }

    /// The chapter's queue `chapter`, built for the run, under the rules of `sem`.
    /// Its finished jobs keep their whole rows: a by-id write or a rescue can reopen one, and
    /// the backoff and the guards read a finished job's clocks.
    pub fn new(mut chapter: ChapterQueue, sem: Semantics) -> ProfiledQueue {
        chapter.queue.keep_finished_rows_whole();
        ProfiledQueue {
            chapter,
            eff: Effective::of(&sem),
            plain_writes: plain_writes(&sem),
            plain_expiry: plain_expiry(&sem),
            sem,
            jobs: Vec::new(),
            probes: Probes::default(),
        }
    }

    fn facts(&self, job: JobId) -> JobFacts {
        self.jobs.get(job.index()).copied().unwrap_or_default()
    }

    fn facts_mut(&mut self, job: JobId) -> &mut JobFacts {
        if self.jobs.len() <= job.index() {
            self.jobs.resize(job.index() + 1, JobFacts::default());
        }
        &mut self.jobs[job.index()]
    }

    fn finished(&mut self, now: SimTime, job: JobId) {
        self.facts_mut(job).finished_at.get_or_insert(now);
    }

    /// The attempt number the retry policy counts: leases, or (BullMQ, Sidekiq) failures.
    fn policy_attempt(&self, job: JobId, lease_number: u32) -> u32 {
        match self.sem.attempts_count {
            AttemptsCount::Leases => lease_number,
            AttemptsCount::Failures => self.facts(job).failures.max(1),
        }
    }

    fn guard_of(&self, op: WriteOp) -> WriteGuard {
        let s = &self.sem.stale;
        match op {
            WriteOp::Heartbeat => s.heartbeat,
            WriteOp::Ack => s.ack,
            WriteOp::Retry => s.retry,
            WriteOp::DeadLetter => s.dead_letter,
        }
    }

    /// When the store notices that `job`'s lease ended, as things stand; `None`: never, unless
    /// a renewal or the holder's death changes it.
    fn detection_time(&self, job: JobId) -> Option<SimTime> {
        let j = self.chapter.queue.job(job);
        let view = LeaseView {
            renewed_at: j.lease_until.saturating_sub(self.eff.lease_ms),
            lease_until: j.lease_until,
        };
        detected_at(self.sem.expiry, view)
    }

    /// The profile's guard on a write that is not fenced as the chapter's: `Ok` when the store
    /// applies it.
    fn guard(&mut self, now: SimTime, op: WriteOp, w: Write) -> Result<(), Refused> {
        let j = self.chapter.queue.job(w.job);
        let guard_of = self.guard_of(op);
        let current = j.fence == w.fence;
        let terminal = j.state.is_terminal();
        if current && !terminal && self.sem.lock_ttl && now > j.lease_until {
            // The lock's TTL ran out: its holder's write finds no lock.
            self.probes.hit(Probe::GuardLockExpired);
            return Err(Refused::LockExpired);
        }
        let facts = self.facts(w.job);
        let ctx = WriteContext {
            current,
            leased: j.state == JobState::Leased,
            terminal,
            same_process: facts.holder == w.worker.0,
        };
        let mut verdict = guard::judge(guard_of, ctx, self.sem.stale.apply_permille, w.coin);
        if let Some(p) = guard_probe(guard_of, current && !terminal, verdict) {
            self.probes.hit(p);
        }
        if verdict == Verdict::Accepted && terminal {
            // A by-id write finds a finished job only while its row is kept.
            let kept = match (self.sem.finished_rows_kept_ms, facts.finished_at) {
                (None, _) => true,
                (Some(keep), Some(at)) => now <= at.saturating_add(keep),
                (Some(_), None) => true,
            };
            if !kept {
                self.probes.hit(Probe::GuardByIdRowGone);
                verdict = Verdict::Ignored;
            }
        }
        match verdict {
            Verdict::Accepted => Ok(()),
            Verdict::Rejected => Err(Refused::Rejected(if terminal {
                Rejection::Terminal(j.state)
            } else if !current {
                Rejection::StaleFence {
                    held: j.fence,
                    presented: w.fence,
                }
            } else {
                Rejection::NotLeased(j.state)
            })),
            Verdict::Ignored => Err(Refused::Ignored),
        }
    }
}

impl ProfiledQueue {
    /// Counts the profile's backoff formula and jitter mode, for a delay it computes itself.
    fn count_backoff(&mut self) {
        let b = &self.sem.backoff;
        let formula = match b.formula {
            BackoffFormula::Exp2 => None,
            BackoffFormula::Exp2Offset => Some(Probe::BackoffExp2Offset),
            BackoffFormula::Pow4 => Some(Probe::BackoffPow4),
            BackoffFormula::ExpE => Some(Probe::BackoffExpE),
            BackoffFormula::Immediate => Some(Probe::BackoffImmediate),
            BackoffFormula::Visibility => Some(Probe::BackoffVisibility),
        };
        let jitter = match b.jitter {
            JitterMode::Symmetric => Some(Probe::JitterSymmetric),
            JitterMode::Up => Some(Probe::JitterUp),
            JitterMode::Additive => Some(Probe::JitterAdditive),
            JitterMode::None | JitterMode::Full | JitterMode::Equal => None,
        };
        for p in [formula, jitter].into_iter().flatten() {
            self.probes.hit(p);
        }
    }
}

/// The probe of a guard's verdict on a write: the holder's own (`holder`), or a stale one by
/// the profile's `guard`. None for a stale write taken from the process that holds the job:
/// the kernel never makes one (a worker runs one attempt at a time, so it never writes with an
/// old token while it holds the current one).
fn guard_probe(guard: WriteGuard, holder: bool, verdict: Verdict) -> Option<Probe> {
    use Verdict::*;
    Some(match (guard, verdict) {
        _ if holder => Probe::GuardHolder,
        (WriteGuard::Reject, _) => Probe::GuardRejectRejected,
        (WriteGuard::IfLeased, Accepted) => Probe::GuardIfLeasedAccepted,
        (WriteGuard::IfLeased, _) => Probe::GuardIfLeasedIgnored,
        (WriteGuard::ById, _) => Probe::GuardByIdAccepted,
        (WriteGuard::IfNotTerminal, Accepted) => Probe::GuardIfNotTerminalAccepted,
        (WriteGuard::IfNotTerminal, _) => Probe::GuardIfNotTerminalIgnored,
        (WriteGuard::IfSameProcess, Accepted) => return None,
        (WriteGuard::IfSameProcess, _) => Probe::GuardIfSameProcessIgnored,
        (WriteGuard::MayApply, Accepted) => Probe::GuardMayApplyAccepted,
        (WriteGuard::MayApply, _) => Probe::GuardMayApplyIgnored,
    })
}

impl QueueSemantics for ProfiledQueue {
    fn job(&self, job: JobId) -> Job {
        self.chapter.job(job)
    }
    fn lease_until(&self, job: JobId) -> SimTime {
        self.chapter.lease_until(job)
    }
    fn key_and_payload(&self, job: JobId) -> (u32, IdempotencyKey, PayloadHash) {
        self.chapter.key_and_payload(job)
    }
    fn key(&self, job: JobId) -> IdempotencyKey {
        self.chapter.key(job)
    }
    fn len(&self) -> usize {
        self.chapter.len()
    }
    fn depth(&self) -> usize {
        self.chapter.depth()
    }
    fn all_terminal(&self) -> bool {
        self.chapter.all_terminal()
    }
    fn deadline_at(&self, job: JobId) -> SimTime {
        self.chapter.deadline_at(job)
    }
    fn enqueue(&mut self, now: SimTime, request: EnqueueRequest) -> EnqueueOutcome {
        self.chapter.enqueue(now, request)
    }
    fn mutate_payload(&mut self, job: JobId, payload: PayloadHash) {
        self.chapter.mutate_payload(job, payload)
    }
    fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool {
        self.chapter.make_visible(now, job, visible_at)
    }

    fn lease_next(&mut self, now: SimTime, worker: WorkerId) -> LeaseOutcome {
        let outcome = self.chapter.lease_next(now, worker);
        match outcome {
            LeaseOutcome::Leased { job, .. } => self.facts_mut(job).holder = worker.0,
            LeaseOutcome::Cancelled { job, .. } | LeaseOutcome::AttemptsExhausted { job, .. } => {
                self.finished(now, job)
            }
            LeaseOutcome::Empty => {}
        }
        outcome
    }

    fn lease_check_at(&mut self, job: JobId) -> Option<SimTime> {
        if self.plain_expiry {
            return self.chapter.lease_check_at(job);
        }
        self.probes.hit(match self.sem.expiry.kind {
            ExpiryKind::Timer => Probe::DetectTimer,
            ExpiryKind::Sweep => Probe::DetectSweep,
            ExpiryKind::TwoPass => Probe::DetectTwoPass,
            ExpiryKind::WorkerLiveness => Probe::DetectWorkerLiveness,
            ExpiryKind::Never => Probe::DetectNever,
        });
        self.detection_time(job)
    }

    fn check_lease(&mut self, now: SimTime, job: JobId, fence: Fence) -> LeaseCheck {
        if self.plain_expiry {
            return self.chapter.check_lease(now, job, fence);
        }
        let j = self.chapter.queue.job(job);
        if j.fence != fence || j.state != JobState::Leased {
            self.probes.hit(Probe::CheckMovedOn);
            return LeaseCheck::Nothing; // released, re-leased or finished meanwhile
        }
        let check = match self.detection_time(job) {
            None => LeaseCheck::Nothing,
            Some(at) if at > now => LeaseCheck::Again(at),
            Some(_) => {
                let gap = self.sem.rescue_gap_ms;
                if self.sem.rescue_write == RescueWrite::ById && gap > 0 {
                    // Read now, written by id later, whatever the job is by then
                    // (riverqueue/river#1302).
                    LeaseCheck::RescueAt(now + gap)
                } else {
                    LeaseCheck::Rescue
                }
            }
        };
        match check {
            LeaseCheck::Again(_) => self.probes.hit(Probe::CheckAgain),
            LeaseCheck::RescueAt(_) => self.probes.hit(Probe::CheckRescueAt),
            LeaseCheck::Rescue => self.probes.hit(Probe::CheckRescue),
            LeaseCheck::Nothing | LeaseCheck::Expired => {}
        }
        check
    }

    fn rescue_draws_jitter(&self) -> bool {
        matches!(self.sem.on_expiry, OnExpiry::Retry | OnExpiry::Fail)
            && backoff::draws(&self.sem.backoff)
    }

    fn rescue(&mut self, now: SimTime, job: JobId, _fence: Fence, jitter_draw: f64) -> Rescued {
        let attempt = self.chapter.queue.job(job).attempt;
        let delay = match self.sem.on_expiry {
            OnExpiry::Ready => {
                self.probes.hit(Probe::RescueReady);
                0
            }
            OnExpiry::Stall => {
                self.probes.hit(Probe::RescueStall);
                let limit = self.sem.stall_limit;
                let f = self.facts_mut(job);
                f.stalls.stalled(limit);
                if f.stalls.fails_on_fetch() {
                    self.probes.hit(Probe::RescueStallDoomed);
                    self.chapter.queue.doom(job);
                }
                0
            }
            on_expiry @ (OnExpiry::Retry | OnExpiry::Fail) => {
                self.probes.hit(match on_expiry {
                    OnExpiry::Retry => Probe::RescueRetry,
                    _ => Probe::RescueFail,
                });
                let n = self.policy_attempt(job, attempt.max(1));
                self.count_backoff();
                backoff::delay_ms(&self.sem.backoff, n, 0, jitter_draw)
            }
        };
        if delay == 0 {
            self.chapter.queue.reopen(now, job, Reopen::Ready, true);
            Rescued::Ready
        } else {
            // Held until the delay is over: neither leasable nor counted in the depth meanwhile.
            self.probes.hit(Probe::RescueHeld);
            self.chapter.queue.reopen(now, job, Reopen::Hold, true);
            Rescued::HeldUntil(now + delay)
        }
    }

    fn release_rescued(&mut self, job: JobId, fence: Fence) -> bool {
        let released = self.chapter.release_rescued(job, fence);
        self.probes.hit(match released {
            true => Probe::ReleaseRescuedReady,
            false => Probe::ReleaseRescuedMovedOn,
        });
        released
    }

    fn write_draws_coin(&self, op: WriteOp, job: JobId, fence: Fence) -> bool {
        !self.plain_writes
            && self.chapter.queue.fence(job) != fence
            && guard::draws(self.guard_of(op))
    }

    fn heartbeat(&mut self, now: SimTime, w: Write) -> Result<SimTime, Refused> {
        if self.plain_writes {
            return self.chapter.heartbeat(now, w);
        }
        self.guard(now, WriteOp::Heartbeat, w)?;
        self.chapter
            .queue
            .heartbeat_unfenced(now, w.job)
            .ok_or(Refused::Ignored)
    }

    fn ack(&mut self, now: SimTime, w: Write) -> Result<(), Refused> {
        if self.plain_writes {
            self.chapter.ack(now, w)?;
        } else {
            self.guard(now, WriteOp::Ack, w)?;
            self.chapter.queue.ack_unfenced(w.job);
        }
        self.finished(now, w.job);
        Ok(())
    }

    fn retry_at(&mut self, now: SimTime, w: Write, visible_at: SimTime) -> Result<(), Refused> {
        if self.plain_writes {
            return self.chapter.retry_at(now, w, visible_at);
        }
        self.guard(now, WriteOp::Retry, w)?;
        self.chapter
            .queue
            .reopen(now, w.job, Reopen::At(visible_at), false);
        Ok(())
    }

    fn dead_letter(&mut self, now: SimTime, w: Write) -> Result<(), Refused> {
        if self.plain_writes {
            self.chapter.dead_letter(now, w)?;
        } else {
            self.guard(now, WriteOp::DeadLetter, w)?;
            if self.chapter.queue.state(w.job) == JobState::DeadLettered {
                // Its row is in the DLQ already: the write changes nothing (a second entry
                // for one row is what no store keeps).
                return Err(Refused::Ignored);
            }
            self.chapter.queue.dead_letter_unfenced(w.job);
        }
        self.finished(now, w.job);
        Ok(())
    }

    /// Cancels stay fenced under every profile.
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.chapter.cancel(now, job, fence)?;
        self.finished(now, job);
        Ok(())
    }

    fn policy(&self) -> &RetryPolicy {
        self.chapter.policy()
    }

    fn decide(
        &mut self,
        now: SimTime,
        job: JobId,
        attempt: u32,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Decision {
        self.facts_mut(job).failures += 1;
        // What the header states the checker recomputes: `attempts_count` applies under every
        // guard and expiry, the chapter's fenced writes and exact timer included.
        let counted = self.policy_attempt(job, attempt);
        if self.sem.attempts_count == AttemptsCount::Failures {
            self.probes.hit(Probe::AttemptsByFailures);
        }
        if error == ErrorKind::SchemaInvalid
            && self.sem.permanent_error == crate::profile::PermanentError::Retry
        {
            self.probes.hit(Probe::PermanentRetried);
        }
        let decision = self.chapter.policy.decide(error, counted, jitter_draw);
        crate::model::semantics::count_decision(&mut self.probes, decision);
        // The policy's own delay is the profile's only for `exp2` with the policy's jitters
        // (none, full, equal); a profile's jitter (symmetric, up, additive) keeps its formula.
        let own_delay = self.sem.backoff.formula != BackoffFormula::Exp2
            || !matches!(
                self.sem.backoff.jitter,
                JitterMode::None | JitterMode::Full | JitterMode::Equal
            );
        match decision {
            Decision::Retry { .. } if own_delay => {
                let lease_left = self.job(job).lease_until.saturating_sub(now);
                self.count_backoff();
                Decision::Retry {
                    delay_ms: backoff::delay_ms(
                        &self.sem.backoff,
                        counted,
                        lease_left,
                        jitter_draw,
                    ),
                }
            }
            Decision::Retry { .. } => {
                let policy = &self.chapter.policy;
                crate::model::semantics::count_policy_delay(&mut self.probes, policy, counted);
                decision
            }
            d => d,
        }
    }

    fn dead_letters(&self) -> &DeadLetterQueue {
        self.chapter.dead_letters()
    }
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue {
        self.chapter.dead_letters_mut()
    }

    fn dlq_expires_at(&mut self, job: JobId, now: SimTime) -> Option<SimTime> {
        let at = retention::expires_at(&self.sem.dlq, self.job(job).created_at, now)?;
        self.probes.hit(match self.sem.dlq.mode {
            crate::profile::DlqMode::Redrive => Probe::RetentionFromEnqueue,
            _ => Probe::RetentionFromDeadLetter,
        });
        Some(at)
    }
    fn dlq_retention_ms(&self) -> Option<SimTime> {
        self.sem.dlq.retention_ms
    }
    fn add_probes(&self, into: &mut Probes) {
        self.chapter.add_probes(into);
        into.add(&self.probes);
    }
}

#[cfg(test)]
mod tests;

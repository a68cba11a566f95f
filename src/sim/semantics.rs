//! The queue-semantics profile in the kernel: what the profile's queue does where durasim's
//! fenced, heartbeat-renewed, timer-expired queue does something else.
//!
//! Owns: [`Rules`] (the resolved profile, the numbers the run uses, and per-job and per-worker
//! facts the profile's rules need: who holds a job, when it finished, its stalls and failures,
//! since when a worker process is dead), when a lease's end is detected (a sweeper, a two-pass
//! checker, worker liveness, never), what a rescue does (ready, after the retry delay, a stall),
//! a sweeper's late rescue write by id, and the verdict on each queue write under the profile's
//! guard (accepted, rejected, or ignored by the store). Under the `durasim` profile none of this
//! runs: `attempts.rs` keeps today's paths, so today's traces do not change.
//! Does not: decide a guard's verdict, a detection time or a delay itself (`profile::guard`,
//! `profile::detection`, `profile::backoff` do), or judge the outcome.

use super::kernel::{Ev, Sim};
use crate::history::{Event, Observer, Op};
use crate::ids::{Fence, JobId, SimTime, WorkerId};
use crate::model::queue::{JobState, Rejection, Reopen};
use crate::model::semantics::QueueSemantics;
use crate::profile::detection::{detected_at, LeaseView};
use crate::profile::guard::{self, Verdict, WriteContext};
use crate::profile::stall::Stalls;
use crate::profile::{
    AttemptsCount, Effective, ExpiryKind, OnExpiry, RescueWrite, Semantics, WriteGuard,
};

/// What the kernel knows per job beyond the queue's own state.
#[derive(Clone, Copy, Debug, Default)]
struct JobFacts {
    holder: u32,
    finished_at: Option<SimTime>,
    stalls: Stalls,
    failures: u32,
}

pub struct Rules {
    pub sem: Semantics,
    pub eff: Effective,
    /// Every write is fenced as durasim's (all guards `reject`, no lock TTL).
    pub plain_writes: bool,
    /// Expiry is durasim's exact timer and a rescue makes the job ready at once.
    pub plain_expiry: bool,
    jobs: Vec<JobFacts>,
}

impl Rules {
    pub fn new(sem: Semantics, eff: Effective) -> Rules {
        let s = &sem.stale;
        let plain_writes = [s.heartbeat, s.ack, s.retry, s.dead_letter]
            .iter()
            .all(|g| *g == WriteGuard::Reject)
            && !sem.lock_ttl;
        let plain_expiry = sem.expiry.kind == ExpiryKind::Timer && sem.on_expiry == OnExpiry::Ready;
        Rules {
            sem,
            eff,
            plain_writes,
            plain_expiry,
            jobs: Vec::new(),
        }
    }

    /// Plain durasim: nothing here needs to watch the history.
    pub fn plain(&self) -> bool {
        self.plain_writes && self.plain_expiry
    }

    fn facts(&mut self, job: JobId) -> &mut JobFacts {
        if self.jobs.len() <= job.index() {
            self.jobs.resize(job.index() + 1, JobFacts::default());
        }
        &mut self.jobs[job.index()]
    }

    /// Keeps the per-job facts from what the kernel records.
    pub fn observe(&mut self, at: SimTime, event: &Event) {
        match *event {
            Event::Leased { job, worker, .. } => {
                self.facts(job).holder = worker.0;
            }
            Event::Acked { job, .. }
            | Event::DeadLettered { job, .. }
            | Event::Cancelled { job, .. } => {
                let f = self.facts(job);
                f.finished_at.get_or_insert(at);
            }
            Event::AttemptFailed { job, .. } => self.facts(job).failures += 1,
            _ => {}
        }
    }

    /// The retry delay comes from the profile's formula, not the retry policy's `exp2`.
    pub fn profiled_backoff(&self) -> bool {
        self.sem.backoff.formula != crate::profile::BackoffFormula::Exp2
    }

    /// The attempt number the retry policy counts: leases, or (BullMQ, Sidekiq) failures.
    pub fn policy_attempt(&mut self, job: JobId, lease_number: u32) -> u32 {
        match self.sem.attempts_count {
            AttemptsCount::Leases => lease_number,
            AttemptsCount::Failures => self.facts(job).failures.max(1),
        }
    }
}

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    /// The chapter's queue underneath, which every profile runs on.
    pub(super) fn chapter(&mut self) -> &mut crate::model::queue::Queue {
        self.queue
            .chapter_mut()
            .expect("a scenario's profile runs on the chapter's queue")
    }

    /// When the profile's store notices that `job`'s lease (token `fence`) ended, as things
    /// stand; `None`: never, unless a renewal or the holder's death changes it.
    pub(super) fn detection_time(&mut self, job: JobId) -> Option<SimTime> {
        let j = *self.queue.job(job);
        let view = LeaseView {
            renewed_at: j.lease_until.saturating_sub(self.rules.eff.lease_ms),
            lease_until: j.lease_until,
        };
        detected_at(self.rules.sem.expiry, view)
    }

    /// A profile's lease check: the store's detector looks at the lease at `now`.
    pub(super) fn on_profile_lease_check(&mut self, job: JobId, fence: Fence) {
        let j = *self.queue.job(job);
        if j.fence != fence || j.state != JobState::Leased {
            return; // released, re-leased or finished meanwhile
        }
        match self.detection_time(job) {
            None => {}
            Some(at) if at > self.now => self.schedule(
                at,
                Ev::LeaseCheck {
                    job: job.0,
                    fence: fence.0,
                },
            ),
            Some(_) => {
                let gap = self.rules.sem.rescue_gap_ms;
                if self.rules.sem.rescue_write == RescueWrite::ById && gap > 0 {
                    // Read now, written by id later, whatever the job is by then.
                    self.schedule(
                        self.now + gap,
                        Ev::RescueWrite {
                            job: job.0,
                            fence: fence.0,
                        },
                    );
                } else {
                    self.rescue(job, fence);
                }
            }
        }
    }

    /// The sweeper's write for the lease `fence` it read `rescue_gap_ms` ago (by id: the job
    /// may have finished or been leased again since; riverqueue/river#1302).
    pub(super) fn on_rescue_write(&mut self, job: JobId, fence: Fence) {
        self.rescue(job, fence);
    }

    /// What the profile's rescue does with a job whose lease `fence` ended.
    fn rescue(&mut self, job: JobId, fence: Fence) {
        let j = *self.queue.job(job);
        let delay = match self.rules.sem.on_expiry {
            OnExpiry::Ready => 0,
            OnExpiry::Stall => {
                let limit = self.rules.sem.stall_limit;
                let f = self.rules.facts(job);
                f.stalls.stalled(limit);
                if f.stalls.fails_on_fetch() {
                    self.chapter().doom(job);
                }
                0
            }
            OnExpiry::Retry | OnExpiry::Fail => {
                let n = self.rules.policy_attempt(job, j.attempt.max(1));
                let b = self.rules.sem.backoff;
                let draw = if crate::profile::backoff::draws(&b) {
                    self.jitter_stream.unit()
                } else {
                    0.0
                };
                crate::profile::backoff::delay_ms(&b, n, 0, draw)
            }
        };
        if delay == 0 {
            self.chapter().reopen(job, Reopen::Ready, true);
            self.record(Event::LeaseExpired { job, fence });
            self.hand_out();
        } else {
            // Held until the delay is over; the history records the lease's end then, so the
            // job is neither leasable nor counted in the depth meanwhile, on either side.
            self.chapter().reopen(job, Reopen::Hold, true);
            let visible_at = self.now + delay;
            self.schedule(
                visible_at,
                Ev::RescueVisible {
                    job: job.0,
                    fence: fence.0,
                    visible_at,
                },
            );
        }
    }

    /// A rescued job's retry delay is over: the rescue is recorded as the lease's end, and the
    /// job is ready again.
    pub(super) fn on_rescue_visible(&mut self, job: JobId, fence: Fence, _visible_at: SimTime) {
        if self.queue.job(job).fence == fence && self.chapter().release(job) {
            self.record(Event::LeaseExpired { job, fence });
            self.hand_out();
        }
    }

    /// A queue write under the profile's guard for `op`. Returns the verdict; an accepted write
    /// is applied to the queue, and every verdict is recorded by the caller's event or here.
    pub(super) fn guarded(&mut self, w: WorkerId, job: JobId, fence: Fence, op: Op) -> Verdict {
        let j = *self.queue.job(job);
        let sem = self.rules.sem;
        let guard_of = match op {
            Op::Heartbeat => sem.stale.heartbeat,
            Op::Ack => sem.stale.ack,
            Op::Retry => sem.stale.retry,
            _ => sem.stale.dead_letter,
        };
        let current = j.fence == fence;
        let terminal = j.state.is_terminal();
        if current && !terminal && sem.lock_ttl && self.now > j.lease_until {
            // The lock's TTL ran out: its holder's write finds no lock.
            self.record(Event::Rejected {
                job,
                worker: w,
                op,
                presented: fence,
                held: Some(j.fence),
                reason: "lease_expired",
            });
            return Verdict::Rejected;
        }
        let facts = *self.rules.facts(job);
        let ctx = WriteContext {
            current,
            leased: j.state == JobState::Leased,
            terminal,
            same_process: facts.holder == w.0,
        };
        let coin = if !current && guard::draws(guard_of) {
            (self.coin_stream.unit() * 1000.0) as u32
        } else {
            0
        };
        let mut verdict = guard::judge(guard_of, ctx, sem.stale.apply_permille, coin);
        if verdict == Verdict::Accepted && terminal {
            // A by-id write finds a finished job only while its row is kept.
            let kept = match (sem.finished_rows_kept_ms, facts.finished_at) {
                (None, _) => true,
                (Some(keep), Some(at)) => self.now <= at.saturating_add(keep),
                (Some(_), None) => true,
            };
            if !kept {
                verdict = Verdict::Ignored;
            }
        }
        match verdict {
            Verdict::Accepted => {}
            Verdict::Rejected => {
                let rejection = if terminal {
                    Rejection::Terminal(j.state)
                } else if !current {
                    Rejection::StaleFence {
                        held: j.fence,
                        presented: fence,
                    }
                } else {
                    Rejection::NotLeased(j.state)
                };
                self.rejected(w, job, fence, op, rejection);
            }
            Verdict::Ignored => self.record(Event::Rejected {
                job,
                worker: w,
                op,
                presented: fence,
                held: Some(j.fence),
                reason: "ignored",
            }),
        }
        verdict
    }
}

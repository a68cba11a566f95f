//! Attempts: from a lease to the end of one worker's attempt.
//!
//! Owns: handing ready jobs to idle workers, drawing and starting an attempt, driving its steps
//! (heartbeat, extract, commit, ack, crash, a held fault), the lease-expiry timers and checks, the
//! recording of rejected (fenced-out) transitions, and the failure path through the retry policy.
//! Does not: decide what a failure means (the retry policy does) or what a step is (the worker
//! model does); dead-letter filing is in terminal.rs.

use super::faults::draw_plan;
use super::kernel::{decrement, Ev, Sim};
use crate::history::{Event, HeldRecord, Observer, Op};
use crate::ids::{Fence, JobId, WorkerId};
use crate::model::dead_letter::DlqReason;
use crate::model::outbox::CommitOutcome;
use crate::model::queue::{ExpiryOutcome, JobState, LeaseOutcome, Rejection, Reopen};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::model::semantics::QueueSemantics;
use crate::model::worker::{Attempt, Step};
use crate::profile::guard::Verdict;
use crate::scenario::DepthSampling;
use crate::vocab::faults::Held;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    /// Hands ready jobs to idle workers, first come first served.
    pub(super) fn hand_out(&mut self) {
        while let Some(&w) = self.idle.front() {
            if !self.lease_for(w) {
                break;
            }
            self.idle.pop_front();
        }
    }

    /// A free worker looks for work; it waits in the idle line if there is none.
    pub(super) fn worker_free(&mut self, w: WorkerId) {
        if !self.lease_for(w) {
            self.idle.push_back(w);
        }
    }

    /// `leaseNext` for worker `w`, recording cancellations and DLQ entries on the way.
    /// Returns whether the worker got a job.
    pub(super) fn lease_for(&mut self, w: WorkerId) -> bool {
        if self.scenario.metrics.depth_sample == DepthSampling::PerLease && self.queue.depth() > 0 {
            self.record(Event::DepthSampled {
                depth: self.queue.depth() as u64,
            });
        }
        loop {
            match self.queue.lease_next(self.now) {
                LeaseOutcome::Empty => return false,
                LeaseOutcome::Cancelled { job, deadline_at } => {
                    self.first_cancelled.get_or_insert(job);
                    self.record(Event::Cancelled {
                        job,
                        worker: None,
                        fence: None,
                        deadline_at: Some(deadline_at),
                    });
                }
                LeaseOutcome::AttemptsExhausted { job, attempts } => {
                    self.file_dead_letter(
                        job,
                        None,
                        None,
                        attempts,
                        DlqReason::MaxAttemptsExceeded,
                        None,
                    );
                }
                LeaseOutcome::Leased {
                    job,
                    fence,
                    attempt,
                    lease_until,
                    visible_at,
                    ..
                } => {
                    self.record(Event::Leased {
                        job,
                        worker: w,
                        fence,
                        attempt: Some(attempt),
                        lease_until: Some(lease_until),
                        visible_at: Some(visible_at),
                    });
                    self.start_attempt(w, job, fence, attempt);
                    return true;
                }
            }
        }
    }

    pub(super) fn start_attempt(&mut self, w: WorkerId, job: JobId, fence: Fence, number: u32) {
        let invalid = self.invalid[job.index()];
        let mut plan = draw_plan(
            &mut self.worker_streams[w.index()],
            &self.rates,
            self.scenario,
            invalid,
        );
        // The attempt's block of spare draws (see SPARE_DRAWS), and the held faults drawn
        // outside the block.
        let ordinal = self.spare_draws[w.index()].next_attempt();
        super::faults::draw_held(
            &mut plan,
            &mut self.pause_streams[w.index()],
            &mut self.spare_draws[w.index()],
            ordinal,
            &self.rates,
            self.scenario,
        );
        if self.bug_nondeterministic {
            plan.output = unrecorded_model_output(job);
        }
        self.script.apply(self.now, job, number, &mut plan);
        if let Some(outage) = self.scenario.faults.outage {
            super::faults::apply_outage(&outage, self.now, &mut plan);
        }
        let attempt = Attempt::new(
            job,
            fence,
            number,
            plan,
            self.rules.eff.heartbeat_ms,
            self.bug_naive,
        )
        .with_ack_before_commit(self.bugs.ack_before_commit);
        self.attempts_in_flight += 1;
        let slot = &mut self.workers[w.index()];
        slot.attempt = Some(attempt);
        slot.expiry_armed = false;
        slot.wrote_fresh = None;
        self.drive(w);
    }

    /// Arms the lease-expiry timer for the attempt's lease, once per attempt, and only when the
    /// holder will not renew or release it in time (it sleeps past leaseUntil, stalls or dies).
    /// Healthy attempts never pay for a timer; the trace is the same as arming one every lease.
    pub(super) fn arm_expiry(&mut self, w: WorkerId, job: JobId, fence: Fence) {
        let slot = &mut self.workers[w.index()];
        if slot.expiry_armed {
            return;
        }
        slot.expiry_armed = true;
        let j = *self.queue.job(job);
        if j.fence != fence || j.state != JobState::Leased {
            return;
        }
        let at = if self.rules.plain_expiry {
            self.queue.expiry_check_at(j.lease_until)
        } else {
            self.detection_time(job)
        };
        if let Some(at) = at {
            self.schedule(
                at,
                Ev::LeaseCheck {
                    job: job.0,
                    fence: fence.0,
                },
            );
        }
    }

    pub(super) fn on_lease_check(&mut self, job: JobId, fence: Fence) {
        if !self.rules.plain_expiry {
            return self.on_profile_lease_check(job, fence);
        }
        match self.queue.check_expiry(self.now, job, fence) {
            ExpiryOutcome::Stale => {}
            ExpiryOutcome::StillLeased { lease_until } => {
                if let Some(at) = self.queue.expiry_check_at(lease_until) {
                    self.schedule(
                        at,
                        Ev::LeaseCheck {
                            job: job.0,
                            fence: fence.0,
                        },
                    );
                }
            }
            ExpiryOutcome::Expired => {
                self.record(Event::LeaseExpired { job, fence });
                self.hand_out();
            }
        }
    }

    // ---- the worker's steps -----------------------------------------------------------------

    /// Runs worker `w`'s attempt until it has to wait or is over.
    pub(super) fn drive(&mut self, w: WorkerId) {
        loop {
            let Some(attempt) = self.workers[w.index()].attempt.as_mut() else {
                return;
            };
            let step = attempt.advance();
            let (job, fence, stall_ms) = (
                attempt.job,
                attempt.fence,
                attempt.plan.lengths.get(Held::Stall).unwrap_or(0),
            );
            match step {
                Step::Crash(point) => {
                    self.arm_expiry(w, job, fence);
                    decrement(&mut self.attempts_in_flight, "attempts_in_flight");
                    let slot = &mut self.workers[w.index()];
                    slot.attempt = None;
                    slot.down = true;
                    self.record(Event::WorkerCrashed {
                        worker: w,
                        job,
                        fence,
                        point: point.name(),
                    });
                    self.schedule(
                        self.now + self.scenario.workers.restart_ms,
                        Ev::WorkerRestarts { worker: w.0 },
                    );
                    return;
                }
                Step::BeginExtract { stalled } => {
                    self.record(Event::ExtractStarted {
                        job,
                        worker: w,
                        fence,
                        stalled,
                    });
                    if stalled {
                        self.record(Event::Held(HeldRecord {
                            fault: Held::Stall,
                            worker: w,
                            job,
                            fence,
                            ms: stall_ms,
                        }));
                    }
                }
                Step::Held { fault, ms } => {
                    // The holder is held up: recorded, then asleep; the lease may run out.
                    self.record(Event::Held(HeldRecord {
                        fault,
                        worker: w,
                        job,
                        fence,
                        ms,
                    }));
                    let wake = self.now + ms;
                    if wake > self.queue.job(job).lease_until {
                        self.arm_expiry(w, job, fence);
                    }
                    self.schedule(wake, Ev::WorkerWakes { worker: w.0 });
                    return;
                }
                Step::Extract { ms } | Step::Validate { ms } => {
                    let wake = self.now + ms;
                    if wake > self.queue.job(job).lease_until {
                        self.arm_expiry(w, job, fence);
                    }
                    self.schedule(wake, Ev::WorkerWakes { worker: w.0 });
                    return;
                }
                Step::Heartbeat if !self.rules.plain_writes => {
                    if self.guarded(w, job, fence, Op::Heartbeat) == Verdict::Accepted {
                        let now = self.now;
                        match self.chapter().heartbeat_unfenced(now, job) {
                            Some(lease_until) => self.record(Event::Heartbeat {
                                job,
                                worker: w,
                                fence,
                                lease_until: Some(lease_until),
                            }),
                            None => self.record_ignored(w, job, fence, Op::Heartbeat),
                        }
                    }
                }
                Step::Heartbeat => match self.queue.heartbeat(self.now, job, fence) {
                    Ok(lease_until) => self.record(Event::Heartbeat {
                        job,
                        worker: w,
                        fence,
                        lease_until: Some(lease_until),
                    }),
                    Err(rejection) => self.rejected(w, job, fence, Op::Heartbeat, rejection),
                },
                Step::ExtractDone {
                    inference_ms,
                    output,
                } => {
                    self.record(Event::ExtractDone {
                        job,
                        worker: w,
                        fence,
                        inference: inference_ms,
                        output,
                    });
                }
                Step::Fail(error) => self.fail(w, job, fence, error),
                Step::Commit => self.commit(w, job),
                Step::PublishDirect => {
                    if let Some((key, output)) = self.workers[w.index()].wrote_fresh.take() {
                        let event = self.outbox.naive_publish_id();
                        self.deliver(event, key, job, output, 1, true);
                    }
                }
                Step::Ack if !self.rules.plain_writes => {
                    if self.guarded(w, job, fence, Op::Ack) == Verdict::Accepted {
                        self.chapter().ack_unfenced(job);
                        self.record(Event::Acked {
                            job,
                            worker: w,
                            fence,
                        });
                    }
                }
                Step::Ack => match self.queue.ack(self.now, job, fence) {
                    Ok(()) => self.record(Event::Acked {
                        job,
                        worker: w,
                        fence,
                    }),
                    Err(rejection) => self.rejected(w, job, fence, Op::Ack, rejection),
                },
                Step::Done => {
                    decrement(&mut self.attempts_in_flight, "attempts_in_flight");
                    self.workers[w.index()].attempt = None;
                    self.worker_free(w);
                    return;
                }
            }
        }
    }

    /// A write the store took and that changed nothing.
    pub(super) fn record_ignored(&mut self, w: WorkerId, job: JobId, presented: Fence, op: Op) {
        let held = self.queue.job(job).fence;
        self.record(Event::Rejected {
            job,
            worker: w,
            op,
            presented,
            held: Some(held),
            reason: "ignored",
        });
    }

    pub(super) fn rejected(
        &mut self,
        w: WorkerId,
        job: JobId,
        presented: Fence,
        op: Op,
        rejection: Rejection,
    ) {
        let (held, reason) = match rejection {
            Rejection::StaleFence { held, .. } => (held, "stale_fence"),
            Rejection::Terminal(state) => (self.queue.job(job).fence, state.name()),
            Rejection::NotLeased(state) => (self.queue.job(job).fence, state.name()),
        };
        self.record(Event::Rejected {
            job,
            worker: w,
            op,
            presented,
            held: Some(held),
            reason,
        });
    }

    pub(super) fn commit(&mut self, w: WorkerId, job: JobId) {
        let j = *self.queue.job(job);
        let output = self.workers[w.index()]
            .attempt
            .as_ref()
            .expect("committing attempt")
            .plan
            .output;
        let outcome = if self.bug_naive {
            self.outbox
                .naive_write_result(j.key, job, j.payload, output)
        } else {
            self.outbox.commit(j.key, job, j.payload, output)
        };
        match outcome {
            CommitOutcome::Committed { event } => {
                if self.bug_naive {
                    self.workers[w.index()].wrote_fresh = Some((j.key, output));
                }
                self.record(Event::ResultCommitted {
                    job,
                    worker: w,
                    key: j.key,
                    payload: Some(j.payload),
                    output,
                    event,
                });
            }
            CommitOutcome::Deduped { existing } => {
                self.record(Event::CommitDeduped {
                    job,
                    worker: w,
                    key: j.key,
                    payload: Some(j.payload),
                    output,
                    existing_payload: Some(existing.payload),
                    existing_event: existing.event,
                });
            }
            CommitOutcome::Conflict { existing } => {
                self.record(Event::CommitConflict {
                    job,
                    worker: w,
                    key: j.key,
                    payload: Some(j.payload),
                    existing_payload: Some(existing.payload),
                });
                let attempt = self.workers[w.index()]
                    .attempt
                    .as_mut()
                    .expect("committing attempt");
                let step = attempt.commit_refused();
                let fence = attempt.fence;
                let Step::Fail(error) = step else {
                    unreachable!("a refused commit fails the attempt")
                };
                self.fail(w, job, fence, error);
            }
        }
    }

    /// The retry policy decides; the queue applies the decision if the fence still holds.
    pub(super) fn fail(&mut self, w: WorkerId, job: JobId, fence: Fence, error: ErrorKind) {
        let j = *self.queue.job(job);
        let deadline_at = self.queue.deadline_at(job);
        let number = self.workers[w.index()]
            .attempt
            .as_ref()
            .map_or(j.attempt, |a| a.number);
        let error = self.queue.judged_error(self.now, job, number, error);
        let class = self.queue.policy().class_of(error);
        self.record(Event::AttemptFailed {
            job,
            worker: w,
            fence,
            error: error.name(),
            class: Some(class.name()),
        });
        let draw = if self.queue.policy().draws_jitter() {
            self.jitter_stream.unit()
        } else {
            0.0
        };
        let counted = if self.rules.plain() {
            number
        } else {
            self.rules.policy_attempt(job, number)
        };
        let decision = match self.queue.decide(error, counted, draw) {
            Decision::Retry { .. } if self.rules.profiled_backoff() => {
                let lease_left = j.lease_until.saturating_sub(self.now);
                Decision::Retry {
                    delay_ms: crate::profile::backoff::delay_ms(
                        &self.rules.sem.backoff,
                        counted,
                        lease_left,
                        draw,
                    ),
                }
            }
            d => d,
        };
        if !self.rules.plain_writes && !matches!(decision, Decision::Cancel) {
            let op = match decision {
                Decision::Retry { .. } => Op::Retry,
                _ => Op::DeadLetter,
            };
            if self.guarded(w, job, fence, op) != Verdict::Accepted {
                return;
            }
            match decision {
                Decision::Retry { delay_ms } => {
                    let visible_at = RetryPolicy::visible_at(self.now, delay_ms);
                    self.chapter().reopen(job, Reopen::At(visible_at), false);
                    self.record(Event::RetryScheduled {
                        job,
                        worker: w,
                        fence,
                        attempt: Some(number),
                        visible_at,
                    });
                    self.schedule(
                        visible_at,
                        Ev::JobVisible {
                            job: job.0,
                            visible_at,
                        },
                    );
                }
                Decision::DeadLetter(reason) => {
                    self.chapter().dead_letter_unfenced(job);
                    self.file_dead_letter(job, Some(w), Some(fence), number, reason, Some(error));
                }
                Decision::Cancel => unreachable!("cancels stay fenced"),
            }
            return;
        }
        match decision {
            Decision::Retry { delay_ms } => {
                let visible_at = RetryPolicy::visible_at(self.now, delay_ms);
                match self.queue.retry_at(self.now, job, fence, visible_at) {
                    Ok(()) => {
                        self.record(Event::RetryScheduled {
                            job,
                            worker: w,
                            fence,
                            attempt: Some(number),
                            visible_at,
                        });
                        self.schedule(
                            visible_at,
                            Ev::JobVisible {
                                job: job.0,
                                visible_at,
                            },
                        );
                    }
                    Err(rejection) => self.rejected(w, job, fence, Op::Retry, rejection),
                }
            }
            Decision::DeadLetter(reason) => match self.queue.dead_letter(self.now, job, fence) {
                Ok(()) => {
                    self.file_dead_letter(job, Some(w), Some(fence), number, reason, Some(error))
                }
                Err(rejection) => self.rejected(w, job, fence, Op::DeadLetter, rejection),
            },
            Decision::Cancel => match self.queue.cancel(self.now, job, fence) {
                Ok(()) => self.record_cancel(Event::Cancelled {
                    job,
                    worker: Some(w),
                    fence: Some(fence),
                    deadline_at: Some(deadline_at),
                }),
                Err(rejection) => self.rejected(w, job, fence, Op::Cancel, rejection),
            },
        }
    }
}

/// The defect behind `nondeterministic_step`: the model's answer comes from a source the run
/// does not record or seed (a per-process random hash key), like an LLM call made directly in a
/// replayed workflow's body. Two runs of the same seed then disagree.
fn unrecorded_model_output(job: JobId) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(job.0);
    h.finish()
}

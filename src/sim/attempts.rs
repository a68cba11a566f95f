//! Attempts: from a lease to the end of one worker's attempt.
//!
//! Owns: handing ready jobs to idle workers, drawing and starting an attempt, driving its steps
//! (heartbeat, extract, commit, ack, crash, a held fault), each holder's write through the
//! queue seam (with the coin the queue's guard asks for) and the recording of a refused one,
//! and the failure path through the queue's retry decision.
//! Does not: decide what a failure means or whether a write is applied (the queue semantics
//! does, `model::semantics`), what a step is (the worker model does), or when a lease's end is
//! detected (`lease_end.rs` schedules what the queue says); dead-letter filing is in
//! terminal.rs.

use super::faults::draw_plan;
use super::kernel::{decrement, Ev, Sim};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::history::{Event, HeldRecord, Observer, Op};
use crate::model::dead_letter::DlqReason;
use crate::model::outbox::CommitOutcome;
use crate::model::queue::{LeaseOutcome, Rejection};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::model::semantics::{QueueSemantics, Refused, Write, WriteOp};
use crate::model::worker::CrashPoint;
use crate::model::worker::{Attempt, Step};
use crate::scenario::DepthSampling;
use crate::vocab::bugs::Bug;
use crate::vocab::faults::Held;
use crate::vocab::probes::Probe;

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
            match self.queue.lease_next(self.now, w) {
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
        let invalid = self.invalid.invalid(job);
        let mut plan = draw_plan(
            &mut self.worker_streams[w.index()],
            &self.rates,
            self.scenario,
            invalid,
        );
        // The attempt's block of spare draws (see SPARE_DRAWS), and the held faults drawn
        // outside the block.
        let ordinal = self.spare_draws[w.index()].next_step();
        super::faults::draw_held(
            &mut plan,
            &mut self.pause_streams[w.index()],
            &mut self.spare_draws[w.index()],
            ordinal,
            &self.rates,
            self.scenario,
        );
        if self.bugs.contains(Bug::NondeterministicStep) {
            plan.output = unrecorded_model_output(job);
        }
        if self.script.apply(self.now, job, number, &mut plan) {
            self.probes.hit(Probe::ScriptAttemptFault);
        }
        if let Some(outage) = self.scenario.faults.outage {
            if outage.covers(self.now) {
                self.probes.hit(Probe::WorkerOutage);
            }
            super::faults::apply_outage(&outage, self.now, &mut plan);
        }
        if self.programs.is_some() {
            // The worker is a program (`program/worker.rs`): the lease is its reply.
            return self.program_leased(w, job, fence, number, plan);
        }
        let attempt = Attempt::new(job, fence, number, plan, self.heartbeat_ms, self.bugs);
        self.attempts_in_flight += 1;
        let slot = &mut self.workers[w.index()];
        slot.attempt = Some(attempt);
        slot.expiry_armed = false;
        slot.wrote_fresh = None;
        self.drive(w);
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
                    self.probes.hit(match point {
                        CrashPoint::AfterLease => Probe::WorkerCrashAfterLease,
                        CrashPoint::AfterExtract => Probe::WorkerCrashAfterExtract,
                        CrashPoint::AfterCommitBeforeAck => Probe::WorkerCrashAfterCommit,
                    });
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
                        self.probes.hit(Probe::WorkerStall);
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
                    self.probes.hit(match fault {
                        Held::SlowHeartbeat => Probe::WorkerSlowHeartbeat,
                        Held::Pause | Held::Stall => Probe::WorkerPause,
                    });
                    self.record(Event::Held(HeldRecord {
                        fault,
                        worker: w,
                        job,
                        fence,
                        ms,
                    }));
                    let wake = self.now + ms;
                    if wake > self.queue.lease_until(job) {
                        self.probes.hit(Probe::WorkerSleepsPastLease);
                        self.arm_expiry(w, job, fence);
                    }
                    self.schedule(wake, Ev::WorkerWakes { worker: w.0 });
                    return;
                }
                Step::Extract { ms } | Step::Validate { ms } => {
                    let wake = self.now + ms;
                    if wake > self.queue.lease_until(job) {
                        self.probes.hit(Probe::WorkerSleepsPastLease);
                        self.arm_expiry(w, job, fence);
                    }
                    self.schedule(wake, Ev::WorkerWakes { worker: w.0 });
                    return;
                }
                Step::Heartbeat => {
                    let write = self.write(WriteOp::Heartbeat, w, job, fence);
                    match self.queue.heartbeat(self.now, write) {
                        Ok(lease_until) => self.record(Event::Heartbeat {
                            job,
                            worker: w,
                            fence,
                            lease_until: Some(lease_until),
                        }),
                        Err(refused) => self.refused(w, job, fence, Op::Heartbeat, refused),
                    }
                }
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
                Step::Ack => {
                    let write = self.write(WriteOp::Ack, w, job, fence);
                    match self.queue.ack(self.now, write) {
                        Ok(()) => self.record(Event::Acked {
                            job,
                            worker: w,
                            fence,
                        }),
                        Err(refused) => self.refused(w, job, fence, Op::Ack, refused),
                    }
                }
                Step::Done => {
                    decrement(&mut self.attempts_in_flight, "attempts_in_flight");
                    self.workers[w.index()].attempt = None;
                    self.worker_free(w);
                    return;
                }
            }
        }
    }

    /// Worker `w`'s write `op` to `job` with the fence `fence`, with the coin the queue's
    /// guard asks for (drawn here, so a queue that asks for none moves no stream).
    pub(super) fn write(&mut self, op: WriteOp, w: WorkerId, job: JobId, fence: Fence) -> Write {
        let coin = if self.queue.write_draws_coin(op, job, fence) {
            self.probes.hit(Probe::WorkerCoinDrawn);
            (self.coin_stream.unit() * 1000.0) as u32
        } else {
            0
        };
        Write {
            worker: w,
            job,
            fence,
            coin,
        }
    }

    /// A write the queue did not apply, recorded with the job's current fence.
    pub(super) fn refused(
        &mut self,
        w: WorkerId,
        job: JobId,
        presented: Fence,
        op: Op,
        refused: Refused,
    ) {
        let (held, reason, probe) = self.refusal(job, refused);
        self.probes.hit(probe);
        self.probes.hit(match op {
            Op::Heartbeat => Probe::RefusedHeartbeat,
            Op::Ack => Probe::RefusedAck,
            Op::Retry => Probe::RefusedRetry,
            Op::DeadLetter => Probe::RefusedDeadLetter,
            Op::Cancel => Probe::RefusedCancel,
        });
        self.record(Event::Rejected {
            job,
            worker: w,
            op,
            presented,
            held: Some(held),
            reason,
        });
    }

    /// The token a refused write's record says the job holds, the reason it records, and its
    /// coverage probe.
    pub(super) fn refusal(&self, job: JobId, refused: Refused) -> (Fence, &'static str, Probe) {
        let current = self.queue.job(job).fence;
        match refused {
            Refused::Rejected(Rejection::StaleFence { held, .. }) => {
                (held, "stale_fence", Probe::RefusedStaleFence)
            }
            Refused::Rejected(Rejection::Terminal(state)) => {
                (current, state.name(), Probe::RefusedTerminal)
            }
            Refused::Rejected(Rejection::NotLeased(state)) => {
                (current, state.name(), Probe::RefusedNotLeased)
            }
            Refused::LockExpired => (current, "lease_expired", Probe::RefusedLockExpired),
            Refused::Ignored => (current, "ignored", Probe::RefusedIgnored),
        }
    }

    pub(super) fn commit(&mut self, w: WorkerId, job: JobId) {
        let (slot, key, payload) = self.queue.key_and_payload(job);
        let output = self.workers[w.index()]
            .attempt
            .as_ref()
            .expect("committing attempt")
            .plan
            .output;
        let outcome = if self.bugs.contains(Bug::NaiveDualWrite) {
            self.outbox.naive_write_result(slot, key, payload)
        } else {
            self.outbox.commit(slot, key, job, payload, output)
        };
        match outcome {
            CommitOutcome::Committed { event } => {
                if self.bugs.contains(Bug::NaiveDualWrite) {
                    self.workers[w.index()].wrote_fresh = Some((key, output));
                }
                self.record(Event::ResultCommitted {
                    job,
                    worker: w,
                    key,
                    payload: Some(payload),
                    output,
                    event,
                });
            }
            CommitOutcome::Deduped { existing } => {
                self.record(Event::CommitDeduped {
                    job,
                    worker: w,
                    key,
                    payload: Some(payload),
                    output,
                    existing_payload: Some(existing.payload),
                    existing_event: existing.event,
                });
            }
            CommitOutcome::Conflict { existing } => {
                self.probes.hit(Probe::WorkerCommitConflict);
                self.record(Event::CommitConflict {
                    job,
                    worker: w,
                    key,
                    payload: Some(payload),
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
        let deadline_at = self.queue.deadline_at(job);
        let number = self.workers[w.index()]
            .attempt
            .as_ref()
            .map_or_else(|| self.queue.job(job).attempt, |a| a.number);
        let seen = error;
        let error = self.queue.judged_error(self.now, job, number, error);
        if error != seen {
            self.probes.hit(Probe::WorkerJudgedDeadline);
        }
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
        let decision = self.queue.decide(self.now, job, number, error, draw);
        let (op, done) = match decision {
            Decision::Retry { delay_ms } => {
                let visible_at = RetryPolicy::visible_at(self.now, delay_ms);
                if visible_at > self.queue.deadline_at(job) {
                    self.probes.hit(Probe::WorkerRetryPastDeadline);
                }
                let write = self.write(WriteOp::Retry, w, job, fence);
                let done = self.queue.retry_at(self.now, write, visible_at);
                if done.is_ok() {
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
                (Op::Retry, done)
            }
            Decision::DeadLetter(reason) => {
                let write = self.write(WriteOp::DeadLetter, w, job, fence);
                let done = self.queue.dead_letter(self.now, write);
                if done.is_ok() {
                    self.file_dead_letter(job, Some(w), Some(fence), number, reason, Some(error));
                }
                (Op::DeadLetter, done)
            }
            Decision::Cancel => {
                let done = self.queue.cancel(self.now, job, fence);
                if done.is_ok() {
                    self.record_cancel(Event::Cancelled {
                        job,
                        worker: Some(w),
                        fence: Some(fence),
                        deadline_at: Some(deadline_at),
                    });
                }
                (Op::Cancel, done.map_err(Refused::from))
            }
        };
        if let Err(refused) = done {
            self.refused(w, job, fence, op, refused);
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

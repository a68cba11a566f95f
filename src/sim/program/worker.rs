//! A worker program's calls to the queue and the model, performed and recorded as the built-in
//! worker's steps are.
//!
//! Owns: `queue.lease` (a wait in the idle line until `hand_out` leases it a job; the attempt's
//! plan is drawn then, as for the built-in worker), `queue.heartbeat` (the plan's slow
//! heartbeat delays the first, its pause holds the program right after the first accepted),
//! `queue.ack`, `queue.retry` (the queue's backoff unless the program names a delay),
//! `queue.fail` (the DLQ), `queue.cancel`, each with the token the program presents or, left
//! out, accepted as a queue that checks none would (recorded with the token this process was
//! given); and `model.infer` (the plan's inference time, or its stall, which holds the program,
//! then its validation time: the answer comes back validated; its output, or its transient or
//! permanent error).
//! Does not: decide the attempt's fate (`sim/faults.rs`'s plan) or whether a write is applied
//! (the queue semantics).

use super::protocol::{self, hex, Call};
use super::state::{Arm, Attempt, Timed};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::history::{Event, HeldRecord, Observer, Op};
use crate::model::dead_letter::DlqReason;
use crate::model::retry::{Decision, ErrorClass, ErrorKind, RetryPolicy};
use crate::model::semantics::{QueueSemantics, Refused, WriteOp};
use crate::model::worker::{AttemptPlan, CrashPoint};
use crate::sim::kernel::{Ev, Sim};
use crate::vocab::faults::Held;
use serde_json::{json, Value};

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn worker_call(&mut self, slot: u32, line: u64, id: u64, call: Call) {
        if let Call::Lease = call {
            return self.lease_call(slot, line, id);
        }
        let job = match call {
            Call::Heartbeat { job, .. }
            | Call::Ack { job, .. }
            | Call::Retry { job, .. }
            | Call::Fail { job, .. }
            | Call::Cancel { job, .. }
            | Call::Infer { job } => JobId(job),
            _ => unreachable!("a worker's call"),
        };
        let Some(own) = self.progs().slots[slot as usize].own_fence(job) else {
            let m = format!(
                "{} names {job}, which this process was never leased",
                protocol::call_name(&call)
            );
            return self.program_fault(slot, Some(line), &m);
        };
        let w = WorkerId(slot);
        match call {
            Call::Heartbeat { fence, .. } => self.heartbeat_call(slot, id, job, fence.map(Fence)),
            Call::Ack { fence, .. } => {
                let (presented, recorded) = self.presented(job, fence, own);
                let write = self.write(WriteOp::Ack, w, job, presented);
                let done = self.queue.ack(self.now, write);
                match done {
                    Ok(()) => {
                        self.record(Event::Acked {
                            job,
                            worker: w,
                            fence: recorded,
                        });
                        let arm = self.crash_after_early_ack(slot, job);
                        self.post(slot, protocol::ok(id, json!({})), arm);
                    }
                    Err(r) => self.refuse(slot, id, job, recorded, Op::Ack, r),
                }
            }
            Call::Retry {
                fence,
                error,
                delay_ms,
                ..
            } => self.retry_call(slot, id, job, (fence, own), error, delay_ms),
            Call::Fail {
                fence,
                error,
                reason,
                ..
            } => self.fail_call(slot, id, job, (fence, own), error, reason),
            Call::Cancel { fence, error, .. } => {
                let (presented, recorded) = self.presented(job, fence, own);
                self.attempt_failed(w, job, recorded, error);
                let deadline_at = self.queue.deadline_at(job);
                match self.queue.cancel(self.now, job, presented) {
                    Ok(()) => {
                        self.record_cancel(Event::Cancelled {
                            job,
                            worker: Some(w),
                            fence: Some(recorded),
                            deadline_at: Some(deadline_at),
                        });
                        self.post(slot, protocol::ok(id, json!({})), None);
                    }
                    Err(r) => self.refuse(slot, id, job, recorded, Op::Cancel, r.into()),
                }
            }
            Call::Infer { .. } => self.infer_call(slot, line, id, job),
            _ => unreachable!("a worker's call"),
        }
    }

    /// An ack accepted while the attempt's plan still holds its crash after the commit: the
    /// program acked before it committed (a correct worker dies at its first call after the
    /// commit, before the ack). It dies at its first call after the ack, as durasim's own worker
    /// with `ack_before_commit` does.
    fn crash_after_early_ack(&mut self, slot: u32, job: JobId) -> Option<Arm> {
        let a = self.progs().slots[slot as usize].attempt?;
        (a.job == job && a.plan.crash == Some(CrashPoint::AfterCommitBeforeAck))
            .then_some(Arm::Crash(CrashPoint::AfterCommitBeforeAck))
    }

    /// The token a call presents (the job's current one when the program left it out: a queue
    /// that checks none accepts it), and the one its record names (the program's, or the one
    /// this process was given).
    fn presented(&self, job: JobId, fence: Option<u64>, own: Fence) -> (Fence, Fence) {
        match fence {
            Some(f) => (Fence(f), Fence(f)),
            None => (self.queue.job(job).fence, own),
        }
    }

    /// Records `accepted` and replies `result` when the queue applied the call, or records the
    /// refusal and replies its reason.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        slot: u32,
        id: u64,
        job: JobId,
        recorded: Fence,
        op: Op,
        done: Result<(), Refused>,
        result: Value,
        accepted: impl FnOnce() -> Event,
    ) {
        match done {
            Ok(()) => {
                self.record(accepted());
                self.post(slot, protocol::ok(id, result), None);
            }
            Err(r) => self.refuse(slot, id, job, recorded, op, r),
        }
    }

    fn refuse(&mut self, slot: u32, id: u64, job: JobId, recorded: Fence, op: Op, r: Refused) {
        let (held, reason, probe) = self.refusal(job, r);
        self.probes.hit(probe);
        self.refused(WorkerId(slot), job, recorded, op, r);
        let m = format!(
            "{} of {job} refused: {reason} (the job's token is {})",
            op.name(),
            held.0
        );
        self.post(slot, protocol::error(id, reason, m), None);
    }

    fn attempt_failed(&mut self, w: WorkerId, job: JobId, fence: Fence, error: ErrorKind) {
        let class = self.queue.policy().class_of(error);
        self.record(Event::AttemptFailed {
            job,
            worker: w,
            fence,
            error: error.name(),
            class: Some(class.name()),
        });
    }

    /// The number of this worker's attempt at `job` (its current one, or the job's last lease).
    fn attempt_number(&mut self, slot: u32, job: JobId) -> u32 {
        match self.progs().slots[slot as usize].attempt {
            Some(a) if a.job == job => a.number,
            _ => self.queue.job(job).attempt,
        }
    }

    fn retry_call(
        &mut self,
        slot: u32,
        id: u64,
        job: JobId,
        (fence, own): (Option<u64>, Fence),
        error: ErrorKind,
        delay_ms: Option<u64>,
    ) {
        let w = WorkerId(slot);
        let (presented, recorded) = self.presented(job, fence, own);
        self.attempt_failed(w, job, recorded, error);
        let number = self.attempt_number(slot, job);
        let delay = match delay_ms {
            Some(d) => d,
            None => self.backoff(job, number),
        };
        let visible_at = RetryPolicy::visible_at(self.now, delay);
        let write = self.write(WriteOp::Retry, w, job, presented);
        let done = self.queue.retry_at(self.now, write, visible_at);
        if done.is_ok() {
            self.schedule(
                visible_at,
                Ev::JobVisible {
                    job: job.0,
                    visible_at,
                },
            );
        }
        let result = json!({ "visible_at": visible_at });
        self.answer(slot, id, job, recorded, Op::Retry, done, result, || {
            Event::RetryScheduled {
                job,
                worker: w,
                fence: recorded,
                attempt: Some(number),
                visible_at,
            }
        });
    }

    /// The queue's retry delay after attempt `number` (its formula and jitter).
    fn backoff(&mut self, job: JobId, number: u32) -> u64 {
        let draw = if self.queue.policy().draws_jitter() {
            self.jitter_stream.unit()
        } else {
            0.0
        };
        let transient = ErrorKind::ProviderUnavailable;
        match self.queue.decide(self.now, job, number, transient, draw) {
            Decision::Retry { delay_ms } => delay_ms,
            _ => self.queue.policy().backoff_ms(number, draw),
        }
    }

    fn fail_call(
        &mut self,
        slot: u32,
        id: u64,
        job: JobId,
        (fence, own): (Option<u64>, Fence),
        error: ErrorKind,
        reason: Option<DlqReason>,
    ) {
        let w = WorkerId(slot);
        let (presented, recorded) = self.presented(job, fence, own);
        self.attempt_failed(w, job, recorded, error);
        let number = self.attempt_number(slot, job);
        let reason = reason.unwrap_or(match self.queue.policy().class_of(error) {
            ErrorClass::Transient => DlqReason::MaxAttemptsExceeded,
            _ => DlqReason::PermanentError,
        });
        let write = self.write(WriteOp::DeadLetter, w, job, presented);
        match self.queue.dead_letter(self.now, write) {
            Ok(()) => {
                self.file_dead_letter(job, Some(w), Some(recorded), number, reason, Some(error));
                self.post(slot, protocol::ok(id, json!({})), None);
            }
            Err(r) => self.refuse(slot, id, job, recorded, Op::DeadLetter, r),
        }
    }

    fn heartbeat_call(&mut self, slot: u32, id: u64, job: JobId, fence: Option<Fence>) {
        let now = self.now;
        let sl = &mut self.progs().slots[slot as usize];
        let life = sl.life;
        let slow = match sl.attempt.as_mut() {
            Some(a) if a.job == job && a.heartbeats == 0 => {
                a.plan.lengths.take(Held::SlowHeartbeat)
            }
            _ => None,
        };
        let Some(ms) = slow else {
            return self.heartbeat(slot, id, job, fence);
        };
        // The plan's slow heartbeat: it reaches the queue `ms` later, and the program waits for
        // it (held, as a program blocked on a slow store is), so its lease may run out.
        sl.held_until = now + ms;
        let own = self.progs().slots[slot as usize]
            .own_fence(job)
            .unwrap_or_default();
        self.record(Event::Held(HeldRecord {
            fault: Held::SlowHeartbeat,
            worker: WorkerId(slot),
            job,
            fence: fence.unwrap_or(own),
            ms,
        }));
        let i = self.progs().keep(Timed::Heartbeat {
            slot,
            life,
            id,
            job,
            fence,
        });
        self.schedule(self.now + ms, Ev::ProgramTimed { index: i });
    }

    /// A heartbeat reaches the queue. The first one accepted in an attempt whose plan pauses
    /// holds the program for the pause (its reply included).
    pub(super) fn heartbeat(&mut self, slot: u32, id: u64, job: JobId, fence: Option<Fence>) {
        let w = WorkerId(slot);
        let own = self.progs().slots[slot as usize]
            .own_fence(job)
            .unwrap_or_default();
        let (presented, recorded) = self.presented(job, fence.map(|f| f.0), own);
        let write = self.write(WriteOp::Heartbeat, w, job, presented);
        let lease_until = match self.queue.heartbeat(self.now, write) {
            Ok(t) => t,
            Err(r) => return self.refuse(slot, id, job, recorded, Op::Heartbeat, r),
        };
        self.record(Event::Heartbeat {
            job,
            worker: w,
            fence: recorded,
            lease_until: Some(lease_until),
        });
        let now = self.now;
        let sl = &mut self.progs().slots[slot as usize];
        let pause = match sl.attempt.as_mut() {
            Some(a) if a.job == job => {
                a.heartbeats += 1;
                (a.heartbeats == 1)
                    .then(|| a.plan.lengths.take(Held::Pause))
                    .flatten()
            }
            _ => None,
        };
        if let Some(ms) = pause {
            sl.held_until = now + ms;
            self.record(Event::Held(HeldRecord {
                fault: Held::Pause,
                worker: w,
                job,
                fence: recorded,
                ms,
            }));
        }
        let result = json!({ "lease_until": lease_until });
        self.post(slot, protocol::ok(id, result), None);
    }

    /// `queue.lease`: the worker's attempt (if any) is over, and it waits in the idle line
    /// until a job is leased to it.
    fn lease_call(&mut self, slot: u32, line: u64, id: u64) {
        let sl = &mut self.progs().slots[slot as usize];
        if sl.lease_call.is_some() {
            let m = "queue.lease while its earlier queue.lease has not returned";
            return self.program_fault(slot, Some(line), m);
        }
        sl.lease_call = Some(id);
        if sl.attempt.take().is_some() {
            crate::sim::kernel::decrement(&mut self.attempts_in_flight, "attempts_in_flight");
        }
        self.worker_free(WorkerId(slot));
    }

    /// `hand_out` leased `job` to worker `w`, which waits in `queue.lease`: its attempt begins
    /// with the plan the injector drew, and the lease is its reply.
    pub(in crate::sim) fn program_leased(
        &mut self,
        w: WorkerId,
        job: JobId,
        fence: Fence,
        number: u32,
        plan: AttemptPlan,
    ) {
        let j = self.queue.job(job);
        let deadline_at = self.queue.deadline_at(job);
        let reply = json!({
            "job": job.0,
            "fence": fence.0,
            "attempt": number,
            "tenant": self.names.tenants.name(j.tenant),
            "document": self.names.documents.name(j.key.document),
            "version": j.key.version,
            "payload": hex(j.payload.0),
            "lease_until": j.lease_until,
            "deadline_at": deadline_at,
        });
        self.attempts_in_flight += 1;
        self.workers[w.index()].expiry_armed = false;
        let sl = &mut self.progs().slots[w.index()];
        sl.attempt = Some(Attempt {
            job,
            fence,
            number,
            plan,
            heartbeats: 0,
            stalled: false,
        });
        sl.leases.push((job, fence));
        let id = sl
            .lease_call
            .take()
            .expect("a program worker is leased a job only while it waits in queue.lease");
        // Every lease gets its expiry check: durasim cannot know whether the program will renew.
        self.arm_expiry(w, job, fence);
        let arm = (plan.crash == Some(CrashPoint::AfterLease))
            .then_some(Arm::Crash(CrashPoint::AfterLease));
        self.post(w.0, protocol::ok(id, reply), arm);
    }

    /// `model.infer`: the extraction takes the plan's inference time (or its stall, during
    /// which the program is held), and returns the plan's output or error.
    fn infer_call(&mut self, slot: u32, line: u64, id: u64, job: JobId) {
        let now = self.now;
        let sl = &mut self.progs().slots[slot as usize];
        let life = sl.life;
        let Some(a) = sl.attempt.as_mut().filter(|a| a.job == job) else {
            let m = format!("model.infer for {job}, which is not this worker's current lease");
            return self.program_fault(slot, Some(line), &m);
        };
        let stall = (!a.stalled)
            .then(|| a.plan.lengths.get(Held::Stall))
            .flatten();
        a.stalled = true;
        let (fence, plan) = (a.fence, a.plan);
        let inference = stall.unwrap_or(plan.extract_ms);
        if stall.is_some() {
            sl.held_until = now + inference;
        }
        let w = WorkerId(slot);
        self.record(Event::ExtractStarted {
            job,
            worker: w,
            fence,
            stalled: stall.is_some(),
        });
        if let Some(ms) = stall {
            self.record(Event::Held(HeldRecord {
                fault: Held::Stall,
                worker: w,
                job,
                fence,
                ms,
            }));
        }
        let i = self.progs().keep(Timed::Infer {
            slot,
            life,
            id,
            job,
            fence,
            inference,
            output: plan.output,
            error: plan.error,
        });
        // The answer comes back validated: after the inference, the validation's time.
        let back = now + inference + plan.validate_ms;
        self.schedule(back, Ev::ProgramTimed { index: i });
    }

    /// A `model.infer` returns: its output (recorded as `extract_done`), or its error.
    pub(super) fn infer_returns(&mut self, t: Timed) {
        let Timed::Infer {
            slot,
            life,
            id,
            job,
            fence,
            inference,
            output,
            error,
        } = t
        else {
            unreachable!("an infer")
        };
        let sl = &self.progs().slots[slot as usize];
        if sl.life != life {
            return;
        }
        let crash = sl
            .attempt
            .filter(|a| a.job == job)
            .and_then(|a| a.plan.crash);
        let arm = (crash == Some(CrashPoint::AfterExtract))
            .then_some(Arm::Crash(CrashPoint::AfterExtract));
        let reply = match error {
            Some(e) => {
                let class = self.queue.policy().class_of(e).name();
                let m = format!("the model failed: {} ({class})", e.name());
                let mut r = protocol::error(id, e.name(), m);
                r["error"]["class"] = json!(class);
                r
            }
            None => {
                self.record(Event::ExtractDone {
                    job,
                    worker: WorkerId(slot),
                    fence,
                    inference,
                    output,
                });
                protocol::ok(
                    id,
                    json!({ "output": hex(output), "inference_ms": inference }),
                )
            }
        };
        self.post(slot, reply, arm);
    }
}

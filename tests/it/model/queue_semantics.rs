//! The queue-semantics seam (`model/semantics.rs`): another implementation plugs into the kernel
//! through `Sim::with_queue` without a change to the loop, and the checker judges what it does.
//!
//! The one integration test that implements a library trait, so it names the trait's vocabulary
//! where it lives (`model::{queue, retry, dead_letter, semantics}`, `base::ids`, the kernel's
//! constructors); every other model test goes through a run and its history.

use crate::support::load;
use durasim::base::ids::{Fence, JobId, SimTime, WorkerId};
use durasim::check::Checker;
use durasim::history::NullObserver;
use durasim::model::dead_letter::DeadLetterQueue;
use durasim::model::queue::{EnqueueOutcome, EnqueueRequest, Job, LeaseOutcome, Rejection};
use durasim::model::retry::{Decision, ErrorKind, RetryPolicy};
use durasim::model::semantics::{
    ChapterQueue, LeaseCheck, QueueSemantics, Refused, Rescued, Write, WriteOp,
};
use durasim::scenario::Scenario;
use durasim::sim::kernel::chapter_queue;
use durasim::sim::{RunRequest, Sim};
use durasim::vocab::payload::PayloadHash;

/// The chapter's queue, seen through a wrapper: with `rescue` off, nothing ever takes an
/// abandoned job back (a queue without a lease-expiry rescuer).
struct Wrapped {
    inner: ChapterQueue,
    rescue: bool,
}

impl QueueSemantics for Wrapped {
    fn job(&self, job: JobId) -> Job {
        self.inner.job(job)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn depth(&self) -> usize {
        self.inner.depth()
    }
    fn all_terminal(&self) -> bool {
        self.inner.all_terminal()
    }
    fn deadline_at(&self, job: JobId) -> SimTime {
        self.inner.deadline_at(job)
    }
    fn enqueue(&mut self, now: SimTime, request: EnqueueRequest) -> EnqueueOutcome {
        self.inner.enqueue(now, request)
    }
    fn mutate_payload(&mut self, job: JobId, payload: PayloadHash) {
        self.inner.mutate_payload(job, payload)
    }
    fn make_visible(&mut self, now: SimTime, job: JobId, visible_at: SimTime) -> bool {
        self.inner.make_visible(now, job, visible_at)
    }
    fn lease_next(&mut self, now: SimTime, worker: WorkerId) -> LeaseOutcome {
        self.inner.lease_next(now, worker)
    }
    fn lease_check_at(&mut self, job: JobId) -> Option<SimTime> {
        let rescue = self.rescue;
        self.inner.lease_check_at(job).filter(|_| rescue)
    }
    fn check_lease(&mut self, now: SimTime, job: JobId, fence: Fence) -> LeaseCheck {
        self.inner.check_lease(now, job, fence)
    }
    fn rescue_draws_jitter(&self) -> bool {
        self.inner.rescue_draws_jitter()
    }
    fn rescue(&mut self, now: SimTime, job: JobId, fence: Fence, jitter_draw: f64) -> Rescued {
        self.inner.rescue(now, job, fence, jitter_draw)
    }
    fn release_rescued(&mut self, job: JobId, fence: Fence) -> bool {
        self.inner.release_rescued(job, fence)
    }
    fn write_draws_coin(&self, op: WriteOp, job: JobId, fence: Fence) -> bool {
        self.inner.write_draws_coin(op, job, fence)
    }
    fn heartbeat(&mut self, now: SimTime, write: Write) -> Result<SimTime, Refused> {
        self.inner.heartbeat(now, write)
    }
    fn ack(&mut self, now: SimTime, write: Write) -> Result<(), Refused> {
        self.inner.ack(now, write)
    }
    fn retry_at(&mut self, now: SimTime, write: Write, visible_at: SimTime) -> Result<(), Refused> {
        self.inner.retry_at(now, write, visible_at)
    }
    fn dead_letter(&mut self, now: SimTime, write: Write) -> Result<(), Refused> {
        self.inner.dead_letter(now, write)
    }
    fn cancel(&mut self, now: SimTime, job: JobId, fence: Fence) -> Result<(), Rejection> {
        self.inner.cancel(now, job, fence)
    }
    fn decide(
        &mut self,
        now: SimTime,
        job: JobId,
        attempt: u32,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Decision {
        self.inner.decide(now, job, attempt, error, jitter_draw)
    }
    fn policy(&self) -> &RetryPolicy {
        self.inner.policy()
    }
    fn dead_letters(&self) -> &DeadLetterQueue {
        self.inner.dead_letters()
    }
    fn dead_letters_mut(&mut self) -> &mut DeadLetterQueue {
        self.inner.dead_letters_mut()
    }
}

fn wrapped(s: &Scenario, r: &RunRequest, rescue: bool) -> Wrapped {
    Wrapped {
        inner: chapter_queue(s, r),
        rescue,
    }
}

#[test]
fn another_implementation_runs_through_the_same_loop() {
    for name in ["chaos", "dlq-reprocess", "zombie-worker"] {
        let s = load(name);
        let r = RunRequest::for_scenario(&s);
        let (plain, _) = Sim::new(&s, &r, NullObserver).run();
        let sim = Sim::with_queue(&s, &r, NullObserver, wrapped(&s, &r, true));
        let (through, _) = sim.run();
        assert_eq!(
            through.trace_hash, plain.trace_hash,
            "{name}: the same semantics behind the seam give the same history"
        );
    }
}

#[test]
fn a_queue_without_a_rescuer_is_judged_by_the_checker() {
    let s = load("incident-crash-before-ack");
    let r = RunRequest::for_scenario(&s);
    let checker = || Checker::with_capacity(1 << 10).with_names(s.names().clone());
    let (ok, judged) = Sim::new(&s, &r, checker()).run();
    assert!(ok.quiescent && judged.finish().violated().is_empty());
    let (stuck, judged) = Sim::with_queue(&s, &r, checker(), wrapped(&s, &r, false)).run();
    let report = judged.finish();
    assert!(
        !stuck.quiescent && !report.violated().is_empty(),
        "a crashed holder's job is never taken back: the run cannot settle and the checker says so"
    );
}

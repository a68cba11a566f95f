//! The simulation kernel: virtual time, the event queue, and the run loop.
//!
//! Owns: the clock (integer ms), the (time, insertion seq) ordered event queue, the closed
//! [`Ev`] enum, the RNG streams, the workers' processes (crash, restart, stall), the relay and
//! the review stage, operator actions and scripted faults, and the recording of every observable
//! step into the history.
//! Does not: decide what a step means for the pipeline (the model does) or judge the outcome
//! (the checker reads the history).

use super::arrivals::ArrivalProcess;
use super::event_queue::EventQueue;
use super::faults::{draw_plan, FaultRates, Script};
use crate::history::{Event, Observer, Op, Record, TraceHash};
use crate::ids::{EventId, Fence, JobId, SimTime, TenantId, WorkerId};
use crate::model::consumer::{Consumer, HandleOutcome};
use crate::model::dead_letter::{DeadLetterQueue, DlqReason, StoredReason};
use crate::model::outbox::{CommitOutcome, Outbox, OutboxConfig};
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, ExpiryOutcome, JobState, LeaseOutcome, Queue, QueueConfig,
    Rejection,
};
use crate::model::retry::{classify, Decision, ErrorClass, ErrorKind, RetryPolicy};
use crate::model::worker::{Attempt, Step};
use crate::rng::{Purpose, Stream};
use crate::scenario::{DepthSampling, FaultKind, Scenario};
use crate::vocab::key::{IdempotencyKey, KeyNames};
use crate::vocab::payload::Payload;
use std::collections::VecDeque;

/// Everything that can be scheduled. One `match` in [`Sim::dispatch_event`] shows the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// The next generated arrival.
    Arrival,
    /// An explicit `[[enqueue]]` entry.
    ExplicitEnqueue {
        index: u32,
    },
    /// A worker's time-consuming step (extract slice, validation) is over.
    WorkerWakes {
        worker: u32,
    },
    WorkerRestarts {
        worker: u32,
    },
    /// A waiting job's visible_at has come.
    JobVisible {
        job: u32,
        visible_at: SimTime,
    },
    /// Just after a lease's leaseUntil: has it expired?
    LeaseCheck {
        job: u32,
        fence: u64,
    },
    RelayTick,
    ReviewDone {
        event: u64,
        job: u32,
    },
    DepthSample,
    OperatorAction {
        index: u32,
    },
    MutatePayload {
        index: u32,
    },
    /// A `[[burst]]` entry: one tenant submits many documents at once.
    Burst {
        index: u32,
    },
}

/// A worker process slot.
#[derive(Clone, Debug, Default)]
struct WorkerSlot {
    attempt: Option<Attempt>,
    down: bool,
    expiry_armed: bool,
    /// Naive dual write: whether this attempt's database write was new (it will publish).
    wrote_fresh: Option<(IdempotencyKey, u64)>,
}

/// Per-run options on top of the scenario.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub seed: u64,
    pub jobs: Option<u64>,
    pub bugs: crate::scenario::Bugs,
    pub rates: Option<FaultRates>,
}

/// What the kernel knows at the end (everything else comes from the history).
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub trace_hash: u64,
    pub records: u64,
    pub heap_events: u64,
    pub virtual_time_ms: SimTime,
    pub quiescent: bool,
    pub names: KeyNames,
}

pub struct Sim<'s, O: Observer> {
    scenario: &'s Scenario,
    /// Part of the history's header, so two seeds never share a trace hash by accident.
    seed: u64,
    now: SimTime,
    heap: EventQueue<Ev>,
    heap_events: u64,
    queue: Queue,
    outbox: Outbox,
    consumer: Consumer,
    dlq: DeadLetterQueue,
    policy: RetryPolicy,
    workers: Vec<WorkerSlot>,
    worker_streams: Vec<Stream>,
    idle: VecDeque<WorkerId>,
    relay_stream: Stream,
    jitter_stream: Stream,
    review_stream: Stream,
    arrivals: ArrivalProcess,
    rates: FaultRates,
    script: Script,
    /// Per job: the document fails validation on every attempt.
    invalid: Vec<bool>,
    /// Per job: its payload as submitted (or as last mutated), which a reprocess resubmits.
    payloads: Vec<Payload>,
    names: KeyNames,
    tenant_ids: Vec<TenantId>,
    pending_timed: u64,
    reviews_pending: u64,
    /// Attempts in flight: a zombie mid-attempt can still write, so the run is not over.
    attempts_in_flight: u64,
    /// Generated arrivals in this run (bursts number their documents after them).
    arrivals_total: u64,
    bug_tenantless: bool,
    bug_naive: bool,
    bug_raw_reason: bool,
    bug_nondeterministic: bool,
    time_limit_ms: SimTime,
    hash: TraceHash,
    observer: O,
}

impl<'s, O: Observer> Sim<'s, O> {
    pub fn new(scenario: &'s Scenario, options: &RunOptions, observer: O) -> Sim<'s, O> {
        let seed = options.seed;
        let bugs = &options.bugs;
        let jobs = options.jobs.unwrap_or(scenario.arrivals.jobs);
        let q = &scenario.queue;
        let queue_config = QueueConfig {
            lease_ms: q.lease_ms,
            deadline_ms: q.deadline_ms,
            attempts_max: q.max_attempts,
            bug_no_fencing: bugs.no_fencing,
            bug_skip_deadline_check: bugs.skip_deadline_check,
            bug_unbounded_retries: bugs.unbounded_retries,
            bug_reuse_on_conflict: bugs.reuse_on_conflict,
        };
        let capacity =
            (jobs as usize + scenario.enqueue.len() + scenario.burst_jobs() as usize).min(1 << 24);
        let names = scenario_names(scenario);
        // `scenario_names` registers the generated arrivals' tenants first, in order.
        let tenant_ids = (0..scenario.arrivals.tenants.len())
            .map(|t| TenantId(t as u16))
            .collect();
        let workers = scenario.workers.count;
        Sim {
            scenario,
            seed,
            now: 0,
            heap: EventQueue::new(),
            heap_events: 0,
            queue: Queue::with_capacity(queue_config, capacity),
            outbox: Outbox::with_capacity(
                OutboxConfig {
                    bug_no_idempotency: bugs.no_idempotency,
                    bug_reuse_on_conflict: bugs.reuse_on_conflict,
                    retention_ms: scenario.outbox.retention_ms,
                },
                capacity,
            ),
            consumer: Consumer::with_window(
                bugs.no_consumer_dedupe,
                scenario.consumer.dedupe_window_ms,
            ),
            dlq: DeadLetterQueue::new(scenario.dlq.config()),
            policy: RetryPolicy {
                attempts_max: q.max_attempts,
                backoff_base_ms: scenario.retry.backoff_base_ms,
                backoff_cap_ms: scenario.retry.backoff_cap_ms,
                jitter: scenario.retry.jitter,
                bug_unbounded: bugs.unbounded_retries,
            },
            workers: vec![WorkerSlot::default(); workers as usize],
            worker_streams: (0..workers)
                .map(|w| Stream::new(seed, Purpose::Worker, w as u64))
                .collect(),
            idle: (0..workers).map(WorkerId).collect(),
            relay_stream: Stream::new(seed, Purpose::Relay, 0),
            jitter_stream: Stream::new(seed, Purpose::Jitter, 0),
            review_stream: Stream::new(seed, Purpose::Review, 0),
            arrivals: ArrivalProcess::new(
                Stream::new(seed, Purpose::Arrivals, 0),
                scenario.arrivals.tenants.len(),
                jobs,
            ),
            rates: options
                .rates
                .clone()
                .unwrap_or_else(|| FaultRates::from_scenario(scenario)),
            script: Script::from_scenario(scenario),
            invalid: Vec::with_capacity(capacity),
            payloads: Vec::with_capacity(capacity),
            names,
            tenant_ids,
            pending_timed: 0,
            reviews_pending: 0,
            attempts_in_flight: 0,
            arrivals_total: jobs,
            bug_tenantless: bugs.tenantless_keys,
            bug_naive: bugs.naive_dual_write,
            bug_raw_reason: bugs.raw_dlq_reason,
            bug_nondeterministic: bugs.nondeterministic_step,
            time_limit_ms: scenario.run.time_limit_ms,
            hash: TraceHash::default(),
            observer,
        }
    }

    #[inline]
    fn schedule(&mut self, at: SimTime, ev: Ev) {
        self.heap.push(at, ev);
    }

    #[inline]
    fn record(&mut self, event: Event) {
        let r = Record {
            at: self.now,
            event,
        };
        self.hash.add(&r);
        self.observer.observe(&r);
    }

    /// Runs to quiescence (or the time limit) and returns the outcome and the observer.
    pub fn run(mut self) -> (RunOutcome, O) {
        let s = self.scenario;
        self.record(Event::RunStarted {
            config: Box::new(s.run_config(self.seed)),
        });
        if self.arrivals.remaining() > 0 {
            let gap = self.arrivals.next_gap_ms(&s.arrivals);
            self.schedule(gap, Ev::Arrival);
        }
        for (i, e) in s.enqueue.iter().enumerate() {
            self.pending_timed += 1;
            self.schedule(e.at_ms, Ev::ExplicitEnqueue { index: i as u32 });
        }
        for (i, b) in s.burst.iter().enumerate() {
            self.pending_timed += 1;
            self.schedule(b.at_ms, Ev::Burst { index: i as u32 });
        }
        for (i, o) in s.operator.iter().enumerate() {
            for k in 0..=o.repeat as u64 {
                self.pending_timed += 1;
                self.schedule(
                    o.at_ms + k * o.every_ms,
                    Ev::OperatorAction { index: i as u32 },
                );
            }
        }
        for (i, e) in s.script.iter().enumerate() {
            if e.fault == FaultKind::MutatePayload {
                self.pending_timed += 1;
                self.schedule(e.at_ms, Ev::MutatePayload { index: i as u32 });
            }
        }
        self.schedule(s.relay.interval_ms, Ev::RelayTick);
        if s.metrics.depth_sample == DepthSampling::Interval {
            self.schedule(0, Ev::DepthSample);
        }
        let mut quiescent = self.settled();
        while !quiescent {
            let Some((at, ev)) = self.heap.pop() else {
                break;
            };
            if at > self.time_limit_ms {
                self.now = self.time_limit_ms;
                break;
            }
            self.now = at;
            self.heap_events += 1;
            self.dispatch_event(ev);
            quiescent = self.settled();
        }
        self.record(Event::RunEnded { quiescent });
        let outcome = RunOutcome {
            trace_hash: self.hash.finish(),
            records: self.hash.records(),
            heap_events: self.heap_events,
            virtual_time_ms: self.now,
            quiescent,
            names: self.names,
        };
        (outcome, self.observer)
    }

    /// Nothing left to happen: every job terminal, every event published and applied, every
    /// review done, no attempt in flight, no arrival, enqueue or operator action still to come.
    fn settled(&self) -> bool {
        self.arrivals.remaining() == 0
            && self.pending_timed == 0
            && self.attempts_in_flight == 0
            && self.queue.all_terminal()
            && self.outbox.pending().is_empty()
            && self.reviews_pending == 0
    }

    fn dispatch_event(&mut self, ev: Ev) {
        match ev {
            Ev::Arrival => self.on_arrival(),
            Ev::ExplicitEnqueue { index } => self.on_explicit_enqueue(index as usize),
            Ev::WorkerWakes { worker } => self.drive(WorkerId(worker)),
            Ev::WorkerRestarts { worker } => {
                self.workers[worker as usize].down = false;
                self.record(Event::WorkerRestarted {
                    worker: WorkerId(worker),
                });
                self.worker_free(WorkerId(worker));
            }
            Ev::JobVisible { job, visible_at } => {
                if self.queue.make_visible(self.now, JobId(job), visible_at) {
                    self.record(Event::Visible { job: JobId(job) });
                    self.hand_out();
                }
            }
            Ev::LeaseCheck { job, fence } => self.on_lease_check(JobId(job), Fence(fence)),
            Ev::RelayTick => self.on_relay_tick(),
            Ev::ReviewDone { event, job } => {
                self.reviews_pending -= 1;
                let key = self.queue.job(JobId(job)).key;
                self.record(Event::ReviewDone {
                    event: EventId(event),
                    key,
                    job: JobId(job),
                });
            }
            Ev::DepthSample => {
                self.record(Event::DepthSampled {
                    depth: self.queue.depth() as u64,
                });
                self.schedule(
                    self.now + self.scenario.metrics.depth_sample_ms,
                    Ev::DepthSample,
                );
            }
            Ev::OperatorAction { index } => {
                self.pending_timed -= 1;
                self.on_operator(index as usize);
            }
            Ev::MutatePayload { index } => {
                self.pending_timed -= 1;
                self.on_mutate(index as usize);
            }
            Ev::Burst { index } => {
                self.pending_timed -= 1;
                self.on_burst(index as usize);
            }
        }
    }

    // ---- arrivals and enqueue -------------------------------------------------------------

    fn key_for(&self, tenant: TenantId, payload: &Payload, version: u32) -> IdempotencyKey {
        if self.bug_tenantless {
            IdempotencyKey::tenantless_for_bug_switch(payload.document, version)
        } else {
            IdempotencyKey::new(tenant, payload.document, version).expect("versions are validated")
        }
    }

    /// The enqueue-time idempotency check, then a new job (recorded). A reprocess
    /// (`reprocess_of`) that finds its key taken records nothing here: the caller records the
    /// refusal.
    fn enqueue(
        &mut self,
        tenant: TenantId,
        payload: Payload,
        version: u32,
        invalid: bool,
        reprocess_of: Option<JobId>,
    ) -> Option<JobId> {
        let key = self.key_for(tenant, &payload, version);
        let hash = payload.hash(&self.names);
        let request = EnqueueRequest {
            tenant,
            key,
            payload: hash,
            visible_at: self.now,
        };
        let (operation, content) = (payload.operation, payload.content);
        match self.queue.enqueue(self.now, request) {
            EnqueueOutcome::Created(job) => {
                self.invalid.push(invalid);
                self.payloads.push(payload);
                let deadline_at = self.queue.job(job).deadline_at(self.queue.config());
                self.record(Event::Enqueued {
                    job,
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    visible_at: Some(self.now),
                    deadline_at: Some(deadline_at),
                    reprocess_of,
                });
                self.hand_out();
                Some(job)
            }
            _ if reprocess_of.is_some() => None,
            EnqueueOutcome::Deduplicated { existing } => {
                self.record(Event::EnqueueDeduped {
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    existing,
                });
                None
            }
            EnqueueOutcome::Conflict {
                existing,
                existing_payload,
            } => {
                self.record(Event::EnqueueConflict {
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    existing,
                    existing_payload: Some(existing_payload),
                });
                None
            }
        }
    }

    fn on_arrival(&mut self) {
        let a = self.arrivals.next(&self.scenario.arrivals);
        let tenant = self.tenant_ids[a.tenant.index()];
        self.enqueue(tenant, a.payload, 1, a.invalid, None);
        if self.arrivals.remaining() > 0 {
            let gap = self.arrivals.next_gap_ms(&self.scenario.arrivals);
            self.schedule(self.now + gap, Ev::Arrival);
        }
    }

    fn on_explicit_enqueue(&mut self, index: usize) {
        self.pending_timed -= 1;
        let e = &self.scenario.enqueue[index];
        let tenant = self.names.tenants.register(&e.tenant).expect("validated");
        let document = self.names.documents.named(&e.document).expect("validated");
        let payload = match &e.payload {
            Some(text) => Payload::from_text(document, text),
            None => Payload::of(document),
        };
        let (version, invalid) = (e.version, e.invalid);
        self.enqueue(tenant, payload, version, invalid, None);
    }

    /// A burst's documents are numbered after the generated arrivals' and the earlier bursts'.
    fn on_burst(&mut self, index: usize) {
        let s = self.scenario;
        let b = &s.burst[index];
        let tenant = self.names.tenants.register(&b.tenant).expect("validated");
        let first = self.arrivals_total + s.burst[..index].iter().map(|b| b.jobs).sum::<u64>();
        for k in 0..b.jobs {
            let payload = Payload::of(crate::vocab::key::Documents::generated((first + k) as u32));
            self.enqueue(tenant, payload, 1, false, None);
        }
    }

    // ---- leasing ----------------------------------------------------------------------------

    /// Hands ready jobs to idle workers, first come first served.
    fn hand_out(&mut self) {
        while let Some(&w) = self.idle.front() {
            if !self.lease_for(w) {
                break;
            }
            self.idle.pop_front();
        }
    }

    /// A free worker looks for work; it waits in the idle line if there is none.
    fn worker_free(&mut self, w: WorkerId) {
        if !self.lease_for(w) {
            self.idle.push_back(w);
        }
    }

    /// `leaseNext` for worker `w`, recording cancellations and DLQ entries on the way.
    /// Returns whether the worker got a job.
    fn lease_for(&mut self, w: WorkerId) -> bool {
        if self.scenario.metrics.depth_sample == DepthSampling::PerLease && self.queue.depth() > 0 {
            self.record(Event::DepthSampled {
                depth: self.queue.depth() as u64,
            });
        }
        loop {
            match self.queue.lease_next(self.now) {
                LeaseOutcome::Empty => return false,
                LeaseOutcome::Cancelled { job, deadline_at } => {
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

    fn start_attempt(&mut self, w: WorkerId, job: JobId, fence: Fence, number: u32) {
        let invalid = self.invalid[job.index()];
        let mut plan = draw_plan(
            &mut self.worker_streams[w.index()],
            &self.rates,
            self.scenario,
            invalid,
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
            self.scenario.queue.heartbeat_ms,
            self.bug_naive,
        );
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
    fn arm_expiry(&mut self, w: WorkerId, job: JobId, fence: Fence) {
        let slot = &mut self.workers[w.index()];
        if slot.expiry_armed {
            return;
        }
        slot.expiry_armed = true;
        let j = self.queue.job(job);
        if j.fence == fence && j.state == JobState::Leased {
            let at = j.lease_until + 1;
            self.schedule(
                at,
                Ev::LeaseCheck {
                    job: job.0,
                    fence: fence.0,
                },
            );
        }
    }

    fn on_lease_check(&mut self, job: JobId, fence: Fence) {
        match self.queue.check_expiry(self.now, job, fence) {
            ExpiryOutcome::Stale => {}
            ExpiryOutcome::StillLeased { lease_until } => self.schedule(
                lease_until + 1,
                Ev::LeaseCheck {
                    job: job.0,
                    fence: fence.0,
                },
            ),
            ExpiryOutcome::Expired => {
                self.record(Event::LeaseExpired { job, fence });
                self.hand_out();
            }
        }
    }

    // ---- the worker's steps -----------------------------------------------------------------

    /// Runs worker `w`'s attempt until it has to wait or is over.
    fn drive(&mut self, w: WorkerId) {
        loop {
            let Some(attempt) = self.workers[w.index()].attempt.as_mut() else {
                return;
            };
            let step = attempt.advance();
            let (job, fence, stall_ms) = (
                attempt.job,
                attempt.fence,
                attempt.plan.stall_ms.unwrap_or(0),
            );
            match step {
                Step::Crash(point) => {
                    self.arm_expiry(w, job, fence);
                    self.attempts_in_flight -= 1;
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
                        self.record(Event::StallBegan {
                            worker: w,
                            job,
                            fence,
                            stall: stall_ms,
                        });
                    }
                }
                Step::Extract { ms } | Step::Validate { ms } => {
                    let wake = self.now + ms;
                    if wake > self.queue.job(job).lease_until {
                        self.arm_expiry(w, job, fence);
                    }
                    self.schedule(wake, Ev::WorkerWakes { worker: w.0 });
                    return;
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
                Step::Ack => match self.queue.ack(self.now, job, fence) {
                    Ok(()) => self.record(Event::Acked {
                        job,
                        worker: w,
                        fence,
                    }),
                    Err(rejection) => self.rejected(w, job, fence, Op::Ack, rejection),
                },
                Step::Done => {
                    self.attempts_in_flight -= 1;
                    self.workers[w.index()].attempt = None;
                    self.worker_free(w);
                    return;
                }
            }
        }
    }

    fn rejected(
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

    fn commit(&mut self, w: WorkerId, job: JobId) {
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
    fn fail(&mut self, w: WorkerId, job: JobId, fence: Fence, error: ErrorKind) {
        let j = *self.queue.job(job);
        let deadline_at = j.deadline_at(self.queue.config());
        let error = if self.now > deadline_at && classify(error) == ErrorClass::Transient {
            ErrorKind::DeadlineExceeded
        } else {
            error
        };
        let class = classify(error);
        self.record(Event::AttemptFailed {
            job,
            worker: w,
            fence,
            error: error_name(error),
            class: Some(class_name(class)),
        });
        let number = self.workers[w.index()]
            .attempt
            .as_ref()
            .map_or(j.attempt, |a| a.number);
        let draw = if matches!(self.policy.jitter, crate::vocab::config::Jitter::None) {
            0.0
        } else {
            self.jitter_stream.unit()
        };
        match self.policy.decide(error, number, draw) {
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
                Ok(()) => self.record(Event::Cancelled {
                    job,
                    worker: Some(w),
                    fence: Some(fence),
                    deadline_at: Some(deadline_at),
                }),
                Err(rejection) => self.rejected(w, job, fence, Op::Cancel, rejection),
            },
        }
    }

    fn file_dead_letter(
        &mut self,
        job: JobId,
        w: Option<WorkerId>,
        fence: Option<Fence>,
        attempts: u32,
        reason: DlqReason,
        error: Option<ErrorKind>,
    ) {
        let stored = if self.bug_raw_reason {
            StoredReason::Raw(self.raw_error_text(job, error).into())
        } else {
            StoredReason::Code(reason)
        };
        let text: Box<str> = stored.text().into();
        // A full DLQ makes room first: the eviction is recorded before the new entry.
        if let Some(evicted) = self.dlq.push(self.now, job, stored) {
            self.record(Event::DlqEvicted {
                job: evicted,
                capacity: Some(
                    self.dlq
                        .config()
                        .capacity
                        .expect("only a bounded DLQ evicts"),
                ),
            });
        }
        self.record(Event::DeadLettered {
            job,
            worker: w,
            fence,
            attempts: Some(attempts),
            reason: text,
        });
    }

    /// What a parser's error message looks like: it quotes the document. Only the
    /// `raw_dlq_reason` bug lets it into the DLQ.
    fn raw_error_text(&self, job: JobId, error: Option<ErrorKind>) -> String {
        let j = self.queue.job(job);
        let document = self.names.documents.name(j.key.document);
        match error {
            Some(ErrorKind::SchemaInvalid) => format!("schema validation failed: field `total` in {document} reads \"ACME Corp, invoice for J. Silva, CPF 123.456.789-00\""),
            Some(e) => format!("{} while extracting {document}: provider said \"upstream 503\"", error_name(e)),
            None => format!("gave up on {document} after {} attempts: provider said \"upstream 503\"", j.attempt),
        }
    }

    // ---- relay, consumer, review --------------------------------------------------------------

    fn on_relay_tick(&mut self) {
        if self.scenario.outbox.retention_ms.is_some() {
            let rows = self.outbox.prune(self.now);
            if rows > 0 {
                self.record(Event::OutboxPruned { rows });
            }
        }
        let count = self.outbox.pending().len();
        if count > 0 {
            for i in 0..count {
                let e = self.outbox.pending()[i];
                self.deliver(e.id, e.key, e.job, e.output, e.sends + 1, false);
            }
            self.outbox.note_sent(count);
            // One draw per tick whatever the rate and the script say, so a frozen run (rate 0,
            // the crash scripted) keeps the relay stream where the seeded run had it.
            let drawn = self.relay_stream.unit() < self.rates.relay_crash;
            let crash = self.script.relay_crash_due(self.now) | drawn;
            if crash {
                self.record(Event::RelayCrashed {
                    unmarked: count as u32,
                });
                // A crashed relay comes back after its restart delay (default: the next tick).
                if let Some(restart_ms) = self.scenario.relay.restart_ms {
                    self.schedule(self.now + restart_ms, Ev::RelayTick);
                    return;
                }
            } else {
                self.outbox.mark_published(self.now, count);
                self.record(Event::MarkedPublished {
                    count: count as u32,
                });
            }
        }
        self.schedule(self.now + self.scenario.relay.interval_ms, Ev::RelayTick);
    }

    /// One event reaches the consumer, which applies it once and hands the document to review.
    fn deliver(
        &mut self,
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
        send: u32,
        direct: bool,
    ) {
        self.record(Event::Published {
            event,
            key,
            job,
            output,
            send: Some(send),
            direct,
        });
        match self.consumer.handle(self.now, event) {
            HandleOutcome::Applied => {
                self.record(Event::EffectApplied {
                    event,
                    key,
                    job,
                    output,
                });
                let review_ms = self
                    .scenario
                    .stages
                    .review_ms
                    .sample(&mut self.review_stream);
                self.reviews_pending += 1;
                self.schedule(
                    self.now + review_ms,
                    Ev::ReviewDone {
                        event: event.0,
                        job: job.0,
                    },
                );
            }
            HandleOutcome::DuplicateEvent => self.record(Event::DuplicateEvent { event, key }),
        }
    }

    // ---- operators and scripted changes -------------------------------------------------------

    fn on_operator(&mut self, index: usize) {
        let action = &self.scenario.operator[index];
        let old = if action.follow {
            self.dlq.latest_in_chain(JobId(action.job))
        } else {
            JobId(action.job)
        };
        let operator = action.operator.clone();
        if old.index() >= self.queue.len() {
            self.record(Event::ReprocessRefused {
                job: None,
                operator: operator.map(Into::into),
                reason: "no_such_job",
            });
            return;
        }
        let tenant = self.queue.job(old).tenant;
        if let Err(refusal) =
            self.dlq
                .authorize_reprocess(self.now, old, tenant, operator.as_deref())
        {
            let reason = if self.queue.job(old).state == JobState::Cancelled
                && refusal != crate::model::dead_letter::ReprocessRefusal::MissingOperator
            {
                "cancelled_is_terminal"
            } else {
                refusal.code()
            };
            self.record(Event::ReprocessRefused {
                job: Some(old),
                operator: operator.map(Into::into),
                reason,
            });
            return;
        }
        let operator = operator.expect("authorized reprocess has an operator");
        let o = *self.queue.job(old);
        let payload = self.payloads[old.index()];
        let invalid = self.invalid[old.index()];
        // Same tenant, document and content, version + 1: a new job; the dead one stays dead.
        let new = self.enqueue(o.tenant, payload, o.key.version + 1, invalid, Some(old));
        match new {
            Some(new) => {
                self.dlq
                    .record_reprocess(self.now, old, tenant, new, &operator);
                self.record(Event::Reprocessed {
                    old_job: old,
                    new_job: new,
                    operator: operator.into(),
                });
            }
            None => self.record(Event::ReprocessRefused {
                job: Some(old),
                operator: Some(operator.into()),
                reason: "version_exists",
            }),
        }
    }

    fn on_mutate(&mut self, index: usize) {
        let e = &self.scenario.script[index];
        let job = JobId(e.job.expect("validated"));
        if job.index() >= self.queue.len() {
            return;
        }
        let document = self.queue.job(job).key.document;
        let text = e
            .payload
            .clone()
            .unwrap_or_else(|| format!("mutated at {} ms", self.now));
        let payload = Payload::from_text(document, &text);
        let hash = payload.hash(&self.names);
        self.payloads[job.index()] = payload;
        self.queue.mutate_payload(job, hash);
        self.record(Event::PayloadMutated {
            job,
            content: payload.content,
            payload: Some(hash),
        });
    }
}

/// Every name the run can use, registered before it starts, in a fixed order: the generated
/// arrivals' tenants, then the tenants and documents of `[[enqueue]]` and the tenants of
/// `[[burst]]`, in file order. The checker is given the same table.
pub fn scenario_names(s: &Scenario) -> KeyNames {
    let mut names = KeyNames::default();
    for t in &s.arrivals.tenants {
        names
            .tenants
            .register(t)
            .expect("scenario validated its tenants");
    }
    for e in &s.enqueue {
        names.tenants.register(&e.tenant).expect("validated");
        names.documents.named(&e.document).expect("validated");
    }
    for b in &s.burst {
        names.tenants.register(&b.tenant).expect("validated");
    }
    names
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

pub fn error_name(e: ErrorKind) -> &'static str {
    match e {
        ErrorKind::ProviderUnavailable => "provider_unavailable",
        ErrorKind::SchemaInvalid => "schema_invalid",
        ErrorKind::PayloadConflict => "payload_conflict",
        ErrorKind::DeadlineExceeded => "deadline_exceeded",
    }
}

pub fn class_name(c: ErrorClass) -> &'static str {
    match c {
        ErrorClass::Transient => "transient",
        ErrorClass::Permanent => "permanent",
        ErrorClass::Cancelled => "cancelled",
    }
}

//! The simulation kernel: virtual time, the event queue, the run loop and its wiring.
//!
//! Owns: the clock (integer ms), the (time, insertion seq) ordered event queue, the closed
//! [`Ev`] enum and its dispatch, the run's state (model instances, RNG streams, worker slots),
//! its construction from a scenario, quiescence, and the recording of every observable step
//! into the history.
//! Which queue semantics a scenario runs on ([`run_scenario`]: the chapter's queue, or the
//! profiled one when its `[queue]` profile needs it).
//! Does not: handle an event itself: intake.rs (enqueue), attempts.rs (leases and attempts),
//! lease_end.rs (lease checks and rescues), terminal.rs (cancel and dead-letter filing),
//! delivery.rs (relay, consumer, review) and operator.rs (operator actions, payload mutation)
//! do, each in an `impl Sim` of its own; nor decide what a step means for the pipeline or the
//! queue (the model and the queue semantics do) or judge the outcome (the checker reads the
//! history).

use super::arrivals::ArrivalProcess;
use super::event_queue::EventQueue;
use super::faults::{site_armed, FaultRates, Script, SpareDraws};
use super::request::RunRequest;
use super::tie_break::{Stop, TieBreak, Ties};
use crate::base::ids::{EventId, Fence, JobId, SimTime, TenantId, WorkerId};
use crate::base::rng::{Purpose, Stream};
use crate::history::{Event, Observer, Record, TraceHash};
use crate::model::consumer::Consumer;
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::outbox::{Outbox, OutboxConfig};
use crate::model::profiled_queue::ProfiledQueue;
use crate::model::queue::{Queue, QueueConfig};
use crate::model::retry::RetryPolicy;
use crate::model::semantics::{ChapterQueue, QueueSemantics};
use crate::model::worker::Attempt;
use crate::scenario::{Aim, DepthSampling, Scenario};
use crate::vocab::bugs::BugSet;
use crate::vocab::faults::{Site, SITES};
use crate::vocab::key::{IdempotencyKey, KeyNames};
use crate::vocab::probes::Probes;
use std::collections::VecDeque;

/// Everything that can be scheduled. One `match` in [`Sim::dispatch_event`] shows the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// A sweeper's rescue write, `rescue_gap_ms` after it read the job (by id).
    RescueWrite {
        job: u32,
        fence: u64,
    },
    /// A rescued job's retry delay is over: it is visible again (at the event's own time).
    RescueVisible {
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
    /// A `mutate_payload` script entry (`index`) changes `job`'s payload.
    MutatePayload {
        index: u32,
        job: u32,
    },
    /// A `[[burst]]` entry: one tenant submits many documents at once.
    Burst {
        index: u32,
    },
    /// A DLQ entry's retention is over (a profile's `[dlq] retention_ms`).
    DlqExpire {
        job: u32,
    },
    /// A program's inbox has a message to deliver (`program/drive.rs`).
    ProgramWake {
        slot: u32,
    },
    /// A program's reply whose virtual time has come (a sleep, an inference, a slow heartbeat).
    ProgramTimed {
        index: u32,
    },
    /// A new program in a slot whose program died (the relay, the consumer).
    ProgramStart {
        slot: u32,
    },
}

// An event is 16 bytes (its wheel node 24): the future-event list moves one per push and pop.
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

/// A worker process slot.
#[derive(Clone, Debug, Default, Hash)]
pub(super) struct WorkerSlot {
    pub(super) attempt: Option<Attempt>,
    pub(super) down: bool,
    pub(super) expiry_armed: bool,
    /// Naive dual write: whether this attempt's database write was new (it will publish).
    pub(super) wrote_fresh: Option<(IdempotencyKey, u64)>,
}

/// What the kernel knows at the end (everything else comes from the history).
#[derive(Clone, Debug, Hash)]
pub struct RunOutcome {
    pub trace_hash: u64,
    pub records: u64,
    pub heap_events: u64,
    pub virtual_time_ms: SimTime,
    pub quiescent: bool,
    /// The run passed its `max_events` and was stopped there (`RunRequest::max_events`).
    pub over_budget: bool,
    pub names: KeyNames,
    /// How often the run took each branch of the model's and the kernel's decisions
    /// (`vocab::probes`); not part of the trace. None: not a simulation (a history `verify`
    /// judged).
    pub probes: Option<Probes>,
    /// Why the run stopped early on bad input: a program in a role failed (`sim::program`), or
    /// the scenario's `[run] ties` named a tie the run does not have (`sim::tie_break`); the
    /// command exits 2 with this message.
    pub program_fault: Option<String>,
}

/// One run. `Q` is the queue semantics the kernel talks to (the chapter's queue unless a
/// profile or a harness hands another to [`Sim::with_queue`]).
pub struct Sim<'s, O: Observer, Q: QueueSemantics = ChapterQueue> {
    pub(super) scenario: &'s Scenario,
    /// Part of the history's header, so two seeds never share a trace hash by accident.
    pub(super) seed: u64,
    pub(super) now: SimTime,
    pub(super) heap: EventQueue<Ev>,
    pub(super) heap_events: u64,
    /// The queue, its retry policy and its dead-letter queue, behind the seam.
    pub(super) queue: Q,
    pub(super) outbox: Outbox,
    pub(super) consumer: Consumer,
    pub(super) workers: Vec<WorkerSlot>,
    pub(super) worker_streams: Vec<Stream>,
    pub(super) pause_streams: Vec<Stream>,
    /// Per worker: the spare draws each attempt owns for fault kinds to come.
    pub(super) spare_draws: Vec<SpareDraws>,
    pub(super) idle: VecDeque<WorkerId>,
    pub(super) relay_stream: Stream,
    /// Per delivery-side site (`vocab::faults::Site`): the spare draws each of its steps owns
    /// for the faults of `vocab::faults::STRUCK`.
    pub(super) site_spares: [SpareDraws; SITES],
    /// Per site: whether a fault of it can strike in this run (`faults::site_armed`); a step of
    /// a site that is not asks nothing.
    pub(super) site_armed: [bool; SITES],
    pub(super) jitter_stream: Stream,
    pub(super) review_stream: Stream,
    pub(super) arrivals: ArrivalProcess,
    pub(super) rates: FaultRates,
    pub(super) script: Script,
    /// Per job: the document fails validation on every attempt.
    pub(super) invalid: super::validity::JobValidity,
    /// Per job: its payload as submitted (or as last mutated), which a reprocess resubmits.
    pub(super) payloads: super::payloads::JobPayloads,
    pub(super) names: KeyNames,
    pub(super) tenant_ids: Vec<TenantId>,
    pub(super) pending_timed: u64,
    pub(super) reviews_pending: u64,
    /// Attempts in flight: a zombie mid-attempt can still write, so the run is not over.
    pub(super) attempts_in_flight: u64,
    /// Generated arrivals in this run (bursts number their documents after them).
    pub(super) arrivals_total: u64,
    /// The first job cancelled (an operator `target = "cancelled"` acts on it).
    pub(super) first_cancelled: Option<JobId>,
    /// The bug switches on: the kernel reads those whose site is the kernel (`vocab::bugs`),
    /// and hands the set to the model's parts, which read their own.
    pub(super) bugs: BugSet,
    pub(super) time_limit_ms: SimTime,
    /// `RunRequest::max_events`.
    pub(super) max_events: u64,
    pub(super) hash: TraceHash,
    pub(super) observer: O,
    /// The workers' heartbeat period (the profile's, or the scenario's lease section).
    pub(super) heartbeat_ms: SimTime,
    /// Draws the coins a queue's write guard asks for (`may_apply`).
    pub(super) coin_stream: Stream,
    /// The kernel's own decisions taken so far (`vocab::probes`); the model's parts count
    /// theirs, and [`Sim::run`] adds them up.
    pub(super) probes: Probes,
    /// The roles' programs, when the run has them (`program/`): every role is then a program,
    /// and the kernel's own worker, relay and consumer steps stay unused.
    pub(super) programs: Option<Box<super::program::Programs>>,
}

/// The chapter's queue for a scenario, with the request's bug switches set where they live.
pub fn chapter_queue(scenario: &Scenario, options: &RunRequest) -> ChapterQueue {
    let bugs = options.bugs;
    // The scenario's queue-semantics profile sets the numbers (durasim: the scenario's own).
    let sem = scenario.semantics();
    let eff = crate::profile::Effective::of(&sem);
    let queue_config = QueueConfig {
        lease_ms: eff.lease_ms,
        deadline_ms: eff.deadline_ms,
        attempts_max: eff.queue_attempts_max,
        bugs,
        unique: sem.unique,
    };
    ChapterQueue {
        queue: Queue::with_capacity(queue_config, scenario.capacity(options.jobs)),
        policy: RetryPolicy {
            attempts_max: eff.attempts_max,
            backoff_base_ms: sem.backoff.base_ms,
            backoff_cap_ms: sem.backoff.cap_ms,
            // Other formulas take their delay from `profile::backoff`; the policy decides, and
            // draws when the profile's jitter draws.
            jitter: eff.policy_jitter(&sem),
            permanent_retried: sem.permanent_error == crate::profile::PermanentError::Retry,
            bugs,
        },
        dlq: DeadLetterQueue::new(crate::model::dead_letter::DlqConfig {
            bugs,
            ..scenario.dlq_config()
        }),
    }
}

/// Runs `scenario` on the queue semantics its `[queue]` profile resolves to: the chapter's
/// queue, or the chapter's queue under the profile's rules ([`ProfiledQueue`]), each its own
/// monomorphisation of the kernel, so the chapter's pays nothing for the profiles.
pub fn run_scenario<O: Observer>(
    scenario: &Scenario,
    options: &RunRequest,
    observer: O,
) -> (RunOutcome, O) {
    let sem = scenario.semantics();
    if !scenario.run.ties.is_empty() {
        let mut ties = Ties::new(&scenario.run.ties);
        let (mut outcome, observer) = if ProfiledQueue::needed(&sem) {
            let queue = ProfiledQueue::new(chapter_queue(scenario, options), sem);
            Sim::with_queue(scenario, options, observer, queue).run_tied(&mut ties, None)
        } else {
            Sim::new(scenario, options, observer).run_tied(&mut ties, None)
        };
        if outcome.program_fault.is_none() {
            outcome.program_fault = ties.unreached();
        }
        return (outcome, observer);
    }
    if ProfiledQueue::needed(&sem) {
        let queue = ProfiledQueue::new(chapter_queue(scenario, options), sem);
        Sim::with_queue(scenario, options, observer, queue).run()
    } else {
        Sim::new(scenario, options, observer).run()
    }
}

/// Runs `scenario` like [`run_scenario`] (its `[run] ties` aside), with `ties` choosing the
/// order of simultaneous events and handed the run's state hash at each tie (`sim::state`:
/// the model's parts, the kernel's and the observer's). For `durasim explore`; the run must
/// have no programs.
pub fn run_scenario_tied<O: Observer + std::hash::Hash>(
    scenario: &Scenario,
    options: &RunRequest,
    observer: O,
    ties: &mut dyn TieBreak,
) -> (RunOutcome, O) {
    assert!(options.programs.is_none(), "a tied run hashes no programs");
    let sem = scenario.semantics();
    if ProfiledQueue::needed(&sem) {
        let queue = ProfiledQueue::new(chapter_queue(scenario, options), sem);
        Sim::with_queue(scenario, options, observer, queue).run_tied(ties, Some(Sim::state_hash))
    } else {
        Sim::new(scenario, options, observer).run_tied(ties, Some(Sim::state_hash))
    }
}

impl<'s, O: Observer> Sim<'s, O> {
    /// A run on the chapter's queue, for a scenario whose profile needs no other
    /// ([`run_scenario`] picks).
    pub fn new(scenario: &'s Scenario, options: &RunRequest, observer: O) -> Sim<'s, O> {
        assert!(
            !ProfiledQueue::needed(&scenario.semantics()),
            "{}: its [queue] profile runs on a ProfiledQueue (sim::run_scenario)",
            scenario.name
        );
        Sim::with_queue(
            scenario,
            options,
            observer,
            chapter_queue(scenario, options),
        )
    }
}

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    /// A run on the queue semantics `queue` (built for this scenario).
    pub fn with_queue(
        scenario: &'s Scenario,
        options: &RunRequest,
        observer: O,
        queue: Q,
    ) -> Sim<'s, O, Q> {
        let seed = options.seed;
        let bugs = options.bugs;
        let jobs = options.jobs.unwrap_or(scenario.arrivals.jobs);
        let capacity = scenario.capacity(options.jobs);
        let names = scenario.names().clone();
        // The name table registers the generated arrivals' tenants first, in order.
        let tenant_ids = (0..scenario.arrivals.tenants.len())
            .map(|t| TenantId(t as u16))
            .collect();
        let workers = scenario.workers.count;
        let rates = options
            .rates
            .clone()
            .unwrap_or_else(|| FaultRates::from_scenario(scenario));
        let script = Script::from_scenario(scenario);
        Sim {
            scenario,
            seed,
            now: 0,
            heap: EventQueue::new(),
            heap_events: 0,
            queue,
            outbox: Outbox::with_capacity(
                OutboxConfig {
                    bugs,
                    retention_ms: scenario.outbox.retention_ms,
                },
                capacity,
            ),
            consumer: Consumer::with_window(bugs, scenario.consumer.dedupe_window_ms),
            workers: vec![WorkerSlot::default(); workers as usize],
            worker_streams: (0..workers)
                .map(|w| Stream::new(seed, Purpose::Worker, w as u64))
                .collect(),
            pause_streams: (0..workers)
                .map(|w| Stream::new(seed, Purpose::Pause, w as u64))
                .collect(),
            spare_draws: (0..workers).map(|w| SpareDraws::new(seed, w)).collect(),
            idle: (0..workers).map(WorkerId).collect(),
            relay_stream: Stream::new(seed, Purpose::Relay, 0),
            site_spares: Site::ALL.map(|site| SpareDraws::of_site(seed, site)),
            site_armed: Site::ALL.map(|site| site_armed(site, &rates, &script)),
            jitter_stream: Stream::new(seed, Purpose::Jitter, 0),
            review_stream: Stream::new(seed, Purpose::Review, 0),
            arrivals: ArrivalProcess::new(
                Stream::new(seed, Purpose::Arrivals, 0),
                scenario.arrivals.tenants.len(),
                jobs,
            ),
            rates,
            script,
            invalid: super::validity::JobValidity::with_capacity(capacity),
            payloads: Default::default(),
            names,
            tenant_ids,
            pending_timed: 0,
            reviews_pending: 0,
            attempts_in_flight: 0,
            arrivals_total: jobs,
            first_cancelled: None,
            bugs,
            time_limit_ms: scenario.run.time_limit_ms,
            max_events: options.max_events,
            hash: TraceHash::default(),
            observer,
            heartbeat_ms: crate::profile::Effective::of(&scenario.semantics()).heartbeat_ms,
            coin_stream: Stream::new(seed, Purpose::StaleWrite, 0),
            probes: Probes::default(),
            programs: options
                .programs
                .as_ref()
                .map(|spec| Box::new(super::program::Programs::new(spec, workers))),
        }
    }

    /// Puts `ev` on the future-event list at `at`. Time never moves backwards: an event in the
    /// past is a kernel bug, caught here (on in release: one compare).
    #[inline]
    pub(super) fn schedule(&mut self, at: SimTime, ev: Ev) {
        assert!(
            at >= self.now,
            "{ev:?} scheduled at {at} ms, before now ({} ms)",
            self.now
        );
        self.heap.push(at, ev);
    }

    #[inline]
    pub(super) fn record(&mut self, event: Event) {
        let r = Record {
            at: self.now,
            event,
        };
        self.hash.add(&r);
        self.observer.observe(&r);
    }

    /// Runs to quiescence (or the time limit) and returns the outcome and the observer.
    /// Events due at the same time run first in, first out.
    pub fn run(self) -> (RunOutcome, O) {
        // The default loop: a closure the compiler inlines into its own copy of `run_loop`.
        self.run_loop(|sim, _| Ok(sim.heap.pop()))
    }

    /// Runs like [`Sim::run`], but at each tie (two or more events due at the earliest pending
    /// time, within the time limit) asks `ties` which runs first, handing it the run's state
    /// hash when `state` computes one (`sim::state`). A tie-break that stops the run ends it
    /// there, unsettled; a refusal is the outcome's `program_fault`.
    pub fn run_tied(
        self,
        ties: &mut dyn TieBreak,
        state: Option<fn(&Self) -> u128>,
    ) -> (RunOutcome, O) {
        let mut point = 0u64;
        self.run_loop(|sim, ended| {
            if ended {
                ties.ended(state.map(|f| f(sim)));
                return Ok(None);
            }
            let due = sim.heap.due_first();
            // Past the time limit nothing runs: no tie there.
            if due < 2 || sim.heap.due_at() > sim.time_limit_ms {
                return Ok(sim.heap.pop());
            }
            let hash = state.map(|f| f(sim));
            let pick = ties.choose(point, sim.heap.due_at(), due, hash)?;
            point += 1;
            assert!(pick < due, "a tie-break picked {pick} of {due} due events");
            Ok(Some(sim.heap.pop_due(pick)))
        })
    }

    /// The run loop; `next(sim, false)` takes the next event off the list (or stops the run),
    /// `next(sim, true)` is told the run is over (before its end is recorded).
    #[inline(always)]
    fn run_loop(
        mut self,
        mut next: impl FnMut(&mut Self, bool) -> Result<Option<(SimTime, Ev)>, Stop>,
    ) -> (RunOutcome, O) {
        self.record(Event::RunStarted {
            config: Box::new(self.scenario.run_config(self.seed)),
        });
        self.schedule_start();
        self.start_programs();
        let mut quiescent = self.settled();
        let mut over_budget = false;
        let mut refused = None;
        while !quiescent && !self.program_failed() {
            if self.heap_events >= self.max_events {
                over_budget = true;
                break;
            }
            let (at, ev) = match next(&mut self, false) {
                Ok(Some(e)) => e,
                Ok(None) | Err(Stop::Seen) => break,
                Err(Stop::Refused(why)) => {
                    refused = Some(why);
                    break;
                }
            };
            if at > self.time_limit_ms {
                self.now = self.time_limit_ms;
                break;
            }
            assert!(at >= self.now, "the event queue went back in time");
            self.now = at;
            self.heap_events += 1;
            self.dispatch_event(ev);
            quiescent = self.settled();
        }
        let _ = next(&mut self, true);
        let program_fault = self.stop_programs().or(refused);
        self.record(Event::RunEnded { quiescent });
        let mut probes = std::mem::take(&mut self.probes);
        self.queue.add_probes(&mut probes);
        probes.add(&self.outbox.probes);
        probes.add(&self.consumer.probes);
        probes.add(&self.arrivals.probes);
        let outcome = RunOutcome {
            trace_hash: self.hash.finish(),
            records: self.hash.records(),
            heap_events: self.heap_events,
            virtual_time_ms: self.now,
            quiescent,
            over_budget,
            names: self.names,
            probes: Some(probes),
            program_fault,
        };
        (outcome, self.observer)
    }

    /// What the scenario puts on the event list before the first event: the first arrival,
    /// every timed entry (enqueue, burst, operator action and its repeats, payload mutation),
    /// the first relay tick and depth sample.
    fn schedule_start(&mut self) {
        let s = self.scenario;
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
        for (i, (e, aim)) in s.script.iter().zip(s.aims()).enumerate() {
            if let Aim::Payload { job } = *aim {
                self.pending_timed += 1;
                let index = i as u32;
                self.schedule(e.at_ms, Ev::MutatePayload { index, job: job.0 });
            }
        }
        if self.programs.is_none() {
            self.schedule(s.relay.interval_ms, Ev::RelayTick);
        }
        if s.metrics.depth_sample == DepthSampling::Interval {
            self.schedule(0, Ev::DepthSample);
        }
    }

    /// Nothing left to happen: every job terminal, every event published and applied, every
    /// review done, no attempt in flight, no arrival, enqueue or operator action still to come.
    pub(super) fn settled(&self) -> bool {
        self.arrivals.remaining() == 0
            && self.pending_timed == 0
            && self.attempts_in_flight == 0
            && self.queue.all_terminal()
            && self
                .programs
                .as_ref()
                .map_or(self.outbox.pending().is_empty(), |p| p.delivered())
            && self.reviews_pending == 0
    }

    fn dispatch_event(&mut self, ev: Ev) {
        match ev {
            Ev::Arrival => self.on_arrival(),
            Ev::ExplicitEnqueue { index } => self.on_explicit_enqueue(index as usize),
            Ev::WorkerWakes { worker } => self.drive(WorkerId(worker)),
            Ev::WorkerRestarts { worker } if self.programs.is_some() => {
                self.restart_worker_program(WorkerId(worker));
            }
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
            Ev::RescueWrite { job, fence } => self.on_rescue_write(JobId(job), Fence(fence)),
            Ev::RescueVisible { job, fence } => self.on_rescue_visible(JobId(job), Fence(fence)),
            Ev::DlqExpire { job } => self.on_dlq_expire(JobId(job)),
            Ev::RelayTick => self.on_relay_tick(),
            Ev::ReviewDone { event, job } => {
                decrement(&mut self.reviews_pending, "reviews_pending");
                let key = self.queue.key(JobId(job));
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
                decrement(&mut self.pending_timed, "pending_timed");
                self.on_operator(index as usize);
            }
            Ev::MutatePayload { index, job } => {
                decrement(&mut self.pending_timed, "pending_timed");
                self.on_mutate(index as usize, JobId(job));
            }
            Ev::Burst { index } => {
                decrement(&mut self.pending_timed, "pending_timed");
                self.on_burst(index as usize);
            }
            Ev::ProgramWake { slot } => self.on_program_wake(slot),
            Ev::ProgramTimed { index } => self.on_program_timed(index),
            Ev::ProgramStart { slot } => self.on_program_start(slot),
        }
    }
}

/// `counter - 1`, asserting it was not 0: a count of things still to come that goes below zero
/// means one was handled twice. On in release (one compare), where `-=` would wrap silently.
#[inline]
pub(super) fn decrement(counter: &mut u64, what: &str) {
    assert!(*counter > 0, "{what} went below zero");
    *counter -= 1;
}

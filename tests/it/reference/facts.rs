//! The reference checker's facts: what the records say happened to every job, key, outbox event
//! and DLQ entry, and the counts, in ordinary maps, and [`Facts::apply`], their only writer.
//!
//! Owns: the state every rule reads, as docs/checker-rules.md ("The facts") lists it. Nothing
//! here judges: a rule reads the facts as the records before the one it judges left them, then
//! `apply` takes the record in.
//! Does not: judge (the family files do) or count `sometimes` (`figures.rs`).

use durasim::base::ids::{EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use durasim::history::{Event, Op, Record};
use durasim::vocab::config::{Liveness, RunConfig};
use durasim::vocab::key::IdempotencyKey;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What a payload is: the operation and the content's fingerprint (the document is the key's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    pub operation: OperationId,
    pub content: u64,
}

impl std::fmt::Display for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "content {:016x} ({})", self.content, self.operation)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Terminal {
    Acked,
    DeadLettered,
    Cancelled,
}

/// Where a job stands for the queue depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Not visible yet (a delayed enqueue, a retry's wait).
    Waiting,
    /// Visible and not leased.
    Ready,
    Leased,
    /// Its terminal record came.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DlqEntry {
    None,
    Held,
    Evicted,
}

/// A failed attempt waiting for its decision.
#[derive(Clone, Copy, Debug)]
pub struct Failure {
    pub fence: Fence,
    pub error: &'static str,
    pub at: SimTime,
}

#[derive(Clone, Debug)]
pub struct Job {
    pub tenant: TenantId,
    pub key: IdempotencyKey,
    /// As enqueued, or as last mutated or replaced.
    pub payload: Payload,
    pub enqueued_at: SimTime,
    /// The enqueue time + the configured deadline (never, `SimTime::MAX`, without one).
    pub deadline_at: SimTime,
    /// When it may next be leased: the enqueue's visible time (the enqueue time by default), or
    /// the last retry's.
    pub visible_from: SimTime,
    /// `leased` records.
    pub leases: u32,
    /// The latest lease's token (0 while never leased, as the real checker has it), its worker,
    /// when it was taken, and its last renewal (the lease or an accepted heartbeat).
    pub fence: Fence,
    pub holder: WorkerId,
    pub leased_at: SimTime,
    pub renewed_at: SimTime,
    /// A heartbeat renewed the latest lease.
    pub renewed: bool,
    /// The latest lease was not released (ack, retry, dead-letter, cancel) nor validly
    /// recorded as expired.
    pub lease_held: bool,
    pub place: Place,
    /// The first terminal record.
    pub terminal: Option<(Terminal, SimTime)>,
    /// `last_terminal(j)`: the kind of the first terminal record since the job was last
    /// revived (a `retry_scheduled` or `leased` after a terminal record).
    pub last_terminal: Option<Terminal>,
    pub failure: Option<Failure>,
    /// `attempt_failed` records.
    pub failures: u32,
    /// Per lease issued, (token, worker): whether its worker committed or deduplicated a result
    /// of the job since (a commit by a worker counts for the latest lease issued to it).
    pub own_result: BTreeMap<(Fence, WorkerId), bool>,
    /// `main`'s: the holder of the latest lease committed or deduplicated since that lease.
    pub main_own_result: bool,
    /// Every (token, worker) a `leased` record gave the job, and in the order given.
    pub issued: BTreeSet<(Fence, WorkerId)>,
    pub lease_order: Vec<(Fence, WorkerId)>,
    pub dlq: DlqEntry,
    pub reprocess_of: Option<JobId>,
    /// A `reprocessed` record names it as the new job.
    pub audited: bool,
    /// A `reprocessed` record names it as the old job.
    pub reprocessed: bool,
    /// `rescued` records (version 2), and the token of the lease the latest one took back.
    pub rescues: u32,
    pub rescued_fence: Option<Fence>,
}

impl Job {
    /// The latest lease's end: its last renewal + the configured lease.
    pub fn lease_end(&self, c: &RunConfig) -> SimTime {
        self.renewed_at.saturating_add(c.lease)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Key {
    /// An `enqueued` record named the key.
    pub enqueued: bool,
    /// The payload of the first `enqueued` under the key, and the committing job's payload at
    /// the first commit.
    pub enqueue_payload: Option<Payload>,
    pub commit_payload: Option<Payload>,
    /// The newest job an `enqueued` created under the key.
    pub newest: Option<JobId>,
    /// The `result_committed` records: when, by which job, which output, which event.
    pub commits: Vec<(SimTime, JobId, u64, Option<EventId>)>,
    /// Events published with `direct: true` for the key, in the order of their first such
    /// `published`.
    pub direct: Vec<EventId>,
    /// When and from which event its effect was first applied.
    pub applied: Option<(SimTime, EventId)>,
    pub reviewed: bool,
}

impl Key {
    pub fn results(&self) -> usize {
        self.commits.len()
    }

    /// The first commit: when, by which job, which output.
    pub fn first_commit(&self) -> Option<(SimTime, JobId, u64)> {
        self.commits.first().map(|c| (c.0, c.1, c.2))
    }

    /// The key's payload: the first commit's, else the first enqueue's.
    pub fn payload(&self) -> Option<Payload> {
        self.commit_payload.or(self.enqueue_payload)
    }

    /// The key's event: the first commit's that wrote one, else the first direct one.
    pub fn event(&self) -> Option<EventId> {
        self.commits
            .iter()
            .find_map(|c| c.3)
            .or(self.direct.first().copied())
    }
}

#[derive(Clone, Debug, Default)]
pub struct OutboxEvent {
    /// A `result_committed` wrote it.
    pub written: bool,
    pub published: bool,
    pub applies: u32,
    pub reviews: u32,
    pub last_applied: SimTime,
    /// Its origins: (key, job) of each commit that wrote it and each direct publish of it.
    pub origins: Vec<(IdempotencyKey, JobId)>,
}

impl OutboxEvent {
    pub fn has_origin(&self, key: &IdempotencyKey, job: JobId) -> bool {
        self.origins.iter().any(|o| o.0 == *key && o.1 == job)
    }
}

/// How many records of each kind, for the figures.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub by_type: BTreeMap<&'static str, u64>,
    pub dlq_permanent: u64,
    pub dlq_max_attempts: u64,
    pub dlq_other: u64,
    pub outbox_events: u64,
    pub published: u64,
    pub publishes: u64,
    pub ack_rejections: u64,
    pub stale_rejections: u64,
    pub rate_limited: u64,
}

/// When the queue notices a lease's end (the header's `lease_detection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detection {
    /// Just after the lease's end.
    Timer { slack: u64 },
    /// At the first multiple of `every` after the lease's end.
    Sweep { every: u64, slack: u64 },
    /// At the first multiple of `every` after both the end and the first multiple after the
    /// last renewal.
    TwoPass { every: u64, slack: u64 },
}

impl Detection {
    /// The header's `lease_detection`, from the header as the history file writes it (`None`:
    /// not stated; a timer's slack is 1 unless stated, a sweeper's 0).
    fn of(config: &RunConfig) -> Option<Detection> {
        let line = durasim::history::format::header_line(config);
        let header: serde_json::Value = serde_json::from_str(&line).ok()?;
        let d = header.get("config")?.get("lease_detection")?;
        let every = d.get("every").and_then(|v| v.as_u64()).unwrap_or(0);
        let slack = d.get("slack").and_then(|v| v.as_u64());
        match d.get("kind")?.as_str()? {
            "timer" => Some(Detection::Timer {
                slack: slack.unwrap_or(1),
            }),
            "sweep" => Some(Detection::Sweep {
                every,
                slack: slack.unwrap_or(0),
            }),
            "two_pass" => Some(Detection::TwoPass {
                every,
                slack: slack.unwrap_or(0),
            }),
            _ => None,
        }
    }

    /// The latest time a lease last renewed at `renewed_at`, live through `end`, may be
    /// recorded as expired.
    pub fn deadline(self, renewed_at: SimTime, end: SimTime) -> SimTime {
        let after = |t: SimTime, every: u64| (t / every.max(1) + 1).saturating_mul(every);
        match self {
            Detection::Timer { slack } => end.saturating_add(slack),
            Detection::Sweep { every, slack } => after(end, every).saturating_add(slack),
            Detection::TwoPass { every, slack } => {
                after(end.max(after(renewed_at, every)), every).saturating_add(slack)
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub config: RunConfig,
    /// The header's `lease_detection`, judged only with `lease_expired` in `emits`.
    pub detection: Option<Detection>,
    /// Each held lease's detection deadline: (deadline, job) → the lease's token and renewal.
    pub deadlines: BTreeMap<(SimTime, JobId), (Fence, SimTime)>,
    pub jobs: BTreeMap<JobId, Job>,
    pub keys: BTreeMap<IdempotencyKey, Key>,
    /// Keys in the order a record's `key` field first named them (the specification's order).
    pub key_order: Vec<IdempotencyKey>,
    /// The keys in that order (to find them fast).
    named_keys: BTreeSet<IdempotencyKey>,
    pub events: BTreeMap<EventId, OutboxEvent>,
    /// The DLQ's entries, oldest first, as the records put them in and took them out.
    pub dlq: VecDeque<JobId>,
    pub dlq_most: u64,
    /// The outbox's unmarked events, oldest first.
    pub pending: VecDeque<EventId>,
    /// The start of each extraction under way, by worker, job and token.
    pub extracting: BTreeMap<(WorkerId, JobId, Fence), SimTime>,
    /// The latencies `summary.json` reports, recomputed: each lease's wait since the job's
    /// visible time, each extraction's inference, each review's wait since its apply.
    pub queue_waits: Vec<u64>,
    pub inferences: Vec<u64>,
    pub review_waits: Vec<u64>,
    /// Per tenant, the times of its accepted reprocesses.
    pub reprocesses: BTreeMap<TenantId, Vec<SimTime>>,
    pub counts: Counts,
    /// Jobs waiting or leased: the only ones a time can change.
    in_flight: BTreeSet<JobId>,
    /// Liveness per process (version 2): each worker's last `worker_heartbeat`.
    pub beats: BTreeMap<WorkerId, SimTime>,
    pub ended: Option<(SimTime, bool)>,
}

impl Facts {
    pub fn job(&self, job: JobId) -> &Job {
        self.jobs
            .get(&job)
            .unwrap_or_else(|| panic!("{job} named before its `enqueued` (the reader refuses it)"))
    }

    fn job_mut(&mut self, job: JobId) -> &mut Job {
        self.jobs
            .get_mut(&job)
            .unwrap_or_else(|| panic!("{job} named before its `enqueued` (the reader refuses it)"))
    }

    pub fn key(&self, key: &IdempotencyKey) -> Option<&Key> {
        self.keys.get(key)
    }

    /// The key's facts, created if new.
    fn key_mut(&mut self, key: IdempotencyKey) -> &mut Key {
        self.keys.entry(key).or_default()
    }

    /// A record names `key` in its `key` field.
    fn named(&mut self, key: IdempotencyKey) {
        if self.named_keys.insert(key) {
            self.key_order.push(key);
        }
    }

    /// The keys in the order a record's `key` field first named them.
    pub fn keys_in_order(&self) -> &[IdempotencyKey] {
        &self.key_order
    }

    /// Whether the history says when a waiting job becomes visible (`visible` records), or the
    /// checker infers it from its visible time.
    pub fn infers_visible(&self) -> bool {
        !self.config.emits.visible
    }

    pub fn infers_expiry(&self) -> bool {
        !self.config.emits.lease_expired
    }

    /// When `job`'s inferred transition to visible falls due (none: it has none): a waiting
    /// job at its visible time, a leased one the moment after its lease ends.
    pub fn due(&self, job: &Job) -> Option<SimTime> {
        match job.place {
            Place::Waiting if self.infers_visible() => Some(job.visible_from),
            Place::Leased if self.infers_expiry() => {
                Some(job.lease_end(&self.config).saturating_add(1))
            }
            _ => None,
        }
    }

    /// Applies every inferred transition that fell due before `at`.
    pub fn advance_to(&mut self, at: SimTime) {
        let mut now_ready = Vec::new();
        for id in &self.in_flight {
            if self.due(&self.jobs[id]).is_some_and(|d| d < at) {
                now_ready.push(*id);
            }
        }
        for id in now_ready {
            self.set_place(id, Place::Ready);
        }
    }

    fn set_place(&mut self, job: JobId, place: Place) {
        self.job_mut(job).place = place;
        if matches!(place, Place::Waiting | Place::Leased) {
            self.in_flight.insert(job);
        } else {
            self.in_flight.remove(&job);
        }
    }

    /// A decision (retry, dead-letter, cancel) by the holder of `fence` answers the job's
    /// pending failed attempt of that token, unless a later lease took the job.
    fn answer_failure(&mut self, job: JobId, fence: Option<Fence>) {
        let j = self.job_mut(job);
        if let Some(f) = fence {
            let superseded = j.leases > 0 && f != j.fence;
            if !superseded && j.failure.is_some_and(|x| x.fence == f) {
                j.failure = None;
            }
        }
    }

    /// A commit or a dedupe by `worker` of `job`: the latest lease issued to that worker has
    /// its own result (`main`: only the holder of the job's latest lease).
    fn own_commit(&mut self, job: JobId, worker: WorkerId) {
        let j = self.job_mut(job);
        if j.leases > 0 && j.holder == worker {
            j.main_own_result = true;
        }
        let latest = j
            .lease_order
            .iter()
            .rev()
            .find(|(_, w)| *w == worker)
            .copied();
        if let Some(lease) = latest {
            j.own_result.insert(lease, true);
        }
    }

    /// A `leased` or `retry_scheduled` of a job with a terminal record: a write a guard took by
    /// id revived it, and its next terminal record is what it becomes (`last_terminal(j)`).
    fn revive(&mut self, job: JobId) {
        let j = self.job_mut(job);
        if j.terminal.is_some() {
            j.last_terminal = None;
        }
    }

    /// A terminal record: the first one stays; the lease is released.
    fn terminal(&mut self, job: JobId, state: Terminal, at: SimTime) {
        let j = self.job_mut(job);
        j.lease_held = false;
        if j.terminal.is_none() {
            j.terminal = Some((state, at));
        }
        if j.last_terminal.is_none() {
            j.last_terminal = Some(state);
        }
        self.set_place(job, Place::Done);
    }

    /// Takes one record in.
    pub fn apply(&mut self, r: &Record) {
        self.apply_record(r);
        // A lease taken or renewed by this record gets its detection deadline.
        if let (Event::Leased { job, fence, .. } | Event::Heartbeat { job, fence, .. }, Some(d)) =
            (&r.event, self.detection)
        {
            let j = self.job(*job);
            if j.lease_held && j.fence == *fence && j.renewed_at == r.at {
                let at = d.deadline(j.renewed_at, j.lease_end(&self.config));
                self.deadlines.retain(|(_, k), _| k != job);
                self.deadlines.insert((at, *job), (*fence, r.at));
            }
        }
    }

    /// The detection deadlines passed before `at`, of leases still held as they were set, in
    /// (deadline, job) order; every deadline passed is forgotten.
    pub fn overdue(&mut self, at: SimTime) -> Vec<(SimTime, JobId)> {
        let mut out = Vec::new();
        while let Some((&(deadline, job), &(fence, renewed_at))) = self.deadlines.first_key_value()
        {
            if deadline >= at {
                break;
            }
            self.deadlines.pop_first();
            let j = self.job(job);
            if j.lease_held && j.fence == fence && j.renewed_at == renewed_at {
                out.push((deadline, job));
            }
        }
        out
    }

    fn apply_record(&mut self, r: &Record) {
        let at = r.at;
        *self.counts.by_type.entry(r.event.type_name()).or_default() += 1;
        if let Some(key) = named_key(&r.event) {
            self.named(key);
        }
        match &r.event {
            Event::RunStarted { config } => {
                self.config = (**config).clone();
                self.detection = Detection::of(config).filter(|_| config.emits.lease_expired);
            }
            Event::Enqueued {
                job,
                tenant,
                key,
                operation,
                content,
                visible_at,
                reprocess_of,
                ..
            } => {
                let payload = Payload {
                    operation: *operation,
                    content: *content,
                };
                let visible_from = visible_at.unwrap_or(at);
                let j = Job {
                    tenant: *tenant,
                    key: *key,
                    payload,
                    enqueued_at: at,
                    deadline_at: self
                        .config
                        .deadline
                        .map_or(SimTime::MAX, |d| at.saturating_add(d)),
                    visible_from,
                    leases: 0,
                    fence: Fence(0),
                    holder: WorkerId(0),
                    leased_at: 0,
                    renewed_at: 0,
                    renewed: false,
                    lease_held: false,
                    place: Place::Waiting,
                    terminal: None,
                    last_terminal: None,
                    failure: None,
                    failures: 0,
                    own_result: BTreeMap::new(),
                    main_own_result: false,
                    issued: BTreeSet::new(),
                    lease_order: Vec::new(),
                    dlq: DlqEntry::None,
                    reprocess_of: *reprocess_of,
                    audited: false,
                    reprocessed: false,
                    rescues: 0,
                    rescued_fence: None,
                };
                assert!(self.jobs.insert(*job, j).is_none(), "{job} enqueued twice");
                let place = if visible_from <= at {
                    Place::Ready
                } else {
                    Place::Waiting
                };
                self.set_place(*job, place);
                let k = self.key_mut(*key);
                k.newest = Some(*job);
                if !k.enqueued {
                    k.enqueued = true;
                    k.enqueue_payload = Some(payload);
                }
            }
            Event::EnqueueReplaced {
                existing,
                operation,
                content,
                ..
            } => {
                self.job_mut(*existing).payload = Payload {
                    operation: *operation,
                    content: *content,
                };
            }
            Event::Visible { job } if self.job(*job).place == Place::Waiting => {
                self.set_place(*job, Place::Ready);
            }
            Event::Leased {
                job, worker, fence, ..
            } => {
                self.revive(*job);
                let wait = at.saturating_sub(self.job(*job).visible_from);
                self.queue_waits.push(wait);
                // Liveness per process: the lease lives from its holder's last heartbeat, which
                // may precede the lease.
                let renewed_at = match self.config.stated.liveness {
                    Liveness::PerProcess => self.beats.get(worker).copied().unwrap_or(at),
                    Liveness::PerJob => at,
                };
                let j = self.job_mut(*job);
                j.own_result.insert((*fence, *worker), false);
                j.main_own_result = false;
                j.issued.insert((*fence, *worker));
                j.lease_order.push((*fence, *worker));
                j.leases += 1;
                j.fence = *fence;
                j.holder = *worker;
                j.leased_at = at;
                j.renewed_at = renewed_at;
                j.renewed = false;
                j.lease_held = true;
                j.failure = None;
                self.set_place(*job, Place::Leased);
            }
            Event::LeaseExpired { job, fence } => {
                let config = self.config.clone();
                let j = self.job_mut(*job);
                // Only the held lease of that token can expire; early, it stays held.
                if *fence == j.fence && j.lease_held {
                    if at > j.lease_end(&config) {
                        j.lease_held = false;
                    }
                    if j.place == Place::Leased {
                        self.set_place(*job, Place::Ready);
                    }
                }
            }
            Event::Heartbeat { job, fence, .. } => {
                let j = self.job_mut(*job);
                if *fence == j.fence && j.terminal.is_none() {
                    j.renewed_at = at;
                    j.renewed = true;
                }
            }
            Event::Rejected {
                job, op, presented, ..
            } => {
                if self.job(*job).fence != *presented {
                    self.counts.stale_rejections += 1;
                }
                if *op == Op::Ack {
                    self.counts.ack_rejections += 1;
                }
                let j = self.job_mut(*job);
                if matches!(op, Op::Retry | Op::DeadLetter | Op::Cancel)
                    && j.failure.is_some_and(|f| f.fence == *presented)
                {
                    j.failure = None;
                }
            }
            Event::AttemptFailed {
                job, fence, error, ..
            } => {
                let j = self.job_mut(*job);
                j.failure = Some(Failure {
                    fence: *fence,
                    error,
                    at,
                });
                j.failures += 1;
            }
            Event::ResultCommitted {
                job,
                worker,
                key,
                output,
                event,
                ..
            } => {
                self.own_commit(*job, *worker);
                let payload = self.job(*job).payload;
                self.counts.outbox_events += event.is_some() as u64;
                let k = self.key_mut(*key);
                if k.commits.is_empty() {
                    k.commit_payload = Some(payload);
                }
                k.commits.push((at, *job, *output, *event));
                if let Some(e) = event {
                    let e_ = self.events.entry(*e).or_default();
                    e_.written = true;
                    e_.origins.push((*key, *job));
                    self.pending.push_back(*e);
                }
            }
            Event::CommitDeduped { job, worker, .. } => self.own_commit(*job, *worker),
            Event::ExtractStarted {
                job, fence, worker, ..
            } => {
                self.extracting.insert((*worker, *job, *fence), at);
            }
            Event::ExtractDone {
                job,
                fence,
                inference,
                worker,
                ..
            } => {
                self.extracting.remove(&(*worker, *job, *fence));
                self.inferences.push(*inference);
            }
            Event::Acked { job, .. } => self.terminal(*job, Terminal::Acked, at),
            Event::RetryScheduled {
                job,
                fence,
                visible_at,
                ..
            } => {
                self.revive(*job);
                self.answer_failure(*job, Some(*fence));
                let j = self.job_mut(*job);
                j.visible_from = *visible_at;
                j.lease_held = false;
                self.set_place(*job, Place::Waiting);
            }
            Event::DeadLettered {
                job, fence, reason, ..
            } => {
                match reason.as_ref() {
                    "permanent_error" => self.counts.dlq_permanent += 1,
                    "max_attempts_exceeded" => self.counts.dlq_max_attempts += 1,
                    _ => self.counts.dlq_other += 1,
                }
                self.answer_failure(*job, *fence);
                self.job_mut(*job).dlq = DlqEntry::Held;
                // Dead-lettered again while held: the old entry leaves first.
                self.dlq.retain(|j| j != job);
                self.dlq.push_back(*job);
                self.dlq_most = self.dlq_most.max(self.dlq.len() as u64);
                if let Some(capacity) = self.config.dlq_capacity {
                    // Over capacity with no eviction record: the queue evidently dropped its
                    // oldest entry.
                    if self.dlq.len() > capacity as usize {
                        let oldest = self.dlq.pop_front().expect("a full DLQ");
                        self.job_mut(oldest).dlq = DlqEntry::Evicted;
                    }
                }
                self.terminal(*job, Terminal::DeadLettered, at);
            }
            Event::Cancelled { job, fence, .. } => {
                self.answer_failure(*job, *fence);
                self.terminal(*job, Terminal::Cancelled, at);
            }
            Event::DlqEvicted { job, .. } => {
                if let Some(i) = self.dlq.iter().position(|j| j == job) {
                    self.dlq.remove(i);
                }
                self.job_mut(*job).dlq = DlqEntry::Evicted;
            }
            Event::Published {
                event,
                key,
                job,
                direct,
                ..
            } => {
                self.counts.publishes += 1;
                self.counts.published += *direct as u64;
                let e = self.events.entry(*event).or_default();
                e.published = true;
                if *direct {
                    e.origins.push((*key, *job));
                    let k = self.keys.entry(*key).or_default();
                    if !k.direct.contains(event) {
                        k.direct.push(*event);
                    }
                }
            }
            Event::MarkedEvents { events } => {
                self.counts.published += events.len() as u64;
                for e in events.iter() {
                    if let Some(i) = self.pending.iter().position(|p| p == e) {
                        self.pending.remove(i);
                    }
                }
            }
            Event::WorkerHeartbeat { worker } => {
                self.beats.insert(*worker, at);
                for j in self.jobs.values_mut() {
                    if j.holder == *worker && j.lease_held && j.terminal.is_none() {
                        j.renewed_at = at;
                        j.renewed = true;
                    }
                }
            }
            Event::Rescued {
                job, visible_at, ..
            } => {
                let visible = visible_at.unwrap_or(at);
                let j = self.job_mut(*job);
                j.lease_held = false;
                j.visible_from = visible;
                j.rescues += 1;
                j.rescued_fence = Some(j.fence);
                if j.place != Place::Done {
                    let place = match visible <= at {
                        true => Place::Ready,
                        false => Place::Waiting,
                    };
                    self.set_place(*job, place);
                }
            }
            Event::MarkedPublished { count } => {
                self.counts.published += *count as u64;
                for _ in 0..*count {
                    self.pending.pop_front();
                }
            }
            Event::EffectApplied { event, key, .. } => {
                let e = self.events.entry(*event).or_default();
                e.applies += 1;
                e.last_applied = at;
                self.key_mut(*key).applied.get_or_insert((at, *event));
            }
            Event::ReviewDone { event, key, .. } => {
                let e = self.events.entry(*event).or_default();
                let wait = match e.applies > e.reviews {
                    true => at.saturating_sub(e.last_applied),
                    false => 0,
                };
                e.reviews += 1;
                self.review_waits.push(wait);
                self.key_mut(*key).reviewed = true;
            }
            Event::PayloadMutated { job, content, .. } => {
                self.job_mut(*job).payload.content = *content;
            }
            Event::ReprocessRefused { reason, .. } => {
                self.counts.rate_limited += (*reason == "rate_limited") as u64;
            }
            Event::Reprocessed {
                old_job, new_job, ..
            } => {
                let tenant = self.job(*old_job).tenant;
                self.reprocesses.entry(tenant).or_default().push(at);
                self.job_mut(*new_job).audited = true;
                self.job_mut(*old_job).reprocessed = true;
            }
            Event::RunEnded { quiescent } => self.ended = Some((at, *quiescent)),
            _ => {}
        }
    }

    /// The reprocesses `tenant` had accepted within the rate limit's window before `at`, and
    /// the limit (none without one).
    pub fn recent_reprocesses(&self, tenant: TenantId, at: SimTime) -> Option<(u64, u32, u64)> {
        let limit = self.config.reprocess_limit?;
        let n = self.reprocesses.get(&tenant).map_or(0, |ts| {
            ts.iter()
                .filter(|t| t.saturating_add(limit.window) > at)
                .count()
        });
        Some((n as u64, limit.max, limit.window))
    }
}

/// The key a record names in its `key` field, if it has one.
fn named_key(e: &Event) -> Option<IdempotencyKey> {
    match e {
        Event::Enqueued { key, .. }
        | Event::EnqueueDeduped { key, .. }
        | Event::EnqueueConflict { key, .. }
        | Event::EnqueueReplaced { key, .. }
        | Event::ResultCommitted { key, .. }
        | Event::CommitDeduped { key, .. }
        | Event::CommitConflict { key, .. }
        | Event::Published { key, .. }
        | Event::EffectApplied { key, .. }
        | Event::DuplicateEvent { key, .. }
        | Event::ReviewDone { key, .. } => Some(*key),
        _ => None,
    }
}

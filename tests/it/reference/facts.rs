//! The reference checker's facts: what the records say happened to every job, key, outbox event
//! and DLQ entry, and the counts, in ordinary maps, and [`Facts::apply`], their only writer.
//!
//! Owns: the state every rule reads. Nothing here judges: a rule reads the facts as the records
//! before the one it judges left them, then `apply` takes the record in. Conventions the
//! documentation leaves open are the real checker's and are written beside the field they shape
//! (a job never leased holds token 0; a key's payload is the first enqueue's, or the first
//! commit's when no enqueue came before it).
//! Does not: judge (the family files do) or count `sometimes` (`figures.rs`).

use durasim::base::ids::{EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use durasim::history::{Event, Op, Record};
use durasim::vocab::config::RunConfig;
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
    /// The enqueue time + the configured deadline.
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
    pub failure: Option<Failure>,
    /// `attempt_failed` records.
    pub failures: u32,
    pub dlq: DlqEntry,
    pub reprocess_of: Option<JobId>,
    /// A `reprocessed` record names it as the new job.
    pub audited: bool,
    /// A `reprocessed` record names it as the old job.
    pub reprocessed: bool,
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
    /// The first enqueue's payload, replaced by the first commit's when the commit came first
    /// (or by an enqueue's, when the key was first named by something else).
    pub payload: Option<Payload>,
    /// The newest job an `enqueued` created under the key.
    pub newest: Option<JobId>,
    /// `result_committed` records, and the first: when, by which job, which output.
    pub results: u32,
    pub first_commit: Option<(SimTime, JobId, u64)>,
    /// Outbox events written with results, and events published directly.
    pub events: u32,
    /// The event of the latest commit that wrote one (or of a first direct publish, when no
    /// commit wrote one before).
    pub result_event: Option<EventId>,
    /// When and from which event its effect was first applied.
    pub applied: Option<(SimTime, EventId)>,
    pub reviewed: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct OutboxEvent {
    pub published: bool,
    pub applied: bool,
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

#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub config: RunConfig,
    pub jobs: BTreeMap<JobId, Job>,
    pub keys: BTreeMap<IdempotencyKey, Key>,
    /// Keys in the order the history first named them in a record that creates a key's facts
    /// (an enqueue, a commit, a direct publish, an apply, a review).
    pub key_order: Vec<IdempotencyKey>,
    pub events: BTreeMap<EventId, OutboxEvent>,
    /// The DLQ's entries, oldest first, as the records put them in and took them out.
    pub dlq: VecDeque<JobId>,
    pub dlq_most: u64,
    /// Per tenant, the times of its accepted reprocesses.
    pub reprocesses: BTreeMap<TenantId, Vec<SimTime>>,
    pub counts: Counts,
    /// Jobs waiting or leased: the only ones a time can change.
    in_flight: BTreeSet<JobId>,
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

    fn key_mut(&mut self, key: IdempotencyKey) -> &mut Key {
        if !self.keys.contains_key(&key) {
            self.key_order.push(key);
        }
        self.keys.entry(key).or_default()
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

    /// A terminal record: the first one stays; the lease is released.
    fn terminal(&mut self, job: JobId, state: Terminal, at: SimTime) {
        let j = self.job_mut(job);
        j.lease_held = false;
        if j.terminal.is_none() {
            j.terminal = Some((state, at));
        }
        self.set_place(job, Place::Done);
    }

    /// Takes one record in.
    pub fn apply(&mut self, r: &Record) {
        let at = r.at;
        *self.counts.by_type.entry(r.event.type_name()).or_default() += 1;
        match &r.event {
            Event::RunStarted { config } => self.config = (**config).clone(),
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
                    deadline_at: at.saturating_add(self.config.deadline),
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
                    failure: None,
                    failures: 0,
                    dlq: DlqEntry::None,
                    reprocess_of: *reprocess_of,
                    audited: false,
                    reprocessed: false,
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
                    k.payload = Some(payload);
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
            Event::Visible { job } => {
                if self.job(*job).place == Place::Waiting {
                    self.set_place(*job, Place::Ready);
                }
            }
            Event::Leased {
                job, worker, fence, ..
            } => {
                let j = self.job_mut(*job);
                j.leases += 1;
                j.fence = *fence;
                j.holder = *worker;
                j.leased_at = at;
                j.renewed_at = at;
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
                job, key, output, event, ..
            } => {
                let payload = self.job(*job).payload;
                self.counts.outbox_events += event.is_some() as u64;
                let k = self.key_mut(*key);
                if k.first_commit.is_none() {
                    k.first_commit = Some((at, *job, *output));
                    k.payload = Some(payload);
                }
                k.results += 1;
                if let Some(e) = event {
                    k.result_event = Some(*e);
                    k.events += 1;
                }
            }
            Event::Acked { job, .. } => self.terminal(*job, Terminal::Acked, at),
            Event::RetryScheduled {
                job,
                fence,
                visible_at,
                ..
            } => {
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
                event, key, direct, ..
            } => {
                self.counts.publishes += 1;
                self.counts.published += *direct as u64;
                let e = self.events.entry(*event).or_default();
                let first = !e.published;
                e.published = true;
                if *direct && first {
                    let k = self.key_mut(*key);
                    k.events += 1;
                    k.result_event.get_or_insert(*event);
                }
            }
            Event::MarkedPublished { count } => self.counts.published += *count as u64,
            Event::EffectApplied { event, key, .. } => {
                self.events.entry(*event).or_default().applied = true;
                self.key_mut(*key).applied.get_or_insert((at, *event));
            }
            Event::ReviewDone { key, .. } => self.key_mut(*key).reviewed = true,
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
        let n = self
            .reprocesses
            .get(&tenant)
            .map_or(0, |ts| ts.iter().filter(|t| t.saturating_add(limit.window) > at).count());
        Some((n as u64, limit.max, limit.window))
    }
}

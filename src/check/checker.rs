//! The checker: judges a history, and nothing else.
//!
//! Owns: per-job, per-key and per-event state rebuilt from the records as they stream past, the
//! verdict on every invariant, and the counts of `sometimes` properties. It never looks at the
//! model: it could judge a history recorded from a real queue and database.
//! Does not: keep the history (a violation keeps the few records that prove it).

use super::invariant::{Invariant, Sometimes};
use crate::history::{Event, Observer, Record};
use crate::ids::{EventId, Fence, JobId, OperationId, SimTime, TenantId};
use crate::key_index::KeyIndex;
use crate::vocab::codes::DLQ_REASONS as DLQ_CODES;
use crate::vocab::config::RunConfig;
use crate::vocab::key::IdempotencyKey;

/// What a payload is, as the history records it at enqueue: the operation and the content's
/// fingerprint (the document is the key's). Two requests under one key carry the same payload
/// exactly when these are equal; the recorded payload hash is not trusted for that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PayloadId {
    pub operation: OperationId,
    pub content: u64,
}

impl std::fmt::Display for PayloadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "content {:016x}", self.content)?;
        if self.operation != OperationId::EXTRACT {
            write!(f, " ({})", self.operation)?;
        }
        Ok(())
    }
}

/// One violation, with the records that prove it.
#[derive(Clone, Debug)]
pub struct Violation {
    pub invariant: Invariant,
    pub at: SimTime,
    pub job: Option<JobId>,
    pub key: Option<IdempotencyKey>,
    pub message: String,
    pub evidence: Vec<Record>,
}

#[derive(Clone, Debug, Default)]
pub struct Verdict {
    pub count: u64,
    pub first: Option<Violation>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Terminal {
    Acked,
    DeadLettered,
    Cancelled,
}

#[derive(Clone, Copy, Debug)]
struct JobTrack {
    tenant: TenantId,
    key: IdempotencyKey,
    /// The payload as enqueued, or as last changed by `payload_mutated`.
    payload: PayloadId,
    enqueued_at: SimTime,
    deadline_at: SimTime,
    /// The fence of the latest lease, and whether that lease is still held.
    fence: Fence,
    lease_until: SimTime,
    lease_held: bool,
    leased_at: SimTime,
    leases: u32,
    terminal: Option<(Terminal, SimTime)>,
    reprocessed_from: Option<JobId>,
    audited: bool,
    /// An audited reprocess created a successor: the work goes on under another job.
    reprocessed: bool,
}

/// What the history said about one key. 64 bytes: a million keys are tracked, so optional
/// fields are kept as values plus flags (`first_*` is meaningful once `results > 0`).
#[derive(Clone, Copy, Debug, Default)]
struct KeyTrack {
    payload: PayloadId,
    first_at: SimTime,
    first_output: u64,
    result_event: EventId,
    applied_at: SimTime,
    applied_event: EventId,
    first_job: JobId,
    results: u32,
    events: u32,
    has_payload: bool,
    enqueued: bool,
    has_result_event: bool,
    applied: bool,
    reviewed: bool,
}

impl KeyTrack {
    fn payload(&self) -> Option<PayloadId> {
        self.has_payload.then_some(self.payload)
    }

    fn set_payload(&mut self, payload: PayloadId) {
        self.payload = payload;
        self.has_payload = true;
    }

    /// The first result committed for the key: when, by which job, with which output.
    fn first_commit(&self) -> Option<(SimTime, JobId, u64)> {
        (self.results > 0).then_some((self.first_at, self.first_job, self.first_output))
    }

    fn result_event(&self) -> Option<EventId> {
        self.has_result_event.then_some(self.result_event)
    }

    fn set_result_event(&mut self, event: EventId) {
        self.result_event = event;
        self.has_result_event = true;
    }

    /// When the key's effect was first applied, and from which event.
    fn applied(&self) -> Option<(SimTime, EventId)> {
        self.applied
            .then_some((self.applied_at, self.applied_event))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct EventTrack {
    key: u64,
    job: u32,
    published: bool,
    applied: bool,
}

pub struct Checker {
    config: RunConfig,
    jobs: Vec<Option<JobTrack>>,
    /// Per-key state, `keys[slot]` for the key in `slot` of `key_index` (slots in the order the
    /// history first names each key).
    key_index: KeyIndex,
    keys: Vec<KeyTrack>,
    events: Vec<EventTrack>,
    verdicts: Vec<Verdict>,
    sometimes: Vec<u64>,
    ended: Option<(SimTime, bool)>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    pub fn new() -> Checker {
        Checker {
            config: RunConfig::default(),
            jobs: Vec::new(),
            key_index: KeyIndex::default(),
            keys: Vec::new(),
            events: Vec::new(),
            verdicts: vec![Verdict::default(); Invariant::ALL.len()],
            sometimes: vec![0; Sometimes::ALL.len()],
            ended: None,
        }
    }

    pub fn with_capacity(jobs: usize) -> Checker {
        let mut c = Checker::new();
        c.jobs.reserve(jobs);
        c.key_index = KeyIndex::with_capacity(jobs);
        c.keys.reserve(jobs);
        c.events.reserve(jobs + 1);
        c
    }

    fn violate(
        &mut self,
        invariant: Invariant,
        at: SimTime,
        job: Option<JobId>,
        key: Option<IdempotencyKey>,
        message: impl FnOnce() -> String,
        evidence: impl FnOnce() -> Vec<Record>,
    ) {
        let v = &mut self.verdicts[invariant as usize];
        v.count += 1;
        if v.first.is_none() {
            v.first = Some(Violation {
                invariant,
                at,
                job,
                key,
                message: message(),
                evidence: evidence(),
            });
        }
    }

    fn reached(&mut self, s: Sometimes) {
        self.sometimes[s as usize] += 1;
    }

    fn job(&self, job: JobId) -> Option<&JobTrack> {
        self.jobs.get(job.index()).and_then(|j| j.as_ref())
    }

    fn job_mut(&mut self, job: JobId) -> &mut JobTrack {
        self.jobs
            .get_mut(job.index())
            .and_then(|j| j.as_mut())
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"))
    }

    /// The key's track, created (empty) the first time the history names the key.
    fn key_mut(&mut self, key: &IdempotencyKey) -> &mut KeyTrack {
        let (slot, new) = self.key_index.insert(*key);
        if new {
            self.keys.push(KeyTrack::default());
        }
        &mut self.keys[slot as usize]
    }

    /// The key's track so far (empty if the history never named it).
    fn key_track(&self, key: &IdempotencyKey) -> KeyTrack {
        self.key_index
            .get(key)
            .map_or_else(KeyTrack::default, |slot| self.keys[slot as usize])
    }

    fn event_mut(&mut self, event: EventId) -> &mut EventTrack {
        let i = event.0 as usize;
        if self.events.len() <= i {
            self.events.resize(i + 1, EventTrack::default());
        }
        &mut self.events[i]
    }

    /// An accepted fenced call by a lease holder: the fence must be current and the job live.
    fn fenced(&mut self, r: &Record, job: JobId, fence: Fence, what: &'static str) {
        let t = *self.job_mut(job);
        if t.fence != fence {
            self.violate(
                Invariant::FencedWrites,
                r.at,
                Some(job),
                Some(t.key),
                || {
                    format!(
                        "{what} of {job} accepted with {fence}, but the current lease holds {}",
                        t.fence
                    )
                },
                || vec![r.clone()],
            );
        }
        if let Some((state, when)) = t.terminal {
            self.violate(
                Invariant::TerminalOnce,
                r.at,
                Some(job),
                Some(t.key),
                || format!("{what} of {job} accepted after it was already {state:?} at {when} ms"),
                || vec![r.clone()],
            );
        }
    }

    fn terminal(&mut self, r: &Record, job: JobId, state: Terminal) {
        let t = self.job_mut(job);
        let previous = t.terminal;
        t.lease_held = false;
        if previous.is_none() {
            t.terminal = Some((state, r.at));
        }
        if let Some((was, when)) = previous {
            let key = t.key;
            self.violate(
                Invariant::TerminalOnce,
                r.at,
                Some(job),
                Some(key),
                || format!("{job} became {state:?} after it was already {was:?} at {when} ms"),
                || vec![r.clone()],
            );
        }
    }

    pub fn observe_record(&mut self, r: &Record) {
        let at = r.at;
        match &r.event {
            Event::RunStarted { config } => self.config = (**config).clone(),
            Event::Enqueued {
                job,
                tenant,
                key,
                operation,
                content,
                reprocess_of,
                ..
            } => {
                let payload = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                if self.jobs.len() <= job.index() {
                    self.jobs.resize(job.index() + 1, None);
                }
                self.jobs[job.index()] = Some(JobTrack {
                    tenant: *tenant,
                    key: *key,
                    payload,
                    enqueued_at: at,
                    deadline_at: at.saturating_add(self.config.deadline),
                    fence: Fence(0),
                    lease_until: 0,
                    lease_held: false,
                    leased_at: 0,
                    leases: 0,
                    terminal: None,
                    reprocessed_from: *reprocess_of,
                    audited: false,
                    reprocessed: false,
                });
                if key.tenant != Some(*tenant) {
                    self.violate(
                        Invariant::TenantIsolation,
                        at,
                        Some(*job),
                        Some(*key),
                        || format!("{job} of {tenant} was enqueued under a key that does not embed its tenant"),
                        || vec![r.clone()],
                    );
                }
                let k = self.key_mut(key);
                if !k.enqueued {
                    k.enqueued = true;
                    k.set_payload(payload);
                }
            }
            Event::EnqueueDeduped {
                tenant,
                key,
                operation,
                content,
                existing,
                ..
            } => {
                let payload = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                self.reached(Sometimes::EnqueueDeduped);
                let existing_tenant = self.job(*existing).map(|j| j.tenant);
                let k = self.key_track(key);
                if existing_tenant != Some(*tenant) {
                    self.violate(
                        Invariant::TenantIsolation,
                        at,
                        Some(*existing),
                        Some(*key),
                        || format!("a request of {tenant} was resolved to {existing}, which belongs to {existing_tenant:?}"),
                        || vec![r.clone()],
                    );
                }
                if k.payload() != Some(payload) {
                    self.violate(
                        Invariant::PayloadConflictRejected,
                        at,
                        Some(*existing),
                        Some(*key),
                        || format!("an enqueue with {payload} was deduplicated onto {existing}, enqueued with {}", k.payload().map_or("no payload".to_string(), |p| p.to_string())),
                        || vec![r.clone()],
                    );
                }
            }
            Event::EnqueueConflict { .. } => self.reached(Sometimes::PayloadConflict),
            Event::Visible { .. } => {}
            Event::Leased {
                job,
                fence,
                attempt,
                ..
            } => {
                let lease_until = at.saturating_add(self.config.lease);
                let t = *self.job_mut(*job);
                if t.lease_held && t.lease_until >= at {
                    self.violate(
                        Invariant::SingleLiveLease,
                        at,
                        Some(*job),
                        Some(t.key),
                        || format!("{job} leased with {fence} while the lease {} taken at {} ms is live until {} ms", t.fence, t.leased_at, t.lease_until),
                        || vec![r.clone()],
                    );
                }
                let leases = t.leases + 1;
                let max = self.config.attempts_max;
                if leases > max || attempt.is_some_and(|a| a > max) {
                    self.violate(
                        Invariant::AttemptsBounded,
                        at,
                        Some(*job),
                        Some(t.key),
                        || format!("{job} leased for attempt {leases} (max_attempts = {max})"),
                        || vec![r.clone()],
                    );
                }
                if at > t.deadline_at {
                    self.violate(
                        Invariant::DeadlineRespected,
                        at,
                        Some(*job),
                        Some(t.key),
                        || {
                            format!(
                                "{job} leased at {at} ms, after its deadline at {} ms",
                                t.deadline_at
                            )
                        },
                        || vec![r.clone()],
                    );
                }
                if let Some((state, when)) = t.terminal {
                    self.violate(
                        Invariant::TerminalOnce,
                        at,
                        Some(*job),
                        Some(t.key),
                        || format!("{job} leased again after it was {state:?} at {when} ms"),
                        || vec![r.clone()],
                    );
                }
                let tm = self.job_mut(*job);
                tm.leases = leases;
                tm.fence = *fence;
                tm.lease_until = lease_until;
                tm.lease_held = true;
                tm.leased_at = at;
            }
            Event::LeaseExpired { job, fence } => {
                self.reached(Sometimes::LeaseExpired);
                let t = self.job_mut(*job);
                if t.fence == *fence {
                    t.lease_held = false;
                }
            }
            Event::Heartbeat { job, fence, .. } => {
                self.reached(Sometimes::HeartbeatRenewed);
                self.fenced(r, *job, *fence, "heartbeat");
                let lease_until = at.saturating_add(self.config.lease);
                let t = self.job_mut(*job);
                if t.fence == *fence {
                    t.lease_until = lease_until;
                }
            }
            Event::Rejected { job, presented, .. } => {
                // A writer whose token is not the job's latest was refused, whatever the reason
                // the queue gave (a queue without tokens records none).
                if self.job_mut(*job).fence != *presented {
                    self.reached(Sometimes::StaleFenceRejected);
                }
            }
            Event::ExtractStarted { stalled, .. } => {
                if *stalled {
                    self.reached(Sometimes::Stalled);
                }
            }
            Event::ExtractDone { .. } | Event::AttemptFailed { .. } | Event::StallBegan { .. } => {}
            Event::ResultCommitted {
                job,
                key,
                output,
                event,
                ..
            } => {
                let payload = self.job_mut(*job).payload;
                let k = self.key_mut(key);
                let first = k.first_commit();
                if first.is_none() {
                    (k.first_at, k.first_job, k.first_output) = (at, *job, *output);
                    k.set_payload(payload);
                }
                k.results += 1;
                let results = k.results;
                if let Some(e) = event {
                    k.set_result_event(*e);
                    k.events += 1;
                }
                if let Some(e) = event {
                    let t = self.event_mut(*e);
                    t.key = key.packed();
                    t.job = job.0;
                }
                if results > 1 {
                    let (first_at, first_job, _) = first.unwrap_or_default();
                    self.violate(
                        Invariant::SingleResultPerKey,
                        at,
                        Some(*job),
                        Some(*key),
                        || format!("a second result was committed for the key by {job}; the first was by {first_job} at {first_at} ms"),
                        || vec![r.clone()],
                    );
                }
            }
            Event::CommitDeduped { job, key, .. } => {
                self.reached(Sometimes::CommitDeduped);
                let payload = self.job_mut(*job).payload;
                let k = self.key_track(key);
                if k.payload() != Some(payload) {
                    self.violate(
                        Invariant::PayloadConflictRejected,
                        at,
                        Some(*job),
                        Some(*key),
                        || format!("a commit by {job} with {payload} was deduplicated onto a result committed with {}", k.payload().map_or("no payload".to_string(), |p| p.to_string())),
                        || vec![r.clone()],
                    );
                }
            }
            Event::CommitConflict { .. } => self.reached(Sometimes::PayloadConflict),
            Event::Acked { job, fence, .. } => {
                self.fenced(r, *job, *fence, "ack");
                self.terminal(r, *job, Terminal::Acked);
            }
            Event::RetryScheduled { job, fence, .. } => {
                self.reached(Sometimes::RetryScheduled);
                self.fenced(r, *job, *fence, "retry");
                self.job_mut(*job).lease_held = false;
            }
            Event::DeadLettered {
                job, fence, reason, ..
            } => {
                self.reached(Sometimes::DeadLettered);
                if let Some(fence) = fence {
                    self.fenced(r, *job, *fence, "dead-letter");
                }
                if !DLQ_CODES.contains(&reason.as_ref()) {
                    let key = self.job(*job).map(|j| j.key);
                    self.violate(
                        Invariant::RedactedDlq,
                        at,
                        Some(*job),
                        key,
                        || format!("{job} entered the DLQ with reason {reason:?}, which is not one of {DLQ_CODES:?}"),
                        || vec![r.clone()],
                    );
                }
                self.terminal(r, *job, Terminal::DeadLettered);
            }
            Event::Cancelled { job, fence, .. } => {
                self.reached(Sometimes::DeadlineCancellation);
                if let Some(fence) = fence {
                    self.fenced(r, *job, *fence, "cancel");
                }
                self.terminal(r, *job, Terminal::Cancelled);
            }
            Event::DlqEvicted { job, .. } => {
                let capacity = self
                    .config
                    .dlq_capacity
                    .map_or("unbounded".to_string(), |c| c.to_string());
                // The DLQ entry was the job's terminal record. Unless a reprocess already carried
                // the work on, the job has now left the system with no record of how it ended.
                let t = *self.job_mut(*job);
                if !t.reprocessed {
                    self.violate(
                        Invariant::NoSilentDrop,
                        at,
                        Some(*job),
                        Some(t.key),
                        || match t.terminal {
                            Some((Terminal::DeadLettered, when)) => format!("{job}, dead-lettered at {when} ms, was evicted from the full DLQ (capacity {capacity}) before any reprocess: it left the system with no terminal record"),
                            other => format!("{job} was evicted from the DLQ (capacity {capacity}) while {:?}, never dead-lettered: it left the system with no terminal record", other.map(|t| t.0)),
                        },
                        || vec![r.clone()],
                    );
                }
            }
            Event::WorkerCrashed { .. } => self.reached(Sometimes::WorkerCrashed),
            Event::WorkerRestarted { .. } => {}
            Event::Published {
                event,
                key,
                job,
                direct,
                ..
            } => {
                let t = self.event_mut(*event);
                let first_publish = !t.published;
                t.published = true;
                t.key = key.packed();
                t.job = job.0;
                if *direct && first_publish {
                    let k = self.key_mut(key);
                    k.events += 1;
                    if !k.has_result_event {
                        k.set_result_event(*event);
                    }
                }
            }
            Event::MarkedPublished { .. } | Event::OutboxPruned { .. } => {}
            Event::RelayCrashed { .. } => self.reached(Sometimes::RelayCrashed),
            Event::EffectApplied {
                event,
                key,
                job,
                output,
            } => {
                let t = self.event_mut(*event);
                let twice = t.applied;
                t.applied = true;
                let k = self.key_mut(key);
                let earlier = k.applied();
                if earlier.is_none() {
                    (k.applied, k.applied_at, k.applied_event) = (true, at, *event);
                }
                let first = k.first_commit();
                if twice || earlier.is_some() {
                    self.violate(
                        Invariant::NoDuplicateEffect,
                        at,
                        Some(*job),
                        Some(*key),
                        || match earlier {
                            Some((when, e)) => format!("the effect of {event} was applied, but the key's effect was already applied at {when} ms from {e}"),
                            None => format!("{event} was applied twice"),
                        },
                        || vec![r.clone()],
                    );
                }
                match first {
                    Some((_, first_job, first_output)) if first_output != *output => self.violate(
                        Invariant::FirstResultWins,
                        at,
                        Some(*job),
                        Some(*key),
                        || format!("the consumer applied output {output:x}, but the first committed result (by {first_job}) was {first_output:x}"),
                        || vec![r.clone()],
                    ),
                    _ => {}
                }
            }
            Event::DuplicateEvent { .. } => self.reached(Sometimes::RepublishAbsorbed),
            Event::ReviewDone { key, .. } => {
                self.key_mut(key).reviewed = true;
            }
            Event::PayloadMutated { job, content, .. } => {
                self.job_mut(*job).payload.content = *content;
            }
            Event::ReprocessRefused { .. } => {}
            Event::Reprocessed {
                old_job,
                new_job,
                operator,
            } => {
                self.reached(Sometimes::Reprocessed);
                let old = self.job(*old_job).copied();
                let new = self.job(*new_job).copied();
                let problem = match (old, new) {
                    (_, None) => Some(format!(
                        "audit entry names {new_job}, which was never enqueued"
                    )),
                    (None, _) => Some(format!(
                        "audit entry names {old_job}, which was never enqueued"
                    )),
                    (Some(o), Some(n)) => {
                        if operator.trim().is_empty() {
                            Some("the audit entry has no operator".to_string())
                        } else if !matches!(o.terminal, Some((Terminal::DeadLettered, _))) {
                            Some(format!(
                                "{old_job} was reprocessed while {:?}, not dead-lettered",
                                o.terminal.map(|t| t.0)
                            ))
                        } else if n.reprocessed_from != Some(*old_job) {
                            Some(format!(
                                "{new_job} is not recorded as created from {old_job}"
                            ))
                        } else if n.key.version != o.key.version + 1
                            || n.key.document != o.key.document
                            || n.tenant != o.tenant
                        {
                            Some(format!(
                                "{new_job} must be the same tenant and document with version {}",
                                o.key.version + 1
                            ))
                        } else {
                            None
                        }
                    }
                };
                if let Some(t) = self.jobs.get_mut(new_job.index()).and_then(|j| j.as_mut()) {
                    t.audited = true;
                }
                if let Some(t) = self.jobs.get_mut(old_job.index()).and_then(|j| j.as_mut()) {
                    t.reprocessed = true;
                }
                if let Some(message) = problem {
                    let key = new.map(|n| n.key);
                    self.violate(
                        Invariant::AuditedReprocess,
                        at,
                        Some(*new_job),
                        key,
                        || message,
                        || vec![r.clone()],
                    );
                }
            }
            Event::DepthSampled { .. } => {}
            Event::RunEnded { quiescent } => self.ended = Some((at, *quiescent)),
        }
    }

    /// Evaluates the `eventually` invariants (at the end of the history) and returns the
    /// verdict of every invariant.
    pub fn finish(mut self) -> CheckReport {
        let (end, quiescent) = self.ended.unwrap_or((0, false));
        let unsettled = if quiescent {
            ""
        } else {
            " (the run hit its time limit before it settled)"
        };
        // Keys in the order the history first named them: stable, and no sort.
        let keys = std::mem::take(&mut self.keys);
        for (slot, k) in keys.into_iter().enumerate() {
            let key = self.key_index.key(slot as u32);
            if k.results > 0 && k.events == 0 {
                let (when, job, _) = k.first_commit().unwrap_or_default();
                self.violate(
                    Invariant::EventPerResult,
                    end,
                    Some(job),
                    Some(key),
                    || format!("the result committed by {job} at {when} ms has no event: nothing will ever announce it{unsettled}"),
                    Vec::new,
                );
            } else if let Some(e) = k.result_event() {
                let published = self.events.get(e.0 as usize).is_some_and(|t| t.published);
                if !published {
                    let (_, job, _) = k.first_commit().unwrap_or_default();
                    self.violate(
                        Invariant::EventPerResult,
                        end,
                        Some(job),
                        Some(key),
                        || {
                            format!(
                                "{e} was written with the result but never published{unsettled}"
                            )
                        },
                        Vec::new,
                    );
                }
            }
            if k.results > 0 && (!k.applied || !k.reviewed) {
                let (when, job, _) = k.first_commit().unwrap_or_default();
                let what = if !k.applied {
                    "never applied by the consumer"
                } else {
                    "applied but its review never finished"
                };
                self.violate(
                    Invariant::EveryResultDelivered,
                    end,
                    Some(job),
                    Some(key),
                    || format!("the result committed by {job} at {when} ms was {what}{unsettled}"),
                    Vec::new,
                );
            }
        }
        for i in 0..self.jobs.len() {
            let Some(t) = self.jobs[i] else { continue };
            let job = JobId(i as u32);
            if t.terminal.is_none() {
                self.violate(
                    Invariant::NoSilentDrop,
                    end,
                    Some(job),
                    Some(t.key),
                    || format!("{job}, enqueued at {} ms, has no terminal record (acked, dead-lettered or cancelled){unsettled}", t.enqueued_at),
                    Vec::new,
                );
            }
            if t.reprocessed_from.is_some() && !t.audited {
                self.violate(
                    Invariant::AuditedReprocess,
                    end,
                    Some(job),
                    Some(t.key),
                    || format!("{job} was created by a reprocess with no audit entry"),
                    Vec::new,
                );
            }
        }
        CheckReport {
            verdicts: Invariant::ALL
                .iter()
                .map(|i| (*i, self.verdicts[*i as usize].clone()))
                .collect(),
            sometimes: Sometimes::ALL
                .iter()
                .map(|s| (*s, self.sometimes[*s as usize]))
                .collect(),
            quiescent,
        }
    }
}

impl Observer for Checker {
    #[inline]
    fn observe(&mut self, record: &Record) {
        self.observe_record(record);
    }
}

/// The checker's conclusion.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub verdicts: Vec<(Invariant, Verdict)>,
    pub sometimes: Vec<(Sometimes, u64)>,
    pub quiescent: bool,
}

impl CheckReport {
    pub fn violated(&self) -> Vec<Invariant> {
        self.verdicts
            .iter()
            .filter(|(_, v)| v.count > 0)
            .map(|(i, _)| *i)
            .collect()
    }

    pub fn holds(&self) -> bool {
        self.verdicts.iter().all(|(_, v)| v.count == 0)
    }

    pub fn verdict(&self, invariant: Invariant) -> &Verdict {
        &self
            .verdicts
            .iter()
            .find(|(i, _)| *i == invariant)
            .expect("every invariant has a verdict")
            .1
    }

    pub fn reached(&self, s: Sometimes) -> u64 {
        self.sometimes
            .iter()
            .find(|(x, _)| *x == s)
            .map_or(0, |(_, n)| *n)
    }

    /// The earliest first violation across invariants (by virtual time, then invariant order).
    pub fn first_violation(&self) -> Option<&Violation> {
        self.verdicts
            .iter()
            .filter_map(|(_, v)| v.first.as_ref())
            .min_by_key(|v| (v.at, v.invariant))
    }
}

#[cfg(test)]
mod tests {
    //! The checker judges hand-written histories: it needs no model to run.
    use super::*;
    use crate::ids::{DocumentId, WorkerId};

    const T: TenantId = TenantId(0);

    fn key() -> IdempotencyKey {
        IdempotencyKey::new(T, DocumentId(1), 1).unwrap()
    }

    fn judge(records: Vec<(SimTime, Event)>) -> CheckReport {
        let mut c = Checker::new();
        c.observe_record(&Record {
            at: 0,
            event: Event::RunStarted {
                config: Box::new(RunConfig {
                    attempts_max: 3,
                    lease: 100,
                    deadline: 1000,
                    dlq_capacity: Some(2),
                    ..RunConfig::default()
                }),
            },
        });
        for (at, event) in records {
            c.observe_record(&Record { at, event });
        }
        c.finish()
    }

    fn enqueue(job: u32, tenant: TenantId, key: IdempotencyKey, from: Option<u32>) -> Event {
        Event::Enqueued {
            job: JobId(job),
            tenant,
            key,
            operation: OperationId::EXTRACT,
            content: 7,
            payload: None,
            visible_at: None,
            deadline_at: None,
            reprocess_of: from.map(JobId),
        }
    }

    fn enqueued() -> Event {
        enqueue(0, T, key(), None)
    }

    fn leased(fence: u64, attempt: u32) -> Event {
        Event::Leased {
            job: JobId(0),
            worker: WorkerId(0),
            fence: Fence(fence),
            attempt: Some(attempt),
            lease_until: None,
            visible_at: None,
        }
    }

    fn committed(output: u64, event: u64) -> Event {
        Event::ResultCommitted {
            job: JobId(0),
            worker: WorkerId(0),
            key: key(),
            payload: None,
            output,
            event: Some(EventId(event)),
        }
    }

    fn delivered(event: u64, output: u64) -> Vec<Event> {
        vec![
            Event::Published {
                event: EventId(event),
                key: key(),
                job: JobId(0),
                output,
                send: Some(1),
                direct: false,
            },
            Event::EffectApplied {
                event: EventId(event),
                key: key(),
                job: JobId(0),
                output,
            },
            Event::ReviewDone {
                event: EventId(event),
                key: key(),
                job: JobId(0),
            },
        ]
    }

    fn ended() -> Event {
        Event::RunEnded { quiescent: true }
    }

    fn happy() -> Vec<(SimTime, Event)> {
        let mut h = vec![(0, enqueued()), (0, leased(1, 1)), (10, committed(5, 1))];
        h.extend(delivered(1, 5).into_iter().map(|e| (20, e)));
        h.push((
            30,
            Event::Acked {
                job: JobId(0),
                worker: WorkerId(0),
                fence: Fence(1),
            },
        ));
        h.push((30, ended()));
        h
    }

    #[test]
    fn a_clean_history_holds() {
        let r = judge(happy());
        assert!(r.holds(), "{:?}", r.first_violation());
    }

    #[test]
    fn a_stale_ack_accepted_breaks_fenced_writes() {
        let mut h = happy();
        h.insert(
            3,
            (
                150,
                Event::LeaseExpired {
                    job: JobId(0),
                    fence: Fence(1),
                },
            ),
        );
        h.insert(4, (150, leased(2, 2)));
        let r = judge(h);
        let v = r
            .verdict(Invariant::FencedWrites)
            .first
            .as_ref()
            .expect("caught");
        assert!(
            v.message.contains("fence-1") && v.message.contains("fence-2"),
            "{}",
            v.message
        );
        assert_eq!(v.evidence.len(), 1);
    }

    #[test]
    fn two_effects_for_one_key_and_a_later_output_are_caught() {
        let mut h = happy();
        h.pop();
        h.push((40, committed(6, 2)));
        h.extend(delivered(2, 6).into_iter().map(|e| (50, e)));
        h.push((60, ended()));
        let r = judge(h);
        assert_eq!(
            r.violated(),
            vec![
                Invariant::SingleResultPerKey,
                Invariant::NoDuplicateEffect,
                Invariant::FirstResultWins
            ]
        );
    }

    #[test]
    fn leasing_past_the_deadline_or_past_max_attempts_is_caught() {
        let h = vec![
            (0, enqueued()),
            (1001, leased(1, 1)),
            (1200, leased(2, 2)),
            (1400, leased(3, 3)),
            (1600, leased(4, 4)),
        ];
        let r = judge(h);
        assert!(r.verdict(Invariant::DeadlineRespected).count >= 1);
        assert_eq!(r.verdict(Invariant::AttemptsBounded).count, 1);
        assert_eq!(
            r.verdict(Invariant::NoSilentDrop).count,
            1,
            "never terminal"
        );
    }

    #[test]
    fn a_result_that_never_gets_an_event_breaks_event_per_result() {
        let h = vec![
            (0, enqueued()),
            (0, leased(1, 1)),
            (
                10,
                Event::ResultCommitted {
                    job: JobId(0),
                    worker: WorkerId(0),
                    key: key(),
                    payload: None,
                    output: 5,
                    event: None,
                },
            ),
            (
                30,
                Event::Acked {
                    job: JobId(0),
                    worker: WorkerId(0),
                    fence: Fence(1),
                },
            ),
            (30, ended()),
        ];
        let r = judge(h);
        assert_eq!(
            r.violated(),
            vec![Invariant::EventPerResult, Invariant::EveryResultDelivered]
        );
    }

    #[test]
    fn raw_dlq_reasons_and_unaudited_reprocesses_are_caught() {
        let h = vec![
            (0, enqueued()),
            (
                5,
                Event::DeadLettered {
                    job: JobId(0),
                    worker: None,
                    fence: None,
                    attempts: Some(1),
                    reason: "parser: total 'ACME' invalid".into(),
                },
            ),
            (
                9,
                enqueue(
                    1,
                    T,
                    IdempotencyKey::new(T, DocumentId(1), 2).unwrap(),
                    Some(0),
                ),
            ),
            (
                9,
                Event::Cancelled {
                    job: JobId(1),
                    worker: None,
                    fence: None,
                    deadline_at: None,
                },
            ),
            (10, ended()),
        ];
        let r = judge(h);
        assert_eq!(
            r.violated(),
            vec![Invariant::RedactedDlq, Invariant::AuditedReprocess]
        );
    }

    #[test]
    fn a_request_resolved_to_another_tenants_job_breaks_isolation() {
        let tenantless = IdempotencyKey::tenantless_for_bug_switch(DocumentId(1), 1);
        let h = vec![
            (0, enqueue(0, T, tenantless, None)),
            (
                1,
                Event::EnqueueDeduped {
                    tenant: TenantId(1),
                    key: tenantless,
                    operation: OperationId::EXTRACT,
                    content: 7,
                    payload: None,
                    existing: JobId(0),
                },
            ),
        ];
        let r = judge(h);
        assert_eq!(r.verdict(Invariant::TenantIsolation).count, 2);
    }

    fn dead_lettered(job: u32) -> Event {
        Event::DeadLettered {
            job: JobId(job),
            worker: None,
            fence: None,
            attempts: Some(1),
            reason: "permanent_error".into(),
        }
    }

    fn enqueued_doc(job: u32, version: u32, from: Option<u32>) -> Event {
        enqueue(
            job,
            T,
            IdempotencyKey::new(T, DocumentId(job), version).unwrap(),
            from,
        )
    }

    // A DLQ with a capacity: the entry evicted before any reprocess was the job's only terminal
    // record, so the job is lost; an entry already reprocessed can go.
    #[test]
    fn a_dlq_eviction_before_reprocess_is_a_silent_drop() {
        let mut successor = enqueued_doc(2, 1, Some(1));
        if let Event::Enqueued { key, .. } = &mut successor {
            *key = IdempotencyKey::new(T, DocumentId(1), 2).unwrap();
        }
        let h = vec![
            (0, enqueued_doc(0, 1, None)),
            (0, enqueued_doc(1, 1, None)),
            (5, dead_lettered(0)),
            (6, dead_lettered(1)),
            (7, successor),
            (
                7,
                Event::Reprocessed {
                    old_job: JobId(1),
                    new_job: JobId(2),
                    operator: "ana".into(),
                },
            ),
            (8, dead_lettered(2)),
            (
                8,
                Event::DlqEvicted {
                    job: JobId(0),
                    capacity: Some(2),
                },
            ),
            (
                9,
                Event::DlqEvicted {
                    job: JobId(1),
                    capacity: Some(2),
                },
            ),
            (10, ended()),
        ];
        let r = judge(h);
        assert_eq!(r.violated(), vec![Invariant::NoSilentDrop]);
        let v = r.verdict(Invariant::NoSilentDrop);
        assert_eq!(v.count, 1, "the reprocessed job-1 is not lost");
        let first = v.first.as_ref().unwrap();
        assert_eq!((first.at, first.job), (8, Some(JobId(0))));
        assert!(
            first.message.contains("evicted") && first.message.contains("capacity 2"),
            "{}",
            first.message
        );
        assert_eq!(first.evidence.len(), 1);
    }

    #[test]
    fn a_second_terminal_record_breaks_terminal_once() {
        let mut h = happy();
        h.insert(
            h.len() - 1,
            (
                40,
                Event::Cancelled {
                    job: JobId(0),
                    worker: None,
                    fence: None,
                    deadline_at: None,
                },
            ),
        );
        assert_eq!(judge(h).violated(), vec![Invariant::TerminalOnce]);
    }
}

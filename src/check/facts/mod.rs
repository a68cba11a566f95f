//! The checker's facts: what the records established so far, and the one reducer that applies
//! each record to them.
//!
//! Owns: [`Facts`] (the header's configuration; per job, per key and per outbox event, packed
//! in `tracks.rs` and `event_track.rs`; the DLQ's entries; the depth: each job's place, the
//! ready count and the transitions inferred from visible times and lease ends; the leases each
//! job was issued; the extractions in progress) and [`Facts::apply`], their only writer, which
//! does to them what docs/checker-rules.md ("The facts") says each record does (its depth steps
//! in `depth.rs`, its per-process heartbeat in `liveness.rs`). The rules read the facts as they
//! stood before a record, then the checker applies it.
//! Does not: judge (`rules/`), or keep what only one rule needs (its family keeps that).

mod depth;
mod event_track;
mod job_track;
mod key_track;
mod liveness;
mod record;
mod tracks;

pub(super) use event_track::EventTracks;
pub(super) use job_track::{DlqEntry, Failure, JobTrack, Lease, Place, Terminal};
pub use key_track::PayloadId;
pub(super) use key_track::{KeyRare, KeyTrack, Written};
pub(super) use tracks::{At as KeyLoc, KeyCursor};

use crate::base::ids::{EventId, Fence, JobId, SimTime, WorkerId};
use crate::base::state_hash::StateMap;
use crate::history::{Event, Op, Record};
use crate::profile::AttemptsCount;
use crate::vocab::config::{Liveness, RunConfig};
use crate::vocab::key::IdempotencyKey;
use std::borrow::Cow;
use std::collections::VecDeque;
use tracks::Tracks;

/// Every fact the rules read, and the reducer that writes them.
#[derive(Default, Hash)]
pub(in crate::check) struct Facts {
    config: RunConfig,
    tracks: Tracks,
    events: EventTracks,
    dlq: VecDeque<JobId>,
    /// The most DLQ entries at once.
    dlq_max: u64,
    depth: depth::Depth,
    /// Failed attempts per job, kept only when the header counts them against `attempts_max`
    /// (`"attempt": "failures"`).
    failures: Option<Vec<u32>>,
    /// The leases each job was issued before its latest (which its track holds): (job, fence,
    /// worker), and whether that lease's holder committed or deduplicated since it (`own_result`
    /// of that lease). Only a job leased more than once has one.
    earlier: StateMap<(u32, u64, u32), bool>,
    /// The latest of those leases each worker was issued, by (job, worker): a commit by a
    /// worker that no longer holds the job's latest lease is its own lease's.
    latest_to: StateMap<(u32, u32), u64>,
    /// Each worker's extraction in progress (job, fence, start), and those beside it when a
    /// worker id runs several at once.
    extracting: Vec<Option<(JobId, Fence, SimTime)>>,
    extracting_more: StateMap<(u32, u32, u64), SimTime>,
    /// Liveness per process (version 2): each worker's last `worker_heartbeat`, and the jobs
    /// each worker was leased (those it no longer holds are dropped at its next heartbeat).
    beats: Vec<Option<SimTime>>,
    held_by: Vec<Vec<JobId>>,
    /// Rescued jobs (version 2's `rescued`): how many rescues, and the token of the lease the
    /// latest one took back.
    rescues: StateMap<u32, (u32, Fence)>,
}

/// The readers.
impl Facts {
    pub fn reserve(&mut self, jobs: usize) {
        self.tracks.reserve(jobs);
        self.events.reserve(jobs + 1);
    }

    /// The header's configuration.
    #[inline]
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// The job's facts, if an `enqueued` record created it.
    #[inline]
    pub fn job(&self, job: JobId) -> Option<Cow<'_, JobTrack>> {
        self.tracks.get(job)
    }

    /// The job's facts: every record names only jobs an earlier `enqueued` created (the reader
    /// refuses any other history, and the kernel cannot write one).
    #[inline]
    pub fn job_at(&self, job: JobId) -> Cow<'_, JobTrack> {
        self.tracks
            .get(job)
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"))
    }

    /// The job's latest lease, if it is held.
    #[inline]
    pub fn held_lease(&self, job: JobId) -> Option<Lease> {
        self.tracks.held_lease(job)
    }

    /// Job ids seen.
    pub fn jobs(&self) -> usize {
        self.tracks.len()
    }

    /// Whether the job has its terminal record, and its leases, read without unpacking.
    pub fn ended_and_leases(&self, job: JobId) -> Option<(bool, u64)> {
        self.tracks.ended_and_leases(job)
    }

    /// Whether the end-of-run rules have anything to say about the job.
    pub fn needs_finish_check(&self, job: JobId) -> bool {
        self.tracks.needs_finish_check(job)
    }

    /// The key's facts so far (empty if never named); `hint`: a job the record names with it.
    #[inline]
    pub fn key(&self, key: &IdempotencyKey, hint: Option<JobId>) -> KeyTrack {
        self.tracks.key(key, hint)
    }

    /// Where the key's facts are (none: never named), for [`Facts::key_found`] and
    /// [`Facts::apply`] to share one look-up.
    #[inline]
    pub fn locate(&self, key: &IdempotencyKey, hint: Option<JobId>) -> Option<KeyLoc> {
        self.tracks.find(key, hint)
    }

    /// The facts of the key [`Facts::locate`] found.
    #[inline]
    pub fn key_found(&self, at: Option<KeyLoc>) -> KeyTrack {
        self.tracks.key_found(at)
    }

    /// The key's commits after the first and its events published directly.
    pub fn key_rare(&self, key: &IdempotencyKey) -> Option<&KeyRare> {
        self.tracks.key_rare(key)
    }

    /// The newest job an `enqueued` record created under `key`.
    #[inline]
    pub fn newest(&self, key: &IdempotencyKey, hint: Option<JobId>) -> Option<JobId> {
        self.tracks.newest(key, hint)
    }

    /// The next key in key order, and its facts.
    pub fn next_key(&self, c: &mut KeyCursor) -> Option<(IdempotencyKey, KeyTrack)> {
        self.tracks.next_key(c)
    }

    /// Whether event `e` has origin (`key`, `job`): a commit under `key` (whose facts are `k`)
    /// by `job` wrote it, or `job` published it directly for `key` (`job` none: by any job).
    pub fn has_origin(
        &self,
        (key, k): (&IdempotencyKey, &KeyTrack),
        e: EventId,
        job: Option<JobId>,
    ) -> bool {
        let same = |j: JobId, ev: Option<EventId>| ev == Some(e) && job.is_none_or(|x| x == j);
        if k.first.is_some_and(|c| same(c.job, c.event)) {
            return true;
        }
        k.rare
            && self.key_rare(key).is_some_and(|r| {
                r.commits
                    .iter()
                    .chain(&r.direct)
                    .any(|w| same(w.job, w.event))
            })
    }

    /// The key's event: the first a commit under it wrote, else the first published directly.
    pub fn key_event(&self, key: &IdempotencyKey, k: &KeyTrack) -> Option<EventId> {
        if let Some(e) = k.first.and_then(|c| c.event) {
            return Some(e);
        }
        let rare = self.key_rare(key).filter(|_| k.rare)?;
        rare.commits
            .iter()
            .find_map(|w| w.event)
            .or_else(|| rare.direct.first().and_then(|w| w.event))
    }

    pub fn events(&self) -> &EventTracks {
        &self.events
    }

    /// The DLQ's entries, oldest first.
    pub fn dlq(&self) -> &VecDeque<JobId> {
        &self.dlq
    }

    pub fn dlq_max(&self) -> u64 {
        self.dlq_max
    }

    /// The job's failed attempts, when the header counts them (else absent).
    pub fn failures(&self, job: JobId) -> Option<u32> {
        self.failures
            .as_ref()
            .map(|f| f.get(job.index()).copied().unwrap_or(0))
    }

    /// Whether a `leased` record issued `fence` to `worker` for `job` (`t`: its track).
    pub fn issued(&self, job: JobId, t: &JobTrack, fence: Fence, worker: WorkerId) -> bool {
        t.lease
            .is_some_and(|l| l.fence == fence && l.holder == worker)
            || (t.leases > 1 && self.earlier.contains_key(&(job.0, fence.0, worker.0)))
    }

    /// Whether the lease `fence` of `job` issued to `worker` committed a result or deduplicated
    /// onto the key's since it was issued (false for a lease never issued).
    pub fn own_result(&self, job: JobId, t: &JobTrack, fence: Fence, worker: WorkerId) -> bool {
        match t.lease {
            Some(l) if l.fence == fence && l.holder == worker => t.own_result,
            _ => self
                .earlier
                .get(&(job.0, fence.0, worker.0))
                .copied()
                .unwrap_or(false),
        }
    }

    /// When the extraction of `job` with `fence` by `worker` started, if it is in progress.
    pub fn extracting(&self, worker: WorkerId, job: JobId, fence: Fence) -> Option<SimTime> {
        match self.extracting.get(worker.index()).copied().flatten() {
            Some((j, f, at)) if j == job && f == fence => Some(at),
            _ => self.extracting_beside(worker, job, fence),
        }
    }

    /// An extraction of `worker`'s not in its slot: one it started before the one there.
    #[cold]
    fn extracting_beside(&self, worker: WorkerId, job: JobId, fence: Fence) -> Option<SimTime> {
        self.extracting_more
            .get(&(worker.0, job.0, fence.0))
            .copied()
    }

    /// The job's rescues so far, and the token of the lease the latest one took back.
    pub fn rescues(&self, job: JobId) -> Option<(u32, Fence)> {
        self.rescues.get(&job.0).copied()
    }
}

/// The reducer: the only writer of the facts.
impl Facts {
    fn update<R>(&mut self, job: JobId, change: impl FnOnce(&mut JobTrack) -> R) -> R {
        self.tracks
            .update(job, change)
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"))
    }

    /// A job's terminal record.
    fn end(&mut self, job: JobId, kind: Terminal, at: SimTime) {
        self.update(job, |t| {
            t.lease_held = false;
            t.terminal.get_or_insert((kind, at));
        });
        self.move_to(job, Place::Done);
    }

    /// A decision of `job` by the holder of `fence` (or at pick time): it answers the pending
    /// failure of that token, which is cleared (`retry_policy_followed`).
    fn decided(&mut self, job: JobId, fence: Option<Fence>) {
        let Some(f) = fence else { return };
        self.update(job, |t| {
            let current = t.leases == 0 || t.fence() == Some(f);
            if current && t.failure.is_some_and(|x| x.fence == f) {
                t.failure = None;
            }
        });
    }

    /// A commit or dedupe of `job` by `worker`: its latest lease of the job has its own result.
    fn note_own_result(&mut self, job: JobId, worker: WorkerId) {
        let holder = self.update(job, |t| match t.lease {
            Some(l) if l.holder == worker => {
                t.own_result = true;
                true
            }
            _ => false,
        });
        if !holder {
            if let Some(f) = self.latest_to.get(&(job.0, worker.0)) {
                self.earlier.insert((job.0, *f, worker.0), true);
            }
        }
    }

    /// The extraction of `job` with `fence` by `worker` ended (or never started).
    fn extraction_over(&mut self, worker: WorkerId, job: JobId, fence: Fence) {
        if let Some(slot) = self.extracting.get_mut(worker.index()) {
            if slot.is_some_and(|(j, f, _)| j == job && f == fence) {
                *slot = None;
            }
        }
        if !self.extracting_more.is_empty() {
            self.extracting_more.remove(&(worker.0, job.0, fence.0));
        }
    }

    /// Applies one record to the facts (docs/checker-rules.md, "The facts"). `found`: where the
    /// key the record names is, if the rules already looked it up ([`Facts::locate`]).
    pub fn apply(&mut self, r: &Record, found: Option<Option<KeyLoc>>) {
        let at = r.at;
        macro_rules! register {
            ($key:expr, $hint:expr) => {
                match found {
                    Some(f) => self.tracks.register_found($key, f),
                    None => self.tracks.register($key, $hint),
                }
            };
        }
        match &r.event {
            Event::RunStarted { config } => {
                self.config = (**config).clone();
                let counts = self
                    .config
                    .retry_formula
                    .as_ref()
                    .is_some_and(|f| f.attempt == AttemptsCount::Failures);
                let capped = self.config.stated.failures_max.is_some();
                self.failures = (counts || capped).then(Vec::new);
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
                let payload = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                // The recorded visible time as it stands (a store's clock may put it a little
                // before the record's own time); the enqueue time when none is recorded.
                let visible = visible_at.unwrap_or(at);
                let t = JobTrack::enqueued(*tenant, *key, payload, at, visible, *reprocess_of);
                self.tracks.create(*job, &t);
                match t.place {
                    Place::Ready => self.depth.ready += 1,
                    _ => self.wait(*job, visible),
                }
            }
            Event::EnqueueDeduped { key, existing, .. }
            | Event::EnqueueConflict { key, existing, .. } => {
                register!(key, Some(*existing));
            }
            Event::EnqueueReplaced {
                key,
                existing,
                operation,
                content,
                ..
            } => {
                register!(key, Some(*existing));
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                self.update(*existing, |t| t.payload = p);
            }
            Event::Visible { job } => {
                if self.tracks.place(*job) == Some(Place::Waiting) {
                    self.move_to(*job, Place::Ready);
                }
            }
            Event::Leased {
                job, worker, fence, ..
            } => {
                // Liveness per process: the lease lives from the holder's last heartbeat, which
                // may precede the lease itself.
                let per_process = self.config.stated.liveness == Liveness::PerProcess;
                let renewed_at = match per_process {
                    true => {
                        let i = worker.index();
                        if self.held_by.len() <= i {
                            self.held_by.resize_with(i + 1, Vec::new);
                        }
                        self.held_by[i].push(*job);
                        self.last_beat(*worker).unwrap_or(at)
                    }
                    false => at,
                };
                let t = self.update(*job, |t| {
                    let before = t.lease.map(|l| (l, t.own_result));
                    t.leases += 1;
                    t.lease = Some(Lease {
                        fence: *fence,
                        holder: *worker,
                        at,
                        renewed_at,
                        renewed: false,
                    });
                    t.lease_held = true;
                    t.failure = None;
                    t.own_result = false;
                    before
                });
                if let Some((l, own)) = t {
                    self.earlier.insert((job.0, l.fence.0, l.holder.0), own);
                    self.latest_to.insert((job.0, l.holder.0), l.fence.0);
                }
                self.move_to(*job, Place::Leased);
                // From the lease's renewal: under liveness per process, its holder's last
                // heartbeat, which may precede the lease.
                self.renewed(*job, *fence, renewed_at);
            }
            Event::Heartbeat { job, fence, .. } => {
                let renewed = self.update(*job, |t| match t.lease.as_mut() {
                    Some(l) if l.fence == *fence && t.terminal.is_none() => {
                        l.renewed_at = at;
                        l.renewed = true;
                        true
                    }
                    _ => false,
                });
                if renewed {
                    self.renewed(*job, *fence, at);
                }
            }
            Event::LeaseExpired { job, fence } => {
                let config = &self.config;
                let ready = self.tracks.update(*job, |t| {
                    let held = t.fence() == Some(*fence) && t.lease_held;
                    if held && t.lease_end(config).is_some_and(|e| at > e) {
                        t.lease_held = false;
                    }
                    held && t.place == Place::Leased
                });
                if ready == Some(true) {
                    self.move_to(*job, Place::Ready);
                }
            }
            Event::Rejected {
                job, op, presented, ..
            } => {
                if matches!(op, Op::Retry | Op::DeadLetter | Op::Cancel) {
                    self.update(*job, |t| {
                        if t.failure.is_some_and(|f| f.fence == *presented) {
                            t.failure = None;
                        }
                    });
                }
            }
            Event::ExtractStarted {
                job, worker, fence, ..
            } => {
                let i = worker.index();
                if self.extracting.len() <= i {
                    self.extracting.resize(i + 1, None);
                }
                if let Some((j, f, s)) = self.extracting[i] {
                    if (j, f) != (*job, *fence) {
                        self.extracting_more.insert((worker.0, j.0, f.0), s);
                    }
                }
                self.extracting[i] = Some((*job, *fence, at));
            }
            Event::ExtractDone {
                job, worker, fence, ..
            } => self.extraction_over(*worker, *job, *fence),
            Event::AttemptFailed {
                job, fence, error, ..
            } => {
                self.update(*job, |t| t.failure = Some(Failure::new(*fence, error, at)));
                if let Some(failures) = self.failures.as_mut() {
                    let i = job.index();
                    if failures.len() <= i {
                        failures.resize(i + 1, 0);
                    }
                    failures[i] += 1;
                }
            }
            Event::ResultCommitted {
                job,
                worker,
                key,
                output,
                event,
                ..
            } => {
                let k = register!(key, Some(*job));
                self.note_own_result(*job, *worker);
                let payload = self.tracks.get(*job).map(|t| t.payload).expect("enqueued");
                let w = Written {
                    job: *job,
                    output: *output,
                    event: *event,
                };
                self.tracks.commit(&k, at, w, payload);
                if let Some(e) = event {
                    self.events.write(*e);
                }
            }
            Event::CommitDeduped {
                job, worker, key, ..
            } => {
                register!(key, Some(*job));
                self.note_own_result(*job, *worker);
            }
            Event::CommitConflict { job, key, .. } => {
                register!(key, Some(*job));
            }
            Event::Acked { job, .. } => self.end(*job, Terminal::Acked, at),
            Event::RetryScheduled {
                job,
                fence,
                visible_at,
                ..
            } => {
                self.decided(*job, Some(*fence));
                self.update(*job, |t| {
                    t.visible_from = *visible_at;
                    t.lease_held = false;
                });
                self.wait(*job, *visible_at);
            }
            Event::DeadLettered { job, fence, .. } => {
                self.decided(*job, *fence);
                let held = self.update(*job, |t| {
                    std::mem::replace(&mut t.dlq, DlqEntry::Held) == DlqEntry::Held
                });
                // A job dead-lettered again while its entry is held (a by-id rescue or a stale
                // write revived it) is filed again: its old entry leaves first, as the queue's
                // does (`model::dead_letter` `push`); counted twice, it filled the DLQ and its
                // own new entry was taken for evicted (swarm seed 313797, river rescue_race).
                // Only such a job is looked for: a first filing costs no scan.
                if let Some(i) = held
                    .then(|| self.dlq.iter().position(|j| j == job))
                    .flatten()
                {
                    self.dlq.remove(i);
                }
                self.dlq.push_back(*job);
                self.dlq_max = self.dlq_max.max(self.dlq.len() as u64);
                if let Some(c) = self.config.dlq_capacity {
                    if self.dlq.len() > c as usize {
                        let oldest = self.dlq.pop_front().expect("more than its capacity");
                        self.update(oldest, |t| t.dlq = DlqEntry::Evicted);
                    }
                }
                self.end(*job, Terminal::DeadLettered, at);
            }
            Event::Cancelled { job, fence, .. } => {
                self.decided(*job, *fence);
                self.end(*job, Terminal::Cancelled, at);
            }
            Event::DlqEvicted { job, .. } => {
                if let Some(i) = self.dlq.iter().position(|j| j == job) {
                    self.dlq.remove(i);
                }
                self.update(*job, |t| t.dlq = DlqEntry::Evicted);
            }
            Event::Published {
                event,
                key,
                job,
                output,
                direct,
                ..
            } => {
                let k = register!(key, Some(*job));
                self.events.publish(*event);
                if *direct {
                    let w = Written {
                        job: *job,
                        output: *output,
                        event: Some(*event),
                    };
                    self.tracks.publish_direct(&k, w);
                }
            }
            Event::MarkedPublished { count } => self.events.mark(*count),
            Event::MarkedEvents { events } => self.events.mark_events(events),
            Event::WorkerHeartbeat { worker } => self.beat(*worker, at),
            Event::Rescued {
                job, visible_at, ..
            } => {
                let visible = visible_at.unwrap_or(at);
                let fence = self.update(*job, |t| {
                    t.lease_held = false;
                    t.visible_from = visible;
                    t.fence()
                });
                let n = self.rescues.get(&job.0).map_or(0, |r| r.0);
                self.rescues
                    .insert(job.0, (n + 1, fence.unwrap_or(Fence(0))));
                if self.tracks.place(*job) != Some(Place::Done) {
                    if visible <= at {
                        self.move_to(*job, Place::Ready);
                    } else {
                        self.wait(*job, visible);
                    }
                }
            }
            Event::EffectApplied {
                event, key, job, ..
            } => {
                let k = register!(key, Some(*job));
                self.events.apply(*event, at);
                self.tracks.apply(&k, *event);
            }
            Event::DuplicateEvent { key, .. } => {
                register!(key, None);
            }
            Event::ReviewDone {
                event, key, job, ..
            } => {
                let k = register!(key, Some(*job));
                self.events.review(*event);
                self.tracks.review(&k);
            }
            Event::PayloadMutated { job, content, .. } => {
                self.update(*job, |t| t.payload.content = *content);
            }
            Event::Reprocessed {
                old_job, new_job, ..
            } => {
                self.update(*new_job, |t| t.audited = true);
                self.update(*old_job, |t| t.reprocessed = true);
            }
            Event::OutboxPruned { .. }
            | Event::WorkerRestarted { .. }
            | Event::ReprocessRefused { .. }
            | Event::DepthSampled { .. }
            | Event::Log { .. }
            | Event::RunEnded { .. }
            | Event::WorkerCrashed { .. }
            | Event::WorkerLost { .. }
            | Event::RelayLost {}
            | Event::Held(_)
            | Event::Struck(_) => {}
        }
    }
}

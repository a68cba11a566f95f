//! The checker: judges a history, and nothing else.
//!
//! Owns: the state rebuilt from the records as they stream past (per job, per key, per outbox
//! event; flat vectors indexed by dense ids), the dispatch of each record to the invariant
//! families (`leases`, `policy`, `effects`, `dlq`, `tenancy`, `metrics`, each in its own file),
//! the verdict on every invariant and the counts of `sometimes` properties. Every rule is
//! restated from the configuration in the history's header and the raw facts in the records
//! (who leased what when with which token, what was written, what content was submitted); a
//! value the recorder computed (a lease end, a deadline, a payload hash, an error's class) is only
//! cross-checked. It could judge a history recorded from a real queue and database.
//! Does not: keep the history (a violation keeps the few records that prove it).

pub(super) use super::dlq::DlqTrack;
pub(super) use super::event_track::EventTracks;
use super::invariant::{Invariant, Sometimes};
pub(super) use super::job_track::{DlqEntry, Failure, JobTrack, Place, Terminal};
pub(super) use super::key_track::KeyTrack;
pub use super::key_track::PayloadId;
use super::metrics::{DepthTrack, Recount};
use super::tracks::Tracks;
use super::uniqueness::Resolved;
pub use super::verdict::{CheckReport, Verdict, Violation};
use crate::base::ids::{JobId, SimTime};
use crate::history::{Event, Observer, Record};
use crate::vocab::config::RunConfig;
use crate::vocab::faults::Held;
use crate::vocab::key::{IdempotencyKey, KeyNames};

pub struct Checker {
    pub(super) config: RunConfig,
    /// The names behind keys and operations, to recompute payload hashes. Without them (a
    /// checker fed records by hand) hashes are not recomputed.
    names: Option<Box<KeyNames>>,
    /// Every job's track and every key's, packed: one record a job, which holds its key's track
    /// too when the job was the key's first (`tracks.rs`).
    pub(super) tracks: Tracks,
    pub(super) events: EventTracks,
    pub(super) dlq: DlqTrack,
    pub(super) depth: DepthTrack,
    pub(super) recount: Recount,
    /// Refused writes whose token was not the job's latest.
    pub(super) stale_rejections: u64,
    /// Failed attempts per job, kept only when the header counts them against `attempts_max`
    /// (`policy.rs`, [`Checker::counts_failures`]).
    pub(super) failures: Vec<u32>,
    verdicts: Vec<Verdict>,
    sometimes: Vec<u64>,
    pub(super) ended: Option<(SimTime, bool)>,
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
            names: None,
            tracks: Tracks::default(),
            events: EventTracks::default(),
            dlq: DlqTrack::default(),
            depth: DepthTrack::default(),
            recount: Recount::default(),
            stale_rejections: 0,
            failures: Vec::new(),
            verdicts: vec![Verdict::default(); Invariant::ALL.len()],
            sometimes: vec![0; Sometimes::ALL.len()],
            ended: None,
        }
    }

    pub fn with_capacity(jobs: usize) -> Checker {
        let mut c = Checker::new();
        c.tracks.reserve(jobs);
        c.events.reserve(jobs + 1);
        c
    }

    /// Gives the checker the run's names, so that recorded payload hashes are recomputed.
    pub fn with_names(mut self, names: KeyNames) -> Checker {
        self.names = Some(Box::new(names));
        self
    }

    /// The unit of times in messages.
    pub(super) fn unit(&self) -> &'static str {
        self.config.time_unit.suffix()
    }

    pub(super) fn violate(
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

    /// A violation about one job, proved by the record at hand.
    pub(super) fn violate_job(
        &mut self,
        invariant: Invariant,
        r: &Record,
        job: JobId,
        message: impl FnOnce() -> String,
    ) {
        let key = self.job(job).map(|t| t.key);
        self.violate(invariant, r.at, Some(job), key, message, || vec![r.clone()]);
    }

    pub(super) fn reached(&mut self, s: Sometimes) {
        self.sometimes[s.index()] += 1;
    }

    /// The job's track, if an `enqueued` record created it (a copy: tracks are stored packed).
    #[inline]
    pub(super) fn job(&self, job: JobId) -> Option<JobTrack> {
        self.tracks.get(job, self.config.deadline)
    }

    /// The job's track. Every record names only jobs an earlier `enqueued` created (the reader
    /// refuses any other history, and the kernel cannot write one).
    #[inline]
    pub(super) fn job_at(&self, job: JobId) -> JobTrack {
        self.read_job(job, |t| *t)
    }

    /// Reads one part of the job's track (which must exist, as for [`Checker::job_at`]).
    #[inline]
    pub(super) fn read_job<R>(&self, job: JobId, f: impl FnOnce(&JobTrack) -> R) -> R {
        self.tracks.read_known(job, self.config.deadline, f)
    }

    /// Changes the job's track (which must exist, as for [`Checker::job_at`]).
    pub(super) fn update_job<R>(
        &mut self,
        job: JobId,
        change: impl FnOnce(&mut JobTrack) -> R,
    ) -> R {
        self.tracks
            .update(job, self.config.deadline, change)
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"))
    }

    /// Where the job stands for the depth, read without unpacking its track.
    pub(super) fn job_place(&self, job: JobId) -> Option<Place> {
        self.tracks.place(job)
    }

    pub(super) fn set_job_place(&mut self, job: JobId, place: Place) {
        self.tracks.set_place(job, place);
    }

    /// Jobs with no terminal record, and the most leases any job had.
    pub(super) fn jobs_unfinished_and_most_leases(&self) -> (u64, u64) {
        let (mut unfinished, mut most) = (0, 0);
        for i in 0..self.tracks.len() {
            if let Some((ended, leases)) = self.tracks.ended_and_leases(JobId(i as u32)) {
                unfinished += !ended as u64;
                most = most.max(leases);
            }
        }
        (unfinished, most)
    }

    /// The key's track so far (empty if the history never named it; a copy: tracks are stored
    /// packed).
    #[inline]
    pub(super) fn key_track(&self, key: &IdempotencyKey, job: Option<JobId>) -> KeyTrack {
        self.tracks.key(key, job)
    }

    /// A job reached a terminal state: once only.
    pub(super) fn terminal(&mut self, r: &Record, job: JobId, state: Terminal) {
        let u = self.unit();
        let previous = self.update_job(job, |t| {
            let previous = t.terminal;
            t.lease_held = false;
            if previous.is_none() {
                t.terminal = Some((state, r.at));
            }
            previous
        });
        self.depth_move(r.at, job, Place::Done);
        if let Some((was, when)) = previous {
            self.violate_job(Invariant::TerminalOnce, r, job, || {
                format!("{job} became {state:?} after it was already {was:?} at {when} {u}")
            });
        }
    }

    /// Judges one record with the names the checker was given (if any).
    pub fn observe_record(&mut self, r: &Record) {
        // Only records that carry a payload hash need the names: lent for the record (taken and
        // put back: no reference count to touch, a record at a time).
        let carries_payload = matches!(
            r.event,
            Event::Enqueued { .. }
                | Event::EnqueueDeduped { .. }
                | Event::EnqueueConflict { .. }
                | Event::EnqueueReplaced { .. }
                | Event::ResultCommitted { .. }
                | Event::CommitDeduped { .. }
                | Event::CommitConflict { .. }
                | Event::PayloadMutated { .. }
        );
        if !carries_payload {
            return self.observe_named(r, None);
        }
        let names = self.names.take();
        self.observe_named(r, names.as_deref());
        self.names = names;
    }

    /// Judges one record; `names` (a reader's, growing as it reads) lets payload hashes be
    /// recomputed.
    pub fn observe_named(&mut self, r: &Record, names: Option<&KeyNames>) {
        self.depth_catch_up(r.at);
        self.recount.count(r);
        let at = r.at;
        match &r.event {
            Event::RunStarted { config } => {
                self.config = (**config).clone();
                let keep = super::backoff::reads_lease_left(&self.config);
                self.tracks.keep_renewals(keep);
            }
            Event::Enqueued {
                job,
                tenant,
                key,
                operation,
                content,
                payload,
                visible_at,
                deadline_at,
                reprocess_of,
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                // The recorded visible time as it stands (a store's clock may put it a little
                // before the record's own time); the enqueue time when none is recorded.
                let visible_from = visible_at.unwrap_or(at);
                self.unique_enqueued(
                    r,
                    *job,
                    &JobTrack {
                        reprocessed_from: *reprocess_of,
                        ..JobTrack::enqueued(
                            *tenant,
                            *key,
                            p,
                            at,
                            at.saturating_add(self.config.deadline),
                            visible_from,
                        )
                    },
                );
                self.depth_enqueued(at, *job, visible_from);
                self.tenancy_enqueued(r, *job, *tenant, key);
                let derived = self.cross_check_hash(r, Some(*job), key, p, *payload, names, None);
                if derived.is_some() {
                    self.update_job(*job, |t| t.derived_hash = derived);
                }
                let deadline = at.saturating_add(self.config.deadline);
                self.cross_check_time(r, *job, "deadline_at", *deadline_at, deadline);
            }
            Event::EnqueueDeduped {
                tenant,
                key,
                operation,
                content,
                payload,
                existing,
            } => {
                self.reached(Sometimes::EnqueueDeduped);
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                self.tenancy_resolved(r, *existing, *tenant, key, "deduplicated onto");
                self.unique_resolved(r, Resolved::Deduped, *existing, key);
                self.effects_enqueue_deduped(r, *existing, key, p);
                let known = self.known_hash(*existing, key, p);
                self.cross_check_hash(r, Some(*existing), key, p, *payload, names, known);
            }
            Event::EnqueueConflict {
                tenant,
                key,
                operation,
                content,
                payload,
                existing,
                ..
            } => {
                self.reached(Sometimes::PayloadConflict);
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                self.tenancy_resolved(r, *existing, *tenant, key, "refused as a conflict with");
                let any_payload = self.unique_resolved(r, Resolved::Refused, *existing, key);
                if !any_payload {
                    self.effects_enqueue_conflict(r, *existing, key, p);
                }
                self.cross_check_hash(r, Some(*existing), key, p, *payload, names, None);
            }
            Event::EnqueueReplaced {
                tenant,
                key,
                operation,
                content,
                payload,
                existing,
                replaced_operation,
                replaced_content,
                replaced_payload,
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                let was = PayloadId {
                    operation: *replaced_operation,
                    content: *replaced_content,
                };
                self.tenancy_resolved(r, *existing, *tenant, key, "replaced into");
                self.unique_resolved(r, Resolved::Replaced, *existing, key);
                self.cross_check_hash(r, Some(*existing), key, p, *payload, names, None);
                let recorded = *replaced_payload;
                self.cross_check_hash(r, Some(*existing), key, was, recorded, names, None);
                self.effects_enqueue_replaced(r, *existing, key, p, was);
            }
            Event::Visible { job } => self.depth_visible_record(r, *job),
            Event::Leased {
                job,
                worker,
                fence,
                attempt,
                lease_until,
                visible_at,
            } => self.on_leased(
                r,
                *job,
                *worker,
                *fence,
                *attempt,
                *lease_until,
                *visible_at,
            ),
            Event::LeaseExpired { job, fence } => self.on_lease_expired(r, *job, *fence),
            Event::Heartbeat {
                job,
                worker,
                fence,
                lease_until,
            } => self.on_heartbeat(r, *job, *worker, *fence, *lease_until),
            Event::Rejected {
                job, op, presented, ..
            } => {
                // A writer whose token is not the job's latest was refused, whatever the reason
                // the queue gave.
                if self.read_job(*job, |t| t.fence) != *presented {
                    self.reached(Sometimes::StaleFenceRejected);
                    self.stale_rejections += 1;
                }
                self.policy_rejected(*job, *op, *presented);
            }
            Event::ExtractStarted { stalled, .. } => {
                if *stalled {
                    self.reached(Sometimes::Held(Held::Stall));
                }
            }
            Event::ExtractDone { .. } => {}
            // A stall is counted at its `extract_started` (a recorder may leave `stall_began`
            // out); every other held fault at its own record.
            Event::Held(h) if h.fault != Held::Stall => self.reached(Sometimes::Held(h.fault)),
            Event::Held(_) => {}
            Event::AttemptFailed {
                job,
                fence,
                error,
                class,
                ..
            } => self.on_attempt_failed(r, *job, *fence, error, *class),
            Event::ResultCommitted {
                job,
                key,
                payload,
                output,
                event,
                ..
            } => {
                self.effects_committed(r, *job, key, *output, *event);
                self.cross_check_commit_hash(r, *job, key, *payload, names);
            }
            Event::CommitDeduped {
                job, key, payload, ..
            } => {
                self.reached(Sometimes::CommitDeduped);
                self.effects_commit_deduped(r, *job, key);
                self.cross_check_commit_hash(r, *job, key, *payload, names);
            }
            Event::CommitConflict {
                job, key, payload, ..
            } => {
                self.reached(Sometimes::PayloadConflict);
                self.effects_commit_conflict(r, *job, key);
                self.cross_check_commit_hash(r, *job, key, *payload, names);
            }
            Event::Acked { job, worker, fence } => {
                self.fenced(r, *job, Some(*worker), *fence, "ack");
                self.effects_acked(r, *job);
                if self.read_job(*job, |t| t.reprocessed_from).is_some() {
                    self.reached(Sometimes::ReprocessSucceeded);
                }
                self.terminal(r, *job, Terminal::Acked);
            }
            Event::RetryScheduled {
                job,
                worker,
                fence,
                attempt,
                visible_at,
            } => {
                self.reached(Sometimes::RetryScheduled);
                self.fenced(r, *job, Some(*worker), *fence, "retry");
                self.on_retry(r, *job, *fence, *attempt, *visible_at);
            }
            Event::DeadLettered {
                job,
                worker,
                fence,
                attempts,
                reason,
            } => {
                self.reached(Sometimes::DeadLettered);
                if let Some(fence) = fence {
                    self.fenced(r, *job, *worker, *fence, "dead-letter");
                }
                self.on_dead_letter_decision(r, *job, *fence, *attempts, reason);
                self.dlq_push(r, *job, reason);
                self.terminal(r, *job, Terminal::DeadLettered);
            }
            Event::Cancelled {
                job,
                worker,
                fence,
                deadline_at,
            } => {
                self.reached(Sometimes::DeadlineCancellation);
                if let Some(fence) = fence {
                    self.fenced(r, *job, *worker, *fence, "cancel");
                }
                self.on_cancel_decision(r, *job, *fence);
                let expected = self.read_job(*job, |t| t.deadline_at);
                self.cross_check_time(r, *job, "deadline_at", *deadline_at, expected);
                self.terminal(r, *job, Terminal::Cancelled);
            }
            Event::DlqEvicted {
                job,
                capacity,
                retention,
            } => {
                self.reached(Sometimes::DlqEvicted);
                self.dlq_evicted(r, *job, *capacity, *retention);
            }
            Event::WorkerCrashed { .. } => self.reached(Sometimes::WorkerCrashed),
            Event::WorkerRestarted { .. } => {}
            Event::Published {
                event,
                key,
                job,
                direct,
                ..
            } => self.effects_published(*event, key, *job, *direct),
            Event::MarkedPublished { .. } | Event::OutboxPruned { .. } => {}
            Event::Struck(s) => self.reached(Sometimes::Struck(s.fault)),
            Event::EffectApplied {
                event,
                key,
                job,
                output,
            } => self.effects_applied(r, *event, key, *job, *output),
            Event::DuplicateEvent { .. } => self.reached(Sometimes::RepublishAbsorbed),
            Event::ReviewDone { key, job, .. } => self.tracks.review(key, Some(*job)),
            Event::PayloadMutated {
                job,
                content,
                payload,
            } => {
                let (key, p) = self.update_job(*job, |t| {
                    t.payload.content = *content;
                    t.derived_hash = None;
                    (t.key, t.payload)
                });
                self.cross_check_hash(r, Some(*job), &key, p, *payload, names, None);
            }
            Event::ReprocessRefused {
                job,
                operator,
                reason,
            } => self.reprocess_refused(r, *job, operator.as_deref(), reason),
            Event::Reprocessed {
                old_job,
                new_job,
                operator,
            } => {
                self.reached(Sometimes::Reprocessed);
                self.reprocessed(r, *old_job, *new_job, operator);
            }
            Event::DepthSampled { depth } => self.depth_sampled(r, *depth),
            Event::Log { .. } => {}
            Event::RunEnded { quiescent } => self.ended = Some((at, *quiescent)),
        }
    }

    /// Evaluates the `eventually` invariants (at the end of the history) and returns the
    /// verdict of every invariant.
    pub fn finish(mut self) -> CheckReport {
        let (end, quiescent) = self.ended.unwrap_or((0, false));
        self.depth_catch_up(end.saturating_add(1));
        let unsettled = if quiescent {
            ""
        } else {
            " (the run hit its time limit before it settled)"
        };
        self.effects_finish(end, unsettled);
        self.jobs_finish(end, unsettled);
        let (figures, held_figures) = self.figures();
        CheckReport {
            verdicts: Invariant::ALL
                .iter()
                .map(|i| (*i, self.verdicts[*i as usize].clone()))
                .collect(),
            sometimes: Sometimes::ALL
                .iter()
                .map(|s| (*s, self.sometimes[s.index()]))
                .collect(),
            quiescent,
            end,
            figures,
            held_figures,
        }
    }

    /// At the end: every job has its terminal record, every reprocess its audit entry.
    fn jobs_finish(&mut self, end: SimTime, unsettled: &str) {
        let u = self.unit();
        for i in 0..self.tracks.len() {
            let job = JobId(i as u32);
            if !self.tracks.needs_finish_check(job) {
                continue;
            }
            let Some(t) = self.job(job) else { continue };
            if t.terminal.is_none() {
                self.violate(
                    Invariant::NoSilentDrop,
                    end,
                    Some(job),
                    Some(t.key),
                    || format!("{job}, enqueued at {} {u}, has no terminal record (acked, dead-lettered or cancelled){unsettled}", t.enqueued_at),
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
    }
}

impl Observer for Checker {
    #[inline]
    fn observe(&mut self, record: &Record) {
        self.observe_record(record);
    }
}

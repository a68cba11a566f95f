//! Invariant family: metrics.
//!
//! Owns: `depth_matches_history` (the queue depth recomputed from the history: jobs visible,
//! unleased and unfinished, equals every `depth_sampled` record) and `summary_matches_history`
//! (the checker's own count of every `summary.json` figure the history determines equals what
//! the run's metrics reported). Visibility and lease expiry come from the `visible` and
//! `lease_expired` records when the header declares them; otherwise they are inferred from the
//! recorded visible times and the recomputed lease ends, and a sample taken in the very
//! millisecond (or microsecond) such a transition falls due may count it or not.
//! Does not: compute latencies (the run's metrics do; they are not facts of the history alone).

use super::checker::{CheckReport, Checker, Place};
use super::invariant::Invariant;
use crate::base::ids::{JobId, SimTime};
use crate::history::{Event, Op, Record};
use crate::vocab::counters::{self, Counter, Counts, Group};
use crate::vocab::faults::{Held, HeldCounts, Struck, STRUCK_KINDS};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An inferred transition: a job becomes visible (its visible time came, or its lease ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: SimTime,
    job: u32,
    /// For an expiry, the lease's token; for a visibility, `u64::MAX`.
    fence: u64,
}

/// The depth as the checker recomputes it.
#[derive(Clone, Debug, Default)]
pub(super) struct DepthTrack {
    ready: u64,
    due: BinaryHeap<Reverse<Due>>,
}

const VISIBILITY: u64 = u64::MAX;

/// Counts of the history's records, for `summary_matches_history`.
#[derive(Clone, Debug, Default)]
pub(super) struct Recount {
    enqueued: u64,
    acked: u64,
    dead_lettered: u64,
    cancelled: u64,
    enqueue_deduped: u64,
    enqueue_conflicts: u64,
    extract_calls: u64,
    results_committed: u64,
    deduped_commits: u64,
    commit_conflicts: u64,
    outbox_events: u64,
    published: u64,
    consumer_applied: u64,
    consumer_duplicates: u64,
    reviews_done: u64,
    granted: u64,
    expired: u64,
    heartbeats: u64,
    ack_rejections: u64,
    worker_crashes: u64,
    /// Each struck fault's strikes (`vocab::faults::STRUCK`), indexed by `Struck`.
    struck: [u64; STRUCK_KINDS],
    held: HeldCounts,
    dlq_permanent: u64,
    dlq_max_attempts: u64,
    dlq_other: u64,
    evicted: u64,
    reprocessed: u64,
    refused: u64,
    rate_limited: u64,
    retries: u64,
}

impl Recount {
    pub(super) fn count(&mut self, r: &Record) {
        match &r.event {
            Event::Enqueued { .. } => self.enqueued += 1,
            Event::Acked { .. } => self.acked += 1,
            Event::DeadLettered { reason, .. } => {
                self.dead_lettered += 1;
                match reason.as_ref() {
                    "permanent_error" => self.dlq_permanent += 1,
                    "max_attempts_exceeded" => self.dlq_max_attempts += 1,
                    _ => self.dlq_other += 1,
                }
            }
            Event::Cancelled { .. } => self.cancelled += 1,
            Event::EnqueueDeduped { .. } => self.enqueue_deduped += 1,
            Event::EnqueueConflict { .. } => self.enqueue_conflicts += 1,
            Event::ExtractStarted { .. } => self.extract_calls += 1,
            Event::ResultCommitted { event, .. } => {
                self.results_committed += 1;
                self.outbox_events += event.is_some() as u64;
            }
            Event::CommitDeduped { .. } => self.deduped_commits += 1,
            Event::CommitConflict { .. } => self.commit_conflicts += 1,
            Event::Published { direct, .. } => self.published += *direct as u64,
            Event::MarkedPublished { count } => self.published += *count as u64,
            Event::EffectApplied { .. } => self.consumer_applied += 1,
            Event::DuplicateEvent { .. } => self.consumer_duplicates += 1,
            Event::ReviewDone { .. } => self.reviews_done += 1,
            Event::Leased { .. } => self.granted += 1,
            Event::LeaseExpired { .. } => self.expired += 1,
            Event::Heartbeat { .. } => self.heartbeats += 1,
            Event::Rejected { op: Op::Ack, .. } => self.ack_rejections += 1,
            Event::WorkerCrashed { .. } => self.worker_crashes += 1,
            Event::Struck(s) => self.struck[s.fault as usize] += 1,
            Event::Held(h) => self.held.add(h.fault),
            Event::DlqEvicted { .. } => self.evicted += 1,
            Event::Reprocessed { .. } => self.reprocessed += 1,
            Event::ReprocessRefused { reason, .. } => {
                self.refused += 1;
                self.rate_limited += (*reason == "rate_limited") as u64;
            }
            Event::RetryScheduled { .. } => self.retries += 1,
            _ => {}
        }
    }
}

impl Checker {
    fn depth_infer_visible(&self) -> bool {
        !self.config.emits.visible
    }

    fn depth_infer_expiry(&self) -> bool {
        !self.config.emits.lease_expired
    }

    /// Moves `job` to `place`, keeping the count of ready jobs.
    pub(super) fn depth_move(&mut self, _at: SimTime, job: JobId, place: Place) {
        let was = self
            .job_place(job)
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"));
        self.set_job_place(job, place);
        if was == Place::Ready {
            self.depth.ready -= 1;
        }
        if place == Place::Ready {
            self.depth.ready += 1;
        }
    }

    /// Whether an inferred transition still applies (nothing overtook it).
    fn depth_valid(&self, d: &Due) -> bool {
        let Some(t) = self.job(JobId(d.job)) else {
            return false;
        };
        if d.fence == VISIBILITY {
            t.place == Place::Waiting && t.visible_from == d.at
        } else {
            t.place == Place::Leased
                && t.fence.0 == d.fence
                && t.lease_end(&self.config).saturating_add(1) == d.at
        }
    }

    /// Applies the inferred transitions that certainly happened before `at`.
    pub(super) fn depth_catch_up(&mut self, at: SimTime) {
        while let Some(Reverse(d)) = self.depth.due.peek().copied() {
            if d.at >= at {
                break;
            }
            self.depth.due.pop();
            if self.depth_valid(&d) {
                self.depth_move(d.at, JobId(d.job), Place::Ready);
            }
        }
    }

    pub(super) fn depth_enqueued(&mut self, at: SimTime, job: JobId, visible_from: SimTime) {
        if visible_from <= at {
            self.depth_move(at, job, Place::Ready);
        } else {
            self.depth_waiting(at, job, visible_from);
        }
    }

    /// The job waits for `visible_at` (a delayed enqueue, a retry's backoff).
    pub(super) fn depth_waiting(&mut self, at: SimTime, job: JobId, visible_at: SimTime) {
        self.depth_move(at, job, Place::Waiting);
        if self.depth_infer_visible() {
            self.depth.due.push(Reverse(Due {
                at: visible_at,
                job: job.0,
                fence: VISIBILITY,
            }));
        }
    }

    pub(super) fn depth_visible_record(&mut self, r: &Record, job: JobId) {
        let u = self.unit();
        let t = self.job_at(job);
        if t.place != Place::Waiting || r.at < t.visible_from {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!(
                    "{job} recorded visible at {} {u}, but it was {:?} with visible time {} {u}",
                    r.at, t.place, t.visible_from
                )
            });
        }
        if t.place == Place::Waiting {
            self.depth_move(r.at, job, Place::Ready);
        }
    }

    /// A new lease (or, `depth_renewed`, a renewal): with no `lease_expired` records, the job is
    /// visible again the moment after its lease ends, unless something else happens first.
    pub(super) fn depth_leased(&mut self, at: SimTime, job: JobId) {
        self.depth_move(at, job, Place::Leased);
        self.depth_renewed(at, job);
    }

    pub(super) fn depth_renewed(&mut self, _at: SimTime, job: JobId) {
        if self.depth_infer_expiry() {
            let t = self.job_at(job);
            self.depth.due.push(Reverse(Due {
                at: t.lease_end(&self.config).saturating_add(1),
                job: job.0,
                fence: t.fence.0,
            }));
        }
    }

    pub(super) fn depth_expired_record(&mut self, r: &Record, job: JobId) {
        if self.read_job(job, |t| t.place) == Place::Leased {
            self.depth_move(r.at, job, Place::Ready);
        }
    }

    pub(super) fn depth_sampled(&mut self, r: &Record, depth: u64) {
        let low = self.depth.ready;
        // Transitions falling due at this very time may or may not have happened yet.
        let mut same_time = Vec::new();
        while let Some(Reverse(d)) = self.depth.due.peek().copied() {
            if d.at != r.at {
                break;
            }
            self.depth.due.pop();
            same_time.push(d);
        }
        let pending = same_time.iter().filter(|d| self.depth_valid(d)).count() as u64;
        for d in same_time {
            self.depth.due.push(Reverse(d));
        }
        let high = low + pending;
        if depth < low || depth > high {
            let u = self.unit();
            let at = r.at;
            let expected = if pending == 0 {
                format!("{low}")
            } else {
                format!("{low} to {high}")
            };
            self.violate(
                Invariant::DepthMatchesHistory,
                at,
                None,
                None,
                || format!("the queue depth sampled at {at} {u} is {depth}, but the history has {expected} jobs visible, unleased and unfinished then"),
                || vec![r.clone()],
            );
        }
    }

    /// The checker's own figures: a value for each counter the history alone determines (none
    /// for the others), and each held fault's count.
    pub(super) fn figures(&self) -> (Counts, HeldCounts) {
        let t = &self.recount;
        let (unfinished, max_attempts) = self.jobs_unfinished_and_most_leases();
        let (publishes, first_publishes) = self.events.publish_counts();
        let mut figures = Counts::default();
        for (c, v) in [
            (Counter::Enqueued, t.enqueued),
            (Counter::Acked, t.acked),
            (Counter::DeadLettered, t.dead_lettered),
            (Counter::Cancelled, t.cancelled),
            (Counter::Unfinished, unfinished),
            (Counter::EnqueueDeduped, t.enqueue_deduped),
            (Counter::EnqueueConflicts, t.enqueue_conflicts),
            (Counter::ExtractCalls, t.extract_calls),
            (Counter::ResultsCommitted, t.results_committed),
            (Counter::DedupedCommits, t.deduped_commits),
            (
                Counter::PayloadConflicts,
                t.enqueue_conflicts + t.commit_conflicts,
            ),
            (Counter::OutboxEvents, t.outbox_events),
            (Counter::Published, t.published),
            (Counter::Republished, publishes - first_publishes),
            (Counter::ConsumerApplied, t.consumer_applied),
            (Counter::ConsumerDuplicates, t.consumer_duplicates),
            (Counter::ReviewsDone, t.reviews_done),
            (Counter::Attempts, t.granted),
            (Counter::LeasesExpired, t.expired),
            (Counter::Heartbeats, t.heartbeats),
            (Counter::StaleRejections, self.stale_rejections),
            (Counter::AckRejections, t.ack_rejections),
            (Counter::MaxAttemptsSeen, max_attempts),
            (Counter::WorkerCrashes, t.worker_crashes),
            (Counter::DlqPermanentError, t.dlq_permanent),
            (Counter::DlqMaxAttemptsExceeded, t.dlq_max_attempts),
            (Counter::DlqOther, t.dlq_other),
            (Counter::DlqEvicted, t.evicted),
            (Counter::DlqSizeMax, self.dlq.size_max),
            (Counter::Reprocessed, t.reprocessed),
            (Counter::ReprocessRefused, t.refused),
            (Counter::ReprocessRateLimited, t.rate_limited),
            (Counter::RetriesTotal, t.retries),
        ]
        .into_iter()
        .chain(Struck::ALL.map(|s| (s.spec().count, t.struck[s as usize])))
        {
            figures.set(c, Some(v));
        }
        (figures, t.held)
    }
}

impl CheckReport {
    /// Compares the figures a run reported (`summary.json`'s counts and held-fault counts, from
    /// the run's metrics) with the checker's own, in `summary.json`'s order: every difference
    /// is a `summary_matches_history` violation. A figure the checker does not count (an outbox
    /// row count, a peak) is not compared.
    pub fn cross_check_figures(&mut self, counts: &counters::Tally, held: &HeldCounts) {
        let end = self.end;
        // (path, reported, own) of each figure that differs.
        let mut differ = Vec::new();
        for group in Group::ALL {
            for (c, _) in Counter::of_group(group) {
                match self.figures.get(c) {
                    Some(own) if own != counts.get(c) => {
                        differ.push((c.path().expect("counted"), counts.get(c), own));
                    }
                    _ => {}
                }
            }
            if group == Group::Crashes {
                for h in Held::ALL {
                    let (value, own) = (held.get(h), self.held_figures.get(h));
                    if own != value {
                        let crashes = Group::Crashes.key().expect("an object");
                        differ.push((format!("{crashes}.{}", h.spec().count), value, own));
                    }
                }
            }
        }
        for (name, value, own) in differ {
            let v = self.verdict_mut(Invariant::SummaryMatchesHistory);
            v.count += 1;
            if v.first.is_none() {
                v.first = Some(super::Violation {
                    invariant: Invariant::SummaryMatchesHistory,
                    at: end,
                    job: None,
                    key: None,
                    message: format!(
                        "summary.json reports {name} = {value}, but the history gives {own}"
                    ),
                    evidence: Vec::new(),
                });
            }
        }
    }
}

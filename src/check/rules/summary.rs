//! Invariant family: the figures a run reports.
//!
//! Owns: `summary_matches_history` (docs/checker-rules.md): the checker's own count of every
//! `summary.json` figure the history determines, and its own queueWaitMs, inferenceMs and
//! reviewWaitMs distributions recomputed from the history (a lease's wait from the job's visible
//! time as the history established it, never from a recorded `visible_at`; an extraction's
//! recorded inference; a review's wait from its event's latest apply), compared after the run
//! with what its metrics reported (`CheckReport::cross_check_figures`).
//! Does not: measure anything the history does not determine (an outbox row count, a peak), or
//! read the metrics (`run/judges.rs` hands their figures over).

use super::{Ctx, End, Family, Out, Spec};
use crate::base::ids::JobId;
use crate::check::invariant::{Invariant, Kind};
use crate::check::verdict::CheckReport;
use crate::history::{Event, Op, Record};
use crate::vocab::counters::{self, Counter, Counts, Group};
use crate::vocab::faults::{Held, HeldCounts, Struck, STRUCK_KINDS};
use crate::vocab::latency::{Latency, Stats};

pub(in crate::check) const SUMMARY_MATCHES_HISTORY: Spec = Spec {
    name: "summary_matches_history",
    kind: Kind::Eventually,
    sentence: "every figure of summary.json that the history determines (counts of jobs, outcomes, effects, leases, crashes, DLQ entries, reprocesses, retries, and the queue-wait, inference and review-wait distributions) equals the checker's own",
};

/// Counts of the history's records, for `summary_matches_history`.
#[derive(Clone, Debug, Default, Hash)]
struct Recount {
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
    fn count(&mut self, r: &Record) {
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
            Event::MarkedEvents { events } => self.published += events.len() as u64,
            Event::RelayLost {} => self.struck[Struck::RelayCrash as usize] += 1,
            Event::WorkerLost { .. } => self.worker_crashes += 1,
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

/// The checker's own figures and distributions, for `summary_matches_history`.
#[derive(Default, Hash)]
pub(in crate::check) struct Summary {
    recount: Recount,
    /// Refused writes whose token was not the job's latest.
    stale_rejections: u64,
    queue_wait: Latency,
    inference: Latency,
    review_wait: Latency,
}

/// The distributions compared, by their `summary.json` names.
pub const DISTRIBUTIONS: [&str; 3] = ["queueWaitMs", "inferenceMs", "reviewWaitMs"];

impl Family for Summary {
    const READS: u64 = super::k::ALL;
    const OWNS: &'static [Invariant] = &[Invariant::SummaryMatchesHistory];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, _out: &mut Out) {
        self.recount.count(c.r);
        match &c.r.event {
            Event::Leased { job, .. } => {
                let t = c.track(*job);
                self.queue_wait
                    .record(c.at().saturating_sub(t.visible_from));
            }
            Event::ExtractDone { inference, .. } => self.inference.record(*inference),
            Event::ReviewDone { event, .. } => {
                let events = c.facts.events();
                let wait = match events.applies(*event) > events.reviews(*event) {
                    true => events
                        .last_applied(*event)
                        .map_or(0, |a| c.at().saturating_sub(a)),
                    false => 0,
                };
                self.review_wait.record(wait);
            }
            Event::Rejected { job, presented, .. } if c.track(*job).fence() != Some(*presented) => {
                self.stale_rejections += 1;
            }
            _ => {}
        }
    }

    fn finish(&mut self, _e: &End, _out: &mut Out) {}
}

impl Summary {
    /// The checker's own figures: a value for each counter the history alone determines (none
    /// for the others), and each held fault's count.
    pub fn figures(&self, e: &End) -> (Counts, HeldCounts, [Stats; 3]) {
        let t = &self.recount;
        let (unfinished, max_attempts) = unfinished_and_most_leases(e);
        let (publishes, first_publishes) = e.facts.events().publish_counts();
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
            (Counter::DlqSizeMax, e.facts.dlq_max()),
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
        let stats = [
            self.queue_wait.stats(),
            self.inference.stats(),
            self.review_wait.stats(),
        ];
        (figures, t.held, stats)
    }
}

/// Jobs with no terminal record, and the most leases any job had.
fn unfinished_and_most_leases(e: &End) -> (u64, u64) {
    let (mut unfinished, mut most) = (0, 0);
    for i in 0..e.facts.jobs() {
        if let Some((ended, leases)) = e.facts.ended_and_leases(JobId(i as u32)) {
            unfinished += !ended as u64;
            most = most.max(leases);
        }
    }
    (unfinished, most)
}

impl CheckReport {
    /// Compares the figures a run reported (`summary.json`'s counts and held-fault counts, and
    /// its queueWaitMs, inferenceMs and reviewWaitMs distributions, from the run's metrics) with
    /// the checker's own, in `summary.json`'s order: every difference is a
    /// `summary_matches_history` violation. A figure the checker does not count (an outbox row
    /// count, a peak) is not compared.
    pub fn cross_check_figures(
        &mut self,
        counts: &counters::Tally,
        held: &HeldCounts,
        distributions: &[Stats; 3],
    ) {
        // (path, reported, own) of each figure that differs.
        let mut differ = Vec::new();
        for group in Group::ALL {
            for (c, _) in Counter::of_group(group) {
                match self.figures.get(c) {
                    Some(own) if own != counts.get(c) => {
                        let path = c.path().expect("counted");
                        differ.push(format!(
                            "summary.json reports {path} = {}, but the history gives {own}",
                            counts.get(c)
                        ));
                    }
                    _ => {}
                }
            }
            if group == Group::Crashes {
                for h in Held::ALL {
                    let (value, own) = (held.get(h), self.held_figures.get(h));
                    if own != value {
                        let crashes = Group::Crashes.key().expect("an object");
                        differ.push(format!(
                            "summary.json reports {crashes}.{} = {value}, but the history gives {own}",
                            h.spec().count
                        ));
                    }
                }
            }
        }
        for ((name, reported), own) in DISTRIBUTIONS
            .iter()
            .zip(distributions)
            .zip(&self.distributions)
        {
            if reported != own {
                differ.push(format!(
                    "summary.json reports {name} {}, but the history gives {}",
                    describe(reported),
                    describe(own)
                ));
            }
        }
        let (end, record) = (self.end, self.end_record);
        for message in differ {
            let v = self.verdict_mut(Invariant::SummaryMatchesHistory);
            v.count += 1;
            if v.first.is_none() {
                v.first = Some(super::super::Violation {
                    invariant: Invariant::SummaryMatchesHistory,
                    at: end,
                    record,
                    job: None,
                    key: None,
                    message,
                    evidence: Vec::new(),
                });
            }
        }
    }
}

/// A distribution's figures as a message states them.
fn describe(s: &Stats) -> String {
    format!(
        "count {} min {} p50 {} p95 {} p99 {} max {} mean {}",
        s.count, s.min, s.p50, s.p95, s.p99, s.max, s.mean
    )
}

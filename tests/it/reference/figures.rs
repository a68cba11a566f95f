//! What the reference counts: the `sometimes` properties each record shows, the figures of
//! `summary.json` the history determines, and `summary_matches_history` (those figures against
//! what a run's metrics reported).
//!
//! Owns: which record (in which state of the facts) reaches which `sometimes` property, and
//! which records each figure counts.
//! Does not: judge the other invariants.

use super::facts::{Facts, Terminal};
use super::Inv;
use super::{Ctx, Verdicts};
use durasim::check::Sometimes;
use durasim::history::Event;
use durasim::vocab::counters::{Counter, Group};
use durasim::vocab::faults::{Held, HeldCounts, Struck};
use std::collections::BTreeMap;

/// The `sometimes` properties the record at hand reaches.
pub fn sometimes(cx: &Ctx) -> Vec<Sometimes> {
    let f = cx.facts;
    let c = &f.config;
    let at = cx.at();
    let mut out = Vec::new();
    match &cx.r.event {
        Event::EnqueueDeduped { .. } => out.push(Sometimes::EnqueueDeduped),
        Event::EnqueueConflict { .. } | Event::CommitConflict { .. } => {
            out.push(Sometimes::PayloadConflict)
        }
        Event::Leased { job, .. } => {
            let j = f.job(*job);
            if j.lease_held && at > j.lease_end(c) && j.renewed {
                out.push(Sometimes::RenewedLeaseExpired);
            }
        }
        Event::LeaseExpired { job, fence } => {
            out.push(Sometimes::LeaseExpired);
            let j = f.job(*job);
            if *fence == j.fence && j.lease_held && at > j.lease_end(c) && j.renewed {
                out.push(Sometimes::RenewedLeaseExpired);
            }
        }
        Event::Heartbeat { .. } => out.push(Sometimes::HeartbeatRenewed),
        Event::Rejected { job, presented, .. } if f.job(*job).fence != *presented => {
            out.push(Sometimes::StaleFenceRejected);
        }
        Event::ExtractStarted { stalled: true, .. } => out.push(Sometimes::Held(Held::Stall)),
        // A stall counts at its `extract_started` (a recorder may leave `stall_began` out).
        Event::Held(h) if h.fault != Held::Stall => out.push(Sometimes::Held(h.fault)),
        Event::CommitDeduped { .. } => out.push(Sometimes::CommitDeduped),
        Event::Acked { job, .. } if f.job(*job).reprocess_of.is_some() => {
            out.push(Sometimes::ReprocessSucceeded);
        }
        Event::RetryScheduled { .. } => out.push(Sometimes::RetryScheduled),
        Event::DeadLettered { .. } => out.push(Sometimes::DeadLettered),
        Event::Cancelled { .. } => out.push(Sometimes::DeadlineCancellation),
        Event::DlqEvicted { .. } => out.push(Sometimes::DlqEvicted),
        Event::WorkerCrashed { .. } | Event::WorkerLost { .. } => {
            out.push(Sometimes::WorkerCrashed)
        }
        Event::RelayLost {} => out.push(Sometimes::Struck(Struck::RelayCrash)),
        Event::Struck(s) => out.push(Sometimes::Struck(s.fault)),
        Event::DuplicateEvent { .. } => out.push(Sometimes::RepublishAbsorbed),
        Event::ReprocessRefused { job: Some(job), .. } => {
            if matches!(f.job(*job).terminal, Some((Terminal::Cancelled, _))) {
                out.push(Sometimes::OperatorAtCancelled);
            }
        }
        Event::Reprocessed { .. } => out.push(Sometimes::Reprocessed),
        _ => {}
    }
    out
}

/// The figures of `summary.json` the history determines, and each held fault's count.
pub fn figures(f: &Facts) -> (BTreeMap<Counter, u64>, HeldCounts) {
    let n = |ty: &str| f.counts.by_type.get(ty).copied().unwrap_or(0);
    let unfinished = f.jobs.values().filter(|j| j.terminal.is_none()).count() as u64;
    let most_leases = f.jobs.values().map(|j| j.leases as u64).max().unwrap_or(0);
    let published_events = f.events.values().filter(|e| e.published).count() as u64;
    let mut out = BTreeMap::new();
    for (c, v) in [
        (Counter::Enqueued, n("enqueued")),
        (Counter::Acked, n("acked")),
        (Counter::DeadLettered, n("dead_lettered")),
        (Counter::Cancelled, n("cancelled")),
        (Counter::Unfinished, unfinished),
        (Counter::EnqueueDeduped, n("enqueue_deduped")),
        (Counter::EnqueueConflicts, n("enqueue_conflict")),
        (Counter::ExtractCalls, n("extract_started")),
        (Counter::ResultsCommitted, n("result_committed")),
        (Counter::DedupedCommits, n("commit_deduped")),
        (
            Counter::PayloadConflicts,
            n("enqueue_conflict") + n("commit_conflict"),
        ),
        (Counter::OutboxEvents, f.counts.outbox_events),
        (Counter::Published, f.counts.published),
        (Counter::Republished, f.counts.publishes - published_events),
        (Counter::ConsumerApplied, n("effect_applied")),
        (Counter::ConsumerDuplicates, n("duplicate_event")),
        (Counter::ReviewsDone, n("review_done")),
        (Counter::Attempts, n("leased")),
        (Counter::LeasesExpired, n("lease_expired")),
        (Counter::Heartbeats, n("heartbeat")),
        (Counter::StaleRejections, f.counts.stale_rejections),
        (Counter::AckRejections, f.counts.ack_rejections),
        (Counter::MaxAttemptsSeen, most_leases),
        (Counter::WorkerCrashes, n("worker_crashed")),
        (Counter::DlqPermanentError, f.counts.dlq_permanent),
        (Counter::DlqMaxAttemptsExceeded, f.counts.dlq_max_attempts),
        (Counter::DlqOther, f.counts.dlq_other),
        (Counter::DlqEvicted, n("dlq_evicted")),
        (Counter::DlqSizeMax, f.dlq_most),
        (Counter::Reprocessed, n("reprocessed")),
        (Counter::ReprocessRefused, n("reprocess_refused")),
        (Counter::ReprocessRateLimited, f.counts.rate_limited),
        (Counter::RetriesTotal, n("retry_scheduled")),
    ] {
        out.insert(c, v);
    }
    for s in Struck::ALL {
        out.insert(s.spec().count, n(s.spec().record));
    }
    let mut held = HeldCounts::default();
    for h in Held::ALL {
        for _ in 0..n(h.spec().record) {
            held.add(h);
        }
    }
    (out, held)
}

/// A latency distribution's figures, as `summary.json` shows them: the count, the exact
/// minimum and maximum, the p50, p95 and p99 of an hdrhistogram of 3 significant figures fed
/// every value (kept within the extremes), and its mean to the thousandth.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RefStats {
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
}

pub fn stats(values: &[u64]) -> RefStats {
    let (Some(min), Some(max)) = (values.iter().min(), values.iter().max()) else {
        return RefStats::default();
    };
    let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant figures");
    for v in values {
        h.record(*v)
            .expect("an auto-resizing histogram takes any value");
    }
    let q = |p: f64| h.value_at_quantile(p).clamp(*min, *max);
    RefStats {
        count: values.len() as u64,
        min: *min,
        p50: q(0.50),
        p95: q(0.95),
        p99: q(0.99),
        max: *max,
        mean: (h.mean() * 1000.0).round() / 1000.0,
    }
}

/// `summary_matches_history`: every figure the history determines against what the run's
/// metrics reported, in `summary.json`'s order, then the three latency distributions.
pub fn summary(
    end: (u64, usize),
    (own, own_held, own_distributions): (&BTreeMap<Counter, u64>, &HeldCounts, &[RefStats; 3]),
    reported: &super::Reported,
    out: &mut Verdicts,
) {
    for group in Group::ALL {
        for (c, _) in Counter::of_group(group) {
            let got = reported.counts.get(c);
            if let Some(v) = own.get(&c).filter(|v| **v != got) {
                out.raise(
                    Inv::SummaryMatchesHistory,
                    end,
                    None,
                    None,
                    format!("{c:?}: reported {got}, the history gives {v}"),
                );
            }
        }
        if group == Group::Crashes {
            for h in Held::ALL {
                if own_held.get(h) != reported.held.get(h) {
                    out.raise(
                        Inv::SummaryMatchesHistory,
                        end,
                        None,
                        None,
                        format!(
                            "{h:?}: reported {}, the history gives {}",
                            reported.held.get(h),
                            own_held.get(h)
                        ),
                    );
                }
            }
        }
    }
    let names = ["queueWaitMs", "inferenceMs", "reviewWaitMs"];
    for ((name, own), got) in names
        .iter()
        .zip(own_distributions)
        .zip(&reported.distributions)
    {
        if own != got {
            out.raise(
                Inv::SummaryMatchesHistory,
                end,
                None,
                None,
                format!("{name}: reported {got:?}, the history gives {own:?}"),
            );
        }
    }
}

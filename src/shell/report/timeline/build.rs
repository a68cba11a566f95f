//! Building the timeline from a history: a first pass counts each job's records, the budget
//! picks the jobs to keep (the ones a violation names first, then by id), a second pass turns
//! the kept jobs' records into bars, marks and bands.
//!
//! Owns: which record becomes what on which lane, and when an attempt's bar ends.
//! Does not: read files (`history_source` replays the history) or draw (`page`).

use super::WORKER0;
use super::{Band, Bar, Mark, Ms, Timeline, CONSUMER, ITEM_BUDGET, JOBLESS_BUDGET, QUEUE, RELAY};
use crate::history::{Event, Op, Record};
use crate::shell::report::error::ReportError;
use crate::shell::report::history_source::HistorySource;
use crate::vocab::faults::Struck;
use std::collections::BTreeMap;

/// The job a record is about, if any (the consumer's duplicate names only its event).
fn job_of(e: &Event) -> Option<u32> {
    Some(match e {
        Event::Enqueued { job, .. }
        | Event::Leased { job, .. }
        | Event::LeaseExpired { job, .. }
        | Event::Heartbeat { job, .. }
        | Event::Rejected { job, .. }
        | Event::AttemptFailed { job, .. }
        | Event::ResultCommitted { job, .. }
        | Event::CommitDeduped { job, .. }
        | Event::CommitConflict { job, .. }
        | Event::Acked { job, .. }
        | Event::RetryScheduled { job, .. }
        | Event::DeadLettered { job, .. }
        | Event::Cancelled { job, .. }
        | Event::DlqEvicted { job, .. }
        | Event::WorkerCrashed { job, .. }
        | Event::Published { job, .. }
        | Event::EffectApplied { job, .. }
        | Event::ReviewDone { job, .. }
        | Event::PayloadMutated { job, .. } => job.0,
        Event::EnqueueDeduped { existing, .. }
        | Event::EnqueueConflict { existing, .. }
        | Event::EnqueueReplaced { existing, .. } => existing.0,
        Event::Reprocessed { old_job, .. } => old_job.0,
        Event::ReprocessRefused { job, .. } => job.map(|j| j.0)?,
        Event::Held(h) => h.job.0,
        Event::Struck(s) => s.job.map(|j| j.0)?,
        _ => return None,
    })
}

/// Builds the timeline of `history`; `focus` are the jobs a violation names (always kept).
pub fn build(history: &HistorySource, focus: &[u32]) -> Result<Timeline, ReportError> {
    let mut counts: Vec<u64> = Vec::new();
    history.replay(&mut |r, _| {
        if let Some(j) = job_of(&r.event) {
            let j = j as usize;
            if counts.len() <= j {
                counts.resize(j + 1, 0);
            }
            counts[j] += 1;
        }
    })?;
    let keep = choose(&counts, focus);
    let mut b = Builder {
        keep: &keep,
        ..Builder::default()
    };
    history.replay(&mut |r, per_ms| b.record(r, per_ms))?;
    let mut t = b.finish();
    t.jobs_total = counts.iter().filter(|c| **c > 0).count() as u64;
    t.jobs_shown = keep
        .iter()
        .zip(&counts)
        .filter(|(k, c)| **k && **c > 0)
        .count() as u64;
    t.source = history.describe();
    if t.jobs_shown < t.jobs_total {
        t.source.push_str(&format!(
            "; {} of {} jobs kept (the jobs a violation names, then by id, up to {} records)",
            t.jobs_shown, t.jobs_total, ITEM_BUDGET
        ));
    }
    Ok(t)
}

/// Which jobs to keep: every job a violation names, then jobs by id while the records fit.
fn choose(counts: &[u64], focus: &[u32]) -> Vec<bool> {
    let mut keep = vec![false; counts.len()];
    let mut used = 0;
    for &j in focus {
        if let Some(k) = keep.get_mut(j as usize) {
            *k = true;
            used += counts[j as usize];
        }
    }
    for (j, c) in counts.iter().enumerate() {
        if !keep[j] && used + c <= ITEM_BUDGET {
            keep[j] = true;
            used += c;
        }
    }
    keep
}

#[derive(Default)]
struct Builder<'a> {
    keep: &'a [bool],
    t: Timeline,
    per_ms: u64,
    /// Per worker, the index of its attempt in progress.
    open: Vec<Option<usize>>,
    /// Per worker, when it went down (a crash) if it has not restarted.
    down: Vec<Option<Ms>>,
    /// The bar of each `(job, fence)`, for a lease expiry.
    by_fence: BTreeMap<(u32, u64), usize>,
    /// The job of each published event, for the consumer's duplicates.
    event_job: BTreeMap<u64, u32>,
    jobless: usize,
    last: Ms,
}

impl Builder<'_> {
    fn kept(&self, job: Option<u32>) -> bool {
        match job {
            Some(j) => self.keep.get(j as usize).copied().unwrap_or(false),
            None => self.jobless < JOBLESS_BUDGET,
        }
    }

    fn mark(
        &mut self,
        lane: u32,
        at: Ms,
        kind: &str,
        job: Option<u32>,
        fence: Option<u64>,
        detail: String,
    ) {
        if job.is_none() {
            self.jobless += 1;
        }
        self.t.marks.push(Mark {
            lane,
            at,
            kind: kind.into(),
            job,
            fence,
            detail,
        });
    }

    fn worker_slot(&mut self, w: u32) -> usize {
        let w = w as usize;
        if self.open.len() <= w {
            self.open.resize(w + 1, None);
            self.down.resize(w + 1, None);
        }
        self.t.workers = self.t.workers.max(w as u32 + 1);
        w
    }

    /// Extends the worker's attempt in progress to `at` when it is `job`'s.
    fn touch(&mut self, w: u32, job: u32, at: Ms) {
        let w = self.worker_slot(w);
        if let Some(i) = self.open[w] {
            if self.t.bars[i].job == job {
                self.t.bars[i].end = at;
            }
        }
    }

    /// Ends the worker's attempt in progress (when it is `job`'s) with `outcome`.
    fn close(&mut self, w: u32, job: u32, at: Ms, outcome: &str) {
        let w = self.worker_slot(w);
        if let Some(i) = self.open[w] {
            if self.t.bars[i].job == job {
                self.t.bars[i].end = at;
                self.t.bars[i].outcome = outcome.into();
                self.open[w] = None;
            }
        }
    }

    fn record(&mut self, r: &Record, per_ms: u64) {
        self.per_ms = per_ms;
        let at = Ms::of(r.at, per_ms);
        self.last = self.last.max(at);
        let job = job_of(&r.event).or_else(|| match &r.event {
            Event::DuplicateEvent { event, .. } => self.event_job.get(&event.0).copied(),
            _ => None,
        });
        if !self.kept(job) {
            return;
        }
        if !self.worker_step(r, at) && !self.queue_step(r, at) {
            self.delivery_step(r, at, job);
        }
    }

    /// A worker's step; false when the record is not one.
    fn worker_step(&mut self, r: &Record, at: Ms) -> bool {
        let lane = |w: u32| WORKER0 + w;
        match &r.event {
            Event::Leased {
                job,
                worker,
                fence,
                attempt,
                ..
            } => {
                let w = self.worker_slot(worker.0);
                if let Some(i) = self.open[w].take() {
                    self.t.bars[i].outcome = "abandoned".into();
                }
                self.by_fence.insert((job.0, fence.0), self.t.bars.len());
                self.open[w] = Some(self.t.bars.len());
                self.t.bars.push(Bar {
                    worker: worker.0,
                    job: job.0,
                    fence: fence.0,
                    attempt: attempt.unwrap_or(0),
                    start: at,
                    end: at,
                    lost: None,
                    outcome: "open".into(),
                });
            }
            Event::Heartbeat {
                job, worker, fence, ..
            } => {
                self.touch(worker.0, job.0, at);
                self.mark(
                    lane(worker.0),
                    at,
                    "hb",
                    Some(job.0),
                    Some(fence.0),
                    "heartbeat renewed the lease".into(),
                );
            }
            Event::Rejected {
                job,
                worker,
                op,
                presented,
                held,
                reason,
            } => {
                let held = held.map_or("none".to_string(), |h| format!("fence {}", h.0));
                let detail = format!(
                    "{} refused ({reason}): presented fence {}, the job holds {held}",
                    op.name(),
                    presented.0
                );
                self.mark(
                    lane(worker.0),
                    at,
                    "rej",
                    Some(job.0),
                    Some(presented.0),
                    detail,
                );
                match op {
                    Op::Heartbeat => self.touch(worker.0, job.0, at),
                    _ => self.close(worker.0, job.0, at, &format!("{}_rejected", op.name())),
                }
            }
            Event::ExtractStarted { job, worker, .. } | Event::ExtractDone { job, worker, .. } => {
                self.touch(worker.0, job.0, at)
            }
            Event::AttemptFailed {
                job,
                worker,
                fence,
                error,
                ..
            } => {
                self.touch(worker.0, job.0, at);
                self.mark(
                    lane(worker.0),
                    at,
                    "fail",
                    Some(job.0),
                    Some(fence.0),
                    format!("attempt failed: {error}"),
                );
            }
            Event::ResultCommitted {
                job, worker, event, ..
            } => {
                self.touch(worker.0, job.0, at);
                let detail = event.map_or(
                    "result committed, no outbox event (a direct publish follows)".into(),
                    |e| format!("result and outbox event {} committed", e.0),
                );
                self.mark(lane(worker.0), at, "commit", Some(job.0), None, detail);
            }
            Event::CommitDeduped { job, worker, .. } => {
                self.touch(worker.0, job.0, at);
                self.mark(
                    lane(worker.0),
                    at,
                    "dedupe",
                    Some(job.0),
                    None,
                    "commit deduped: the key already has a result".into(),
                );
            }
            Event::CommitConflict { job, worker, .. } => {
                self.touch(worker.0, job.0, at);
                self.mark(
                    lane(worker.0),
                    at,
                    "conflict",
                    Some(job.0),
                    None,
                    "commit refused: the key has a result of another payload".into(),
                );
            }
            _ => return self.worker_end(r, at),
        }
        true
    }

    /// A step that ends a worker's attempt; false when the record is not one.
    fn worker_end(&mut self, r: &Record, at: Ms) -> bool {
        let lane = |w: u32| WORKER0 + w;
        match &r.event {
            Event::Acked { job, worker, fence } => {
                self.close(worker.0, job.0, at, "acked");
                self.mark(
                    lane(worker.0),
                    at,
                    "ack",
                    Some(job.0),
                    Some(fence.0),
                    format!("ack accepted with fence {}", fence.0),
                );
            }
            Event::RetryScheduled {
                job,
                worker,
                fence,
                visible_at,
                ..
            } => {
                self.close(worker.0, job.0, at, "retry");
                let v = Ms::of(*visible_at, self.per_ms);
                self.mark(
                    lane(worker.0),
                    at,
                    "retry",
                    Some(job.0),
                    Some(fence.0),
                    format!("retry scheduled, visible again at {} ms", v.0),
                );
            }
            Event::DeadLettered {
                job,
                worker: Some(w),
                fence,
                reason,
                ..
            } => {
                self.close(w.0, job.0, at, "dead_lettered");
                self.mark(
                    lane(w.0),
                    at,
                    "dlq",
                    Some(job.0),
                    fence.map(|f| f.0),
                    format!("dead-lettered: {reason}"),
                );
            }
            Event::Cancelled {
                job,
                worker: Some(w),
                fence,
                ..
            } => {
                self.close(w.0, job.0, at, "cancelled");
                self.mark(
                    lane(w.0),
                    at,
                    "cancel",
                    Some(job.0),
                    fence.map(|f| f.0),
                    "cancelled past its deadline".into(),
                );
            }
            Event::WorkerCrashed {
                worker,
                job,
                fence,
                point,
            } => {
                self.close(worker.0, job.0, at, "crashed");
                self.mark(
                    lane(worker.0),
                    at,
                    "crash",
                    Some(job.0),
                    Some(fence.0),
                    format!("worker crashed {point}"),
                );
                let w = self.worker_slot(worker.0);
                self.down[w] = Some(at);
            }
            Event::WorkerRestarted { worker } => {
                let w = self.worker_slot(worker.0);
                if let Some(from) = self.down[w].take() {
                    self.t.bands.push(Band {
                        lane: lane(worker.0),
                        start: from,
                        end: at,
                        kind: "down".into(),
                        job: None,
                    });
                }
            }
            Event::Held(h) => {
                self.touch(h.worker.0, h.job.0, at);
                let end = at.plus(Ms::of(h.ms, self.per_ms));
                let kind = h.fault.spec().field.to_string();
                self.t.bands.push(Band {
                    lane: lane(h.worker.0),
                    start: at,
                    end,
                    kind,
                    job: Some(h.job.0),
                });
            }
            _ => return false,
        }
        true
    }

    /// A step of the queue or an operator; false when the record is not one.
    fn queue_step(&mut self, r: &Record, at: Ms) -> bool {
        let (kind, job, detail): (&str, u32, String) = match &r.event {
            Event::LeaseExpired { job, fence } => {
                let bar = self.by_fence.get(&(job.0, fence.0)).copied();
                let lane = bar.map_or(QUEUE, |i| WORKER0 + self.t.bars[i].worker);
                if let Some(i) = bar {
                    self.t.bars[i].lost = Some(at);
                }
                let detail = format!("lease of fence {} expired", fence.0);
                self.mark(lane, at, "exp", Some(job.0), Some(fence.0), detail);
                return true;
            }
            Event::Enqueued {
                job, reprocess_of, ..
            } => (
                "enq",
                job.0,
                reprocess_of.map_or("enqueued".into(), |o| {
                    format!("enqueued, reprocessing job-{}", o.0)
                }),
            ),
            Event::EnqueueDeduped { existing, .. } => (
                "enq_dedupe",
                existing.0,
                "enqueue deduped to this job".into(),
            ),
            Event::EnqueueConflict { existing, .. } => (
                "enq_conflict",
                existing.0,
                "enqueue refused: same key, other payload".into(),
            ),
            Event::EnqueueReplaced { existing, .. } => (
                "enq_replace",
                existing.0,
                "payload replaced by a new enqueue".into(),
            ),
            Event::DeadLettered {
                job,
                worker: None,
                reason,
                ..
            } => ("dlq", job.0, format!("dead-lettered at pick: {reason}")),
            Event::Cancelled {
                job, worker: None, ..
            } => (
                "cancel",
                job.0,
                "cancelled at pick, past its deadline".into(),
            ),
            Event::DlqEvicted { job, .. } => ("evict", job.0, "evicted from the DLQ".into()),
            Event::PayloadMutated { job, .. } => {
                ("mutate", job.0, "payload changed under its key".into())
            }
            Event::Reprocessed {
                old_job,
                new_job,
                operator,
            } => (
                "op",
                old_job.0,
                format!(
                    "{operator} reprocessed job-{} as job-{}",
                    old_job.0, new_job.0
                ),
            ),
            Event::ReprocessRefused {
                job: Some(j),
                operator,
                reason,
            } => (
                "op_refused",
                j.0,
                format!(
                    "reprocess by {} refused: {reason}",
                    operator.as_deref().unwrap_or("(no operator)")
                ),
            ),
            _ => return false,
        };
        self.mark(QUEUE, at, kind, Some(job), None, detail);
        true
    }

    /// A step of the relay or the consumer.
    fn delivery_step(&mut self, r: &Record, at: Ms, job: Option<u32>) {
        let (lane, kind, detail) = match &r.event {
            Event::Published {
                event,
                job,
                send,
                direct,
                ..
            } => {
                self.event_job.insert(event.0, job.0);
                let how = match (direct, send) {
                    (true, _) => "published directly (no outbox)".to_string(),
                    (false, Some(n)) if *n > 1 => format!("republished (send {n})"),
                    _ => "published".to_string(),
                };
                (
                    RELAY,
                    if send.is_some_and(|n| n > 1) {
                        "repub"
                    } else {
                        "pub"
                    },
                    format!("event {} {how}", event.0),
                )
            }
            Event::MarkedPublished { count } => {
                (RELAY, "marked", format!("{count} marked published"))
            }
            Event::OutboxPruned { rows } => (RELAY, "pruned", format!("{rows} outbox rows pruned")),
            Event::Struck(s) if s.fault == Struck::RelayCrash => (
                RELAY,
                "rcrash",
                format!("relay crashed: {} published, not marked", s.value),
            ),
            Event::Struck(s) => (
                CONSUMER,
                "ccrash",
                format!(
                    "consumer crashed: event {} applied, not acknowledged",
                    s.value
                ),
            ),
            Event::EffectApplied { event, .. } => {
                (CONSUMER, "apply", format!("event {} applied", event.0))
            }
            Event::DuplicateEvent { event, .. } => (
                CONSUMER,
                "dup",
                format!("duplicate event {} absorbed", event.0),
            ),
            Event::ReviewDone { event, .. } => (
                CONSUMER,
                "review",
                format!("review of event {} done", event.0),
            ),
            _ => return,
        };
        self.mark(lane, at, kind, job, None, detail);
    }

    fn finish(mut self) -> Timeline {
        let last = self.last;
        for (w, down) in self.down.iter().enumerate() {
            if let Some(from) = down {
                self.t.bands.push(Band {
                    lane: WORKER0 + w as u32,
                    start: *from,
                    end: last,
                    kind: "down".into(),
                    job: None,
                });
            }
        }
        self.t.end = last;
        self.t.per_ms = self.per_ms.max(1);
        self.t
    }
}

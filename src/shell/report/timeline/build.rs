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
            "; {} of {} jobs kept (the jobs a violation names, then every few jobs across the run, up to {} records)",
            t.jobs_shown, t.jobs_total, ITEM_BUDGET
        ));
    }
    Ok(t)
}

/// Which jobs to keep: every job a violation names, then every k-th job (k as small as lets
/// them fit the budget), so the jobs kept span the whole run, then any other that still fits.
fn choose(counts: &[u64], focus: &[u32]) -> Vec<bool> {
    let mut keep = vec![false; counts.len()];
    let mut used = 0;
    for &j in focus {
        if let Some(k) = keep.get_mut(j as usize) {
            *k = true;
            used += counts[j as usize];
        }
    }
    let rest: u64 = (0..counts.len())
        .filter(|j| !keep[*j])
        .map(|j| counts[j])
        .sum();
    let room = ITEM_BUDGET.saturating_sub(used).max(1);
    let stride = rest.div_ceil(room).max(1) as usize;
    for pass in [stride, 1] {
        for (j, c) in counts.iter().enumerate().step_by(pass) {
            if !keep[j] && used + c <= ITEM_BUDGET {
                keep[j] = true;
                used += c;
            }
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
        let step = attempt_step(&r.event)
            .or_else(|| commit_step(&r.event))
            .or_else(|| ending_step(&r.event, per_ms))
            .or_else(|| crash_step(&r.event));
        if let Some(step) = step {
            self.apply(step, at);
        } else if !self.special_step(r, at) && !self.queue_step(r, at) {
            self.delivery_step(r, at, job);
        }
    }

    /// A worker's step on its lane: a mark, and the attempt extended or ended.
    fn apply(&mut self, s: Step, at: Ms) {
        match &s.end {
            End::Touch => self.touch(s.worker, s.job, at),
            End::Close(outcome) => self.close(s.worker, s.job, at, outcome),
        }
        if let Some(kind) = s.kind {
            self.mark(WORKER0 + s.worker, at, kind, Some(s.job), s.fence, s.detail);
        }
        if s.crashed {
            let w = self.worker_slot(s.worker);
            self.down[w] = Some(at);
        }
    }

    /// A lease, a lease expiry, a held fault, a restart; false when the record is none.
    fn special_step(&mut self, r: &Record, at: Ms) -> bool {
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
            Event::LeaseExpired { job, fence } => {
                let bar = self.by_fence.get(&(job.0, fence.0)).copied();
                let lane = bar.map_or(QUEUE, |i| WORKER0 + self.t.bars[i].worker);
                if let Some(i) = bar {
                    self.t.bars[i].lost = Some(at);
                }
                let detail = format!("lease of fence {} expired", fence.0);
                self.mark(lane, at, "exp", Some(job.0), Some(fence.0), detail);
            }
            Event::Held(h) => {
                self.touch(h.worker.0, h.job.0, at);
                let end = at.plus(Ms::of(h.ms, self.per_ms));
                let kind = h.fault.spec().field.to_string();
                let (lane, job) = (WORKER0 + h.worker.0, Some(h.job.0));
                self.t.bands.push(Band {
                    lane,
                    start: at,
                    end,
                    kind,
                    job,
                });
            }
            Event::WorkerRestarted { worker } => {
                let w = self.worker_slot(worker.0);
                if let Some(start) = self.down[w].take() {
                    let lane = WORKER0 + worker.0;
                    let kind = "down".to_string();
                    self.t.bands.push(Band {
                        lane,
                        start,
                        end: at,
                        kind,
                        job: None,
                    });
                }
            }
            _ => return false,
        }
        true
    }

    /// A step of the queue or an operator; false when the record is not one.
    fn queue_step(&mut self, r: &Record, at: Ms) -> bool {
        match queue_mark(&r.event) {
            Some((kind, job, detail)) => {
                self.mark(QUEUE, at, kind, Some(job), None, detail);
                true
            }
            None => false,
        }
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

/// How a worker's step leaves its attempt.
enum End {
    /// Still going: the bar reaches this step.
    Touch,
    /// Ended, with this outcome.
    Close(String),
}

/// What a worker's record puts on its lane.
struct Step {
    worker: u32,
    job: u32,
    /// The mark's kind; none for a step that only extends the bar.
    kind: Option<&'static str>,
    fence: Option<u64>,
    detail: String,
    end: End,
    crashed: bool,
}

fn step(
    worker: u32,
    job: u32,
    kind: Option<&'static str>,
    fence: Option<u64>,
    detail: String,
    end: End,
) -> Step {
    Step {
        worker,
        job,
        kind,
        fence,
        detail,
        end,
        crashed: false,
    }
}

/// A step inside an attempt: heartbeats, refusals, extraction, failures (commits:
/// [`commit_step`]).
fn attempt_step(e: &Event) -> Option<Step> {
    Some(match e {
        Event::Heartbeat {
            job, worker, fence, ..
        } => step(
            worker.0,
            job.0,
            Some("hb"),
            Some(fence.0),
            "heartbeat renewed the lease".into(),
            End::Touch,
        ),
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
            let end = match op {
                Op::Heartbeat => End::Touch,
                _ => End::Close(format!("{}_rejected", op.name())),
            };
            step(worker.0, job.0, Some("rej"), Some(presented.0), detail, end)
        }
        Event::ExtractStarted { job, worker, .. } | Event::ExtractDone { job, worker, .. } => {
            step(worker.0, job.0, None, None, String::new(), End::Touch)
        }
        Event::AttemptFailed {
            job,
            worker,
            fence,
            error,
            ..
        } => step(
            worker.0,
            job.0,
            Some("fail"),
            Some(fence.0),
            format!("attempt failed: {error}"),
            End::Touch,
        ),
        _ => return None,
    })
}

/// A commit: the result written (with its outbox event), deduped, or refused.
fn commit_step(e: &Event) -> Option<Step> {
    Some(match e {
        Event::ResultCommitted {
            job, worker, event, ..
        } => {
            let detail = event.map_or(
                "result committed, no outbox event (a direct publish follows)".into(),
                |e| format!("result and outbox event {} committed", e.0),
            );
            step(worker.0, job.0, Some("commit"), None, detail, End::Touch)
        }
        Event::CommitDeduped { job, worker, .. } => step(
            worker.0,
            job.0,
            Some("dedupe"),
            None,
            "commit deduped: the key already has a result".into(),
            End::Touch,
        ),
        Event::CommitConflict { job, worker, .. } => step(
            worker.0,
            job.0,
            Some("conflict"),
            None,
            "commit refused: the key has a result of another payload".into(),
            End::Touch,
        ),
        _ => return None,
    })
}

/// A step that ends an attempt: the holder's ack, retry, dead letter or cancel (its crash:
/// [`crash_step`]).
fn ending_step(e: &Event, per_ms: u64) -> Option<Step> {
    let close = |o: &str| End::Close(o.to_string());
    Some(match e {
        Event::Acked { job, worker, fence } => step(
            worker.0,
            job.0,
            Some("ack"),
            Some(fence.0),
            format!("ack accepted with fence {}", fence.0),
            close("acked"),
        ),
        Event::RetryScheduled {
            job,
            worker,
            fence,
            visible_at,
            ..
        } => {
            let v = Ms::of(*visible_at, per_ms);
            let detail = format!("retry scheduled, visible again at {} ms", v.0);
            step(
                worker.0,
                job.0,
                Some("retry"),
                Some(fence.0),
                detail,
                close("retry"),
            )
        }
        Event::DeadLettered {
            job,
            worker: Some(w),
            fence,
            reason,
            ..
        } => step(
            w.0,
            job.0,
            Some("dlq"),
            fence.map(|f| f.0),
            format!("dead-lettered: {reason}"),
            close("dead_lettered"),
        ),
        Event::Cancelled {
            job,
            worker: Some(w),
            fence,
            ..
        } => step(
            w.0,
            job.0,
            Some("cancel"),
            fence.map(|f| f.0),
            "cancelled past its deadline".into(),
            close("cancelled"),
        ),
        _ => return None,
    })
}

/// The holder's crash: the attempt ends, the worker is down until it restarts.
fn crash_step(e: &Event) -> Option<Step> {
    let close = |o: &str| End::Close(o.to_string());
    Some(match e {
        Event::WorkerCrashed {
            worker,
            job,
            fence,
            point,
        } => Step {
            crashed: true,
            ..step(
                worker.0,
                job.0,
                Some("crash"),
                Some(fence.0),
                format!("worker crashed {point}"),
                close("crashed"),
            )
        },
        _ => return None,
    })
}

/// A record of the queue or an operator, as a mark on the queue's lane: its kind, its job and
/// what it says.
fn queue_mark(e: &Event) -> Option<(&'static str, u32, String)> {
    Some(match e {
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
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A big run keeps the jobs a violation names whatever their size, then every k-th job,
    /// then any other that fits.
    #[test]
    fn the_budget_keeps_the_violations_jobs_first_then_jobs_across_the_run() {
        let big = ITEM_BUDGET / 2 + 1;
        let counts = [big, big, 5, big, 7];
        assert_eq!(choose(&counts, &[3]), [false, false, true, true, true]);
        assert_eq!(choose(&counts, &[]), [true, false, true, false, true]);
        assert_eq!(
            choose(&counts, &[9]),
            [true, false, true, false, true],
            "an unknown job"
        );
        let even = vec![ITEM_BUDGET / 10; 100];
        let kept: Vec<usize> = (0..100).filter(|j| choose(&even, &[])[*j]).collect();
        assert_eq!(
            kept,
            (0..100).step_by(10).collect::<Vec<_>>(),
            "spread over the run"
        );
    }
}

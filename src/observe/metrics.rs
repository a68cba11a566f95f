//! Metrics from the history: counts, latency histograms, queue depth, per-attempt rows.
//!
//! Owns: queueWaitMs (per attempt: lease time - visibleAt), inferenceMs (per attempt),
//! reviewWaitMs (per document: applied -> review done), jobAgeMs (createdAt -> terminal), the
//! depth samples, the counted figures of `summary.json` (a [`Tally`] slot per `Counter` of
//! `vocab/counters.rs`: here is the line that counts each, and `Metrics::figure` reads the
//! derived ones), and the rows of `jobs.csv`, `attempts.csv` and the other CSVs. It reads only
//! history records.
//! Does not: simulate, judge, name a figure (`vocab/counters.rs`) or decide where files go; the
//! distributions' type is `latency`, the series' summaries `series`.

use super::open_jobs::OpenJobs;
use super::pending_reviews::PendingReviews;
use crate::base::ids::{JobId, SimTime, TenantId, WorkerId};
use crate::history::{Event, Observer, Record};
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::counters::{Counter, Tally};
use crate::vocab::faults::HeldCounts;
use crate::vocab::faults::Struck;
use crate::vocab::key::IdempotencyKey;
use serde::Serialize;
use std::io::Write;

pub use super::latency::{Latency, Stats};
pub use super::series::{DepthStats, OutboxRows, RetryWaves, OUTBOX_ROW_BYTES};

mod rows;

/// The per-job facts the metrics need (and `jobs.csv` prints).
#[derive(Clone, Copy, Debug, Hash)]
struct JobRow {
    tenant: TenantId,
    key: IdempotencyKey,
    created_at: SimTime,
    attempts: u32,
    terminal: Option<(&'static str, SimTime)>,
    reprocessed_from: Option<JobId>,
}

/// How a job ended (its terminal record).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ended {
    Acked,
    DeadLettered,
    Cancelled,
}

impl Ended {
    /// The state `jobs.csv` prints.
    fn name(self) -> &'static str {
        match self {
            Ended::Acked => "acked",
            Ended::DeadLettered => "dead_lettered",
            Ended::Cancelled => "cancelled",
        }
    }
}

/// An attempt in progress on a worker, written to `attempts.csv` when it ends.
#[derive(Clone, Copy, Debug, Serialize, Hash)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRow {
    pub job: u32,
    pub attempt: u32,
    pub worker: u32,
    pub fence: u64,
    pub visible_at_ms: SimTime,
    pub leased_at_ms: SimTime,
    pub queue_wait_ms: u64,
    pub inference_ms: Option<u64>,
    pub ended_at_ms: SimTime,
    pub outcome: &'static str,
}

/// One tenant's share of the run: its jobs, how they ended, and how long they waited, so a
/// noisy tenant's burst shows as the starvation of the others.
#[derive(Clone, Debug, Default, Hash)]
pub struct TenantMetrics {
    pub enqueued: u64,
    pub acked: u64,
    pub dead_lettered: u64,
    pub cancelled: u64,
    /// queueWaitMs of this tenant's attempts.
    pub queue_wait: Latency,
    /// jobAgeMs (createdAt to terminal) of this tenant's jobs.
    pub job_age: Latency,
}

pub struct Metrics {
    /// Every counted figure (`Counter`), complete once `RunEnded` is seen.
    pub counts: Tally,
    /// Each held fault's strikes (`stalls`, `pauses`, ...: `vocab::faults::HELD`), shown in
    /// `summary.json`'s `crashes` after the crash counters.
    pub held: HeldCounts,
    /// Run-wide queueWaitMs and jobAgeMs: complete once `RunEnded` is seen (they are the sums
    /// of the per-tenant histograms, so the hot path records each value once).
    pub queue_wait: Latency,
    pub inference: Latency,
    pub review_wait: Latency,
    pub job_age: Latency,
    pub depth: Vec<(SimTime, u64)>,
    /// `jobs.csv` rows, kept only when rows are written (with an attempt sink; `--no-rows` keeps
    /// none).
    job_rows: Vec<Option<JobRow>>,
    /// The createdAt of each job from the oldest unfinished one on: jobAgeMs and the
    /// unfinished count (8 bytes a job in flight, not a job ever enqueued).
    open: OpenJobs,
    /// The applied time of each event from the oldest with a review pending on.
    reviews: PendingReviews,
    /// Per worker, its attempt in progress: only with an attempt sink (none is written without).
    open_attempts: Vec<Option<AttemptRow>>,
    attempt_sink: Option<csv::Writer<Box<dyn Write + Send>>>,
    sink_error: Option<String>,
    pub end_ms: SimTime,
    pub outbox: OutboxRows,
    pub retries: RetryWaves,
    /// Retries scheduled in each 100 ms of virtual time (not kept by [`Metrics::counts_only`]).
    pub retries_per_100ms: Vec<u64>,
    /// Keep the per-100 ms retry timeline: off when judging a history recorded elsewhere,
    /// whose times need not be small (a timeline indexed by time would be unbounded).
    keep_timeline: bool,
    /// The bug switches on; the metrics read `republish_miscount` (every publish is counted as
    /// a republish).
    pub bugs: BugSet,
    /// Outbox rows held at each depth sample.
    pub outbox_rows: Vec<(SimTime, u64)>,
    /// Jobs held in the dead-letter queue (dead-lettered, not evicted) at each depth sample.
    pub dlq_rows: Vec<(SimTime, u64)>,
    /// Per tenant, indexed by tenant id (a small vector: tenants are few and dense).
    pub tenants: Vec<TenantMetrics>,
    /// Each job's tenant, 2 bytes a job.
    job_tenant: Vec<u16>,
    /// Each job's leases so far, one byte a job: the attempt number when a recorder leaves it
    /// out. From 255 leases on the byte holds 255 and the count is in `job_leases_wide`.
    job_leases: Vec<u8>,
    job_leases_wide: std::collections::BTreeMap<u32, u32>,
    /// Each job's visible time as the history established it (its `enqueued`'s, its last
    /// `retry_scheduled`'s or `rescued`'s), kept (8 bytes a job) only where a `leased` record's
    /// `visible_at` may leave it out (a history recorded elsewhere, [`Metrics::counts_only`]:
    /// read when it does) or differ from it by design ([`Metrics::measure_waits_from_history`]:
    /// always read). Elsewhere the two are the same (`recorded_values_match` judges it).
    job_visible: Option<Vec<SimTime>>,
    /// Measure queueWaitMs from `job_visible`, not from the recorded `visible_at`.
    waits_from_history: bool,
    /// The DLQ's entries as the history gives them, oldest first (the checker's `entries`,
    /// docs/checker-rules.md, "The DLQ"): `dlq.size_max` and the DLQ series count them, so a
    /// job dead-lettered again while its entry is held (a rescue race, a stale write taken)
    /// counts as the checker counts it. 4 bytes a live entry.
    dlq: std::collections::VecDeque<u32>,
    /// The header's `dlq_capacity` (from `run_started`): past it, the oldest entry leaves.
    dlq_capacity: Option<u32>,
}

/// A run's state (`durasim explore`, `sim::state`): every field that counts or will count,
/// not the `attempts.csv` writer (output, read by nothing). Destructured without `..`: a new
/// field does not compile until it is hashed here or named as left out.
#[rustfmt::skip]
impl std::hash::Hash for Metrics {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let Metrics {
            counts, held, queue_wait, inference, review_wait, job_age, depth, job_rows, open,
            reviews, open_attempts, attempt_sink: _, sink_error: _, end_ms, outbox, retries,
            retries_per_100ms, keep_timeline, bugs, outbox_rows, dlq_rows, tenants, job_tenant,
            job_leases, job_leases_wide, job_visible, waits_from_history, dlq, dlq_capacity,
        } = self;
        (counts, held, queue_wait, inference, review_wait, job_age, depth).hash(state);
        (job_rows, open, reviews, open_attempts, end_ms, outbox, retries).hash(state);
        (retries_per_100ms, keep_timeline, bugs, outbox_rows, dlq_rows, tenants).hash(state);
        (job_tenant, job_leases, job_leases_wide, job_visible, waits_from_history).hash(state);
        (dlq, dlq_capacity).hash(state);
    }
}

impl Metrics {
    /// `attempt_sink` receives `attempts.csv` rows as attempts end (none: rows are skipped).
    pub fn new(workers: u32, jobs: usize, attempt_sink: Option<Box<dyn Write + Send>>) -> Metrics {
        Metrics {
            counts: Tally::default(),
            held: HeldCounts::default(),
            queue_wait: Latency::default(),
            inference: Latency::default(),
            review_wait: Latency::default(),
            job_age: Latency::default(),
            depth: Vec::new(),
            job_rows: Vec::with_capacity(if attempt_sink.is_some() { jobs } else { 0 }),
            open: OpenJobs::default(),
            reviews: PendingReviews::default(),
            open_attempts: vec![
                None;
                if attempt_sink.is_some() {
                    workers as usize
                } else {
                    0
                }
            ],
            attempt_sink: attempt_sink.map(csv::Writer::from_writer),
            sink_error: None,
            end_ms: 0,
            outbox: OutboxRows {
                bytes_per_row: OUTBOX_ROW_BYTES,
                ..OutboxRows::default()
            },
            outbox_rows: Vec::new(),
            dlq_rows: Vec::new(),
            retries: RetryWaves::default(),
            retries_per_100ms: Vec::new(),
            keep_timeline: true,
            bugs: BugSet::EMPTY,
            tenants: Vec::new(),
            job_tenant: Vec::with_capacity(jobs),
            job_leases: Vec::with_capacity(jobs),
            job_leases_wide: std::collections::BTreeMap::new(),
            job_visible: None,
            waits_from_history: false,
            dlq: std::collections::VecDeque::new(),
            dlq_capacity: None,
        }
    }

    /// Measures queueWaitMs from each job's visible time as the history established it, not
    /// from the `leased` record's `visible_at`: for a run whose queue's rescue writes by id
    /// after a gap (riverqueue/river#1302), whose rescue over a holder's retry makes the job
    /// visible at the rescue, a time no record states (the history's is the retry's; swarm
    /// seeds 38356, 93471, 124186, 150928, 185778, 187758). 8 bytes a job. (`verify` reads a
    /// recorded `visible_at` first, as a recorder stated it: finding F5.)
    pub fn measure_waits_from_history(&mut self) {
        self.job_visible.get_or_insert_with(Vec::new);
        self.waits_from_history = true;
    }

    /// Files `job` in the DLQ as the checker does; returns the entries held. `again`: the job
    /// ended before (only then may it hold an entry, which the scan looks for: a first
    /// dead-lettering costs no scan of the DLQ).
    fn dlq_filed(&mut self, job: JobId, again: bool) -> u64 {
        if let Some(i) = again
            .then(|| self.dlq.iter().position(|j| *j == job.0))
            .flatten()
        {
            self.dlq.remove(i);
        }
        self.dlq.push_back(job.0);
        let held = self.dlq.len() as u64;
        if self
            .dlq_capacity
            .is_some_and(|c| self.dlq.len() > c as usize)
        {
            self.dlq.pop_front();
        }
        held
    }

    /// Notes `job`'s visible time, when a history may leave it out of its leases.
    #[inline]
    fn visible_from(&mut self, job: JobId, at: SimTime) {
        if let Some(v) = self.job_visible.as_mut() {
            if v.len() <= job.index() {
                v.resize(job.index() + 1, 0);
            }
            v[job.index()] = at;
        }
    }

    /// Counts a lease of `job`; returns its leases so far.
    #[inline]
    fn leased(&mut self, job: JobId) -> u32 {
        if self.job_leases.len() <= job.index() {
            self.job_leases.resize(job.index() + 1, 0);
        }
        let n = &mut self.job_leases[job.index()];
        if *n < u8::MAX - 1 {
            *n += 1;
            return *n as u32;
        }
        let wide = self.job_leases_wide.entry(job.0).or_insert(*n as u32);
        *n = u8::MAX;
        *wide += 1;
        *wide
    }

    #[inline]
    fn tenant_of(&mut self, job: JobId) -> Option<&mut TenantMetrics> {
        let t = *self.job_tenant.get(job.index())?;
        self.tenants.get_mut(t as usize)
    }

    fn job(&mut self, job: JobId) -> Option<&mut JobRow> {
        self.job_rows.get_mut(job.index()).and_then(|r| r.as_mut())
    }

    /// Closes `job` at its first terminal record; false when it had one already.
    fn terminal(&mut self, at: SimTime, job: JobId, state: Ended) -> bool {
        let Some(created) = self.open.close(job) else {
            return false;
        };
        let age = at - created;
        // Recorded run-wide and per tenant: summing the tenants' histograms at the end cost
        // more than the second record in short runs (sweeps).
        self.job_age.record(age);
        if let Some(t) = self.tenant_of(job) {
            t.job_age.record(age);
            match state {
                Ended::Acked => t.acked += 1,
                Ended::DeadLettered => t.dead_lettered += 1,
                Ended::Cancelled => t.cancelled += 1,
            }
        }
        if let Some(row) = self.job(job) {
            row.terminal = Some((state.name(), at));
        }
        true
    }

    fn close_attempt(&mut self, at: SimTime, worker: WorkerId, job: JobId, outcome: &'static str) {
        let Some(slot) = self.open_attempts.get_mut(worker.index()) else {
            return;
        };
        match slot {
            Some(row) if row.job == job.0 => {
                let mut row = slot.take().expect("matched");
                row.ended_at_ms = at;
                row.outcome = outcome;
                if let Some(sink) = self.attempt_sink.as_mut() {
                    if let Err(e) = sink.serialize(row) {
                        self.sink_error.get_or_insert(e.to_string());
                    }
                }
            }
            _ => {}
        }
    }

    pub fn depth_stats(&self) -> DepthStats {
        if self.depth.is_empty() {
            return DepthStats::default();
        }
        let sum: u64 = self.depth.iter().map(|(_, d)| d).sum();
        DepthStats {
            min: self.depth.iter().map(|(_, d)| *d).min().unwrap_or(0),
            max: self.depth.iter().map(|(_, d)| *d).max().unwrap_or(0),
            mean: ((sum as f64 / self.depth.len() as f64) * 1000.0).round() / 1000.0,
            samples: self.depth.len() as u64,
        }
    }

    /// Metrics for a history recorded elsewhere (`durasim verify`): the counts and latencies,
    /// no attempt rows, no retry timeline.
    pub fn counts_only(workers: u32) -> Metrics {
        Metrics::for_history(workers, None)
    }

    /// Metrics for a history recorded elsewhere, with its attempt and job rows when
    /// `attempt_sink` is given (`durasim verify --out`); never a retry timeline (its times need
    /// not be small).
    pub fn for_history(workers: u32, attempt_sink: Option<Box<dyn Write + Send>>) -> Metrics {
        Metrics {
            keep_timeline: false,
            job_visible: Some(Vec::new()),
            ..Metrics::new(workers.min(1 << 16), 0, attempt_sink)
        }
    }

    pub fn attempts(&self) -> u64 {
        self.counts.get(Counter::Attempts)
    }

    /// The value of a figure (`None`: the run has no such figure, as a recovery depth without
    /// an outage): a counted one's count, or a derived one read from the other figures.
    pub fn figure(&self, c: Counter) -> Option<u64> {
        Some(match c {
            Counter::DepthMaxAfterRecovery => return self.retries.depth_max_after_recovery,
            Counter::DepthMin => self.depth_stats().min,
            Counter::DepthMax => self.depth_stats().max,
            Counter::InferenceMsP50 => self.inference.stats().p50,
            Counter::ReviewWaitMsP50 => self.review_wait.stats().p50,
            counted => self.counts.get(counted),
        })
    }

    /// Flushes `attempts.csv` and reports the first write error, if any.
    pub fn finish_rows(&mut self) -> Result<(), String> {
        if let Some(sink) = self.attempt_sink.as_mut() {
            sink.flush().map_err(|e| e.to_string())?;
        }
        match self.sink_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn outbox_rows_now(&self) -> u64 {
        self.counts.get(Counter::OutboxEvents) - self.counts.get(Counter::OutboxPruned)
    }

    /// Sets a provider outage, so the wave and recovery figures are measured against it.
    pub fn watch_outage(&mut self, from: SimTime, to: SimTime) {
        self.retries.outage_from_ms = Some(from);
        self.retries.recovery_at_ms = Some(to);
    }

    /// Retries scheduled in each second of virtual time.
    pub fn retries_per_s(&self) -> Vec<u64> {
        self.retries_per_100ms
            .chunks(10)
            .map(|c| c.iter().sum())
            .collect()
    }
}

impl Observer for Metrics {
    /// The records that only count are counted here, inlined into the caller; the others go
    /// through [`Metrics::observe_more`] (its frame cost as much as a count).
    #[inline]
    fn observe(&mut self, r: &Record) {
        match &r.event {
            Event::Heartbeat { .. } => self.counts.add(Counter::Heartbeats, 1),
            Event::ExtractStarted { .. } => self.counts.add(Counter::ExtractCalls, 1),
            Event::Published { send, direct, .. } => {
                if send.is_some_and(|s| s > 1) || self.bugs.contains(Bug::RepublishMiscount) {
                    self.counts.add(Counter::Republished, 1);
                }
                // A direct (naive) publish is never marked by a relay.
                if *direct {
                    self.counts.add(Counter::Published, 1);
                }
            }
            Event::Visible { .. } | Event::AttemptFailed { .. } => {}
            _ => self.observe_more(r),
        }
    }
}

impl Metrics {
    #[inline(never)]
    fn observe_more(&mut self, r: &Record) {
        let at = r.at;
        match &r.event {
            Event::Enqueued {
                job,
                tenant,
                key,
                reprocess_of,
                visible_at,
                ..
            } => {
                self.counts.add(Counter::Enqueued, 1);
                self.visible_from(*job, visible_at.unwrap_or(at));
                if self.job_tenant.len() == job.index() {
                    self.job_tenant.push(tenant.0);
                } else {
                    if self.job_tenant.len() < job.index() {
                        self.job_tenant.resize(job.index() + 1, 0);
                    }
                    self.job_tenant[job.index()] = tenant.0;
                }
                if self.tenants.len() <= tenant.index() {
                    self.tenants
                        .resize_with(tenant.index() + 1, TenantMetrics::default);
                }
                self.tenants[tenant.index()].enqueued += 1;
                self.open.open(*job, at);
                if self.attempt_sink.is_none() {
                    return;
                }
                if self.job_rows.len() <= job.index() {
                    self.job_rows.resize(job.index() + 1, None);
                }
                self.job_rows[job.index()] = Some(JobRow {
                    tenant: *tenant,
                    key: *key,
                    created_at: at,
                    attempts: 0,
                    terminal: None,
                    reprocessed_from: *reprocess_of,
                });
            }
            Event::EnqueueDeduped { .. } => self.counts.add(Counter::EnqueueDeduped, 1),
            Event::EnqueueConflict { .. } => {
                self.counts.add(Counter::EnqueueConflicts, 1);
                self.counts.add(Counter::PayloadConflicts, 1);
            }
            Event::Leased {
                job,
                worker,
                fence,
                attempt,
                visible_at,
                ..
            } => {
                self.counts.add(Counter::Attempts, 1);
                let leases = self.leased(*job);
                // The recorded visible time, else the job's as the history established it (an
                // external recorder may leave it out); the history's first under a rescue race,
                // which records a time no record stated (`measure_waits_from_history`).
                let attempt = attempt.unwrap_or(leases);
                let kept = || self.job_visible.as_ref()?.get(job.index()).copied();
                let visible_at = match self.waits_from_history {
                    true => kept().or(*visible_at),
                    false => visible_at.or_else(kept),
                }
                .unwrap_or(at);
                self.counts.raise(Counter::MaxAttemptsSeen, attempt as u64);
                let wait = at.saturating_sub(visible_at);
                self.queue_wait.record(wait);
                if let Some(t) = self.tenant_of(*job) {
                    t.queue_wait.record(wait);
                }
                if let Some(row) = self.job(*job) {
                    row.attempts += 1;
                }
                if let Some(slot) = self.open_attempts.get_mut(worker.index()) {
                    *slot = Some(AttemptRow {
                        job: job.0,
                        attempt,
                        worker: worker.0,
                        fence: fence.0,
                        visible_at_ms: visible_at,
                        leased_at_ms: at,
                        queue_wait_ms: wait,
                        inference_ms: None,
                        ended_at_ms: at,
                        outcome: "open",
                    });
                }
            }
            Event::LeaseExpired { .. } => self.counts.add(Counter::LeasesExpired, 1),
            Event::Rejected {
                job,
                worker,
                op,
                presented,
                held,
                ..
            } => {
                if held.is_some_and(|h| h != *presented) {
                    self.counts.add(Counter::StaleRejections, 1);
                }
                let outcome = match op {
                    crate::history::Op::Heartbeat => return,
                    crate::history::Op::Ack => {
                        self.counts.add(Counter::AckRejections, 1);
                        "ack_rejected"
                    }
                    crate::history::Op::Retry => "retry_rejected",
                    crate::history::Op::DeadLetter => "dead_letter_rejected",
                    crate::history::Op::Cancel => "cancel_rejected",
                };
                self.close_attempt(at, *worker, *job, outcome);
            }
            Event::Held(h) => self.held.add(h.fault),
            Event::ExtractDone {
                worker, inference, ..
            } => {
                self.inference.record(*inference);
                if let Some(Some(row)) = self.open_attempts.get_mut(worker.index()) {
                    row.inference_ms = Some(*inference);
                }
            }
            Event::ResultCommitted { event, .. } => {
                self.counts.add(Counter::ResultsCommitted, 1);
                if event.is_some() {
                    self.counts.add(Counter::OutboxEvents, 1);
                    let rows = self.outbox_rows_now();
                    self.counts.raise(Counter::OutboxRowsMax, rows);
                }
            }
            Event::CommitDeduped { .. } => self.counts.add(Counter::DedupedCommits, 1),
            Event::CommitConflict { .. } => self.counts.add(Counter::PayloadConflicts, 1),
            Event::Acked { job, worker, .. } => {
                self.counts.add(Counter::Acked, 1);
                self.terminal(at, *job, Ended::Acked);
                self.close_attempt(at, *worker, *job, "acked");
            }
            Event::RetryScheduled {
                job,
                worker,
                visible_at,
                ..
            } => {
                self.visible_from(*job, *visible_at);
                self.close_attempt(at, *worker, *job, "retry");
                if self.keep_timeline {
                    let window = (at / 100) as usize;
                    if self.retries_per_100ms.len() <= window {
                        self.retries_per_100ms.resize(window + 1, 0);
                    }
                    self.retries_per_100ms[window] += 1;
                }
                self.counts.add(Counter::RetriesTotal, 1);
            }
            Event::DeadLettered {
                job,
                worker,
                reason,
                ..
            } => {
                self.counts.add(Counter::DeadLettered, 1);
                match reason.as_ref() {
                    "permanent_error" => self.counts.add(Counter::DlqPermanentError, 1),
                    "max_attempts_exceeded" => self.counts.add(Counter::DlqMaxAttemptsExceeded, 1),
                    _ => self.counts.add(Counter::DlqOther, 1),
                }
                let first = self.terminal(at, *job, Ended::DeadLettered);
                if let Some(w) = worker {
                    self.close_attempt(at, *w, *job, "dead_lettered");
                }
                let held = self.dlq_filed(*job, !first);
                self.counts.raise(Counter::DlqSizeMax, held);
            }
            Event::DlqEvicted { job, .. } => {
                self.counts.add(Counter::DlqEvicted, 1);
                if let Some(i) = self.dlq.iter().position(|j| *j == job.0) {
                    self.dlq.remove(i);
                }
            }
            Event::Cancelled { job, worker, .. } => {
                self.counts.add(Counter::Cancelled, 1);
                self.terminal(at, *job, Ended::Cancelled);
                if let Some(w) = worker {
                    self.close_attempt(at, *w, *job, "cancelled");
                }
            }
            Event::WorkerCrashed { worker, job, .. } => {
                self.counts.add(Counter::WorkerCrashes, 1);
                self.close_attempt(at, *worker, *job, "crashed");
            }
            Event::MarkedPublished { count } => self.counts.add(Counter::Published, *count as u64),
            Event::MarkedEvents { events } => {
                self.counts.add(Counter::Published, events.len() as u64)
            }
            Event::RelayLost {} => self.counts.add(Struck::RelayCrash.spec().count, 1),
            Event::WorkerLost { .. } => self.counts.add(Counter::WorkerCrashes, 1),
            Event::Rescued {
                job, visible_at, ..
            } => self.visible_from(*job, visible_at.unwrap_or(at)),
            Event::WorkerHeartbeat { .. } => {}
            Event::OutboxPruned { rows } => self.counts.add(Counter::OutboxPruned, *rows),
            Event::Struck(s) => self.counts.add(s.fault.spec().count, 1),
            Event::EffectApplied { event, .. } => {
                self.counts.add(Counter::ConsumerApplied, 1);
                self.reviews.applied(*event, at);
            }
            Event::DuplicateEvent { .. } => self.counts.add(Counter::ConsumerDuplicates, 1),
            Event::ReviewDone { event, .. } => {
                self.counts.add(Counter::ReviewsDone, 1);
                let wait = self.reviews.reviewed(*event, at).unwrap_or(0);
                self.review_wait.record(wait);
            }
            Event::Reprocessed { .. } => self.counts.add(Counter::Reprocessed, 1),
            Event::ReprocessRefused { reason, .. } => {
                self.counts.add(Counter::ReprocessRefused, 1);
                if *reason == "rate_limited" {
                    self.counts.add(Counter::ReprocessRateLimited, 1);
                }
            }
            Event::DepthSampled { depth } => {
                self.depth.push((at, *depth));
                if self.retries.recovery_at_ms.is_some_and(|r| at >= r) {
                    let w = &mut self.retries;
                    w.depth_at_recovery.get_or_insert(*depth);
                    let max = w.depth_max_after_recovery.get_or_insert(0);
                    *max = (*max).max(*depth);
                    if *depth > 0 {
                        w.drained_at_ms = None;
                    } else if w.drained_at_ms.is_none() {
                        w.drained_at_ms = Some(at);
                    }
                }
                let rows = self.outbox_rows_now();
                self.outbox_rows.push((at, rows));
                self.dlq_rows.push((at, self.dlq.len() as u64));
            }
            Event::RunStarted { config } => self.dlq_capacity = config.dlq_capacity,
            Event::RunEnded { .. } => {
                self.end_ms = at;
                let per_s = self.retries_per_s();
                if let Some((second, &peak)) =
                    per_s.iter().enumerate().rev().max_by_key(|(_, n)| **n)
                {
                    self.counts.set(Counter::RetriesPeakPerS, peak);
                    self.retries.peak_second = second as u64;
                }
                let peak_100 = self.retries_per_100ms.iter().max().copied().unwrap_or(0);
                self.retries.peak_rate_per_s_100ms = peak_100 * 10;
                if let (Some(from), Some(to)) =
                    (self.retries.outage_from_ms, self.retries.recovery_at_ms)
                {
                    // From the first full window after the first retry can happen.
                    let first = from.div_ceil(100) as usize + 1;
                    let last = (to / 100) as usize;
                    let quiet = (first..last)
                        .filter(|&i| self.retries_per_100ms.get(i).copied().unwrap_or(0) == 0)
                        .count();
                    self.retries.quiet_windows_in_outage = Some(quiet as u64);
                }
                self.counts
                    .set(Counter::OutboxRowsFinal, self.outbox_rows_now());
                self.outbox.bytes_max =
                    self.counts.get(Counter::OutboxRowsMax) * self.outbox.bytes_per_row;
                let unfinished = self.open.unfinished();
                self.counts.set(Counter::Unfinished, unfinished as u64);
            }
            // Counted in `observe`.
            Event::Heartbeat { .. }
            | Event::ExtractStarted { .. }
            | Event::Published { .. }
            | Event::Visible { .. }
            | Event::AttemptFailed { .. } => {}
            Event::WorkerRestarted { .. }
            | Event::Log { .. }
            | Event::PayloadMutated { .. }
            | Event::EnqueueReplaced { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;

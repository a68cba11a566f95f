//! The rules: one type a family of invariants, each judging the records against the facts.
//!
//! Owns: the [`Family`] contract (what records a family reads, which invariants it owns and
//! alone raises, how it judges a record and the end of the history), the context a record is
//! judged in ([`Ctx`]), the handle a family raises its violations through ([`Out`]: a debug
//! build refuses an invariant the family does not own), each invariant's [`Spec`] (its name,
//! kind and sentence, declared beside its rule in its family's file) and the record kinds the
//! families' masks are made of.
//! Does not: change a fact (`facts/` does, after every family judged the record), or print.

pub(super) mod backoff;
pub(super) mod chain;
pub(super) mod depth;
pub(super) mod detection;
pub(super) mod dlq;
pub(super) mod effects;
pub(super) mod fences;
pub(super) mod leases;
pub(super) mod payloads;
pub(super) mod policy;
pub(super) mod recorded;
pub(super) mod sometimes;
pub(super) mod summary;
pub(super) mod tenancy;

use super::facts::{Facts, JobTrack, KeyLoc, KeyTrack};
use super::invariant::{Invariant, Kind};
use super::verdict::{Verdict, Violation};
use crate::base::ids::{JobId, SimTime};
use crate::history::{Event, Record};
use crate::vocab::config::RunConfig;
use crate::vocab::key::{IdempotencyKey, KeyNames};
use std::borrow::Cow;
use std::cell::OnceCell;

/// An invariant's name (the contract users grep for), its kind and the sentence that states it.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Spec {
    pub name: &'static str,
    pub kind: Kind,
    pub sentence: &'static str,
}

/// A family of invariants: the rules over the records of the kinds in `READS`, raising only the
/// invariants in `OWNS`, with any state of its own.
pub(super) trait Family {
    /// The record kinds [`Family::judge`] reads (a mask of [`kind`] bits).
    const READS: u64;
    const OWNS: &'static [Invariant];

    /// Judges one record against the facts as they stood before it.
    fn judge(&mut self, c: &Ctx, out: &mut Out);

    /// Judges the end of the history (`run_ended`, or the last record read), after its record.
    fn finish(&mut self, _c: &End, _out: &mut Out) {}
}

/// What a record is judged with: the record, the facts before it, the names, and the facts of
/// the job and key it names, read once for every family.
pub(super) struct Ctx<'a> {
    pub r: &'a Record,
    pub facts: &'a Facts,
    /// The history's names, to recompute payload hashes (none: not recomputed).
    pub names: Option<&'a KeyNames>,
    /// The job the record names (its subject), and its facts once read (none: not enqueued).
    job: Option<JobId>,
    job_track: OnceCell<Option<Cow<'a, JobTrack>>>,
    /// The key the record names, with the job that hints where it is, and its facts once read.
    key: Option<(&'a IdempotencyKey, Option<JobId>)>,
    key_loc: OnceCell<Option<KeyLoc>>,
    key_track: OnceCell<KeyTrack>,
}

impl<'a> Ctx<'a> {
    pub fn new(r: &'a Record, facts: &'a Facts, names: Option<&'a KeyNames>) -> Ctx<'a> {
        let (job, key) = subject(&r.event);
        Ctx {
            r,
            facts,
            names,
            job,
            job_track: OnceCell::new(),
            key: key.map(|k| (k, job)),
            key_loc: OnceCell::new(),
            key_track: OnceCell::new(),
        }
    }

    #[inline]
    pub fn at(&self) -> SimTime {
        self.r.at
    }

    #[inline]
    pub fn config(&self) -> &RunConfig {
        self.facts.config()
    }

    /// The unit of times in messages.
    pub fn unit(&self) -> &'static str {
        self.config().time_unit.suffix()
    }

    /// The facts of `job` (which the history enqueued) before the record.
    #[inline]
    pub fn track(&self, job: JobId) -> Cow<'_, JobTrack> {
        match self.subject_track(job) {
            Some(t) => Cow::Borrowed(t),
            None => self.facts.job_at(job),
        }
    }

    /// The subject's facts, read once, if `job` is the subject and exists.
    #[inline]
    fn subject_track(&self, job: JobId) -> Option<&JobTrack> {
        if self.job != Some(job) {
            return None;
        }
        let facts = self.facts;
        self.job_track.get_or_init(|| facts.job(job)).as_deref()
    }

    /// Where the record's key is, if a rule looked it up: the reducer need not look again.
    pub fn key_located(&self) -> Option<Option<KeyLoc>> {
        self.key_loc.get().copied()
    }

    /// The key `job` was enqueued under (the record's own, for the `enqueued` that creates it).
    pub fn job_key(&self, job: JobId) -> Option<IdempotencyKey> {
        if let Event::Enqueued { job: j, key, .. } = &self.r.event {
            if *j == job {
                return Some(*key);
            }
        }
        match self.subject_track(job) {
            Some(t) => Some(t.key),
            None => self.facts.job(job).map(|t| t.key),
        }
    }

    /// The facts of `key` before the record (`hint`: a job the record names with it).
    #[inline]
    pub fn key_track(&self, key: &IdempotencyKey, hint: Option<JobId>) -> KeyTrack {
        match self.key {
            Some((k, h)) if k == key => *self.key_track.get_or_init(|| {
                let loc = self.key_loc.get_or_init(|| self.facts.locate(k, h));
                self.facts.key_found(*loc)
            }),
            _ => self.facts.key(key, hint),
        }
    }
}

/// The job and the key a record names, if any (the job a record about a key names with it).
fn subject(e: &Event) -> (Option<JobId>, Option<&IdempotencyKey>) {
    match e {
        Event::Enqueued { job, key, .. } => (Some(*job), Some(key)),
        Event::EnqueueDeduped { existing, key, .. }
        | Event::EnqueueConflict { existing, key, .. }
        | Event::EnqueueReplaced { existing, key, .. } => (Some(*existing), Some(key)),
        Event::Visible { job }
        | Event::Leased { job, .. }
        | Event::LeaseExpired { job, .. }
        | Event::Heartbeat { job, .. }
        | Event::Rejected { job, .. }
        | Event::ExtractStarted { job, .. }
        | Event::ExtractDone { job, .. }
        | Event::AttemptFailed { job, .. }
        | Event::Acked { job, .. }
        | Event::RetryScheduled { job, .. }
        | Event::DeadLettered { job, .. }
        | Event::Cancelled { job, .. }
        | Event::DlqEvicted { job, .. }
        | Event::WorkerCrashed { job, .. }
        | Event::PayloadMutated { job, .. } => (Some(*job), None),
        Event::ResultCommitted { job, key, .. }
        | Event::CommitDeduped { job, key, .. }
        | Event::CommitConflict { job, key, .. }
        | Event::Published { job, key, .. }
        | Event::EffectApplied { job, key, .. }
        | Event::ReviewDone { job, key, .. } => (Some(*job), Some(key)),
        Event::DuplicateEvent { key, .. } => (None, Some(key)),
        Event::Held(h) => (Some(h.job), None),
        Event::Struck(s) => (s.job, None),
        Event::ReprocessRefused { job, .. } => (*job, None),
        Event::Reprocessed { old_job, .. } => (Some(*old_job), None),
        Event::Rescued { job, .. } => (Some(*job), None),
        Event::WorkerHeartbeat { .. }
        | Event::WorkerLost { .. }
        | Event::MarkedEvents { .. }
        | Event::RelayLost {} => (None, None),
        Event::RunStarted { .. }
        | Event::WorkerRestarted { .. }
        | Event::MarkedPublished { .. }
        | Event::OutboxPruned { .. }
        | Event::DepthSampled { .. }
        | Event::RunEnded { .. }
        | Event::Log { .. } => (None, None),
    }
}

/// The end of the history: its time, whether it settled, the facts at the end.
pub(super) struct End<'a> {
    pub at: SimTime,
    pub quiescent: bool,
    pub facts: &'a Facts,
}

impl End<'_> {
    pub fn unit(&self) -> &'static str {
        self.facts.config().time_unit.suffix()
    }

    /// What a liveness message adds when the run did not settle.
    pub fn unsettled(&self) -> &'static str {
        if self.quiescent {
            ""
        } else {
            " (the run hit its time limit before it settled)"
        }
    }
}

/// Where a family raises its violations: the verdicts, at the record being judged.
pub(super) struct Out<'a> {
    verdicts: &'a mut [Verdict],
    record: u64,
    /// The invariants of the family judging (a debug build checks each violation's).
    pub owns: &'static [Invariant],
}

impl<'a> Out<'a> {
    pub fn new(verdicts: &'a mut [Verdict], record: u64, owns: &'static [Invariant]) -> Self {
        Out {
            verdicts,
            record,
            owns,
        }
    }

    /// A violation of `invariant` at `at`, naming `job` and `key`.
    pub fn raise(
        &mut self,
        invariant: Invariant,
        at: SimTime,
        (job, key): (Option<JobId>, Option<IdempotencyKey>),
        message: impl FnOnce() -> String,
        evidence: impl FnOnce() -> Vec<Record>,
    ) {
        debug_assert!(
            self.owns.contains(&invariant),
            "{} raised by a family that does not own it",
            invariant.name()
        );
        let v = &mut self.verdicts[invariant as usize];
        v.count += 1;
        if v.first.is_none() {
            v.first = Some(Violation {
                invariant,
                at,
                record: self.record,
                job,
                key,
                message: message(),
                evidence: evidence(),
            });
        }
    }

    /// A violation proved by the record at hand, naming `job` and `key`.
    pub fn at_record(
        &mut self,
        invariant: Invariant,
        c: &Ctx,
        named: (Option<JobId>, Option<IdempotencyKey>),
        message: impl FnOnce() -> String,
    ) {
        self.raise(invariant, c.at(), named, message, || vec![c.r.clone()]);
    }

    /// A violation about one job, proved by the record at hand: it names the job and its key.
    pub fn job(
        &mut self,
        invariant: Invariant,
        c: &Ctx,
        job: JobId,
        message: impl FnOnce() -> String,
    ) {
        let key = c.job_key(job);
        self.at_record(invariant, c, (Some(job), key), message);
    }
}

/// A record kind's bit, for the families' `READS` masks.
#[inline]
pub(super) fn kind(e: &Event) -> u64 {
    1 << match e {
        Event::RunStarted { .. } => 0,
        Event::Enqueued { .. } => 1,
        Event::EnqueueDeduped { .. } => 2,
        Event::EnqueueConflict { .. } => 3,
        Event::EnqueueReplaced { .. } => 4,
        Event::Visible { .. } => 5,
        Event::Leased { .. } => 6,
        Event::LeaseExpired { .. } => 7,
        Event::Heartbeat { .. } => 8,
        Event::Rejected { .. } => 9,
        Event::ExtractStarted { .. } => 10,
        Event::ExtractDone { .. } => 11,
        Event::AttemptFailed { .. } => 12,
        Event::ResultCommitted { .. } => 13,
        Event::CommitDeduped { .. } => 14,
        Event::CommitConflict { .. } => 15,
        Event::Acked { .. } => 16,
        Event::RetryScheduled { .. } => 17,
        Event::DeadLettered { .. } => 18,
        Event::Cancelled { .. } => 19,
        Event::DlqEvicted { .. } => 20,
        Event::WorkerCrashed { .. } => 21,
        Event::WorkerRestarted { .. } => 22,
        Event::Published { .. } => 23,
        Event::MarkedPublished { .. } => 24,
        Event::OutboxPruned { .. } => 25,
        Event::EffectApplied { .. } => 26,
        Event::DuplicateEvent { .. } => 27,
        Event::ReviewDone { .. } => 28,
        Event::PayloadMutated { .. } => 29,
        Event::ReprocessRefused { .. } => 30,
        Event::Reprocessed { .. } => 31,
        Event::DepthSampled { .. } => 32,
        Event::RunEnded { .. } => 33,
        Event::Held(_) => 34,
        Event::Struck(_) => 35,
        Event::WorkerHeartbeat { .. } => 36,
        Event::Rescued { .. } => 37,
        Event::WorkerLost { .. } => 21,
        Event::MarkedEvents { .. } => 24,
        Event::RelayLost {} => 35,
        Event::Log { .. } => 38,
    }
}

/// The record kinds' bits ([`kind`]).
pub(super) mod k {
    pub const ENQUEUED: u64 = 1 << 1;
    pub const ENQUEUE_DEDUPED: u64 = 1 << 2;
    pub const ENQUEUE_CONFLICT: u64 = 1 << 3;
    pub const ENQUEUE_REPLACED: u64 = 1 << 4;
    pub const VISIBLE: u64 = 1 << 5;
    pub const LEASED: u64 = 1 << 6;
    pub const LEASE_EXPIRED: u64 = 1 << 7;
    pub const HEARTBEAT: u64 = 1 << 8;
    pub const REJECTED: u64 = 1 << 9;
    pub const EXTRACT_STARTED: u64 = 1 << 10;
    pub const EXTRACT_DONE: u64 = 1 << 11;
    pub const ATTEMPT_FAILED: u64 = 1 << 12;
    pub const RESULT_COMMITTED: u64 = 1 << 13;
    pub const COMMIT_DEDUPED: u64 = 1 << 14;
    pub const COMMIT_CONFLICT: u64 = 1 << 15;
    pub const ACKED: u64 = 1 << 16;
    pub const RETRY_SCHEDULED: u64 = 1 << 17;
    pub const DEAD_LETTERED: u64 = 1 << 18;
    pub const CANCELLED: u64 = 1 << 19;
    pub const DLQ_EVICTED: u64 = 1 << 20;
    pub const WORKER_CRASHED: u64 = 1 << 21;
    pub const PUBLISHED: u64 = 1 << 23;
    pub const MARKED_PUBLISHED: u64 = 1 << 24;
    pub const EFFECT_APPLIED: u64 = 1 << 26;
    pub const DUPLICATE_EVENT: u64 = 1 << 27;
    pub const REVIEW_DONE: u64 = 1 << 28;
    pub const PAYLOAD_MUTATED: u64 = 1 << 29;
    pub const REPROCESS_REFUSED: u64 = 1 << 30;
    pub const REPROCESSED: u64 = 1 << 31;
    pub const DEPTH_SAMPLED: u64 = 1 << 32;
    pub const HELD: u64 = 1 << 34;
    pub const STRUCK: u64 = 1 << 35;
    pub const RESCUED: u64 = 1 << 37;
    /// Every kind.
    pub const ALL: u64 = (1 << 38) - 1;
}

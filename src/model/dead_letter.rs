//! The dead-letter queue and the audited operator reprocess.
//!
//! Owns: which jobs are dead and why (a closed, redacted reason code, never the error's text),
//! and the rule for bringing one back: an operator id is required, the old job is never revived,
//! a new job with operationVersion + 1 is created by the caller, and an audit entry links old,
//! new and operator. Cancelled jobs never enter the DLQ, so they can never be reprocessed.
//! Beyond the chapter, both off by default: a capacity (when the DLQ is full, the oldest entry is
//! evicted, as Sidekiq's dead set drops its oldest at 10,000: the evicted job leaves with no
//! terminal record) and a per-tenant reprocess rate limit (a looping operator automation is
//! refused past `max` reprocesses per tenant in any `window_ms`).
//! Does not: create the new job (the queue does) or decide that a job is dead (the retry policy).

use crate::base::ids::{JobId, SimTime, TenantId};
use crate::base::state_hash::StateMap;
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::probes::{Probe, Probes};
use std::collections::VecDeque;

/// Why a job is dead: a closed code. The error's text may quote the document, so it never
/// reaches a queue dashboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DlqReason {
    PermanentError,
    MaxAttemptsExceeded,
}

impl DlqReason {
    pub const ALL: [DlqReason; 2] = [DlqReason::PermanentError, DlqReason::MaxAttemptsExceeded];

    pub fn code(self) -> &'static str {
        match self {
            DlqReason::PermanentError => "permanent_error",
            DlqReason::MaxAttemptsExceeded => "max_attempts_exceeded",
        }
    }
}

/// The reason as stored. `Raw` exists only for the `raw_dlq_reason` bug switch, which stores the
/// error's text instead of its code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoredReason {
    Code(DlqReason),
    Raw(Box<str>),
}

impl StoredReason {
    pub fn text(&self) -> &str {
        match self {
            StoredReason::Code(r) => r.code(),
            StoredReason::Raw(s) => s,
        }
    }
}

#[derive(Clone, Debug, Hash)]
pub struct DlqEntry {
    pub job: JobId,
    pub at: SimTime,
    pub reason: StoredReason,
    pub reprocessed_as: Option<JobId>,
}

/// A [`DlqEntry`] as the DLQ stores it, 20 bytes: the time as two halves (4-byte
/// alignment), no successor as `u32::MAX`, the reason as its code's number, or `RAW` plus the
/// place of its text in `raw_reasons` (the `raw_dlq_reason` bug switch only).
#[derive(Clone, Copy, Debug, Hash)]
struct Stored {
    job: u32,
    reprocessed_as: u32,
    at: [u32; 2],
    reason: u32,
}

/// No successor, in `Stored::reprocessed_as`.
const NO_SUCCESSOR: u32 = u32::MAX;
/// `Stored::reason` at or above this is a raw text's place in `raw_reasons`, plus `RAW`.
const RAW: u32 = DlqReason::ALL.len() as u32;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AuditEntry {
    pub at: SimTime,
    pub old_job: JobId,
    pub new_job: JobId,
    pub operator: Box<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReprocessRefusal {
    MissingOperator,
    NotDeadLettered,
    AlreadyReprocessed,
    /// The entry was evicted from a full DLQ: there is nothing left to reprocess.
    Evicted,
    /// The tenant already had `max` reprocesses accepted in the last `window_ms`.
    RateLimited,
    /// The job was cancelled (its deadline passed): cancelled is terminal, never reprocessed.
    CancelledIsTerminal,
    /// The action names no job the queue holds.
    NoSuchJob,
    /// The new version's key is already taken (the reprocess would not be a new job).
    VersionExists,
    /// The key is at the last version a key may have (`vocab::key::MAX_VERSION`): no next one.
    VersionExhausted,
}

impl ReprocessRefusal {
    pub fn code(self) -> &'static str {
        match self {
            ReprocessRefusal::MissingOperator => "missing_operator",
            ReprocessRefusal::NotDeadLettered => "not_dead_lettered",
            ReprocessRefusal::AlreadyReprocessed => "already_reprocessed",
            ReprocessRefusal::Evicted => "evicted",
            ReprocessRefusal::RateLimited => "rate_limited",
            ReprocessRefusal::CancelledIsTerminal => "cancelled_is_terminal",
            ReprocessRefusal::NoSuchJob => "no_such_job",
            ReprocessRefusal::VersionExists => "version_exists",
            ReprocessRefusal::VersionExhausted => "version_exhausted",
        }
    }
}

/// At most `max` accepted reprocesses per tenant in any window of `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReprocessLimit {
    pub max: u32,
    pub window_ms: u64,
}

/// The DLQ's limits. The default (no capacity, no rate limit) is the chapter's DLQ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DlqConfig {
    /// Maximum number of entries held; when full, a new entry evicts the oldest.
    pub capacity: Option<u32>,
    pub reprocess_limit: Option<ReprocessLimit>,
    /// The bug switches on; the DLQ reads `evict_newest` (a full DLQ evicts its newest entry
    /// instead), `reprocess_same_version` (a reprocess keeps the dead job's version) and
    /// `reprocess_cancelled` (a cancelled job is let through as if dead-lettered).
    pub bugs: BugSet,
}

#[derive(Clone, Debug, Default, Hash)]
pub struct DeadLetterQueue {
    config: DlqConfig,
    /// Every entry ever pushed, oldest first; those before `head` were evicted.
    entries: Vec<Stored>,
    /// The texts of raw reasons (`raw_dlq_reason`), by `Stored::reason - RAW`.
    raw_reasons: Vec<Box<str>>,
    head: usize,
    /// Position in `entries` (or `EVICTED`) by job, for the jobs that were filed: a few in a
    /// hundred at most, so a map (a flat vector by job id cost 4 bytes for every job of the
    /// run, and its doublings more).
    index: StateMap<u32, u32>,
    audit: Vec<AuditEntry>,
    /// Per tenant (a small vector indexed by tenant id): when its accepted reprocesses happened,
    /// within the rate limit's window.
    recent_reprocesses: Vec<VecDeque<SimTime>>,
    /// The DLQ's decisions taken so far (`vocab::probes`).
    pub probes: Probes,
}

/// The job's entry was evicted (by capacity or retention).
const EVICTED: u32 = u32::MAX;

impl DeadLetterQueue {
    pub fn new(config: DlqConfig) -> DeadLetterQueue {
        DeadLetterQueue {
            config,
            ..DeadLetterQueue::default()
        }
    }

    pub fn config(&self) -> DlqConfig {
        self.config
    }

    /// The version a reprocess of a job at `version` is created with: the next one, so the new
    /// job has a key of its own and the dead one stays dead.
    pub fn reprocess_version(&self, version: u32) -> u32 {
        version + u32::from(!self.config.bugs.contains(Bug::ReprocessSameVersion))
    }

    /// Files `job`. When the DLQ is at capacity, the oldest entry is evicted to make room and
    /// returned: it is gone, reprocessed or not. A job filed before (a profile's by-id write
    /// revived it, and it died again) leaves its old entry first: a row is in the DLQ once.
    pub fn push(&mut self, now: SimTime, job: JobId, reason: StoredReason) -> Option<JobId> {
        if self.index.contains_key(&job.0) {
            self.probes.hit(Probe::DlqRefiled);
            self.drop_entry(job);
            self.index.remove(&job.0);
        }
        let evicted = match self.config.capacity {
            Some(cap)
                if self.len() >= cap as usize && self.config.bugs.contains(Bug::EvictNewest) =>
            {
                // The newest entry goes: it is swapped to the head, which then moves past it.
                let last = self.entries.len() - 1;
                self.entries.swap(self.head, last);
                let (moved, newest) = (self.entries[last].job, self.entries[self.head].job);
                let (moved, newest) = (JobId(moved), JobId(newest));
                self.index.insert(moved.0, last as u32);
                self.index.insert(newest.0, EVICTED);
                self.head += 1;
                Some(newest)
            }
            Some(cap) if self.len() >= cap as usize => {
                self.probes.hit(Probe::DlqEvictOldest);
                let oldest = JobId(self.entries[self.head].job);
                self.index.insert(oldest.0, EVICTED);
                self.head += 1;
                Some(oldest)
            }
            _ => None,
        };
        self.probes.hit(Probe::DlqFiled);
        self.index.insert(job.0, self.entries.len() as u32);
        let reason = match reason {
            StoredReason::Code(code) => code as u32,
            StoredReason::Raw(text) => {
                self.raw_reasons.push(text);
                RAW + (self.raw_reasons.len() - 1) as u32
            }
        };
        self.entries.push(Stored {
            job: job.0,
            reprocessed_as: NO_SUCCESSOR,
            at: [(now >> 32) as u32, now as u32],
            reason,
        });
        evicted
    }

    /// Deletes `job`'s entry by age (retention), reprocessed or not; false if it has no live
    /// entry (evicted by capacity meanwhile). The entries that stay keep their order, so a
    /// capacity eviction still takes the oldest.
    pub fn expire(&mut self, job: JobId) -> bool {
        let i = match self.index.get(&job.0) {
            Some(&i) if i != EVICTED => i,
            _ => {
                self.probes.hit(Probe::DlqExpireGone);
                return false;
            }
        };
        self.probes.hit(match i as usize == self.head {
            true => Probe::DlqExpireHead,
            false => Probe::DlqExpireOutOfOrder,
        });
        self.drop_entry(job)
    }

    /// Takes `job`'s live entry out, the others keeping their order; false if it has none.
    fn drop_entry(&mut self, job: JobId) -> bool {
        let i = match self.index.get(&job.0) {
            Some(&i) if i != EVICTED => i as usize,
            _ => return false,
        };
        // Move the entry to the head, the others one place on, then drop the head.
        self.entries[self.head..=i].rotate_right(1);
        for k in self.head + 1..=i {
            let moved = self.entries[k].job;
            self.index.insert(moved, k as u32);
        }
        self.index.insert(job.0, EVICTED);
        self.head += 1;
        true
    }

    /// The live entry of `job` (none if it never entered the DLQ or was evicted).
    pub fn get(&self, job: JobId) -> Option<DlqEntry> {
        match self.index.get(&job.0) {
            Some(&i) if i != EVICTED => Some(self.entry(&self.entries[i as usize])),
            _ => None,
        }
    }

    /// A stored entry as a [`DlqEntry`].
    fn entry(&self, e: &Stored) -> DlqEntry {
        DlqEntry {
            job: JobId(e.job),
            at: (e.at[0] as u64) << 32 | e.at[1] as u64,
            reason: match e.reason {
                r if r >= RAW => StoredReason::Raw(self.raw_reasons[(r - RAW) as usize].clone()),
                r => StoredReason::Code(DlqReason::ALL[r as usize]),
            },
            reprocessed_as: (e.reprocessed_as != NO_SUCCESSOR).then_some(JobId(e.reprocessed_as)),
        }
    }

    pub fn was_evicted(&self, job: JobId) -> bool {
        self.index.get(&job.0) == Some(&EVICTED)
    }

    /// The newest job of `job`'s reprocess chain: follows each live entry's `reprocessed_as`.
    /// An operator automation that "reprocesses the dead document" acts on this one.
    pub fn latest_in_chain(&self, job: JobId) -> JobId {
        let mut at = job;
        while let Some(next) = self.get(at).and_then(|e| e.reprocessed_as) {
            at = next;
        }
        at
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = DlqEntry> + '_ {
        self.entries[self.head..].iter().map(|e| self.entry(e))
    }

    pub fn audit_log(&self) -> &[AuditEntry] {
        &self.audit
    }

    /// Checks whether `job` (of `tenant`; `cancelled` if the queue cancelled it) may be
    /// reprocessed by `operator` at `now`. A cancelled job is refused as `cancelled_is_terminal`
    /// (once an operator is named). On success the caller creates the new job at
    /// [`DeadLetterQueue::reprocess_version`] and then calls
    /// [`DeadLetterQueue::record_reprocess`] (if the job has an entry).
    pub fn authorize_reprocess(
        &mut self,
        now: SimTime,
        job: JobId,
        tenant: TenantId,
        operator: Option<&str>,
        cancelled: bool,
    ) -> Result<(), ReprocessRefusal> {
        let verdict = match self.check_reprocess(now, job, tenant, operator) {
            Err(refusal) if cancelled && refusal != ReprocessRefusal::MissingOperator => {
                if self.config.bugs.contains(Bug::ReprocessCancelled) {
                    Ok(())
                } else {
                    Err(ReprocessRefusal::CancelledIsTerminal)
                }
            }
            verdict => verdict,
        };
        self.probes.hit(match verdict {
            Ok(()) => Probe::DlqReprocessAuthorized,
            Err(ReprocessRefusal::MissingOperator) => Probe::DlqRefusedMissingOperator,
            Err(ReprocessRefusal::NotDeadLettered) => Probe::DlqRefusedNotDeadLettered,
            Err(ReprocessRefusal::AlreadyReprocessed) => Probe::DlqRefusedAlreadyReprocessed,
            Err(ReprocessRefusal::Evicted) => Probe::DlqRefusedEvicted,
            Err(ReprocessRefusal::RateLimited) => Probe::DlqRefusedRateLimited,
            Err(ReprocessRefusal::CancelledIsTerminal) => Probe::DlqRefusedCancelled,
            // The kernel refuses these itself (`sim/operator.rs`).
            Err(
                ReprocessRefusal::NoSuchJob
                | ReprocessRefusal::VersionExists
                | ReprocessRefusal::VersionExhausted,
            ) => {
                unreachable!("the DLQ never answers {verdict:?}")
            }
        });
        verdict
    }

    fn check_reprocess(
        &mut self,
        now: SimTime,
        job: JobId,
        tenant: TenantId,
        operator: Option<&str>,
    ) -> Result<(), ReprocessRefusal> {
        let operator = operator.map(str::trim).unwrap_or("");
        if operator.is_empty() {
            return Err(ReprocessRefusal::MissingOperator);
        }
        match self.get(job) {
            None if self.was_evicted(job) => return Err(ReprocessRefusal::Evicted),
            None => return Err(ReprocessRefusal::NotDeadLettered),
            Some(e) if e.reprocessed_as.is_some() => {
                return Err(ReprocessRefusal::AlreadyReprocessed)
            }
            Some(_) => {}
        }
        if let Some(limit) = self.config.reprocess_limit {
            let recent = self.recent(tenant);
            let mut slid = false;
            while recent.front().is_some_and(|&t| t + limit.window_ms <= now) {
                recent.pop_front();
                slid = true;
            }
            let full = recent.len() >= limit.max as usize;
            if slid {
                self.probes.hit(Probe::DlqRateWindowSlid);
            }
            if full {
                return Err(ReprocessRefusal::RateLimited);
            }
        }
        Ok(())
    }

    fn recent(&mut self, tenant: TenantId) -> &mut VecDeque<SimTime> {
        if self.recent_reprocesses.len() <= tenant.index() {
            self.recent_reprocesses
                .resize(tenant.index() + 1, VecDeque::new());
        }
        &mut self.recent_reprocesses[tenant.index()]
    }

    /// Links old and new job and writes the audit entry. The old entry stays in place: the dead
    /// job is never revived, and the history of decisions stays auditable.
    pub fn record_reprocess(
        &mut self,
        now: SimTime,
        old_job: JobId,
        tenant: TenantId,
        new_job: JobId,
        operator: &str,
    ) -> &AuditEntry {
        let i = self.index[&old_job.0];
        assert!(
            i != EVICTED,
            "{old_job}'s entry was evicted: nothing to reprocess"
        );
        let i = i as usize;
        assert!(self.entries[i].reprocessed_as == NO_SUCCESSOR);
        assert!(new_job.0 != NO_SUCCESSOR, "job ids stop below 2^32 - 1");
        self.entries[i].reprocessed_as = new_job.0;
        if self.config.reprocess_limit.is_some() {
            self.recent(tenant).push_back(now);
        }
        self.audit.push(AuditEntry {
            at: now,
            old_job,
            new_job,
            operator: operator.into(),
        });
        self.audit.last().expect("just pushed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry is stored in 20 bytes and reads back exactly: both codes, raw texts, a time
    /// beyond 32 bits, a successor.
    #[test]
    fn a_stored_entry_is_20_bytes_and_reads_back_exactly() {
        assert_eq!(std::mem::size_of::<Stored>(), 20);
        let mut dlq = DeadLetterQueue::default();
        let reasons = [
            StoredReason::Code(DlqReason::PermanentError),
            StoredReason::Raw("doc-7: bad total".into()),
            StoredReason::Code(DlqReason::MaxAttemptsExceeded),
            StoredReason::Raw("".into()),
        ];
        let times = [0, u32::MAX as u64 + 1, 5, u64::MAX];
        for (i, reason) in reasons.iter().enumerate() {
            dlq.push(times[i], JobId(10 + i as u32), reason.clone());
        }
        dlq.record_reprocess(7, JobId(11), T, JobId(u32::MAX - 1), "ana");
        for (i, reason) in reasons.iter().enumerate() {
            let e = dlq.get(JobId(10 + i as u32)).unwrap();
            assert_eq!(
                (e.job, e.at, &e.reason),
                (JobId(10 + i as u32), times[i], reason)
            );
            let successor = (i == 1).then_some(JobId(u32::MAX - 1));
            assert_eq!(e.reprocessed_as, successor);
        }
        assert_eq!(dlq.entries().count(), 4);
    }

    // Checklist: "the DLQ stores a classified, redacted reason; reprocess requires an operator
    // identity and creates a new version".
    #[test]
    fn reasons_are_closed_codes() {
        let codes: Vec<&str> = DlqReason::ALL.iter().map(|r| r.code()).collect();
        assert_eq!(codes, ["permanent_error", "max_attempts_exceeded"]);
        assert_eq!(
            StoredReason::Code(DlqReason::PermanentError).text(),
            "permanent_error"
        );
    }

    #[test]
    fn a_cancelled_job_is_terminal_and_a_reprocess_bumps_the_version() {
        let mut dlq = DeadLetterQueue::default();
        assert_eq!(
            dlq.authorize_reprocess(5, JobId(1), T, Some("ana"), true),
            Err(ReprocessRefusal::CancelledIsTerminal)
        );
        assert_eq!(
            dlq.authorize_reprocess(5, JobId(1), T, None, true),
            Err(ReprocessRefusal::MissingOperator),
            "no operator is refused as such first"
        );
        assert_eq!(dlq.reprocess_version(1), 2);
        let mut buggy = DeadLetterQueue::new(DlqConfig {
            bugs: [Bug::ReprocessSameVersion, Bug::ReprocessCancelled]
                .into_iter()
                .collect(),
            ..DlqConfig::default()
        });
        assert_eq!(
            buggy.authorize_reprocess(5, JobId(1), T, Some("ana"), true),
            Ok(())
        );
        assert_eq!(buggy.reprocess_version(1), 1);
        assert_eq!(
            ReprocessRefusal::CancelledIsTerminal.code(),
            "cancelled_is_terminal"
        );
    }

    #[test]
    fn reprocess_needs_an_operator_and_a_dead_job_and_is_audited() {
        let mut dlq = DeadLetterQueue::default();
        dlq.push(10, JobId(3), StoredReason::Code(DlqReason::PermanentError));
        assert_eq!(
            dlq.authorize_reprocess(20, JobId(3), T, None, false),
            Err(ReprocessRefusal::MissingOperator)
        );
        assert_eq!(
            dlq.authorize_reprocess(20, JobId(3), T, Some("  "), false),
            Err(ReprocessRefusal::MissingOperator)
        );
        assert_eq!(
            dlq.authorize_reprocess(20, JobId(2), T, Some("ana"), false),
            Err(ReprocessRefusal::NotDeadLettered)
        );
        assert_eq!(
            dlq.authorize_reprocess(20, JobId(3), T, Some("ana"), false),
            Ok(())
        );
        let audit = dlq
            .record_reprocess(20, JobId(3), T, JobId(9), "ana")
            .clone();
        assert_eq!(
            audit,
            AuditEntry {
                at: 20,
                old_job: JobId(3),
                new_job: JobId(9),
                operator: "ana".into()
            }
        );
        assert_eq!(
            dlq.get(JobId(3)).unwrap().reprocessed_as,
            Some(JobId(9)),
            "old entry kept"
        );
        assert_eq!(
            dlq.authorize_reprocess(30, JobId(3), T, Some("bob"), false),
            Err(ReprocessRefusal::AlreadyReprocessed)
        );
    }

    const T: TenantId = TenantId(0);

    fn permanent() -> StoredReason {
        StoredReason::Code(DlqReason::PermanentError)
    }

    // Retention by age takes an entry from anywhere; the others keep their order, so the next
    // capacity eviction still takes the oldest left.
    #[test]
    fn an_expired_entry_leaves_and_the_rest_keep_their_order() {
        let mut dlq = DeadLetterQueue::new(DlqConfig {
            capacity: Some(3),
            ..DlqConfig::default()
        });
        for j in 0..3 {
            dlq.push(j, JobId(j as u32), permanent());
        }
        assert!(dlq.expire(JobId(1)));
        assert!(!dlq.expire(JobId(1)), "gone already");
        assert!(dlq.was_evicted(JobId(1)));
        let jobs = |d: &DeadLetterQueue| d.entries().map(|e| e.job).collect::<Vec<_>>();
        assert_eq!(jobs(&dlq), [JobId(0), JobId(2)]);
        assert_eq!(dlq.get(JobId(2)).map(|e| e.job), Some(JobId(2)));
        dlq.push(4, JobId(3), permanent());
        assert_eq!(dlq.push(5, JobId(4), permanent()), Some(JobId(0)));
        assert_eq!(jobs(&dlq), [JobId(2), JobId(3), JobId(4)]);
    }

    // Sidekiq's dead set: when full, the oldest entry goes, and it is gone for good.
    #[test]
    fn a_full_dlq_evicts_its_oldest_entry() {
        let mut dlq = DeadLetterQueue::new(DlqConfig {
            capacity: Some(2),
            ..DlqConfig::default()
        });
        assert_eq!(dlq.push(1, JobId(0), permanent()), None);
        assert_eq!(dlq.push(2, JobId(1), permanent()), None);
        assert_eq!(dlq.push(3, JobId(2), permanent()), Some(JobId(0)));
        assert_eq!(dlq.len(), 2);
        assert!(dlq.get(JobId(0)).is_none() && dlq.was_evicted(JobId(0)));
        assert_eq!(
            dlq.entries().map(|e| e.job).collect::<Vec<_>>(),
            [JobId(1), JobId(2)]
        );
        assert_eq!(
            dlq.authorize_reprocess(4, JobId(0), T, Some("ana"), false),
            Err(ReprocessRefusal::Evicted)
        );
        let unbounded = &mut DeadLetterQueue::default();
        for j in 0..100 {
            assert_eq!(unbounded.push(j, JobId(j as u32), permanent()), None);
        }
    }

    // The chapter's open gap: an automation that reprocesses the same dead document forever.
    #[test]
    fn reprocesses_are_limited_per_tenant_in_a_sliding_window() {
        let mut dlq = DeadLetterQueue::new(DlqConfig {
            reprocess_limit: Some(ReprocessLimit {
                max: 2,
                window_ms: 1000,
            }),
            ..DlqConfig::default()
        });
        let other = TenantId(1);
        for j in 0..5 {
            dlq.push(0, JobId(j), permanent());
        }
        let mut next = 10;
        let mut try_at = |dlq: &mut DeadLetterQueue, now, job, tenant| {
            let r = dlq.authorize_reprocess(now, JobId(job), tenant, Some("bot"), false);
            if r.is_ok() {
                dlq.record_reprocess(now, JobId(job), tenant, JobId(next), "bot");
                next += 1;
            }
            r
        };
        assert_eq!(try_at(&mut dlq, 100, 0, T), Ok(()));
        assert_eq!(try_at(&mut dlq, 200, 1, T), Ok(()));
        assert_eq!(
            try_at(&mut dlq, 300, 2, T),
            Err(ReprocessRefusal::RateLimited)
        );
        assert_eq!(try_at(&mut dlq, 300, 3, other), Ok(()), "per tenant");
        assert_eq!(
            try_at(&mut dlq, 1099, 2, T),
            Err(ReprocessRefusal::RateLimited)
        );
        assert_eq!(try_at(&mut dlq, 1100, 2, T), Ok(()), "the window slid");
        assert_eq!(dlq.latest_in_chain(JobId(0)), JobId(10));
    }

    // Checklist: "cancellation is terminal and distinct from the DLQ".
    #[test]
    fn a_job_that_never_entered_the_dlq_cannot_be_reprocessed() {
        let mut dlq = DeadLetterQueue::default();
        assert_eq!(
            dlq.authorize_reprocess(0, JobId(0), T, Some("ana"), false),
            Err(ReprocessRefusal::NotDeadLettered)
        );
    }
}

//! The dead-letter queue and the audited operator reprocess.
//!
//! Owns: which jobs are dead and why (a closed, redacted reason code, never the error's text),
//! and the rule for bringing one back: an operator id is required, the old job is never revived,
//! a new job with operationVersion + 1 is created by the caller, and an audit entry links old,
//! new and operator. Cancelled jobs never enter the DLQ, so they can never be reprocessed.
//! Does not: create the new job (the queue does) or decide that a job is dead (the retry policy).

use crate::ids::{JobId, SimTime};

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
#[derive(Clone, Debug, PartialEq, Eq)]
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

#[derive(Clone, Debug)]
pub struct DlqEntry {
    pub job: JobId,
    pub at: SimTime,
    pub reason: StoredReason,
    pub reprocessed_as: Option<JobId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    pub at: SimTime,
    pub old_job: JobId,
    pub new_job: JobId,
    pub operator: Box<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReprocessRefusal {
    MissingOperator,
    NotDeadLettered,
    AlreadyReprocessed,
}

impl ReprocessRefusal {
    pub fn code(self) -> &'static str {
        match self {
            ReprocessRefusal::MissingOperator => "missing_operator",
            ReprocessRefusal::NotDeadLettered => "not_dead_lettered",
            ReprocessRefusal::AlreadyReprocessed => "already_reprocessed",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct DeadLetterQueue {
    entries: Vec<DlqEntry>,
    /// Position in `entries` by job; jobs are dense, so a flat vector beats a map.
    index: Vec<u32>,
    audit: Vec<AuditEntry>,
}

const ABSENT: u32 = u32::MAX;

impl DeadLetterQueue {
    pub fn push(&mut self, now: SimTime, job: JobId, reason: StoredReason) {
        if self.index.len() <= job.index() {
            self.index.resize(job.index() + 1, ABSENT);
        }
        assert_eq!(self.index[job.index()], ABSENT, "{job} dead-lettered twice");
        self.index[job.index()] = self.entries.len() as u32;
        self.entries.push(DlqEntry {
            job,
            at: now,
            reason,
            reprocessed_as: None,
        });
    }

    pub fn get(&self, job: JobId) -> Option<&DlqEntry> {
        match self.index.get(job.index()) {
            Some(&i) if i != ABSENT => Some(&self.entries[i as usize]),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[DlqEntry] {
        &self.entries
    }

    pub fn audit_log(&self) -> &[AuditEntry] {
        &self.audit
    }

    /// Checks whether `job` may be reprocessed by `operator`. On success the caller creates the
    /// new job and then calls [`DeadLetterQueue::record_reprocess`].
    pub fn authorize_reprocess(
        &self,
        job: JobId,
        operator: Option<&str>,
    ) -> Result<(), ReprocessRefusal> {
        let operator = operator.map(str::trim).unwrap_or("");
        if operator.is_empty() {
            return Err(ReprocessRefusal::MissingOperator);
        }
        match self.get(job) {
            None => Err(ReprocessRefusal::NotDeadLettered),
            Some(e) if e.reprocessed_as.is_some() => Err(ReprocessRefusal::AlreadyReprocessed),
            Some(_) => Ok(()),
        }
    }

    /// Links old and new job and writes the audit entry. The old entry stays in place: the dead
    /// job is never revived, and the history of decisions stays auditable.
    pub fn record_reprocess(
        &mut self,
        now: SimTime,
        old_job: JobId,
        new_job: JobId,
        operator: &str,
    ) -> &AuditEntry {
        let i = self.index[old_job.index()] as usize;
        assert!(self.entries[i].reprocessed_as.is_none());
        self.entries[i].reprocessed_as = Some(new_job);
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
    fn reprocess_needs_an_operator_and_a_dead_job_and_is_audited() {
        let mut dlq = DeadLetterQueue::default();
        dlq.push(10, JobId(3), StoredReason::Code(DlqReason::PermanentError));
        assert_eq!(
            dlq.authorize_reprocess(JobId(3), None),
            Err(ReprocessRefusal::MissingOperator)
        );
        assert_eq!(
            dlq.authorize_reprocess(JobId(3), Some("  ")),
            Err(ReprocessRefusal::MissingOperator)
        );
        assert_eq!(
            dlq.authorize_reprocess(JobId(2), Some("ana")),
            Err(ReprocessRefusal::NotDeadLettered)
        );
        assert_eq!(dlq.authorize_reprocess(JobId(3), Some("ana")), Ok(()));
        let audit = dlq.record_reprocess(20, JobId(3), JobId(9), "ana").clone();
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
            dlq.authorize_reprocess(JobId(3), Some("bob")),
            Err(ReprocessRefusal::AlreadyReprocessed)
        );
    }

    // Checklist: "cancellation is terminal and distinct from the DLQ".
    #[test]
    fn a_job_that_never_entered_the_dlq_cannot_be_reprocessed() {
        let dlq = DeadLetterQueue::default();
        assert_eq!(
            dlq.authorize_reprocess(JobId(0), Some("ana")),
            Err(ReprocessRefusal::NotDeadLettered)
        );
    }
}

//! The DLQ's size as its callers read it, its audit log, and the `evict_newest` defect, pinned.
//! Owns: tests only.

use crate::base::ids::{JobId, TenantId};
use crate::model::dead_letter::{AuditEntry, DeadLetterQueue, DlqConfig, DlqReason, StoredReason};
use crate::vocab::bugs::Bug;

#[test]
fn a_dlq_is_empty_until_it_holds_an_entry() {
    let mut dlq = DeadLetterQueue::default();
    assert!(dlq.is_empty());
    dlq.push(10, JobId(3), StoredReason::Code(DlqReason::PermanentError));
    assert!(!dlq.is_empty());
    assert_eq!(dlq.len(), 1);
}

/// `evict_newest` evicts only when the DLQ is full, and then its newest entry.
#[test]
fn evict_newest_waits_for_a_full_dlq_then_drops_the_newest() {
    let mut dlq = DeadLetterQueue::new(DlqConfig {
        capacity: Some(2),
        bugs: Bug::EvictNewest.into(),
        ..DlqConfig::default()
    });
    let code = || StoredReason::Code(DlqReason::MaxAttemptsExceeded);
    assert_eq!(dlq.push(10, JobId(0), code()), None);
    assert_eq!(dlq.push(20, JobId(1), code()), None);
    assert_eq!(dlq.push(30, JobId(2), code()), Some(JobId(1)));
    assert_eq!(dlq.len(), 2);
    assert!(dlq.get(JobId(0)).is_some() && dlq.get(JobId(1)).is_none());
}

/// The DLQ answers with the limits it was made with (the kernel records its capacity).
#[test]
fn a_dlq_keeps_its_configuration() {
    let config = DlqConfig {
        capacity: Some(7),
        ..DlqConfig::default()
    };
    assert_eq!(DeadLetterQueue::new(config).config(), config);
}

/// Every accepted reprocess leaves its audit entry (when, old job, new job, operator), oldest
/// first, and the old entry stays in the DLQ linked to the new job. (Mutant killed:
/// `audit_log` answering an empty log.)
#[test]
fn each_accepted_reprocess_is_in_the_audit_log_in_order() {
    let mut dlq = DeadLetterQueue::default();
    let code = || StoredReason::Code(DlqReason::PermanentError);
    dlq.push(10, JobId(0), code());
    dlq.push(20, JobId(1), code());
    assert!(dlq.audit_log().is_empty());
    let tenant = TenantId(0);
    for (now, old, new, operator) in [(30, 1, 2, "ana"), (40, 0, 3, "rui")] {
        assert_eq!(
            dlq.authorize_reprocess(now, JobId(old), tenant, Some(operator), false),
            Ok(())
        );
        dlq.record_reprocess(now, JobId(old), tenant, JobId(new), operator);
    }
    let entry = |at, old, new, operator: &str| AuditEntry {
        at,
        old_job: JobId(old),
        new_job: JobId(new),
        operator: operator.into(),
    };
    assert_eq!(
        dlq.audit_log(),
        [entry(30, 1, 2, "ana"), entry(40, 0, 3, "rui")]
    );
    assert_eq!(dlq.get(JobId(1)).unwrap().reprocessed_as, Some(JobId(2)));
    assert_eq!(dlq.len(), 2, "a reprocessed entry stays");
}

/// The DLQ keeps its filed jobs by id in a map: a job numbered in the billions costs one entry,
/// and jobs never filed, evicted or expired read as such.
#[test]
fn filed_jobs_are_found_by_id_whatever_their_number() {
    let mut dlq = DeadLetterQueue::new(DlqConfig {
        capacity: Some(2),
        ..DlqConfig::default()
    });
    let code = || StoredReason::Code(DlqReason::PermanentError);
    let far = JobId(4_000_000_000);
    assert_eq!(dlq.push(10, far, code()), None);
    assert_eq!(dlq.push(20, JobId(7), code()), None);
    assert_eq!(dlq.get(far).map(|e| e.at), Some(10));
    assert!(dlq.get(JobId(8)).is_none() && !dlq.was_evicted(JobId(8)));
    assert_eq!(dlq.push(30, JobId(9), code()), Some(far));
    assert!(dlq.was_evicted(far) && dlq.get(far).is_none());
    assert!(dlq.expire(JobId(9)));
    assert!(!dlq.expire(JobId(9)) && dlq.was_evicted(JobId(9)));
    assert_eq!(dlq.get(JobId(7)).map(|e| e.at), Some(20));
    assert_eq!(dlq.len(), 1);
}

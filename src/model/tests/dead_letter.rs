//! The DLQ's size as its callers read it, and the `evict_newest` defect, pinned.
//! Owns: tests only.

use crate::ids::JobId;
use crate::model::dead_letter::{DeadLetterQueue, DlqConfig, DlqReason, StoredReason};

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
        bug_evict_newest: true,
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

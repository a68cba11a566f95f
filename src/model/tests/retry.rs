//! The `permanent_error_retried` defect (it misclassifies schema errors only) and when a retry
//! becomes visible, pinned.
//! Owns: tests only.

use crate::model::retry::{ErrorClass, ErrorKind, RetryPolicy};
use crate::vocab::config::Jitter;

#[test]
fn permanent_error_retried_makes_schema_errors_transient_and_nothing_else() {
    let policy = RetryPolicy {
        attempts_max: 3,
        backoff_base_ms: 100,
        backoff_cap_ms: 2000,
        jitter: Jitter::None,
        bug_unbounded: false,
        bug_permanent_transient: true,
        bug_jitter_over_cap: false,
        bug_cancel_early: false,
    };
    assert_eq!(
        policy.class_of(ErrorKind::SchemaInvalid),
        ErrorClass::Transient
    );
    assert_eq!(
        policy.class_of(ErrorKind::PayloadConflict),
        ErrorClass::Permanent
    );
    assert_eq!(
        policy.class_of(ErrorKind::ProviderUnavailable),
        ErrorClass::Transient
    );
    assert_eq!(
        policy.class_of(ErrorKind::DeadlineExceeded),
        ErrorClass::Cancelled
    );
}

/// A retry decided at `now` with a delay is visible again `delay` later.
#[test]
fn a_retry_becomes_visible_after_its_delay() {
    assert_eq!(RetryPolicy::visible_at(1_000, 250), 1_250);
    assert_eq!(RetryPolicy::visible_at(1_000, 0), 1_000);
}

/// `jitter_over_cap` is a defect of full jitter only: with no jitter or equal jitter the delay
/// stays within its bounds.
#[test]
fn jitter_over_cap_touches_full_jitter_only() {
    let policy = |jitter| RetryPolicy {
        attempts_max: 3,
        backoff_base_ms: 100,
        backoff_cap_ms: 2000,
        jitter,
        bug_unbounded: false,
        bug_permanent_transient: false,
        bug_jitter_over_cap: true,
        bug_cancel_early: false,
    };
    assert_eq!(policy(Jitter::None).backoff_ms(2, 0.99), 200);
    let equal = policy(Jitter::Equal).backoff_ms(2, 0.99);
    assert!((100..=200).contains(&equal), "{equal}");
    assert!(
        policy(Jitter::Full).backoff_ms(2, 0.99) > 200,
        "the defect itself"
    );
}

//! The `permanent_error_retried` defect (it misclassifies schema errors only), when a retry
//! becomes visible, and the delays the `jitter_over_cap` defect draws, pinned.
//! Owns: tests only.

use crate::model::retry::{ErrorClass, ErrorKind, RetryPolicy};
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::config::Jitter;

/// The policy of these tests, every bug switch off.
pub(super) fn policy(jitter: Jitter) -> RetryPolicy {
    RetryPolicy {
        attempts_max: 3,
        backoff_base_ms: 100,
        backoff_cap_ms: 2000,
        jitter,
        permanent_retried: false,
        bugs: BugSet::EMPTY,
    }
}

#[test]
fn permanent_error_retried_makes_schema_errors_transient_and_nothing_else() {
    let policy = RetryPolicy {
        bugs: Bug::PermanentErrorRetried.into(),
        ..policy(Jitter::None)
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
        bugs: Bug::JitterOverCap.into(),
        ..policy(jitter)
    };
    assert_eq!(policy(Jitter::None).backoff_ms(2, 0.99), 200);
    let equal = policy(Jitter::Equal).backoff_ms(2, 0.99);
    assert!((100..=200).contains(&equal), "{equal}");
    assert!(
        policy(Jitter::Full).backoff_ms(2, 0.99) > 200,
        "the defect itself"
    );
}

/// `jitter_over_cap` draws full jitter in [0, 2d]: the draw scales twice the delay, from nothing
/// up to the whole of it.
#[test]
fn jitter_over_cap_draws_from_zero_to_twice_the_delay() {
    let over = RetryPolicy {
        bugs: Bug::JitterOverCap.into(),
        ..policy(Jitter::Full)
    };
    assert_eq!(over.backoff_ms(2, 0.0), 0);
    assert_eq!(over.backoff_ms(2, 0.5), 200);
    assert_eq!(over.backoff_ms(2, 0.999_999), 400);
}

/// The caller draws a jitter number only when the policy jitters (the draw would otherwise
/// move every later draw of the stream).
#[test]
fn only_a_jittering_policy_asks_for_a_draw() {
    assert!(!policy(Jitter::None).draws_jitter());
    assert!(policy(Jitter::Full).draws_jitter());
    assert!(policy(Jitter::Equal).draws_jitter());
}

/// Equal jitter keeps half the delay and draws the other half: a middle draw lands in the
/// middle, not at the top.
#[test]
fn equal_jitter_draws_the_upper_half_of_the_delay() {
    let equal = policy(Jitter::Equal);
    assert_eq!(equal.backoff_ms(3, 0.0), 200);
    assert_eq!(equal.backoff_ms(3, 0.5), 300);
    assert_eq!(equal.backoff_ms(3, 0.999_999), 400);
}

/// `cancel_early` cancels a transient error only when the retry would land after the deadline:
/// one landing on the deadline itself is still live.
#[test]
fn cancel_early_spares_a_retry_that_lands_on_the_deadline() {
    let early = RetryPolicy {
        bugs: Bug::CancelEarly.into(),
        ..policy(Jitter::None)
    };
    let e = ErrorKind::ProviderUnavailable;
    assert_eq!(early.judged_error(e, 1, 900, 1000), e, "lands at 1000");
    assert_eq!(
        early.judged_error(e, 1, 901, 1000),
        ErrorKind::DeadlineExceeded
    );
}

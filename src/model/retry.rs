//! The retry policy: every error gets a class, every class a decision, and there are exactly
//! three decisions.
//!
//! Owns: classify (transient / permanent / cancelled), decide (retry / dead_letter / cancel) and
//! the backoff delay (exponential, capped, with jitter none / full / equal).
//! Does not: draw randomness (the jitter draw comes in as a number in [0, 1)), touch the queue,
//! or count attempts (the queue does).

use crate::base::ids::SimTime;
use crate::model::dead_letter::DlqReason;
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::config::Jitter;

/// What went wrong in an attempt, as the worker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The model provider or a dependency failed; trying again may work.
    ProviderUnavailable,
    /// The document failed schema validation; it will fail the same way next time.
    SchemaInvalid,
    /// The same key was already committed with a different payload.
    PayloadConflict,
    /// The job's deadline passed while the attempt ran.
    DeadlineExceeded,
}

impl ErrorKind {
    /// The word the history records (`vocab/codes.rs` lists it).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ProviderUnavailable => "provider_unavailable",
            ErrorKind::SchemaInvalid => "schema_invalid",
            ErrorKind::PayloadConflict => "payload_conflict",
            ErrorKind::DeadlineExceeded => "deadline_exceeded",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    Transient,
    Permanent,
    Cancelled,
}

impl ErrorClass {
    /// The word the history records (`vocab/codes.rs` lists it).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
            ErrorClass::Cancelled => "cancelled",
        }
    }
}

/// The only three outcomes. There is deliberately no fourth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    Retry { delay_ms: u64 },
    DeadLetter(DlqReason),
    Cancel,
}

#[derive(Clone, Copy, Debug, Hash)]
pub struct RetryPolicy {
    pub attempts_max: u32,
    pub backoff_base_ms: u64,
    pub backoff_cap_ms: u64,
    pub jitter: Jitter,
    /// The profile retries permanent errors (`[queue] permanent_error = "retry"`): a schema
    /// error or a payload conflict is classified transient (`permanent_error_retried` does so
    /// to a schema error by mistake).
    pub permanent_retried: bool,
    /// The bug switches on; the policy reads `unbounded_retries` (ignore `attempts_max`),
    /// `permanent_error_retried` (a schema error is classified transient), `jitter_over_cap`
    /// (full jitter draws in [0, 2d]) and `cancel_early` (a transient error is cancelled as soon
    /// as the unjittered retry would land past the deadline, before the deadline has passed).
    pub bugs: BugSet,
}

pub fn classify(error: ErrorKind) -> ErrorClass {
    match error {
        ErrorKind::ProviderUnavailable => ErrorClass::Transient,
        ErrorKind::SchemaInvalid | ErrorKind::PayloadConflict => ErrorClass::Permanent,
        ErrorKind::DeadlineExceeded => ErrorClass::Cancelled,
    }
}

impl RetryPolicy {
    /// The class of `error` under this policy: [`classify`], but every permanent error is
    /// transient under a profile that retries them (`permanent_retried`: the queue has no call
    /// to fail a job for good), and a schema error is under the bug switch.
    pub fn class_of(&self, error: ErrorKind) -> ErrorClass {
        match classify(error) {
            ErrorClass::Permanent
                if self.permanent_retried
                    || (error == ErrorKind::SchemaInvalid
                        && self.bugs.contains(Bug::PermanentErrorRetried)) =>
            {
                ErrorClass::Transient
            }
            class => class,
        }
    }

    /// The error the policy judges when attempt number `attempt` failed with `error` at `now`:
    /// a transient error after the job's deadline is `deadline_exceeded` (the job is cancelled,
    /// not retried), whatever the worker saw.
    pub fn judged_error(
        &self,
        error: ErrorKind,
        attempt: u32,
        now: SimTime,
        deadline_at: SimTime,
    ) -> ErrorKind {
        let transient = self.class_of(error) == ErrorClass::Transient;
        let early = self.bugs.contains(Bug::CancelEarly)
            && now + self.backoff_ms_unjittered(attempt) > deadline_at;
        if transient && (now > deadline_at || early) {
            ErrorKind::DeadlineExceeded
        } else {
            error
        }
    }

    /// Whether [`RetryPolicy::decide`] reads its jitter draw (the caller draws only then).
    pub fn draws_jitter(&self) -> bool {
        !matches!(self.jitter, Jitter::None)
    }

    /// Decide what happens after attempt number `attempt` (1-based) failed with `error`.
    /// `jitter_draw` is uniform in [0, 1), already drawn by the caller.
    pub fn decide(&self, error: ErrorKind, attempt: u32, jitter_draw: f64) -> Decision {
        match self.class_of(error) {
            ErrorClass::Cancelled => Decision::Cancel,
            ErrorClass::Permanent => Decision::DeadLetter(DlqReason::PermanentError),
            ErrorClass::Transient
                if attempt < self.attempts_max || self.bugs.contains(Bug::UnboundedRetries) =>
            {
                Decision::Retry {
                    delay_ms: self.backoff_ms(attempt, jitter_draw),
                }
            }
            ErrorClass::Transient => Decision::DeadLetter(DlqReason::MaxAttemptsExceeded),
        }
    }

    /// `min(base * 2^(attempt-1), cap)`: the delay before jitter.
    pub fn backoff_ms_unjittered(&self, attempt: u32) -> u64 {
        let exponent = attempt.saturating_sub(1).min(62);
        self.backoff_base_ms
            .saturating_mul(1u64 << exponent)
            .min(self.backoff_cap_ms)
    }

    /// `min(base * 2^(attempt-1), cap)`, then jittered: none keeps it, full draws in [0, d],
    /// equal draws in [d/2, d].
    pub fn backoff_ms(&self, attempt: u32, jitter_draw: f64) -> u64 {
        let delay = self.backoff_ms_unjittered(attempt);
        if self.bugs.contains(Bug::JitterOverCap) && self.jitter == Jitter::Full {
            return (jitter_draw * delay.saturating_mul(2).saturating_add(1) as f64) as u64;
        }
        match self.jitter {
            Jitter::None => delay,
            Jitter::Full => (jitter_draw * delay.saturating_add(1) as f64) as u64,
            Jitter::Equal => {
                delay / 2 + (jitter_draw * (delay - delay / 2).saturating_add(1) as f64) as u64
            }
        }
        .min(delay)
    }

    /// When a job may be leased again after a retry decided at `now`.
    pub fn visible_at(now: SimTime, delay_ms: u64) -> SimTime {
        now + delay_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: Jitter) -> RetryPolicy {
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
    fn a_transient_error_past_the_deadline_is_judged_deadline_exceeded() {
        let p = policy(Jitter::None);
        let e = ErrorKind::ProviderUnavailable;
        assert_eq!(
            p.judged_error(e, 1, 1000, 1000),
            e,
            "at the deadline: still live"
        );
        assert_eq!(
            p.judged_error(e, 1, 1001, 1000),
            ErrorKind::DeadlineExceeded
        );
        assert_eq!(
            p.judged_error(ErrorKind::SchemaInvalid, 1, 1001, 1000),
            ErrorKind::SchemaInvalid,
            "permanent errors keep their class"
        );
        let early = RetryPolicy {
            bugs: Bug::CancelEarly.into(),
            ..p
        };
        assert_eq!(
            early.judged_error(e, 1, 950, 1000),
            ErrorKind::DeadlineExceeded
        );
        assert_eq!(p.judged_error(e, 1, 950, 1000), e);
        assert_eq!(ErrorKind::DeadlineExceeded.name(), "deadline_exceeded");
        assert_eq!(ErrorClass::Cancelled.name(), "cancelled");
    }

    // Checklist: "every error classification produces retry, dead_letter or cancel".
    #[test]
    fn every_error_gets_one_of_three_decisions() {
        let p = policy(Jitter::None);
        assert_eq!(
            p.decide(ErrorKind::ProviderUnavailable, 1, 0.0),
            Decision::Retry { delay_ms: 100 }
        );
        assert_eq!(
            p.decide(ErrorKind::SchemaInvalid, 1, 0.0),
            Decision::DeadLetter(DlqReason::PermanentError)
        );
        assert_eq!(
            p.decide(ErrorKind::PayloadConflict, 1, 0.0),
            Decision::DeadLetter(DlqReason::PermanentError)
        );
        assert_eq!(
            p.decide(ErrorKind::DeadlineExceeded, 1, 0.0),
            Decision::Cancel
        );
    }

    // Failure 1: retry only while attempt < max_attempts; then the DLQ, never a fourth attempt.
    #[test]
    fn transient_errors_stop_at_max_attempts() {
        let p = policy(Jitter::None);
        assert!(matches!(
            p.decide(ErrorKind::ProviderUnavailable, 2, 0.5),
            Decision::Retry { .. }
        ));
        assert_eq!(
            p.decide(ErrorKind::ProviderUnavailable, 3, 0.5),
            Decision::DeadLetter(DlqReason::MaxAttemptsExceeded)
        );
        let broken = RetryPolicy {
            bugs: Bug::UnboundedRetries.into(),
            ..p
        };
        assert!(matches!(
            broken.decide(ErrorKind::ProviderUnavailable, 3, 0.5),
            Decision::Retry { .. }
        ));
    }

    #[test]
    fn backoff_is_exponential_capped_and_jittered_within_bounds() {
        let p = policy(Jitter::None);
        let delays: Vec<u64> = (1..=7).map(|a| p.backoff_ms(a, 0.3)).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(
            p.backoff_ms(200, 0.3),
            2000,
            "huge attempt numbers saturate"
        );
        let full = policy(Jitter::Full);
        assert_eq!(full.backoff_ms(3, 0.0), 0);
        assert_eq!(full.backoff_ms(3, 0.999_999), 400);
        let equal = policy(Jitter::Equal);
        assert_eq!(equal.backoff_ms(3, 0.0), 200);
        assert_eq!(equal.backoff_ms(3, 0.999_999), 400);
        for i in 0..100 {
            let d = i as f64 / 100.0;
            assert!(full.backoff_ms(4, d) <= 800);
            assert!((400..=800).contains(&equal.backoff_ms(4, d)));
        }
    }
}

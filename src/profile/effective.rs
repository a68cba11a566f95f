//! The numbers a run uses under a profile, where durasim's queue and the history's header take
//! numbers: a queue with no lease, no renewal, no deadline or no attempt limit gets a horizon no
//! run reaches.
//!
//! Owns: [`Effective`] (lease, heartbeat period, deadline, attempt cap as the queue and the
//! header see them) and the backoff the header states for the checker.
//! Does not: decide anything at run time.

use super::{AttemptsCount, BackoffFormula, ExpiryKind, Heartbeat, JitterMode, Semantics};
use crate::vocab::config::{Jitter, RetryFormula};

/// Beyond any run: time limits and every scenario time are at most 10^12 ms. 2^52 ms, so that
/// any time plus it stays below 2^53, the most a history's number may be (a header stating it
/// is read back by `durasim verify`).
pub const NEVER_MS: u64 = 1 << 52;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Effective {
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    pub deadline_ms: u64,
    /// The cap the history's header states: leases allowed per job.
    pub attempts_max: u32,
    /// The cap the queue applies when it picks a job: `attempts_max` when every lease counts,
    /// none when only failures do (the kernel counts them).
    pub queue_attempts_max: u32,
}

impl Effective {
    pub fn of(s: &Semantics) -> Effective {
        let attempts_max = s.max_attempts.unwrap_or(u32::MAX);
        // Under worker liveness the process heartbeat renews a liveness of `liveness_ms`.
        let liveness = s.expiry.kind == ExpiryKind::WorkerLiveness;
        Effective {
            lease_ms: match liveness {
                true => s.expiry.liveness_ms,
                false => s.lease_ms.unwrap_or(NEVER_MS),
            },
            heartbeat_ms: match s.heartbeat {
                _ if liveness => s.heartbeat_ms,
                Heartbeat::Renew => s.heartbeat_ms,
                Heartbeat::None => NEVER_MS,
            },
            deadline_ms: s.deadline_ms.unwrap_or(NEVER_MS),
            attempts_max,
            queue_attempts_max: match s.attempts_count {
                AttemptsCount::Leases => attempts_max,
                AttemptsCount::Failures => u32::MAX,
            },
        }
    }

    /// The jitter mode durasim's retry policy applies: the profile's when it is one of the
    /// policy's three; otherwise one that draws exactly when the profile's jitter draws (the
    /// delay then comes from `profile::backoff`).
    pub fn policy_jitter(&self, s: &Semantics) -> Jitter {
        match s.backoff.jitter {
            JitterMode::None => Jitter::None,
            JitterMode::Full => Jitter::Full,
            JitterMode::Equal => Jitter::Equal,
            _ => Jitter::Full,
        }
    }

    /// The backoff as the header states it: `(base, cap, jitter)` of `min(base × 2ⁿ⁻¹, cap)`
    /// with none, full or equal jitter and n the lease count (every header before the profile
    /// formulas; `immediate` is base 0), or else the formula itself, which the checker's
    /// `backoff_respected` then recomputes.
    pub fn header_backoff(&self, s: &Semantics) -> (u64, u64, Jitter, Option<RetryFormula>) {
        let b = &s.backoff;
        let basic = match b.jitter {
            JitterMode::None => Some(Jitter::None),
            JitterMode::Full => Some(Jitter::Full),
            JitterMode::Equal => Some(Jitter::Equal),
            _ => None,
        };
        let by_leases = s.attempts_count == AttemptsCount::Leases;
        match (b.formula, basic) {
            (BackoffFormula::Exp2, Some(j)) if by_leases => (b.base_ms, b.cap_ms, j, None),
            (BackoffFormula::Immediate, Some(_)) => (0, 0, Jitter::None, None),
            _ => (
                b.base_ms,
                b.cap_ms,
                Jitter::Full,
                Some(RetryFormula {
                    backoff: *b,
                    attempt: s.attempts_count,
                }),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn durasim_is_stated_exactly_and_queues_without_a_lease_never_expire() {
        let d = Profile::Durasim.defaults();
        let e = Effective::of(&d);
        assert_eq!(
            (e.lease_ms, e.heartbeat_ms, e.deadline_ms),
            (1_000, 300, 30_000)
        );
        assert_eq!((e.attempts_max, e.queue_attempts_max), (3, 3));
        assert_eq!(e.header_backoff(&d), (100, 2_000, Jitter::Full, None));
        let sidekiq = Profile::Sidekiq.defaults();
        let e = Effective::of(&sidekiq);
        assert_eq!(e.lease_ms, NEVER_MS);
        assert_eq!((e.attempts_max, e.queue_attempts_max), (26, u32::MAX));
        let bull = Profile::Bullmq.defaults();
        assert_eq!(
            Effective::of(&bull).header_backoff(&bull),
            (0, 0, Jitter::None, None)
        );
        let river = Profile::River.defaults();
        let stated = Effective::of(&river).header_backoff(&river).3;
        assert_eq!(stated.map(|f| f.backoff), Some(river.backoff));
    }
}

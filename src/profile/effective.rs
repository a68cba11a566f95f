//! The numbers a run uses under a profile, where durasim's queue and the history's header take
//! numbers: a queue with no lease, no renewal, no deadline or no attempt limit gets a horizon no
//! run reaches.
//!
//! Owns: [`Effective`] (lease, heartbeat period, deadline, attempt cap as the queue and the
//! header see them) and the backoff the header states for the checker.
//! Does not: decide anything at run time.

use super::{AttemptsCount, BackoffFormula, ExpiryKind, Heartbeat, JitterMode, Semantics};
use crate::vocab::config::Jitter;

/// Beyond any run: time limits and every scenario time are at most 10^12 ms.
pub const NEVER_MS: u64 = u64::MAX / 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    /// The backoff as the header states it: `(base, cap, jitter)` of `min(base × 2ⁿ⁻¹, cap)`.
    /// `exp2` with none, full or equal jitter and `immediate` are stated exactly; the header has
    /// no words yet for the other formulas, so it states a bound no delay exceeds, and the
    /// checker's `backoff_respected` then judges only that no lease comes before its visible
    /// time.
    pub fn header_backoff(&self, s: &Semantics) -> (u64, u64, Jitter) {
        let b = &s.backoff;
        let exact = match b.jitter {
            JitterMode::None => Some(Jitter::None),
            JitterMode::Full => Some(Jitter::Full),
            JitterMode::Equal => Some(Jitter::Equal),
            _ => None,
        };
        match (b.formula, exact) {
            (BackoffFormula::Exp2, Some(j)) => (b.base_ms, b.cap_ms, j),
            (BackoffFormula::Immediate, Some(_)) => (0, 0, Jitter::None),
            _ => (NEVER_MS, NEVER_MS, Jitter::Full),
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
        assert_eq!(e.header_backoff(&d), (100, 2_000, Jitter::Full));
        let sidekiq = Profile::Sidekiq.defaults();
        let e = Effective::of(&sidekiq);
        assert_eq!(e.lease_ms, NEVER_MS);
        assert_eq!((e.attempts_max, e.queue_attempts_max), (26, u32::MAX));
        let bull = Profile::Bullmq.defaults();
        assert_eq!(
            Effective::of(&bull).header_backoff(&bull),
            (0, 0, Jitter::None)
        );
        let river = Profile::River.defaults();
        assert_eq!(
            Effective::of(&river).header_backoff(&river),
            (NEVER_MS, NEVER_MS, Jitter::Full)
        );
    }
}

//! Invariant family: the retry policy, backoff and deadlines.
//!
//! Owns: `retry_policy_followed` (every failed attempt gets the decision its error and the
//! configuration call for; a cancel only past the deadline; a DLQ entry at pick time only for a
//! job out of attempts), `backoff_respected` (no lease before the visible time, every retry delay
//! within the configured backoff and jitter mode), and the cross-checks of an error's recorded
//! class and a DLQ entry's recorded attempt count. The policy is restated here from the
//! configuration, independently of the model's: `provider_unavailable` is transient,
//! `schema_invalid` and `payload_conflict` permanent, `deadline_exceeded` a cancellation; the
//! delay after attempt n is `d = min(base * 2^(n-1), cap)`, exactly `d` without jitter, in
//! `[0, d]` with full jitter, in `[floor(d/2), d]` with equal jitter. What counts against
//! `attempts_max` is the job's leases, or its failed attempts when the header's `backoff`
//! states `"attempt": "failures"` (BullMQ, Sidekiq, or any profile set so): a lease that ended
//! without a failure (expired, rescued) then uses up nothing.
//! Does not: judge who may write (see `leases`) or what the DLQ holds (see `dlq`).

use super::checker::{Checker, Failure, JobTrack};
use super::invariant::Invariant;
use crate::base::ids::{Fence, JobId, SimTime};
use crate::history::{Op, Record};
use crate::profile::AttemptsCount;

/// The class of an error, as the policy the checker restates gives it. Under a header's
/// `"permanent_error": "retry"` (a queue with no "fail for good" API) every error the worker
/// sees is retried like a transient one.
pub(super) fn class_of(error: &str, permanent_retried: bool) -> &'static str {
    match error {
        "provider_unavailable" => "transient",
        "schema_invalid" | "payload_conflict" if permanent_retried => "transient",
        "schema_invalid" | "payload_conflict" => "permanent",
        _ => "cancelled",
    }
}

/// A decision about a failed attempt, as recorded or as expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decision {
    Retry,
    DeadLetter(&'static str),
    Cancel,
}

impl Decision {
    fn describe(self) -> String {
        match self {
            Decision::Retry => "a retry".into(),
            Decision::DeadLetter(reason) => format!("the DLQ as {reason}"),
            Decision::Cancel => "a cancel".into(),
        }
    }
}

impl Checker {
    /// Whether the header counts failed attempts, not leases, against `attempts_max`.
    pub(super) fn counts_failures(&self) -> bool {
        self.config
            .retry_formula
            .as_ref()
            .is_some_and(|f| f.attempt == AttemptsCount::Failures)
    }

    /// `job`'s failed attempts so far (recorded only when [`Checker::counts_failures`]).
    pub(super) fn failures_of(&self, job: JobId) -> u32 {
        self.failures.get(job.index()).copied().unwrap_or(0)
    }

    /// The attempts `job` (track `t`) has used against `attempts_max`: its failed attempts or
    /// its leases, as the header counts them.
    fn attempts_used(&self, job: JobId, t: &JobTrack) -> u32 {
        match self.counts_failures() {
            true => self.failures_of(job),
            false => t.leases,
        }
    }

    /// What the policy calls for after `f`, the job's failed attempt, with `used` attempts
    /// used against `attempts_max` (this one included).
    fn expected(&self, t: &JobTrack, f: &Failure, used: u32) -> Decision {
        match class_of(f.error(), self.config.permanent_errors_retried) {
            "permanent" => Decision::DeadLetter("permanent_error"),
            "transient" if f.at > t.deadline_at => Decision::Cancel,
            "transient" if used < self.config.attempts_max => Decision::Retry,
            "transient" => Decision::DeadLetter("max_attempts_exceeded"),
            _ => Decision::Cancel,
        }
    }

    pub(super) fn on_attempt_failed(
        &mut self,
        r: &Record,
        job: JobId,
        fence: Fence,
        error: &'static str,
        class: Option<&'static str>,
    ) {
        let at = r.at;
        let u = self.unit();
        let expected = class_of(error, self.config.permanent_errors_retried);
        if let Some(c) = class.filter(|c| *c != expected) {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("{job}'s attempt failed with {error}, a {expected} error, but the record gives it class {c}")
            });
        }
        let t = self.job_at(job);
        if error == "deadline_exceeded" && at <= t.deadline_at {
            self.violate_job(Invariant::RetryPolicyFollowed, r, job, || {
                format!(
                    "{job}'s attempt failed with deadline_exceeded at {at} {u}, but its deadline is {} {u}",
                    t.deadline_at
                )
            });
        }
        self.update_job(job, |t| t.failure = Some(Failure::new(fence, error, at)));
        if self.counts_failures() {
            let i = job.index();
            if self.failures.len() <= i {
                self.failures.resize(i + 1, 0);
            }
            self.failures[i] += 1;
        }
    }

    /// A decision recorded for `job`: by the holder of `fence`, or at pick time (no fence).
    fn decided(&mut self, r: &Record, job: JobId, fence: Option<Fence>, actual: Decision) {
        let at = r.at;
        let u = self.unit();
        let t = self.job_at(job);
        let max = self.config.attempts_max;
        match fence {
            // A decision by a token that is no longer the job's is `fenced_writes`'s to report:
            // whatever it decided, it should not have been accepted.
            Some(fence) if t.leases > 0 && fence != t.fence => {}
            Some(fence) => match t.failure.filter(|f| f.fence == fence) {
                Some(f) => {
                    self.update_job(job, |t| t.failure = None);
                    let used = self.attempts_used(job, &t);
                    let expected = self.expected(&t, &f, used);
                    // A reason that is not a code is `redacted_dlq`'s to report.
                    let same = match (expected, actual) {
                        (Decision::DeadLetter(_), Decision::DeadLetter(got))
                            if !crate::vocab::codes::DLQ_REASONS.contains(&got) =>
                        {
                            true
                        }
                        (e, a) => e == a,
                    };
                    if !same {
                        let leases = t.leases;
                        let class = class_of(f.error(), self.config.permanent_errors_retried);
                        let counted = match self.counts_failures() {
                            true => format!(", failure {used} of them"),
                            false => String::new(),
                        };
                        self.violate_job(Invariant::RetryPolicyFollowed, r, job, || {
                            format!(
                                "{job}'s attempt {leases} failed at {} {u} with {} ({}; max_attempts {max}{counted}, deadline {} {u}): the policy calls for {}, but it went to {}",
                                f.at,
                                f.error(),
                                class,
                                t.deadline_at,
                                expected.describe(),
                                actual.describe()
                            )
                        });
                    }
                }
                None => self.violate_job(Invariant::RetryPolicyFollowed, r, job, || {
                    format!(
                        "{} of {job} by the holder of {fence} answers no failed attempt",
                        actual.describe()
                    )
                }),
            },
            None => match actual {
                Decision::Cancel if at <= t.deadline_at => {
                    self.violate_job(Invariant::RetryPolicyFollowed, r, job, || {
                        format!(
                            "{job} cancelled at {at} {u}, before its deadline {} {u}",
                            t.deadline_at
                        )
                    })
                }
                Decision::DeadLetter(reason) if t.leases < max || reason == "permanent_error" => {
                    let leases = t.leases;
                    self.violate_job(Invariant::RetryPolicyFollowed, r, job, || {
                        format!(
                            "{job} went to the DLQ as {reason} when picked, after {leases} of {max} attempts and no failed attempt to answer"
                        )
                    })
                }
                _ => {}
            },
        }
    }

    pub(super) fn on_retry(
        &mut self,
        r: &Record,
        job: JobId,
        fence: Fence,
        attempt: Option<u32>,
        visible_at: SimTime,
    ) {
        self.decided(r, job, Some(fence), Decision::Retry);
        let at = r.at;
        let u = self.unit();
        let t = self.job_at(job);
        // A stale holder's retry is `fenced_writes`'s to report; its attempt number and delay
        // are not the job's. The queue accepted it all the same: the job waits.
        let current = fence == t.fence;
        let n = t.leases;
        if let Some(a) = attempt.filter(|a| current && *a != n) {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("{job}'s retry records attempt {a}, but the job was leased {n} times")
            });
        }
        let lease_left = t.lease_end(&self.config).saturating_sub(at);
        let (least, most) = super::backoff::bounds(&self.config, n, lease_left);
        let delay = visible_at.checked_sub(at);
        if current && delay.is_none_or(|d| d < least || d > most) {
            let stated = super::backoff::describe(&self.config, u);
            self.violate_job(Invariant::BackoffRespected, r, job, || {
                format!(
                    "{job}'s retry after attempt {n} at {at} {u} makes it visible at {visible_at} {u}, a delay of {}; {stated} allow {least}..={most} {u}",
                    delay.map_or("less than nothing".to_string(), |d| format!("{d} {u}"))
                )
            });
        }
        self.update_job(job, |tm| {
            tm.visible_from = visible_at;
            tm.lease_held = false;
        });
        self.depth_waiting(at, job, visible_at);
    }

    pub(super) fn on_dead_letter_decision(
        &mut self,
        r: &Record,
        job: JobId,
        fence: Option<Fence>,
        attempts: Option<u32>,
        reason: &str,
    ) {
        let code = crate::vocab::codes::lookup(&crate::vocab::codes::DLQ_REASONS, reason)
            .unwrap_or("(not a code)");
        self.decided(r, job, fence, Decision::DeadLetter(code));
        let t = self.job_at(job);
        let n = t.leases;
        let current = fence.is_none_or(|f| f == t.fence);
        if let Some(a) = attempts.filter(|a| current && *a != n) {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("{job}'s DLQ entry records {a} attempts, but the job was leased {n} times")
            });
        }
    }

    pub(super) fn on_cancel_decision(&mut self, r: &Record, job: JobId, fence: Option<Fence>) {
        self.decided(r, job, fence, Decision::Cancel);
    }

    /// A refused decision answers its failed attempt: there is nothing to judge.
    pub(super) fn policy_rejected(&mut self, job: JobId, op: Op, presented: Fence) {
        if matches!(op, Op::Retry | Op::DeadLetter | Op::Cancel) {
            self.update_job(job, |t| {
                if t.failure.is_some_and(|f| f.fence == presented) {
                    t.failure = None;
                }
            });
        }
    }
}

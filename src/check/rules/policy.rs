//! Invariant family: the retry policy, backoff and deadlines.
//!
//! Owns: `retry_policy_followed` (every failed attempt gets the decision its error and the
//! configuration call for; a cancel only past the deadline; a DLQ entry at pick time only for a
//! job out of attempts), `backoff_respected` (no lease before the visible time, every retry delay
//! within the configured backoff and jitter mode). The policy is restated here from the
//! configuration, independently of the model's: `provider_unavailable` is transient,
//! `schema_invalid` and `payload_conflict` permanent, `deadline_exceeded` a cancellation; the
//! delay after attempt n is `d = min(base * 2^(n-1), cap)`, exactly `d` without jitter, in
//! `[0, d]` with full jitter, in `[floor(d/2), d]` with equal jitter. What counts against
//! `attempts_max` is the job's leases, or its failed attempts when the header's `backoff`
//! states `"attempt": "failures"` (BullMQ, Sidekiq, or any profile set so): a lease that ended
//! without a failure (expired, rescued) then uses up nothing.
//! Does not: judge who may write (`leases`), what the DLQ holds (`dlq`) or an error's recorded
//! class (`recorded`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{Fence, JobId, SimTime};
use crate::check::facts::{Failure, JobTrack};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use crate::profile::AttemptsCount;
use crate::vocab::codes::{lookup, DLQ_REASONS};

pub(in crate::check) const RETRY_POLICY_FOLLOWED: Spec = Spec {
    name: "retry_policy_followed",
    kind: Kind::Always,
    sentence: "every failed attempt gets the decision its error and the configuration call for: a permanent error goes to the DLQ as permanent_error; a transient one is retried below max_attempts and before the deadline, then dead-lettered as max_attempts_exceeded or cancelled; a cancel only past the deadline",
};

pub(in crate::check) const BACKOFF_RESPECTED: Spec = Spec {
    name: "backoff_respected",
    kind: Kind::Always,
    sentence: "no job is leased before its visible time, and every retry delay is within what the configured backoff (base, cap) and jitter mode allow for that attempt",
};

/// The class of an error, as the policy the checker restates gives it. Under a header's
/// `"permanent_error": "retry"` (a queue with no "fail for good" API) every error the worker
/// sees is retried like a transient one.
pub(in crate::check) fn class_of(error: &str, permanent_retried: bool) -> &'static str {
    match error {
        "provider_unavailable" => "transient",
        "schema_invalid" | "payload_conflict" if permanent_retried => "transient",
        "schema_invalid" | "payload_conflict" => "permanent",
        _ => "cancelled",
    }
}

/// A decision about a failed attempt, as recorded or as expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Decision {
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

#[derive(Default, Hash)]
pub(in crate::check) struct Policy;

impl Family for Policy {
    const READS: u64 =
        k::LEASED | k::ATTEMPT_FAILED | k::RETRY_SCHEDULED | k::DEAD_LETTERED | k::CANCELLED;
    const OWNS: &'static [Invariant] =
        &[Invariant::RetryPolicyFollowed, Invariant::BackoffRespected];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        match &c.r.event {
            Event::Leased { job, .. } => {
                let t = c.track(*job);
                let (at, u) = (c.at(), c.unit());
                if at.saturating_add(c.config().stated.clock_tolerance) < t.visible_from {
                    out.job(Invariant::BackoffRespected, c, *job, || {
                        format!(
                            "{job} leased at {at} {u}, before its visible time {} {u}",
                            t.visible_from
                        )
                    });
                }
            }
            Event::AttemptFailed { job, error, .. } => {
                let t = c.track(*job);
                let (at, u) = (c.at(), c.unit());
                let deadline_at = t.deadline_at(c.config());
                if *error == "deadline_exceeded" && at <= deadline_at {
                    out.job(Invariant::RetryPolicyFollowed, c, *job, || {
                        format!("{job}'s attempt failed with deadline_exceeded at {at} {u}, but its deadline is {deadline_at} {u}")
                    });
                }
            }
            Event::RetryScheduled {
                job,
                fence,
                visible_at,
                ..
            } => {
                let t = c.track(*job);
                decided(c, out, *job, &t, Some(*fence), Decision::Retry);
                backoff(c, out, *job, &t, *fence, *visible_at);
            }
            Event::DeadLettered {
                job, fence, reason, ..
            } => {
                let t = c.track(*job);
                let code = lookup(&DLQ_REASONS, reason).unwrap_or("(not a code)");
                decided(c, out, *job, &t, *fence, Decision::DeadLetter(code));
            }
            Event::Cancelled { job, fence, .. } => {
                let t = c.track(*job);
                decided(c, out, *job, &t, *fence, Decision::Cancel);
            }
            _ => {}
        }
    }
}

/// The attempts `t` has used against `attempts_max`: its failed attempts or its leases, as the
/// header counts them (failures only when the retry formula counts them: a version 2
/// `failures_max` makes the facts count failures too, but `attempts_max` still caps leases).
fn attempts_used(c: &Ctx, job: JobId, t: &JobTrack) -> u32 {
    match counts_failures(c) {
        true => c.facts.failures(job).unwrap_or(t.leases),
        false => t.leases,
    }
}

/// Whether the header's retry formula counts failed attempts (not leases) against
/// `attempts_max`.
fn counts_failures(c: &Ctx) -> bool {
    c.config()
        .retry_formula
        .as_ref()
        .is_some_and(|f| f.attempt == AttemptsCount::Failures)
}

/// Whether a version 2 header's other caps are used up: the job's failures reached
/// `failures_max`, or its rescues `rescues_max` (so a DLQ entry without a failed attempt to
/// answer is due).
fn caps_used(c: &Ctx, job: JobId) -> bool {
    let s = &c.config().stated;
    let failures = s
        .failures_max
        .is_some_and(|cap| c.facts.failures(job).unwrap_or(0) >= cap);
    let rescues = s
        .rescues_max
        .is_some_and(|cap| c.facts.rescues(job).map_or(0, |r| r.0) >= cap);
    failures || rescues
}

/// Whether the header's `failures_max` (version 2) leaves `job` a retry: its failed attempts,
/// this one included, are fewer than the cap (no cap: always).
fn failures_left(c: &Ctx, job: JobId) -> bool {
    match c.config().stated.failures_max {
        Some(cap) => c.facts.failures(job).unwrap_or(0) < cap,
        None => true,
    }
}

/// What the policy calls for after `f`, the job's failed attempt, with `used` attempts used
/// against `attempts_max` (this one included).
fn expected(c: &Ctx, job: JobId, t: &JobTrack, f: &Failure, used: u32) -> Decision {
    match class_of(f.error(), c.config().permanent_errors_retried) {
        "permanent" => Decision::DeadLetter("permanent_error"),
        "transient" if f.at > t.deadline_at(c.config()) => Decision::Cancel,
        "transient"
            if used < c.config().attempts_max.unwrap_or(u32::MAX) && failures_left(c, job) =>
        {
            Decision::Retry
        }
        "transient" => Decision::DeadLetter("max_attempts_exceeded"),
        _ => Decision::Cancel,
    }
}

/// A decision recorded for `job`: by the holder of `fence`, or at pick time (no fence).
fn decided(
    c: &Ctx,
    out: &mut Out,
    job: JobId,
    t: &JobTrack,
    fence: Option<Fence>,
    actual: Decision,
) {
    let (at, u) = (c.at(), c.unit());
    let max = c.config().attempts_max.unwrap_or(u32::MAX);
    let deadline_at = t.deadline_at(c.config());
    match fence {
        // A decision by a token that is no longer the job's is `fenced_writes`'s to report:
        // whatever it decided, it should not have been accepted.
        Some(fence) if t.leases > 0 && t.fence() != Some(fence) => {}
        Some(fence) => match t.failure.filter(|f| f.fence == fence) {
            Some(f) => {
                let used = attempts_used(c, job, t);
                let expected = expected(c, job, t, &f, used);
                // A reason that is not a code is `redacted_dlq`'s to report.
                let same = match (expected, actual) {
                    (Decision::DeadLetter(_), Decision::DeadLetter(got))
                        if !DLQ_REASONS.contains(&got) =>
                    {
                        true
                    }
                    (e, a) => e == a,
                };
                if !same {
                    let leases = t.leases;
                    let class = class_of(f.error(), c.config().permanent_errors_retried);
                    let counted = match counts_failures(c) {
                        true => format!(", failure {used} of them"),
                        false => String::new(),
                    };
                    out.job(Invariant::RetryPolicyFollowed, c, job, || {
                        format!(
                            "{job}'s attempt {leases} failed at {} {u} with {} ({}; max_attempts {max}{counted}, deadline {deadline_at} {u}): the policy calls for {}, but it went to {}",
                            f.at,
                            f.error(),
                            class,
                            expected.describe(),
                            actual.describe()
                        )
                    });
                }
            }
            None => out.job(Invariant::RetryPolicyFollowed, c, job, || {
                format!(
                    "{} of {job} by the holder of {fence} answers no failed attempt",
                    actual.describe()
                )
            }),
        },
        None => match actual {
            Decision::Cancel if at <= deadline_at => {
                out.job(Invariant::RetryPolicyFollowed, c, job, || {
                    format!("{job} cancelled at {at} {u}, before its deadline {deadline_at} {u}")
                })
            }
            Decision::DeadLetter(reason)
                if (t.leases < max && !caps_used(c, job)) || reason == "permanent_error" =>
            {
                let leases = t.leases;
                out.job(Invariant::RetryPolicyFollowed, c, job, || {
                    format!(
                        "{job} went to the DLQ as {reason} when picked, after {leases} of {max} attempts and no failed attempt to answer"
                    )
                })
            }
            _ => {}
        },
    }
}

/// A retry by the holder of the job's latest lease: its delay within the backoff's bounds.
fn backoff(c: &Ctx, out: &mut Out, job: JobId, t: &JobTrack, fence: Fence, visible_at: SimTime) {
    // A stale holder's retry is `fenced_writes`'s to report; its attempt number and delay are
    // not the job's.
    let Some(end) = t.lease_end(c.config()).filter(|_| t.fence() == Some(fence)) else {
        return;
    };
    let (at, u) = (c.at(), c.unit());
    let n = t.leases;
    let (least, most) = super::backoff::bounds(c.config(), n, end.saturating_sub(at));
    // A declared clock tolerance widens the bounds both ways: the delay is the recorder's
    // `visible_at` (one clock) against the record's time (maybe another).
    let tol = c.config().stated.clock_tolerance as i128;
    let d = visible_at as i128 - at as i128;
    let delay = visible_at.checked_sub(at);
    if d < least as i128 - tol || d > most as i128 + tol {
        let stated = super::backoff::describe(c.config(), u);
        out.job(Invariant::BackoffRespected, c, job, || {
            format!(
                "{job}'s retry after attempt {n} at {at} {u} makes it visible at {visible_at} {u}, a delay of {}; {stated} allow {least}..={most} {u}{}",
                delay.map_or("less than nothing".to_string(), |d| format!("{d} {u}")),
                match tol {
                    0 => String::new(),
                    t => format!(" (± the clock tolerance {t} {u})"),
                }
            )
        });
    }
}

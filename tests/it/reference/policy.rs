//! The retry policy and the backoff, restated: `retry_policy_followed`, `backoff_respected`, and
//! the recorded `class`, `attempt` and `attempts` for `recorded_values_match`.
//!
//! Owns: the policy as docs/history-format.md states it: `provider_unavailable` is transient,
//! `schema_invalid` and `payload_conflict` permanent (transient under `"permanent_error":
//! "retry"`), `deadline_exceeded` a cancellation; a decision by the holder answers its token's
//! failed attempt; a transient error is retried below `attempts_max` (counting leases, or failed
//! attempts when the header's `backoff` says `"attempt": "failures"`) and before the deadline; a
//! pick-time DLQ entry only for a job out of attempts, a pick-time cancel only past the deadline.
//! The backoff: no lease before the visible time; every retry's delay within the formula's
//! bounds for that attempt (the table of docs/history-format.md, with e^k as a table of
//! thousandths).
//! Does not: judge who may write (`leases.rs`).

use super::Inv;
use super::{Ctx, Verdicts};
use durasim::base::ids::{Fence, JobId};
use durasim::history::Event;
use durasim::profile::{AttemptsCount, BackoffFormula, JitterMode};
use durasim::vocab::config::{Jitter, RunConfig};

/// An error's class, as the policy gives it.
pub fn class_of(error: &str, permanent_retried: bool) -> &'static str {
    match error {
        "provider_unavailable" => "transient",
        "schema_invalid" | "payload_conflict" if permanent_retried => "transient",
        "schema_invalid" | "payload_conflict" => "permanent",
        _ => "cancelled",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Retry,
    /// The DLQ with this reason; `None`: a reason that is not a code (`redacted_dlq`'s to
    /// report, so any DLQ entry answers as the policy's DLQ decision).
    DeadLetter(Option<&'static str>),
    Cancel,
}

fn counts_failures(c: &RunConfig) -> bool {
    c.retry_formula
        .as_ref()
        .is_some_and(|f| f.attempt == AttemptsCount::Failures)
}

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let c = &cx.facts.config;
    let at = cx.at();
    let u = cx.unit();
    match &cx.r.event {
        Event::Leased { job, .. } => {
            let j = cx.facts.job(*job);
            if at.saturating_add(c.stated.clock_tolerance) < j.visible_from {
                cx.job_violation(
                    out,
                    Inv::BackoffRespected,
                    *job,
                    format!(
                        "{job} leased at {at} {u}, before its visible time {} {u}",
                        j.visible_from
                    ),
                );
            }
        }
        Event::AttemptFailed {
            job, error, class, ..
        } => {
            let expected = class_of(error, c.permanent_errors_retried);
            if let Some(got) = class.filter(|got| *got != expected) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!("{job} failed with {error}, a {expected} error, recorded as {got}"),
                );
            }
            let j = cx.facts.job(*job);
            if *error == "deadline_exceeded" && at <= j.deadline_at {
                cx.job_violation(
                    out,
                    Inv::RetryPolicyFollowed,
                    *job,
                    format!("{job} failed with deadline_exceeded at {at} {u}, before its deadline {} {u}", j.deadline_at),
                );
            }
        }
        Event::RetryScheduled {
            job,
            fence,
            attempt,
            visible_at,
            ..
        } => {
            decision(cx, out, *job, Some(*fence), Decision::Retry);
            let j = cx.facts.job(*job);
            // A stale holder's retry is `fenced_writes`'s: its attempt and delay are not the
            // job's.
            let current = *fence == j.fence;
            let n = j.leases;
            if let Some(a) = attempt.filter(|a| current && *a != n) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!("{job}'s retry says attempt {a}, but it was leased {n} times"),
                );
            }
            let lease_left = j.lease_end(c).saturating_sub(at);
            let (least, most) = bounds(c, n, lease_left);
            // A version 2 clock tolerance widens the allowed delay both ways.
            let tol = c.stated.clock_tolerance as i128;
            let delay = *visible_at as i128 - at as i128;
            if current && (delay < least as i128 - tol || delay > most as i128 + tol) {
                cx.job_violation(
                    out,
                    Inv::BackoffRespected,
                    *job,
                    format!("{job}'s retry after attempt {n} at {at} {u} is visible at {visible_at} {u}; the backoff allows a delay of {least}..={most} {u} (± {tol} {u})"),
                );
            }
        }
        Event::DeadLettered {
            job,
            fence,
            attempts,
            reason,
            ..
        } => {
            let code = ["permanent_error", "max_attempts_exceeded"]
                .into_iter()
                .find(|r| *r == reason.as_ref());
            decision(cx, out, *job, *fence, Decision::DeadLetter(code));
            let j = cx.facts.job(*job);
            let current = fence.is_none_or(|f| f == j.fence);
            if let Some(a) = attempts.filter(|a| current && *a != j.leases) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!(
                        "{job}'s DLQ entry says {a} attempts, but it was leased {} times",
                        j.leases
                    ),
                );
            }
        }
        Event::Cancelled { job, fence, .. } => {
            decision(cx, out, *job, *fence, Decision::Cancel);
        }
        _ => {}
    }
}

/// A decision about `job`: by the holder of `fence`, or at pick time (no fence).
fn decision(cx: &Ctx, out: &mut Verdicts, job: JobId, fence: Option<Fence>, actual: Decision) {
    let c = &cx.facts.config;
    let j = cx.facts.job(job);
    let at = cx.at();
    let u = cx.unit();
    // No `attempts_max` (version 2): leases are not capped as a whole.
    let max = c.attempts_max.unwrap_or(u32::MAX);
    // Version 2's other caps used up: the failed attempts reached `failures_max`, or the rescues
    // `rescues_max`.
    let caps_used = c.stated.failures_max.is_some_and(|cap| j.failures >= cap)
        || c.stated.rescues_max.is_some_and(|cap| j.rescues >= cap);
    let Some(fence) = fence else {
        // At pick time: a cancel only past the deadline, a DLQ entry only out of attempts.
        match actual {
            Decision::Cancel if at <= j.deadline_at => cx.job_violation(
                out,
                Inv::RetryPolicyFollowed,
                job,
                format!(
                    "{job} cancelled at {at} {u}, before its deadline {} {u}",
                    j.deadline_at
                ),
            ),
            Decision::DeadLetter(Some(reason))
                if (j.leases < max && !caps_used) || reason == "permanent_error" =>
            {
                cx.job_violation(
                    out,
                    Inv::RetryPolicyFollowed,
                    job,
                    format!(
                        "{job} went to the DLQ as {reason} when picked, after {} of {max} attempts",
                        j.leases
                    ),
                )
            }
            _ => {}
        }
        return;
    };
    // A decision by a token that is no longer the job's is `fenced_writes`'s to report.
    if j.leases > 0 && fence != j.fence {
        return;
    }
    let Some(f) = j.failure.filter(|f| f.fence == fence) else {
        cx.job_violation(
            out,
            Inv::RetryPolicyFollowed,
            job,
            format!("{actual:?} of {job} by the holder of {fence} answers no failed attempt"),
        );
        return;
    };
    let used = if counts_failures(c) {
        j.failures
    } else {
        j.leases
    };
    let expected = match class_of(f.error, c.permanent_errors_retried) {
        "permanent" => Decision::DeadLetter(Some("permanent_error")),
        "transient" if f.at > j.deadline_at => Decision::Cancel,
        "transient" if used < max && c.stated.failures_max.is_none_or(|cap| j.failures < cap) => {
            Decision::Retry
        }
        "transient" => Decision::DeadLetter(Some("max_attempts_exceeded")),
        _ => Decision::Cancel,
    };
    let same = match (expected, actual) {
        (Decision::DeadLetter(_), Decision::DeadLetter(None)) => true,
        (e, a) => e == a,
    };
    if !same {
        cx.job_violation(
            out,
            Inv::RetryPolicyFollowed,
            job,
            format!("{job}'s attempt failed with {} at {} {u}: the policy calls for {expected:?}, it went to {actual:?}", f.error, f.at),
        );
    }
}

/// e^k in thousandths, rounded, k = 1..=10 (graphile-worker's `exp_e`).
const E_THOUSANDTHS: [u64; 10] = [
    2_718, 7_389, 20_086, 54_598, 148_413, 403_429, 1_096_633, 2_980_958, 8_103_084, 22_026_466,
];

/// `a * b` and `a + b` in u128, brought back to u64 (saturated).
fn sat(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

/// The least and most delay the header's backoff allows after attempt `n` (the job's lease
/// count) failed, `lease_left` being what was left of that attempt's lease.
pub fn bounds(c: &RunConfig, n: u32, lease_left: u64) -> (u64, u64) {
    let Some(f) = &c.retry_formula else {
        let k = n.saturating_sub(1).min(62);
        let d = sat(c.backoff_base as u128 * (1u128 << k)).min(c.backoff_cap);
        return match c.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (0, d),
            Jitter::Equal => (d / 2, d),
        };
    };
    let b = &f.backoff;
    let one = |n: u32| -> (u64, u64) {
        let n = n.max(1);
        let d = match b.formula {
            BackoffFormula::Exp2 => {
                sat(b.base_ms as u128 * (1u128 << (n - 1).min(62))).min(b.cap_ms)
            }
            BackoffFormula::Exp2Offset => {
                sat(b.offset_ms as u128 + b.base_ms as u128 * (1u128 << n.min(62))).min(b.cap_ms)
            }
            BackoffFormula::Pow4 => {
                let m = n.saturating_sub(b.index_from) as u128;
                sat(b.base_ms as u128 * m.pow(4) + b.offset_ms as u128).min(b.cap_ms)
            }
            BackoffFormula::ExpE => {
                let e = E_THOUSANDTHS[n.min(10) as usize - 1] as u128;
                sat(b.base_ms as u128 * e / 1_000).min(b.cap_ms)
            }
            BackoffFormula::Immediate => 0,
            BackoffFormula::Visibility => lease_left,
        };
        let pct = sat(d as u128 * b.jitter_pct as u128 / 100);
        match b.jitter {
            JitterMode::None => (d, d),
            JitterMode::Full => (0, d),
            JitterMode::Equal => (d / 2, d),
            JitterMode::Symmetric => (d.saturating_sub(pct), d.saturating_add(pct)),
            JitterMode::Up => (d, d.saturating_add(pct)),
            JitterMode::Additive => {
                let width = sat(b.jitter_step_ms as u128 * n as u128);
                (d, d.saturating_add(width.saturating_sub(1)))
            }
        }
    };
    match f.attempt {
        AttemptsCount::Leases => one(n),
        // The checker counts leases: any delay the formula gives for 1 to n failures.
        AttemptsCount::Failures => (1..=n.max(1))
            .map(one)
            .fold((u64::MAX, 0), |(lo, hi), (l, h)| (lo.min(l), hi.max(h))),
    }
}

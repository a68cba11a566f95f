//! Leases and fences, restated: `fencing_token_increases`, `single_live_lease`,
//! `attempts_bounded`, `deadline_respected`, `fenced_writes`, `terminal_once`, and the recorded
//! lease values (`attempt`, `lease_until`, `visible_at` of a lease, `lease_expired`) for
//! `recorded_values_match`.
//!
//! Owns: the rules as docs/history-format.md states them: a lease taken or renewed at `t` is live
//! through `t + lease` (its end recomputed from the records, never read from them); an accepted
//! heartbeat, ack, retry, dead-letter or cancel naming a token comes from the worker of the job's
//! latest lease with that token, and a heartbeat only while that lease is live; a job reaches
//! one terminal state, and nothing is accepted for it afterwards.
//! Does not: judge the retry policy or the backoff (`policy.rs`).

use super::facts::Job;
use super::Inv;
use super::{Ctx, Verdicts};
use durasim::base::ids::{Fence, JobId, WorkerId};
use durasim::history::Event;

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let c = &cx.facts.config;
    let at = cx.at();
    let u = cx.unit();
    // A version 2 header's clock tolerance: a lease taken or rescued within it of the previous
    // lease's end is no double lease.
    let tol = c.stated.clock_tolerance;
    match &cx.r.event {
        Event::Leased {
            job,
            fence,
            attempt,
            lease_until,
            visible_at,
            ..
        } => {
            let j = cx.facts.job(*job);
            if j.leases > 0 && *fence <= j.fence {
                cx.job_violation(
                    out,
                    Inv::FencingTokenIncreases,
                    *job,
                    format!(
                        "{job} leased with {fence}, not above its previous {}",
                        j.fence
                    ),
                );
            }
            let end = j.lease_end(c);
            if j.lease_held && at.saturating_add(tol) <= end {
                cx.job_violation(
                    out,
                    Inv::SingleLiveLease,
                    *job,
                    format!(
                        "{job} leased at {at} {u} while {} is live until {end} {u}",
                        j.fence
                    ),
                );
            }
            let n = j.leases + 1;
            if let Some(max) = c.attempts_max.filter(|max| n > *max) {
                cx.job_violation(
                    out,
                    Inv::AttemptsBounded,
                    *job,
                    format!("{job}'s lease {n} (attempts_max {max})"),
                );
            }
            // Version 2's separate caps: no lease once the failed attempts reached
            // `failures_max`, nor after more rescues than `rescues_max`.
            if let Some(cap) = c.stated.failures_max.filter(|cap| j.failures >= *cap) {
                cx.job_violation(
                    out,
                    Inv::AttemptsBounded,
                    *job,
                    format!(
                        "{job}'s lease {n} after {} failed attempts (failures_max {cap})",
                        j.failures
                    ),
                );
            }
            if let Some(cap) = c.stated.rescues_max.filter(|cap| j.rescues > *cap) {
                cx.job_violation(
                    out,
                    Inv::AttemptsBounded,
                    *job,
                    format!(
                        "{job}'s lease {n} after {} rescues (rescues_max {cap})",
                        j.rescues
                    ),
                );
            }
            if at > j.deadline_at {
                cx.job_violation(
                    out,
                    Inv::DeadlineRespected,
                    *job,
                    format!(
                        "{job} leased at {at} {u}, past its deadline {} {u}",
                        j.deadline_at
                    ),
                );
            }
            if let Some((state, when)) = j.terminal {
                cx.job_violation(
                    out,
                    Inv::TerminalOnce,
                    *job,
                    format!("{job} leased after it was {state:?} at {when} {u}"),
                );
            }
            if let Some(a) = attempt.filter(|a| *a != n) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!("{job}'s lease says attempt {a}, but it is lease {n}"),
                );
            }
            recorded_time(
                cx,
                out,
                *job,
                "lease_until",
                *lease_until,
                at.saturating_add(c.lease),
            );
            recorded_time(cx, out, *job, "visible_at", *visible_at, j.visible_from);
        }
        Event::Rescued { job, .. } => {
            // The queue takes the lease back: it must be over (within the clock tolerance),
            // and the job not terminal.
            let j = cx.facts.job(*job);
            let end = j.lease_end(c);
            if j.lease_held && at.saturating_add(tol) <= end {
                cx.job_violation(
                    out,
                    Inv::SingleLiveLease,
                    *job,
                    format!(
                        "{job} rescued at {at} {u} while {} is live until {end} {u}",
                        j.fence
                    ),
                );
            }
            terminal_record(cx, out, *job, "rescued");
        }
        Event::Heartbeat {
            job,
            worker,
            fence,
            lease_until,
        } => {
            let j = cx.facts.job(*job);
            fenced_write(cx, out, *job, Some(*worker), *fence, "heartbeat");
            // Of the latest lease (a stale token is reported above): it must still be live.
            if *fence == j.fence && j.terminal.is_none() {
                if !j.lease_held {
                    cx.job_violation(
                        out,
                        Inv::FencedWrites,
                        *job,
                        format!("heartbeat of {job} with {fence} after that lease was released or expired"),
                    );
                } else if at > j.lease_end(c) {
                    cx.job_violation(
                        out,
                        Inv::FencedWrites,
                        *job,
                        format!("heartbeat of {job} with {fence} at {at} {u}, after its lease ended at {} {u}", j.lease_end(c)),
                    );
                }
            }
            recorded_time(
                cx,
                out,
                *job,
                "lease_until",
                *lease_until,
                at.saturating_add(c.lease),
            );
        }
        Event::Acked { job, worker, fence } => {
            fenced_write(cx, out, *job, Some(*worker), *fence, "ack");
            terminal_record(cx, out, *job, "acked");
        }
        Event::RetryScheduled {
            job, worker, fence, ..
        } => fenced_write(cx, out, *job, Some(*worker), *fence, "retry"),
        Event::DeadLettered {
            job, worker, fence, ..
        } => {
            if let Some(fence) = fence {
                fenced_write(cx, out, *job, *worker, *fence, "dead-letter");
            }
            terminal_record(cx, out, *job, "dead-lettered");
        }
        Event::Cancelled {
            job, worker, fence, ..
        } => {
            if let Some(fence) = fence {
                fenced_write(cx, out, *job, *worker, *fence, "cancel");
            }
            terminal_record(cx, out, *job, "cancelled");
        }
        Event::LeaseExpired { job, fence } => {
            let j = cx.facts.job(*job);
            if *fence != j.fence || !j.lease_held {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!("lease_expired of {job} with {fence}, which is not its held lease"),
                );
            } else if at <= j.lease_end(c) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!(
                        "lease_expired of {job} at {at} {u}, but its lease is live until {} {u}",
                        j.lease_end(c)
                    ),
                );
            }
        }
        _ => {}
    }
}

/// An accepted write naming `fence` (and `worker`, when recorded): it must come from the job's
/// latest lease and its worker, and the job must not be terminal.
fn fenced_write(
    cx: &Ctx,
    out: &mut Verdicts,
    job: JobId,
    worker: Option<WorkerId>,
    fence: Fence,
    what: &str,
) {
    let j: &Job = cx.facts.job(job);
    if j.leases == 0 {
        cx.job_violation(
            out,
            Inv::FencedWrites,
            job,
            format!("{what} of {job} with {fence}, but it was never leased"),
        );
    } else if fence != j.fence {
        cx.job_violation(
            out,
            Inv::FencedWrites,
            job,
            format!(
                "{what} of {job} with {fence}, but its latest lease holds {}",
                j.fence
            ),
        );
    } else if !j.lease_held && j.rescued_fence == Some(fence) {
        cx.job_violation(
            out,
            Inv::FencedWrites,
            job,
            format!("{what} of {job} with {fence}, but the queue had rescued that lease"),
        );
    } else if let Some(w) = worker.filter(|w| *w != j.holder) {
        cx.job_violation(
            out,
            Inv::FencedWrites,
            job,
            format!(
                "{what} of {job} with {fence} from {w}, but {fence} was issued to {}",
                j.holder
            ),
        );
    }
    if let Some((state, when)) = j.terminal {
        cx.job_violation(
            out,
            Inv::TerminalOnce,
            job,
            format!(
                "{what} of {job} accepted after it was {state:?} at {when} {}",
                cx.unit()
            ),
        );
    }
}

/// A terminal record for a job that already had one.
fn terminal_record(cx: &Ctx, out: &mut Verdicts, job: JobId, now: &str) {
    if let Some((state, when)) = cx.facts.job(job).terminal {
        cx.job_violation(
            out,
            Inv::TerminalOnce,
            job,
            format!("{job} {now} after it was {state:?} at {when} {}", cx.unit()),
        );
    }
}

/// A recorded time must be the one the configuration and the records give.
pub fn recorded_time(
    cx: &Ctx,
    out: &mut Verdicts,
    job: JobId,
    field: &str,
    recorded: Option<u64>,
    expected: u64,
) {
    if let Some(v) = recorded.filter(|v| *v != expected) {
        cx.job_violation(
            out,
            Inv::RecordedValuesMatch,
            job,
            format!("{job}'s {field} is {v}, but the history gives {expected}"),
        );
    }
}

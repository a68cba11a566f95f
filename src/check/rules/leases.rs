//! Invariant family: leases and fences.
//!
//! Owns: `fencing_token_increases`, `fenced_writes`, `single_live_lease`, `attempts_bounded`,
//! `deadline_respected` and `terminal_once` (docs/checker-rules.md). A lease's end is
//! recomputed: the lease or its last accepted heartbeat + the configured lease; a lease is live
//! through its end.
//! Does not: judge retries or backoff (`policy`), tokens on records that are not writes
//! (`fences`), or what a recorder computed about a lease (`recorded`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::check::facts::{JobTrack, Terminal};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;

pub(in crate::check) const FENCING_TOKEN_INCREASES: Spec = Spec {
    name: "fencing_token_increases",
    kind: Kind::Always,
    sentence: "every lease of a job carries a token strictly greater than the job's previous one",
};

pub(in crate::check) const FENCED_WRITES: Spec = Spec {
    name: "fenced_writes",
    kind: Kind::Always,
    sentence: "every accepted heartbeat, ack, retry, dead-letter or cancel comes from the current holder: the worker of the job's latest lease, with its token; a heartbeat only while that lease is live (its end recomputed from the lease and heartbeat times and the configured lease)",
};

pub(in crate::check) const SINGLE_LIVE_LEASE: Spec = Spec {
    name: "single_live_lease",
    kind: Kind::Always,
    sentence: "a job is never leased while another lease on it is live (lease ends recomputed, never read from the record)",
};

pub(in crate::check) const ATTEMPTS_BOUNDED: Spec = Spec {
    name: "attempts_bounded",
    kind: Kind::Always,
    sentence: "no job is leased more than max_attempts times",
};

pub(in crate::check) const DEADLINE_RESPECTED: Spec = Spec {
    name: "deadline_respected",
    kind: Kind::Always,
    sentence:
        "no job is leased after its deadline, recomputed as enqueue time + the configured deadline",
};

pub(in crate::check) const TERMINAL_ONCE: Spec = Spec {
    name: "terminal_once",
    kind: Kind::Always,
    sentence: "a job reaches one terminal state once, and nothing is accepted for it afterwards",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Leases;

impl Family for Leases {
    const READS: u64 = k::LEASED
        | k::HEARTBEAT
        | k::ACKED
        | k::RETRY_SCHEDULED
        | k::DEAD_LETTERED
        | k::CANCELLED
        | k::RESCUED;
    const OWNS: &'static [Invariant] = &[
        Invariant::FencingTokenIncreases,
        Invariant::FencedWrites,
        Invariant::SingleLiveLease,
        Invariant::AttemptsBounded,
        Invariant::DeadlineRespected,
        Invariant::TerminalOnce,
    ];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        match &c.r.event {
            Event::Leased { job, fence, .. } => leased(c, out, *job, *fence),
            Event::Rescued { job, .. } => rescued(c, out, *job),
            Event::Heartbeat {
                job, worker, fence, ..
            } => {
                let t = c.track(*job);
                fenced(c, out, *job, &t, Some(*worker), *fence, "heartbeat");
                heartbeat_live(c, out, *job, &t, *fence);
            }
            Event::Acked { job, worker, fence } => {
                let t = c.track(*job);
                fenced(c, out, *job, &t, Some(*worker), *fence, "ack");
                terminal_again(c, out, *job, &t, Terminal::Acked);
            }
            Event::RetryScheduled {
                job, worker, fence, ..
            } => {
                let t = c.track(*job);
                fenced(c, out, *job, &t, Some(*worker), *fence, "retry");
            }
            Event::DeadLettered {
                job, worker, fence, ..
            } => {
                let t = c.track(*job);
                if let Some(f) = fence {
                    fenced(c, out, *job, &t, *worker, *f, "dead-letter");
                }
                terminal_again(c, out, *job, &t, Terminal::DeadLettered);
            }
            Event::Cancelled {
                job, worker, fence, ..
            } => {
                let t = c.track(*job);
                if let Some(f) = fence {
                    fenced(c, out, *job, &t, *worker, *f, "cancel");
                }
                terminal_again(c, out, *job, &t, Terminal::Cancelled);
            }
            _ => {}
        }
    }
}

fn leased(c: &Ctx, out: &mut Out, job: JobId, fence: Fence) {
    let t = c.track(job);
    let (at, u) = (c.at(), c.unit());
    if let Some(previous) = t.fence().filter(|p| fence <= *p) {
        out.job(Invariant::FencingTokenIncreases, c, job, || {
            format!("{job} leased with {fence}, which is not greater than its previous token {previous}")
        });
    }
    let tol = c.config().stated.clock_tolerance;
    if let (Some(l), Some(end)) = (t.held(), t.lease_end(c.config())) {
        if at.saturating_add(tol) <= end {
            out.job(Invariant::SingleLiveLease, c, job, || {
                format!(
                    "{job} leased with {fence} at {at} {u} while the lease {} (taken at {} {u}, renewed at {} {u}) is live until {end} {u}",
                    l.fence, l.at, l.renewed_at
                )
            });
        }
    }
    let leases = t.leases + 1;
    if let Some(max) = c.config().attempts_max.filter(|max| leases > *max) {
        out.job(Invariant::AttemptsBounded, c, job, || {
            format!("{job} leased for attempt {leases} (max_attempts = {max})")
        });
    }
    caps(c, out, job, &t);
    let deadline_at = t.deadline_at(c.config());
    if at > deadline_at {
        let deadline = c.config().deadline.unwrap_or(0);
        out.job(Invariant::DeadlineRespected, c, job, || {
            format!(
                "{job} leased at {at} {u}, after its deadline at {deadline_at} {u} (enqueued at {} {u} + deadline {deadline} {u})",
                t.enqueued_at
            )
        });
    }
    if let Some((state, when)) = t.terminal {
        out.job(Invariant::TerminalOnce, c, job, || {
            format!("{job} leased again after it was {state:?} at {when} {u}")
        });
    }
}

/// A version 2 header's separate caps: a lease after the job used up its failed attempts, or
/// after more rescues than allowed.
fn caps(c: &Ctx, out: &mut Out, job: JobId, t: &JobTrack) {
    let s = &c.config().stated;
    let failures = c.facts.failures(job).unwrap_or(0);
    if let Some(cap) = s.failures_max.filter(|cap| failures >= *cap) {
        let leases = t.leases + 1;
        out.job(Invariant::AttemptsBounded, c, job, || {
            format!("{job} leased for attempt {leases} after {failures} failed attempts (failures_max = {cap})")
        });
    }
    let rescues = c.facts.rescues(job).map_or(0, |r| r.0);
    if let Some(cap) = s.rescues_max.filter(|cap| rescues > *cap) {
        let leases = t.leases + 1;
        out.job(Invariant::AttemptsBounded, c, job, || {
            format!(
                "{job} leased for attempt {leases} after {rescues} rescues (rescues_max = {cap})"
            )
        });
    }
}

/// A rescue (version 2): the queue takes the lease back; it must be over, its end (the holder's
/// last renewal, or under liveness per process its last heartbeat, + the lease) passed.
fn rescued(c: &Ctx, out: &mut Out, job: JobId) {
    let t = c.facts.job_at(job);
    let (at, u) = (c.at(), c.unit());
    let tol = c.config().stated.clock_tolerance;
    if let (Some(l), Some(end)) = (t.held(), t.lease_end(c.config())) {
        if at.saturating_add(tol) <= end {
            out.job(Invariant::SingleLiveLease, c, job, || {
                format!(
                    "{job} rescued at {at} {u} while its lease {} (taken at {} {u} by {}, renewed at {} {u}) is live until {end} {u}",
                    l.fence, l.at, l.holder, l.renewed_at
                )
            });
        }
    }
    if let Some((state, when)) = t.terminal {
        out.job(Invariant::TerminalOnce, c, job, || {
            format!("{job} rescued after it was {state:?} at {when} {u}")
        });
    }
}

/// An accepted write by a lease holder (`worker` absent: the recorder did not say who). The
/// token must be the job's latest, the writer its holder, and the job not terminal.
fn fenced(
    c: &Ctx,
    out: &mut Out,
    job: JobId,
    t: &JobTrack,
    worker: Option<WorkerId>,
    fence: Fence,
    what: &'static str,
) {
    let u = c.unit();
    match t.lease {
        None => out.job(Invariant::FencedWrites, c, job, || {
            format!("{what} of {job} accepted with {fence}, but the job was never leased")
        }),
        Some(l) if l.fence != fence => out.job(Invariant::FencedWrites, c, job, || {
            format!(
                "{what} of {job} accepted with {fence}, but the current lease holds {}",
                l.fence
            )
        }),
        Some(l) if !t.lease_held && c.facts.rescues(job).is_some_and(|r| r.1 == fence) => {
            out.job(Invariant::FencedWrites, c, job, || {
                format!(
                    "{what} of {job} with {fence} accepted from {}, but the queue had rescued that lease (taken at {} {u}) from its holder",
                    worker.map_or("its holder".to_string(), |w| w.to_string()),
                    l.at
                )
            })
        }
        Some(l) => {
            if let Some(w) = worker.filter(|w| *w != l.holder) {
                out.job(Invariant::FencedWrites, c, job, || {
                    format!(
                        "{what} of {job} with {fence} accepted from {w}, but {fence} was issued to {} at {} {u}",
                        l.holder, l.at
                    )
                });
            }
        }
    }
    if let Some((state, when)) = t.terminal {
        out.job(Invariant::TerminalOnce, c, job, || {
            format!("{what} of {job} accepted after it was already {state:?} at {when} {u}")
        });
    }
}

/// A heartbeat of the job's latest lease, not terminal: the lease must be held and live.
fn heartbeat_live(c: &Ctx, out: &mut Out, job: JobId, t: &JobTrack, fence: Fence) {
    let (at, u) = (c.at(), c.unit());
    if t.fence() != Some(fence) || t.terminal.is_some() {
        return;
    }
    let end = t.lease_end(c.config()).expect("a leased job");
    if !t.lease_held {
        out.job(Invariant::FencedWrites, c, job, || {
            format!("heartbeat of {job} with {fence} accepted at {at} {u}, but that lease was already released or expired")
        });
    } else if at > end {
        out.job(Invariant::FencedWrites, c, job, || {
            format!("heartbeat of {job} with {fence} accepted at {at} {u}, after its lease ended at {end} {u}")
        });
    }
}

/// A terminal record: the job must not have one already.
fn terminal_again(c: &Ctx, out: &mut Out, job: JobId, t: &JobTrack, state: Terminal) {
    let u = c.unit();
    if let Some((was, when)) = t.terminal {
        out.job(Invariant::TerminalOnce, c, job, || {
            format!("{job} became {state:?} after it was already {was:?} at {when} {u}")
        });
    }
}

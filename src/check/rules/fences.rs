//! Invariant family: the tokens records name, and refusals.
//!
//! Owns: `fences_issued` (every token a record names outside the fenced writes — a worker's
//! extraction, failure and crash, a held fault, a refused call's presented token — is one a
//! `leased` record issued to that job and worker) and `rejection_justified` (a refusal's recorded
//! held token is the job's latest, and its reason is true of the history) (docs/checker-rules.md),
//! with the one fact only that rule reads: a job's latest terminal record where it is not its
//! first.
//! Does not: judge the accepted writes (`leases`: `fenced_writes`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::check::facts::Terminal;
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use std::collections::BTreeMap;

pub(in crate::check) const FENCES_ISSUED: Spec = Spec {
    name: "fences_issued",
    kind: Kind::Always,
    sentence: "every token a record names for a job outside the fenced writes — a worker's extraction, failure and crash, a held fault, a refused call's presented token — is one a leased record issued to that job and that worker",
};

pub(in crate::check) const REJECTION_JUSTIFIED: Spec = Spec {
    name: "rejection_justified",
    kind: Kind::Always,
    sentence: "every refused fenced call is refused for a reason the history bears out: the recorded held token is the job's latest, a stale token is not the job's latest, a terminal state is the job's, a job refused as not leased holds no live lease",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Fences {
    /// `last_terminal(j)` where it differs from the first terminal record the facts keep: a job
    /// that ended again after a write a guard took revived it (`terminal_once` reports the
    /// revival). Only such jobs have an entry, and it is only looked up.
    ended_again: BTreeMap<u32, Terminal>,
}

impl Family for Fences {
    const READS: u64 = k::EXTRACT_STARTED
        | k::EXTRACT_DONE
        | k::ATTEMPT_FAILED
        | k::WORKER_CRASHED
        | k::HELD
        | k::REJECTED
        | k::ACKED
        | k::DEAD_LETTERED
        | k::CANCELLED;
    const OWNS: &'static [Invariant] = &[Invariant::FencesIssued, Invariant::RejectionJustified];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let (job, worker, fence, what) = match &c.r.event {
            Event::ExtractStarted {
                job, worker, fence, ..
            } => (job, worker, fence, "an extraction began"),
            Event::ExtractDone {
                job, worker, fence, ..
            } => (job, worker, fence, "an extraction returned"),
            Event::AttemptFailed {
                job, worker, fence, ..
            } => (job, worker, fence, "an attempt failed"),
            Event::WorkerCrashed {
                job, worker, fence, ..
            } => (job, worker, fence, "a worker crashed"),
            Event::Held(h) => (&h.job, &h.worker, &h.fence, h.fault.spec().record),
            Event::Rejected {
                job,
                worker,
                presented,
                held,
                reason,
                ..
            } => {
                issued(
                    c,
                    out,
                    *job,
                    *worker,
                    *presented,
                    "a refused call presented",
                );
                let last = self.ended_again.get(&job.0).copied();
                justified(c, out, *job, *presented, *held, reason, last);
                return;
            }
            Event::Acked { job, .. } => return self.ended(c, *job, Terminal::Acked),
            Event::DeadLettered { job, .. } => return self.ended(c, *job, Terminal::DeadLettered),
            Event::Cancelled { job, .. } => return self.ended(c, *job, Terminal::Cancelled),
            _ => return,
        };
        issued(c, out, *job, *worker, *fence, what);
    }
}

impl Fences {
    /// A terminal record of `job`: kept when the job already had one (the facts keep the first).
    fn ended(&mut self, c: &Ctx, job: JobId, kind: Terminal) {
        if c.track(job).terminal.is_some() {
            self.ended_again.insert(job.0, kind);
        }
    }
}

fn issued(c: &Ctx, out: &mut Out, job: JobId, worker: WorkerId, fence: Fence, what: &str) {
    let t = c.track(job);
    if !c.facts.issued(job, &t, fence, worker) {
        out.job(Invariant::FencesIssued, c, job, || {
            format!("{what} for {job} with {fence} by {worker}, but no lease of {job} gave {fence} to {worker}")
        });
    }
}

fn justified(
    c: &Ctx,
    out: &mut Out,
    job: JobId,
    presented: Fence,
    held: Option<Fence>,
    reason: &str,
    ended_again: Option<Terminal>,
) {
    const RJ: Invariant = Invariant::RejectionJustified;
    let t = c.track(job);
    let latest = t.fence();
    if let (Some(h), Some(l)) = (held, latest) {
        if h != l {
            out.job(RJ, c, job, || {
                format!("a refusal of {job} records the held token {h}, but the job's latest lease holds {l}")
            });
        }
    }
    let terminal = t.terminal.map(|(s, _)| s);
    let state = |s: Option<Terminal>| match s {
        Some(s) => format!("{s:?}"),
        None => "not terminal".to_string(),
    };
    match reason {
        "stale_fence" if latest == Some(presented) => out.job(RJ, c, job, || {
            format!("a call on {job} with {presented} was refused as stale_fence, but {presented} is the job's latest token")
        }),
        "acked" | "dead_lettered" | "cancelled" => {
            let want = match reason {
                "acked" => Terminal::Acked,
                "dead_lettered" => Terminal::DeadLettered,
                _ => Terminal::Cancelled,
            };
            // The job's latest terminal record: a job revived and ended again is what it
            // became last (swarm seed 65488, shrunk: acked, revived by a stale retry taken by id, then
            // cancelled at its deadline, and its zombie's ack refused as cancelled).
            let last = ended_again.or(terminal);
            if last != Some(want) {
                out.job(RJ, c, job, || {
                    format!("a call on {job} was refused as {reason}, but the job is {}", state(last))
                });
            }
        }
        "waiting" | "ready" | "leased" => {
            if terminal.is_some() {
                out.job(RJ, c, job, || {
                    format!("a call on {job} was refused as {reason}, but the job is {}", state(terminal))
                });
            } else if reason != "leased" && latest == Some(presented) {
                let (at, u) = (c.at(), c.unit());
                if let (Some(_), Some(end)) = (t.held(), t.lease_end(c.config())) {
                    if at <= end {
                        out.job(RJ, c, job, || {
                            format!("a call on {job} with {presented} was refused as {reason} at {at} {u}, but that lease is held and live until {end} {u}")
                        });
                    }
                }
            }
        }
        _ => {}
    }
}

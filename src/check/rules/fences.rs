//! Invariant family: the tokens records name, and refusals.
//!
//! Owns: `fences_issued` (every token a record names outside the fenced writes — a worker's
//! extraction, failure and crash, a held fault, a refused call's presented token — is one a
//! `leased` record issued to that job and worker) and `rejection_justified` (a refusal's recorded
//! held token is the job's latest, and its reason is true of the history) (docs/checker-rules.md),
//! with the one fact only that rule reads: what a job revived after its terminal record became
//! since.
//! Does not: judge the accepted writes (`leases`: `fenced_writes`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::check::facts::{Place, Terminal};
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
    /// `last_terminal(j)` of a job revived after its terminal record (a `retry_scheduled` or
    /// `leased` a guard took by id): none until its next terminal record, then that record's
    /// kind (later ones change nothing, as the first's facts). Only revived jobs have an entry
    /// (`terminal_once` reports the revival); it is only looked up.
    revived: BTreeMap<u32, Option<Terminal>>,
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
        | k::CANCELLED
        | k::LEASED
        | k::RETRY_SCHEDULED;
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
                let last = match self.revived.get(&job.0) {
                    Some(last) => *last,
                    None => c.track(*job).terminal.map(|(s, _)| s),
                };
                justified(c, out, *job, *presented, *held, reason, last);
                return;
            }
            Event::Acked { job, .. } => return self.ended(*job, Terminal::Acked),
            Event::DeadLettered { job, .. } => return self.ended(*job, Terminal::DeadLettered),
            Event::Cancelled { job, .. } => return self.ended(*job, Terminal::Cancelled),
            Event::Leased { job, .. } | Event::RetryScheduled { job, .. } => {
                if c.track(*job).terminal.is_some() {
                    self.revived.insert(job.0, None);
                }
                return;
            }
            _ => return,
        };
        issued(c, out, *job, *worker, *fence, what);
    }
}

impl Fences {
    /// A terminal record of `job`: what a revived job becomes, if it is its first since.
    fn ended(&mut self, job: JobId, kind: Terminal) {
        if let Some(last @ None) = self.revived.get_mut(&job.0) {
            *last = Some(kind);
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
    last_terminal: Option<Terminal>,
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
            // What the job became last: a job revived and ended again is its terminal record
            // since (swarm seed 65488: acked, revived by a stale retry taken by id, then
            // dead-lettered, and a call refused as dead-lettered).
            let last = last_terminal;
            if last != Some(want) {
                out.job(RJ, c, job, || {
                    format!("a call on {job} was refused as {reason}, but the job is {}", state(last))
                });
            }
        }
        "waiting" | "ready" | "leased" => {
            // A job revived after its terminal record (and not ended since) is waiting, ready or
            // leased again, as the queue refuses it.
            if last_terminal.is_some() {
                out.job(RJ, c, job, || {
                    format!("a call on {job} was refused as {reason}, but the job is {}", state(last_terminal))
                });
            } else if reason != "leased" && latest == Some(presented) && t.place == Place::Leased {
                // A `lease_expired` of the live lease (a sweeper's write by id after the holder
                // renewed it: swarm seed 318304) left the job ready, as the queue then refuses
                // its holder; `recorded_values_match` reports the early record, and the refusal
                // follows from it.
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

//! The rules docs/checker-rules.md added for histories the simulator never writes, restated:
//! `delivery_chain`, `fences_issued`, `rejection_justified`, and the new recorded values
//! (`extract_done`'s inference, `consumer_crashed`, `relay_crashed`) for
//! `recorded_values_match`.
//!
//! Owns: these clauses, in the specification's order: a result travels submitted → committed
//! with its event → published → applied → reviewed, each step after the one before and for the
//! same key and job; every token a record names outside the fenced writes is one a `leased`
//! issued to that job and worker; a refusal's recorded reason and held token are true of the
//! history.
//! Does not: judge `lease_end_detected` (its header field, `lease_detection`, is not on this
//! branch's `RunConfig` yet).

use super::{Ctx, Inv, Verdicts};
use durasim::base::ids::{EventId, Fence, JobId, WorkerId};
use durasim::history::Event;
use durasim::vocab::faults::Struck;

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let f = cx.facts;
    let at = cx.at();
    let published = |e: &EventId| f.events.get(e).is_some_and(|x| x.published);
    match &cx.r.event {
        Event::ResultCommitted {
            job, key, event, ..
        } => {
            committed_by_a_leased_job(cx, out, *job, key);
            if let Some(e) = event {
                let x = f.events.get(e);
                if x.is_some_and(|x| x.written || x.published) {
                    out.raise(
                        Inv::DeliveryChain,
                        cx.here(),
                        Some(*job),
                        Some(*key),
                        format!("{e} written by {job}'s commit was written or published before"),
                    );
                }
            }
        }
        Event::CommitDeduped { job, key, .. } | Event::CommitConflict { job, key, .. } => {
            committed_by_a_leased_job(cx, out, *job, key)
        }
        Event::Published {
            event,
            key,
            job,
            output,
            direct,
            ..
        } => {
            let commits = f.key(key).map_or(&[][..], |k| &k.commits[..]);
            let broken = match direct {
                false => !commits
                    .iter()
                    .any(|c| c.1 == *job && c.2 == *output && c.3 == Some(*event)),
                true => {
                    !commits
                        .iter()
                        .any(|c| c.1 == *job && c.2 == *output && c.3.is_none())
                        || f.events.get(event).is_some_and(|x| x.written)
                }
            };
            if broken {
                out.raise(
                    Inv::DeliveryChain,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("{event} published (direct: {direct}) with no earlier commit of it by {job} under the key with its output"),
                );
            }
        }
        Event::MarkedEvents { events } => {
            // Version 2: the relay names the events it marked; each must be unmarked and
            // published.
            let problem = events.iter().find_map(|e| {
                if !f.pending.contains(e) {
                    Some(format!(
                        "the relay marked {e}, not an unmarked outbox event"
                    ))
                } else if !published(e) {
                    Some(format!("the relay marked {e}, which was never published"))
                } else {
                    None
                }
            });
            if let Some(p) = problem {
                out.raise(Inv::DeliveryChain, cx.here(), None, None, p);
            }
        }
        Event::MarkedPublished { count } => {
            if let Some(p) = unpublished_pending(cx, *count as u64) {
                out.raise(Inv::DeliveryChain, cx.here(), None, None, p);
            }
        }
        Event::EffectApplied {
            event, key, job, ..
        } => {
            let origin = f.events.get(event).is_some_and(|x| x.has_origin(key, *job));
            if !published(event) || !origin {
                out.raise(
                    Inv::DeliveryChain,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("{event} applied for {job}, but it was not published from a commit of that job under the key"),
                );
            }
        }
        Event::DuplicateEvent { event, key } => {
            let x = f.events.get(event);
            let applied = x.is_some_and(|x| x.applies > 0);
            let of_key = x.is_some_and(|x| x.origins.iter().any(|o| o.0 == *key));
            if !applied || !of_key {
                out.raise(
                    Inv::DeliveryChain,
                    cx.here(),
                    None,
                    Some(*key),
                    format!(
                        "{event} recognised as a duplicate, but it was not applied for the key"
                    ),
                );
            }
        }
        Event::ReviewDone { event, key, job } => {
            let x = f.events.get(event);
            let unreviewed = x.is_some_and(|x| x.applies > x.reviews);
            let origin = x.is_some_and(|x| x.has_origin(key, *job));
            if !unreviewed || !origin {
                out.raise(
                    Inv::DeliveryChain,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("a review of {event} for {job} with no apply of it left to review"),
                );
            }
        }
        Event::Rejected {
            job,
            worker,
            presented,
            held,
            reason,
            ..
        } => {
            issued(cx, out, *job, *worker, *presented);
            let j = f.job(*job);
            use super::facts::Terminal::*;
            // Clause 1: the recorded held token is the job's latest.
            if let Some(h) = held.filter(|h| *h != j.fence) {
                cx.job_violation(
                    out,
                    Inv::RejectionJustified,
                    *job,
                    format!(
                        "a refusal of {job}'s call records held {h}, but its latest token is {}",
                        j.fence
                    ),
                );
            }
            // Clauses 2 to 5: the reason.
            let problem = match *reason {
                "stale_fence" if *presented == j.fence => Some(format!(
                    "stale_fence, but {presented} is the job's latest token"
                )),
                "acked" | "dead_lettered" | "cancelled" => {
                    let kind = match *reason {
                        "acked" => Acked,
                        "dead_lettered" => DeadLettered,
                        _ => Cancelled,
                    };
                    // Against the latest terminal record: a job revived and ended again.
                    let last = j.last_terminal;
                    (last != Some(kind)).then(|| format!("{reason}, but the job is {last:?}"))
                }
                "waiting" | "ready" | "leased" if j.last_terminal.is_some() => {
                    Some(format!("{reason}, but the job is {:?}", j.last_terminal))
                }
                "waiting" | "ready"
                    if *presented == j.fence
                        && j.lease_held
                        && j.place == super::facts::Place::Leased
                        && at <= j.lease_end(&f.config) =>
                {
                    Some(format!(
                        "{reason}, but the presented lease {presented} is live"
                    ))
                }
                _ => None,
            };
            if let Some(p) = problem {
                cx.job_violation(
                    out,
                    Inv::RejectionJustified,
                    *job,
                    format!("a refusal of {job}'s call: {p}"),
                );
            }
        }
        Event::ExtractStarted {
            job, worker, fence, ..
        }
        | Event::AttemptFailed {
            job, worker, fence, ..
        }
        | Event::WorkerCrashed {
            job, worker, fence, ..
        } => issued(cx, out, *job, *worker, *fence),
        Event::Held(h) => issued(cx, out, h.job, h.worker, h.fence),
        Event::ExtractDone {
            job,
            worker,
            fence,
            inference,
            ..
        } => {
            issued(cx, out, *job, *worker, *fence);
            if let Some(s) = f.extracting.get(&(*worker, *job, *fence)) {
                if *inference > at.saturating_sub(*s) {
                    cx.job_violation(
                        out,
                        Inv::RecordedValuesMatch,
                        *job,
                        format!("{job}'s extraction records inference {inference}, but it started {} before", at - s),
                    );
                }
            }
        }
        Event::Struck(s) => match (s.fault, s.job) {
            (Struck::ConsumerCrash, Some(job)) => {
                let e = EventId(s.value);
                let x = f.events.get(&e);
                let applied = x.is_some_and(|x| x.applies > 0);
                let key = f.job(job).key;
                let of_job = x.is_some_and(|x| x.origins.contains(&(key, job)));
                if !applied || !of_job {
                    cx.job_violation(
                        out,
                        Inv::RecordedValuesMatch,
                        job,
                        format!("the consumer crashed after applying {e} of {job}, which it did not apply"),
                    );
                }
            }
            (Struck::RelayCrash, _) => {
                // Any `unmarked` of the pending events, not the first: relays claim disjoint
                // batches and commits finish out of event-id order.
                let f = cx.facts;
                let sent = f
                    .pending
                    .iter()
                    .filter(|e| f.events.get(e).is_some_and(|x| x.published))
                    .count() as u64;
                if sent < s.value {
                    let p = format!("a relay crash with {} rows sent and unmarked, but {sent} pending were sent", s.value);
                    out.raise(Inv::RecordedValuesMatch, cx.here(), None, None, p);
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// A commit, dedupe or refused commit of `job` under `key`: the job's own key, and leased.
fn committed_by_a_leased_job(
    cx: &Ctx,
    out: &mut Verdicts,
    job: JobId,
    key: &durasim::vocab::key::IdempotencyKey,
) {
    let j = cx.facts.job(job);
    if *key != j.key || j.leases == 0 {
        out.raise(
            Inv::DeliveryChain,
            cx.here(),
            Some(job),
            Some(*key),
            format!("a commit by {job} under a key not its own, or never leased"),
        );
    }
}

/// What is wrong with `count` of the outbox's pending events being marked published, if anything.
fn unpublished_pending(cx: &Ctx, count: u64) -> Option<String> {
    let f = cx.facts;
    if count > f.pending.len() as u64 {
        return Some(format!(
            "{count} events, but the outbox holds {} pending",
            f.pending.len()
        ));
    }
    let first = f.pending.iter().take(count as usize);
    let mut unpublished = first.filter(|e| !f.events.get(e).is_some_and(|x| x.published));
    unpublished
        .next()
        .map(|e| format!("{count} events, but pending {e} was never published"))
}

/// A token a record names for `job` and `worker`: a `leased` must have issued it.
fn issued(cx: &Ctx, out: &mut Verdicts, job: JobId, worker: WorkerId, fence: Fence) {
    if !cx.facts.job(job).issued.contains(&(fence, worker)) {
        cx.job_violation(
            out,
            Inv::FencesIssued,
            job,
            format!("{job}'s record names {fence} of {worker}, which no lease issued"),
        );
    }
}

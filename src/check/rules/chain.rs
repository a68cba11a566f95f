//! Invariant family: the delivery chain.
//!
//! Owns: `delivery_chain` (docs/checker-rules.md): every result travels submitted → committed
//! with its event → published → applied → reviewed, each step after the one before it and for
//! the same key and job. The facts it reads: each key's commits (the first in its track, the
//! others and its direct events in its rare parts), each event's bits (written, published) and
//! counts (applies, reviews), the outbox's unmarked events.
//! Does not: judge how many results or effects a key has (`effects`), or payloads (`payloads`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{EventId, JobId};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use crate::vocab::key::IdempotencyKey;

pub(in crate::check) const DELIVERY_CHAIN: Spec = Spec {
    name: "delivery_chain",
    kind: Kind::Always,
    sentence: "every result travels submitted → committed with its event → published → applied → reviewed, each step after the one before it and for the same key and job: a result is committed only by a leased job under its own key, an outbox event is written once and published only after the commit that wrote it, with its output, the relay marks only events it published, an effect is applied only from a published event, a duplicate is recognised only of an applied event, and a review finishes once for each apply",
};

const DC: Invariant = Invariant::DeliveryChain;

#[derive(Default, Hash)]
pub(in crate::check) struct Chain;

impl Family for Chain {
    const READS: u64 = k::RESULT_COMMITTED
        | k::COMMIT_DEDUPED
        | k::COMMIT_CONFLICT
        | k::PUBLISHED
        | k::MARKED_PUBLISHED
        | k::EFFECT_APPLIED
        | k::DUPLICATE_EVENT
        | k::REVIEW_DONE;
    const OWNS: &'static [Invariant] = &[Invariant::DeliveryChain];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let events = c.facts.events();
        match &c.r.event {
            Event::ResultCommitted {
                job, key, event, ..
            } => {
                committed(c, out, *job, key, "committed a result");
                if let Some(e) = event {
                    if events.written(*e) || events.published(*e) {
                        let was = match events.written(*e) {
                            true => "written by an earlier commit",
                            false => "published before it was committed",
                        };
                        out.at_record(DC, c, (Some(*job), Some(*key)), || {
                            format!("{job}'s result was committed with {e}, which was {was}")
                        });
                    }
                }
            }
            Event::CommitDeduped { job, key, .. } => {
                committed(c, out, *job, key, "deduplicated a commit")
            }
            Event::CommitConflict { job, key, .. } => {
                committed(c, out, *job, key, "had a commit refused")
            }
            Event::Published {
                event,
                key,
                job,
                output,
                direct,
                ..
            } => {
                let problem = match direct {
                    false if !wrote(c, key, *job, *output, Some(*event)) => Some(format!(
                        "{event} was published for {job} with output {output:x}, but no earlier result_committed under the key by {job} with that output wrote it"
                    )),
                    true if events.written(*event) => Some(format!(
                        "{event} was published directly, but it is an outbox event a commit wrote"
                    )),
                    true if !wrote(c, key, *job, *output, None) => Some(format!(
                        "{event} was published directly for {job} with output {output:x}, but no earlier result_committed under the key by {job} with that output and no event came before it"
                    )),
                    _ => None,
                };
                if let Some(p) = problem {
                    out.at_record(DC, c, (Some(*job), Some(*key)), || p);
                }
            }
            Event::MarkedPublished { count } => {
                let pending = events.pending();
                let n = (*count as usize).min(pending.len());
                let unsent = pending.iter().take(n).find(|e| !events.published(**e));
                if *count as usize > pending.len() || unsent.is_some() {
                    let have = pending.len();
                    out.at_record(DC, c, (None, None), || match unsent {
                        Some(e) => format!("the relay marked {count} outbox events published, but {e} among them was never published: it will never be sent"),
                        None => format!("the relay marked {count} outbox events published, but only {have} were unmarked"),
                    });
                }
            }
            Event::MarkedEvents { events: marked } => {
                let pending = events.pending();
                let problem = marked.iter().find_map(|e| {
                    if !pending.contains(e) {
                        Some(format!("the relay marked {e} published, but it is not an unmarked outbox event"))
                    } else if !events.published(*e) {
                        Some(format!("the relay marked {e} published, but it was never published: it will never be sent"))
                    } else {
                        None
                    }
                });
                if let Some(p) = problem {
                    out.at_record(DC, c, (None, None), || p);
                }
            }
            Event::EffectApplied {
                event, key, job, ..
            } => {
                if !events.published(*event) {
                    out.at_record(DC, c, (Some(*job), Some(*key)), || {
                        format!(
                            "the effect of {event} was applied, but {event} was never published"
                        )
                    });
                } else if !c.facts.has_origin(
                    (key, &c.key_track(key, Some(*job))),
                    *event,
                    Some(*job),
                ) {
                    out.at_record(DC, c, (Some(*job), Some(*key)), || {
                        format!("the effect of {event} was applied for {job} under the key, but no result of {job} under the key wrote or published {event}")
                    });
                }
            }
            Event::DuplicateEvent { event, key } => {
                if events.applies(*event) == 0 {
                    out.at_record(DC, c, (None, Some(*key)), || {
                        format!("the consumer recognised {event} as a duplicate, but it never applied it")
                    });
                } else if !c
                    .facts
                    .has_origin((key, &c.key_track(key, None)), *event, None)
                {
                    out.at_record(DC, c, (None, Some(*key)), || {
                        format!("the consumer recognised {event} as a duplicate under the key, but no result under the key wrote or published it")
                    });
                }
            }
            Event::ReviewDone { event, key, job } => {
                let (applies, reviews) = (events.applies(*event), events.reviews(*event));
                if applies <= reviews {
                    out.at_record(DC, c, (Some(*job), Some(*key)), || match applies {
                        0 => format!("the review of {event} finished, but its effect was never applied"),
                        _ => format!("the review of {event} finished for the {} time, but its effect was applied {applies} times", reviews + 1),
                    });
                } else if !c.facts.has_origin(
                    (key, &c.key_track(key, Some(*job))),
                    *event,
                    Some(*job),
                ) {
                    out.at_record(DC, c, (Some(*job), Some(*key)), || {
                        format!("the review of {event} finished for {job} under the key, but no result of {job} under the key wrote or published {event}")
                    });
                }
            }
            _ => {}
        }
    }
}

/// A commit (or its dedupe or refusal) by `job` under `key`: the key must be the job's own,
/// and the job leased.
fn committed(c: &Ctx, out: &mut Out, job: JobId, key: &IdempotencyKey, what: &str) {
    let t = c.track(job);
    if t.key != *key {
        out.at_record(DC, c, (Some(job), Some(*key)), || {
            format!("{job} {what} under a key it was not enqueued with")
        });
    } else if t.leases == 0 {
        out.at_record(DC, c, (Some(job), Some(*key)), || {
            format!("{job} {what}, but it was never leased")
        });
    }
}

/// Whether an earlier `result_committed` under `key` by `job` with `output` wrote `event` (none:
/// wrote no event).
fn wrote(c: &Ctx, key: &IdempotencyKey, job: JobId, output: u64, event: Option<EventId>) -> bool {
    let k = c.key_track(key, Some(job));
    let same = |j: JobId, o: u64, e: Option<EventId>| j == job && o == output && e == event;
    if k.first.is_some_and(|f| same(f.job, f.output, f.event)) {
        return true;
    }
    k.rare
        && c.facts
            .key_rare(key)
            .is_some_and(|r| r.commits.iter().any(|w| same(w.job, w.output, w.event)))
}

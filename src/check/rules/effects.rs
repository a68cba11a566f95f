//! Invariant family: effects (results, outbox events, the consumer, the review).
//!
//! Owns: `single_result_per_key`, `event_per_result`, `no_duplicate_effect`,
//! `every_result_delivered`, `first_result_wins` and `acked_with_result` (an ack follows the
//! job's own commit or dedupe, by the holder of its latest lease) (docs/checker-rules.md).
//! Does not: judge payloads (`payloads`), the order of the delivery chain (`chain`) or tenants
//! (`tenancy`).

use super::{k, Ctx, End, Family, Out, Spec};
use crate::check::facts::KeyCursor;
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;

pub(in crate::check) const SINGLE_RESULT_PER_KEY: Spec = Spec {
    name: "single_result_per_key",
    kind: Kind::Always,
    sentence: "no idempotency key has more than one committed result",
};

pub(in crate::check) const EVENT_PER_RESULT: Spec = Spec {
    name: "event_per_result",
    kind: Kind::Eventually,
    sentence: "every committed result has exactly one event, written with it, and it is published",
};

pub(in crate::check) const NO_DUPLICATE_EFFECT: Spec = Spec {
    name: "no_duplicate_effect",
    kind: Kind::Always,
    sentence: "no effect is applied twice for one idempotency key or one event",
};

pub(in crate::check) const EVERY_RESULT_DELIVERED: Spec = Spec {
    name: "every_result_delivered",
    kind: Kind::Eventually,
    sentence: "every committed result is applied by the consumer and reviewed",
};

pub(in crate::check) const FIRST_RESULT_WINS: Spec = Spec {
    name: "first_result_wins",
    kind: Kind::Always,
    sentence: "the effect the consumer applies is the first committed result for its key",
};

pub(in crate::check) const ACKED_WITH_RESULT: Spec = Spec {
    name: "acked_with_result",
    kind: Kind::Always,
    sentence: "a job is acked only after its own attempt committed its result or deduplicated onto the key's: a result_committed or commit_deduped of the job by the worker the acked lease was issued to, since that lease",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Effects;

impl Family for Effects {
    const READS: u64 = k::RESULT_COMMITTED | k::EFFECT_APPLIED | k::ACKED;
    const OWNS: &'static [Invariant] = &[
        Invariant::SingleResultPerKey,
        Invariant::EventPerResult,
        Invariant::NoDuplicateEffect,
        Invariant::EveryResultDelivered,
        Invariant::FirstResultWins,
        Invariant::AckedWithResult,
    ];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let u = c.unit();
        match &c.r.event {
            Event::ResultCommitted { job, key, .. } => {
                if let Some(first) = c.key_track(key, Some(*job)).first {
                    out.at_record(Invariant::SingleResultPerKey, c, (Some(*job), Some(*key)), || {
                        format!(
                            "a second result was committed for the key by {job}; the first was by {} at {} {u}",
                            first.job, first.at
                        )
                    });
                }
            }
            Event::EffectApplied {
                event,
                key,
                job,
                output,
            } => {
                let k = c.key_track(key, Some(*job));
                let twice = c.facts.events().applies(*event) > 0;
                if twice || k.applied.is_some() {
                    out.at_record(Invariant::NoDuplicateEffect, c, (Some(*job), Some(*key)), || {
                        match k.applied {
                            Some(e) => format!("the effect of {event} was applied, but the key's effect was already applied from {e}"),
                            None => format!("{event} was applied twice"),
                        }
                    });
                }
                if let Some(first) = k.first.filter(|f| f.output != *output) {
                    out.at_record(Invariant::FirstResultWins, c, (Some(*job), Some(*key)), || {
                        format!(
                            "the consumer applied output {output:x}, but the first committed result (by {}) was {:x}",
                            first.job, first.output
                        )
                    });
                }
            }
            Event::Acked { job, worker, fence } => {
                let t = c.track(*job);
                if !c.facts.own_result(*job, &t, *fence, *worker) {
                    let results = c.key_track(&t.key, Some(*job)).results;
                    out.job(Invariant::AckedWithResult, c, *job, || match results {
                        0 => format!("{job} was acked, but its key has no committed result: the work is marked done with no effect"),
                        _ => format!("{job} was acked with {fence} by {worker}, but that attempt neither committed a result nor deduplicated onto the key's: the ack rests on another attempt's result"),
                    });
                }
            }
            _ => {}
        }
    }

    /// Every result has its event, published, applied and reviewed. Keys in the order the
    /// history first named them: stable, and no sort.
    fn finish(&mut self, e: &End, out: &mut Out) {
        let (u, unsettled) = (e.unit(), e.unsettled());
        let mut cursor = KeyCursor::default();
        while let Some((key, k)) = e.facts.next_key(&mut cursor) {
            let Some(first) = k.first else { continue };
            let named = (Some(first.job), Some(key));
            let (when, job) = (first.at, first.job);
            match e.facts.key_event(&key, &k) {
                None => out.raise(
                    Invariant::EventPerResult,
                    e.at,
                    named,
                    || format!("the result committed by {job} at {when} {u} has no event: nothing will ever announce it{unsettled}"),
                    Vec::new,
                ),
                Some(ev) if !e.facts.events().published(ev) => out.raise(
                    Invariant::EventPerResult,
                    e.at,
                    named,
                    || format!("{ev} was written with the result but never published{unsettled}"),
                    Vec::new,
                ),
                Some(_) => {}
            }
            // A version 2 header may state that the pipeline has no review step.
            let review = e.facts.config().stated.review;
            if k.applied.is_none() || (review && !k.reviewed) {
                let what = if k.applied.is_none() {
                    "never applied by the consumer"
                } else {
                    "applied but its review never finished"
                };
                out.raise(
                    Invariant::EveryResultDelivered,
                    e.at,
                    named,
                    || format!("the result committed by {job} at {when} {u} was {what}{unsettled}"),
                    Vec::new,
                );
            }
        }
    }
}

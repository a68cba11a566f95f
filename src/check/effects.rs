//! Invariant family: effects (results, outbox events, the consumer) and payloads.
//!
//! Owns: `single_result_per_key`, `event_per_result`, `no_duplicate_effect`,
//! `every_result_delivered`, `first_result_wins`, `acked_with_result` (an ack implies a committed
//! result for the job's key) and `payload_conflict_rejected` (payload equality judged from the
//! recorded operation and content, both ways: a different payload is never reused, the same
//! payload is never refused).
//! Does not: judge leases (see `leases`) or tenants (see `tenancy`).

use super::checker::{Checker, PayloadId};
use super::invariant::Invariant;
use super::tracks::KeyCursor;
use crate::base::ids::{EventId, JobId, SimTime};
use crate::history::Record;
use crate::vocab::key::IdempotencyKey;

impl Checker {
    /// The payload a new request under `existing`'s key is compared with: the existing job's, as
    /// enqueued or last mutated (the queue's enqueue-time check).
    fn existing_payload(&mut self, existing: JobId) -> PayloadId {
        self.read_job(existing, |t| t.payload)
    }

    pub(super) fn effects_enqueue_deduped(
        &mut self,
        r: &Record,
        existing: JobId,
        key: &IdempotencyKey,
        payload: PayloadId,
    ) {
        let held = self.existing_payload(existing);
        if held != payload {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(existing),
                Some(*key),
                || format!("an enqueue with {payload} was deduplicated onto {existing}, whose payload is {held}"),
                || vec![r.clone()],
            );
        }
    }

    pub(super) fn effects_enqueue_conflict(
        &mut self,
        r: &Record,
        existing: JobId,
        key: &IdempotencyKey,
        payload: PayloadId,
    ) {
        if self.existing_payload(existing) == payload {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(existing),
                Some(*key),
                || format!("an enqueue with {payload} was refused as a conflict with {existing}, which has the same payload"),
                || vec![r.clone()],
            );
        }
    }

    /// A submit replaced `existing`'s payload (`unique = "replace"`), saying it replaced `was`:
    /// that must be the payload the job had (as enqueued, mutated or last replaced), and the
    /// new one must equal it, or a different payload was reused under the key (and the first
    /// submit's content is lost, not refused). The job carries the new payload from here.
    pub(super) fn effects_enqueue_replaced(
        &mut self,
        r: &Record,
        existing: JobId,
        key: &IdempotencyKey,
        payload: PayloadId,
        was: PayloadId,
    ) {
        let held = self.existing_payload(existing);
        if held != was {
            self.violate(
                Invariant::RecordedValuesMatch,
                r.at,
                Some(existing),
                Some(*key),
                || format!("a replace says {existing} had {was}, but its payload was {held}"),
                || vec![r.clone()],
            );
        }
        if held != payload {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(existing),
                Some(*key),
                || format!("an enqueue with {payload} replaced the payload of {existing}, which was {held}: a different payload under the key was taken, not refused"),
                || vec![r.clone()],
            );
        }
        self.update_job(existing, |t| {
            t.payload = payload;
            t.derived_hash = None;
        });
    }

    pub(super) fn effects_committed(
        &mut self,
        r: &Record,
        job: JobId,
        key: &IdempotencyKey,
        output: u64,
        event: Option<EventId>,
    ) {
        let at = r.at;
        let u = self.unit();
        let payload = self.read_job(job, |t| t.payload);
        let (first, results) = self.tracks.commit(key, (at, job, output), payload, event);
        if results > 1 {
            let (first_at, first_job, _) = first.unwrap_or_default();
            self.violate(
                Invariant::SingleResultPerKey,
                at,
                Some(job),
                Some(*key),
                || format!("a second result was committed for the key by {job}; the first was by {first_job} at {first_at} {u}"),
                || vec![r.clone()],
            );
        }
    }

    pub(super) fn effects_commit_deduped(&mut self, r: &Record, job: JobId, key: &IdempotencyKey) {
        let payload = self.read_job(job, |t| t.payload);
        let k = self.key_track(key, Some(job));
        if k.results == 0 {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(job),
                Some(*key),
                || format!("a commit by {job} was deduplicated, but the key has no committed result to deduplicate onto"),
                || vec![r.clone()],
            );
        } else if k.payload() != Some(payload) {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(job),
                Some(*key),
                || format!("a commit by {job} with {payload} was deduplicated onto a result committed with {}", k.payload().map_or("no payload".to_string(), |p| p.to_string())),
                || vec![r.clone()],
            );
        }
    }

    pub(super) fn effects_commit_conflict(&mut self, r: &Record, job: JobId, key: &IdempotencyKey) {
        let payload = self.read_job(job, |t| t.payload);
        let k = self.key_track(key, Some(job));
        if k.results == 0 || k.payload() == Some(payload) {
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(job),
                Some(*key),
                || match k.results {
                    0 => format!("a commit by {job} was refused as a conflict, but the key has no committed result"),
                    _ => format!("a commit by {job} with {payload} was refused as a conflict with a result committed with the same payload"),
                },
                || vec![r.clone()],
            );
        }
    }

    /// An accepted ack: the job's key must have a committed result already.
    pub(super) fn effects_acked(&mut self, r: &Record, job: JobId) {
        let key = self.read_job(job, |t| t.key);
        if self.tracks.results(&key, Some(job)) == 0 {
            self.violate_job(Invariant::AckedWithResult, r, job, || {
                format!("{job} was acked, but its key has no committed result: the work is marked done with no effect")
            });
        }
    }

    pub(super) fn effects_published(
        &mut self,
        event: EventId,
        key: &IdempotencyKey,
        job: JobId,
        direct: bool,
    ) {
        let first_publish = self.events.publish(event);
        if direct && first_publish {
            self.tracks.publish_direct(key, Some(job), event);
        }
    }

    pub(super) fn effects_applied(
        &mut self,
        r: &Record,
        event: EventId,
        key: &IdempotencyKey,
        job: JobId,
        output: u64,
    ) {
        let at = r.at;
        let u = self.unit();
        let twice = self.events.apply(event);
        let (earlier, first) = self.tracks.apply(key, Some(job), at, event);
        if twice || earlier.is_some() {
            self.violate(
                Invariant::NoDuplicateEffect,
                at,
                Some(job),
                Some(*key),
                || match earlier {
                    Some((when, e)) => format!("the effect of {event} was applied, but the key's effect was already applied at {when} {u} from {e}"),
                    None => format!("{event} was applied twice"),
                },
                || vec![r.clone()],
            );
        }
        if let Some((_, first_job, first_output)) = first.filter(|f| f.2 != output) {
            self.violate(
                Invariant::FirstResultWins,
                at,
                Some(job),
                Some(*key),
                || format!("the consumer applied output {output:x}, but the first committed result (by {first_job}) was {first_output:x}"),
                || vec![r.clone()],
            );
        }
    }

    /// At the end: every result has its event, published, applied and reviewed. Keys in the
    /// order the history first named them: stable, and no sort.
    pub(super) fn effects_finish(&mut self, end: SimTime, unsettled: &str) {
        let u = self.unit();
        let mut cursor = KeyCursor::default();
        while let Some((key, k)) = self.tracks.next_key(&mut cursor) {
            if k.results > 0 && k.events == 0 {
                let (when, job, _) = k.first_commit().unwrap_or_default();
                self.violate(
                    Invariant::EventPerResult,
                    end,
                    Some(job),
                    Some(key),
                    || format!("the result committed by {job} at {when} {u} has no event: nothing will ever announce it{unsettled}"),
                    Vec::new,
                );
            } else if let Some(e) = k.result_event() {
                let published = self.events.published(e);
                if !published {
                    let (_, job, _) = k.first_commit().unwrap_or_default();
                    self.violate(
                        Invariant::EventPerResult,
                        end,
                        Some(job),
                        Some(key),
                        || {
                            format!(
                                "{e} was written with the result but never published{unsettled}"
                            )
                        },
                        Vec::new,
                    );
                }
            }
            if k.results > 0 && (k.applied().is_none() || !k.reviewed()) {
                let (when, job, _) = k.first_commit().unwrap_or_default();
                let what = if k.applied().is_none() {
                    "never applied by the consumer"
                } else {
                    "applied but its review never finished"
                };
                self.violate(
                    Invariant::EveryResultDelivered,
                    end,
                    Some(job),
                    Some(key),
                    || format!("the result committed by {job} at {when} {u} was {what}{unsettled}"),
                    Vec::new,
                );
            }
        }
    }
}

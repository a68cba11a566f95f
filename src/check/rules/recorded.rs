//! Invariant family: what the recorder computed or reported about its own steps, cross-checked.
//!
//! Owns: `recorded_values_match` (docs/checker-rules.md, clauses 1–19): payload hashes
//! (recomputed from the key's document, the operation and the content with the published
//! function in `vocab::payload`, the existing payloads and event of a refused or deduplicated
//! request included), recorded times (`deadline_at`, `lease_until`, `visible_at`), attempt
//! numbers, error classes, eviction capacities, the optional records (`visible`,
//! `lease_expired`), an extraction's inference against the time it took, a consumer crash's
//! event and a relay crash's unmarked rows. Each such field is optional in a history; when
//! present it must agree with what the configuration and the raw facts give, and no other rule
//! reads it. Its own state: the payload hashes it derived at recent enqueues, so a commit's is
//! compared without a second derivation.
//! Does not: take a recorded value as evidence of anything.

use super::policy::class_of;
use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::{EventId, JobId, SimTime};
use crate::check::facts::{PayloadId, Place};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use crate::vocab::faults::Struck;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::{payload_hash, PayloadHash};

pub(in crate::check) const RECORDED_VALUES_MATCH: Spec = Spec {
    name: "recorded_values_match",
    kind: Kind::Always,
    sentence: "every value the recorder computed or reported about its own step (lease_until, deadline_at, visible_at, payload hashes, existing payloads and events, error classes, attempt numbers, capacities, inference times, a crash's event, a relay's unmarked rows) and every optional record (visible, lease_expired) agrees with what the configuration and the raw facts give",
};

const RVM: Invariant = Invariant::RecordedValuesMatch;

/// Slots of the cache of derived hashes (a job's at `job % HASHES`).
const HASHES: usize = 4096;

/// A hash derived at a job's enqueue: its job, its document and payload, the hash.
type Derived = (JobId, u32, PayloadId, PayloadHash);

pub(in crate::check) struct Recorded {
    /// The hashes derived at recent enqueues.
    hashes: Box<[Option<Derived>]>,
}

/// Nothing: the cache only saves recomputing a hash (`known` misses, the hash is derived), so
/// it never changes a verdict, and a run's state (`sim::state`) leaves it out.
impl std::hash::Hash for Recorded {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Default for Recorded {
    fn default() -> Self {
        Recorded {
            hashes: vec![None; HASHES].into_boxed_slice(),
        }
    }
}

impl Family for Recorded {
    const READS: u64 = k::ENQUEUED
        | k::ENQUEUE_DEDUPED
        | k::ENQUEUE_CONFLICT
        | k::ENQUEUE_REPLACED
        | k::LEASED
        | k::HEARTBEAT
        | k::LEASE_EXPIRED
        | k::VISIBLE
        | k::ATTEMPT_FAILED
        | k::RETRY_SCHEDULED
        | k::DEAD_LETTERED
        | k::CANCELLED
        | k::DLQ_EVICTED
        | k::RESULT_COMMITTED
        | k::COMMIT_DEDUPED
        | k::COMMIT_CONFLICT
        | k::PAYLOAD_MUTATED
        | k::EXTRACT_DONE
        | k::STRUCK;
    const OWNS: &'static [Invariant] = &[Invariant::RecordedValuesMatch];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let at = c.at();
        match &c.r.event {
            Event::Enqueued {
                job,
                key,
                operation,
                content,
                payload,
                deadline_at,
                ..
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                if let Some(h) = self.hash(c, out, (Some(*job), key), p, *payload, None) {
                    self.hashes[job.index() % HASHES] = Some((*job, key.document.0, p, h));
                }
                let deadline = c
                    .config()
                    .deadline
                    .map_or(u64::MAX, |d| at.saturating_add(d));
                time(c, out, *job, "deadline_at", *deadline_at, deadline);
            }
            Event::EnqueueDeduped {
                key,
                operation,
                content,
                payload,
                existing,
                ..
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                let known = self.known(*existing, key, p);
                self.hash(c, out, (Some(*existing), key), p, *payload, known);
            }
            Event::EnqueueConflict {
                key,
                operation,
                content,
                payload,
                existing,
                existing_payload,
                ..
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                let named = (Some(*existing), key);
                self.hash(c, out, named, p, *payload, None);
                let held = c.track(*existing).payload;
                self.hash(c, out, named, held, *existing_payload, None);
            }
            Event::EnqueueReplaced {
                key,
                operation,
                content,
                payload,
                existing,
                replaced_operation,
                replaced_content,
                replaced_payload,
                ..
            } => {
                let p = PayloadId {
                    operation: *operation,
                    content: *content,
                };
                let was = PayloadId {
                    operation: *replaced_operation,
                    content: *replaced_content,
                };
                let named = (Some(*existing), key);
                self.hash(c, out, named, p, *payload, None);
                self.hash(c, out, named, was, *replaced_payload, None);
                let held = c.track(*existing).payload;
                if held != was {
                    out.at_record(RVM, c, (Some(*existing), Some(*key)), || {
                        format!("a replace says {existing} had {was}, but its payload was {held}")
                    });
                }
            }
            Event::Leased {
                job,
                attempt,
                lease_until,
                visible_at,
                ..
            } => {
                let t = c.track(*job);
                let leases = t.leases + 1;
                if let Some(a) = attempt.filter(|a| *a != leases) {
                    out.job(RVM, c, *job, || {
                        format!("{job}'s lease records attempt {a}, but it is the job's lease number {leases}")
                    });
                }
                let until = at.saturating_add(c.config().lease);
                time(c, out, *job, "lease_until", *lease_until, until);
                time(c, out, *job, "visible_at", *visible_at, t.visible_from);
            }
            Event::Heartbeat {
                job, lease_until, ..
            } => {
                let until = at.saturating_add(c.config().lease);
                time(c, out, *job, "lease_until", *lease_until, until);
            }
            Event::LeaseExpired { job, fence } => {
                let t = c.track(*job);
                let u = c.unit();
                match (t.held(), t.lease_end(c.config())) {
                    (Some(l), Some(end)) if l.fence == *fence => {
                        if at <= end {
                            out.job(RVM, c, *job, || {
                                format!(
                                    "lease_expired for {job} at {at} {u}, but its lease {fence} (renewed at {} {u}) is live until {end} {u}",
                                    l.renewed_at
                                )
                            });
                        }
                    }
                    _ => out.job(RVM, c, *job, || {
                        let latest = t.fence().map_or("none".to_string(), |f| f.to_string());
                        format!(
                            "lease_expired for {job} with {fence}, which is not a held lease (latest {latest}, held: {})",
                            t.lease_held
                        )
                    }),
                }
            }
            Event::Visible { job } => {
                let t = c.track(*job);
                if t.place != Place::Waiting || at < t.visible_from {
                    let u = c.unit();
                    out.job(RVM, c, *job, || {
                        format!(
                            "{job} recorded visible at {at} {u}, but it was {:?} with visible time {} {u}",
                            t.place, t.visible_from
                        )
                    });
                }
            }
            Event::AttemptFailed {
                job, error, class, ..
            } => {
                let expected = class_of(error, c.config().permanent_errors_retried);
                if let Some(cl) = class.filter(|cl| *cl != expected) {
                    out.job(RVM, c, *job, || {
                        format!("{job}'s attempt failed with {error}, a {expected} error, but the record gives it class {cl}")
                    });
                }
            }
            Event::RetryScheduled {
                job,
                fence,
                attempt,
                ..
            } => {
                let t = c.track(*job);
                let n = t.leases;
                if t.fence() == Some(*fence) {
                    if let Some(a) = attempt.filter(|a| *a != n) {
                        out.job(RVM, c, *job, || {
                            format!("{job}'s retry records attempt {a}, but the job was leased {n} times")
                        });
                    }
                }
            }
            Event::DeadLettered {
                job,
                fence,
                attempts,
                ..
            } => {
                let t = c.track(*job);
                let n = t.leases;
                let current = fence.is_none_or(|f| t.fence() == Some(f));
                if let Some(a) = attempts.filter(|a| current && *a != n) {
                    out.job(RVM, c, *job, || {
                        format!("{job}'s DLQ entry records {a} attempts, but the job was leased {n} times")
                    });
                }
            }
            Event::Cancelled {
                job, deadline_at, ..
            } => {
                let expected = c.track(*job).deadline_at(c.config());
                time(c, out, *job, "deadline_at", *deadline_at, expected);
            }
            Event::DlqEvicted { job, capacity, .. } => {
                let config = c.config().dlq_capacity;
                if let Some(cap) = capacity.filter(|cap| Some(*cap) != config) {
                    out.job(RVM, c, *job, || {
                        format!("the eviction of {job} records capacity {cap}, but the header's dlq_capacity is {config:?}")
                    });
                }
            }
            Event::ResultCommitted {
                job, key, payload, ..
            } => self.commit_hash(c, out, *job, key, *payload),
            Event::CommitDeduped {
                job,
                key,
                payload,
                existing_payload,
                existing_event,
                ..
            } => {
                self.commit_hash(c, out, *job, key, *payload);
                self.existing(c, out, *job, key, *existing_payload, *existing_event);
            }
            Event::CommitConflict {
                job,
                key,
                payload,
                existing_payload,
                ..
            } => {
                self.commit_hash(c, out, *job, key, *payload);
                self.existing(c, out, *job, key, *existing_payload, None);
            }
            Event::PayloadMutated {
                job,
                content,
                payload,
            } => {
                let t = c.track(*job);
                let p = PayloadId {
                    operation: t.payload.operation,
                    content: *content,
                };
                self.hash(c, out, (Some(*job), &t.key), p, *payload, None);
            }
            Event::ExtractDone {
                job,
                worker,
                fence,
                inference,
                ..
            } => {
                if let Some(started) = c.facts.extracting(*worker, *job, *fence) {
                    let took = at.saturating_sub(started);
                    if *inference > took {
                        let u = c.unit();
                        out.job(RVM, c, *job, || {
                            format!("{job}'s extraction with {fence} records an inference of {inference} {u}, but it started at {started} {u}, {took} {u} before it returned")
                        });
                    }
                }
            }
            Event::Struck(s) => match (s.fault, s.job) {
                (Struck::ConsumerCrash, Some(job)) => {
                    let e = EventId(s.value);
                    let t = c.track(job);
                    let applied = c.facts.events().applies(e) > 0;
                    if !applied
                        || !c.facts.has_origin(
                            (&t.key, &c.key_track(&t.key, Some(job))),
                            e,
                            Some(job),
                        )
                    {
                        out.job(RVM, c, job, || {
                            format!("the consumer crashed right after applying {e} of {job}, but no effect_applied of that event and job came before")
                        });
                    }
                }
                (Struck::RelayCrash, _) => {
                    // The rows a crashed relay sent are among the unmarked ones, not necessarily
                    // the first: two relays claim disjoint batches, and commits finish out of
                    // event-id order. So at least `unmarked` unmarked events must have been sent.
                    let events = c.facts.events();
                    let unmarked = s.value;
                    let sent = events
                        .pending()
                        .iter()
                        .filter(|e| events.published(**e))
                        .take(unmarked.min(usize::MAX as u64) as usize)
                        .count() as u64;
                    if sent < unmarked {
                        let n = events.pending().len();
                        out.at_record(RVM, c, (None, None), || {
                            format!("the relay crashed with {unmarked} rows sent and unmarked, but the outbox had {n} unmarked, {sent} of them sent")
                        });
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

impl Recorded {
    /// A recorded payload hash must be the hash of the key's document, `payload`'s operation and
    /// content (when the names are known). `known`: the hash derived earlier for this same
    /// document and payload. Returns the hash it compared with, if it did.
    fn hash(
        &self,
        c: &Ctx,
        out: &mut Out,
        (job, key): (Option<JobId>, &IdempotencyKey),
        payload: PayloadId,
        recorded: Option<PayloadHash>,
        known: Option<PayloadHash>,
    ) -> Option<PayloadHash> {
        let (Some(recorded), Some(names)) = (recorded, c.names) else {
            return None;
        };
        let expected = known.unwrap_or_else(|| {
            payload_hash(names, key.document, payload.operation, payload.content)
        });
        debug_assert_eq!(
            expected,
            payload_hash(names, key.document, payload.operation, payload.content),
            "a known hash is the one the history's names give"
        );
        if expected != recorded {
            let document = names.documents.name(key.document);
            let operation = names.operations.name(payload.operation).to_string();
            out.at_record(RVM, c, (job, Some(*key)), || {
                format!("the record's payload hash is {recorded}, but document {document}, operation {operation} and content {:016x} hash to {expected}", payload.content)
            });
        }
        Some(expected)
    }

    /// The hash derived at `job`'s enqueue, if it is still cached and holds for `key`'s document
    /// and `payload`.
    fn known(&self, job: JobId, key: &IdempotencyKey, payload: PayloadId) -> Option<PayloadHash> {
        match self.hashes[job.index() % HASHES] {
            Some((j, d, p, h)) if j == job && d == key.document.0 && p == payload => Some(h),
            _ => None,
        }
    }

    /// A commit's recorded payload hash, against the committing job's payload.
    fn commit_hash(
        &self,
        c: &Ctx,
        out: &mut Out,
        job: JobId,
        key: &IdempotencyKey,
        recorded: Option<PayloadHash>,
    ) {
        if recorded.is_none() || c.names.is_none() {
            return;
        }
        let payload = c.track(job).payload;
        let known = self.known(job, key, payload);
        self.hash(c, out, (Some(job), key), payload, recorded, known);
    }

    /// A deduplicated or refused commit's recorded existing payload and event, against the key's
    /// first result.
    fn existing(
        &self,
        c: &Ctx,
        out: &mut Out,
        job: JobId,
        key: &IdempotencyKey,
        payload: Option<PayloadHash>,
        event: Option<EventId>,
    ) {
        if payload.is_none() && event.is_none() {
            return;
        }
        let k = c.key_track(key, Some(job));
        let (Some(first), Some(p)) = (k.first, k.payload) else {
            return;
        };
        self.hash(c, out, (Some(job), key), p, payload, None);
        if let Some(e) = event.filter(|e| first.event != Some(*e)) {
            let had = first
                .event
                .map_or("no event".to_string(), |x| x.to_string());
            out.at_record(RVM, c, (Some(job), Some(*key)), || {
                format!("a commit by {job} was deduplicated onto the key's result with {e}, but that result was written with {had}")
            });
        }
    }
}

/// A recorded time (`field`) must equal the one recomputed.
fn time(
    c: &Ctx,
    out: &mut Out,
    job: JobId,
    field: &'static str,
    recorded: Option<SimTime>,
    expected: SimTime,
) {
    if let Some(v) = recorded.filter(|v| *v != expected) {
        let u = c.unit();
        out.job(RVM, c, job, || {
            format!("{job}'s record says {field} {v} {u}, but the configuration and the history give {expected} {u}")
        });
    }
}

//! Intake: how a job enters the queue.
//!
//! Owns: generated arrivals, `[[enqueue]]` entries and `[[burst]]`s turned into enqueue
//! requests, the idempotency key and payload hash they carry, the enqueue-time idempotency
//! outcome recorded in the history (a new job, a dedupe, a refusal, a replaced payload).
//! Does not: decide whether a key is taken (the queue does), draw arrival times (arrivals.rs)
//! or name the explicit entries' tenants and documents (the validated scenario did, once).

use super::kernel::{decrement, Ev, Sim};
use crate::base::ids::{JobId, TenantId};
use crate::history::{Event, Observer};
use crate::model::queue::{EnqueueOutcome, EnqueueRequest};
use crate::model::semantics::QueueSemantics;
use crate::vocab::bugs::Bug;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::Payload;
use crate::vocab::probes::Probe;

/// Where an enqueue comes from. Every job enters through [`Sim::enqueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Origin {
    /// A producer: a generated arrival, an `[[enqueue]]` entry or a `[[burst]]` document.
    Producer,
    /// An operator's reprocess of job `of` (a refusal is the operator's to record).
    Reprocess { of: JobId },
}

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    /// The payload hash the queue and the outbox compare (`hash_ignores_content`: without the
    /// content).
    pub(super) fn payload_hash(&self, payload: &Payload) -> crate::vocab::payload::PayloadHash {
        // A generated document's default payload (a generated arrival's): the model's
        // remembered value, which the queue reads back next.
        if *payload == Payload::of(payload.document) {
            if let Some(hash) = crate::model::job_rows::default_payload(payload.document) {
                return hash;
            }
        }
        if self.bugs.contains(Bug::HashIgnoresContent) {
            return Payload {
                content: 0,
                ..*payload
            }
            .hash(&self.names);
        }
        payload.hash(&self.names)
    }

    pub(super) fn key_for(
        &self,
        tenant: TenantId,
        payload: &Payload,
        version: u32,
    ) -> IdempotencyKey {
        if self.bugs.contains(Bug::TenantlessKeys) {
            IdempotencyKey::tenantless_for_bug_switch(payload.document, version)
        } else {
            IdempotencyKey::new(tenant, payload.document, version).expect("versions are validated")
        }
    }

    /// The enqueue-time idempotency check, then a new job (recorded): the one way into the
    /// queue. A reprocess that finds its key taken records nothing here: the caller records the
    /// refusal.
    pub(super) fn enqueue(
        &mut self,
        tenant: TenantId,
        payload: Payload,
        version: u32,
        invalid: bool,
        origin: Origin,
    ) -> Option<JobId> {
        let reprocess_of = match origin {
            Origin::Producer => None,
            Origin::Reprocess { of } => Some(of),
        };
        let key = self.key_for(tenant, &payload, version);
        let hash = self.payload_hash(&payload);
        let request = EnqueueRequest {
            tenant,
            key,
            payload: hash,
            visible_at: self.now,
            reprocess: reprocess_of.is_some(),
        };
        let (operation, content) = (payload.operation, payload.content);
        match self.queue.enqueue(self.now, request) {
            EnqueueOutcome::Created(job) => {
                self.invalid.push(job, invalid);
                self.payloads.push(job, payload);
                let deadline_at = self.queue.deadline_at(job);
                self.record(Event::Enqueued {
                    job,
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    visible_at: Some(self.now),
                    deadline_at: Some(deadline_at),
                    reprocess_of,
                });
                self.hand_out();
                Some(job)
            }
            _ if reprocess_of.is_some() => {
                self.probes.hit(Probe::IntakeReprocessKeyTaken);
                None
            }
            EnqueueOutcome::Deduplicated { existing } => {
                self.record(Event::EnqueueDeduped {
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    existing,
                });
                None
            }
            EnqueueOutcome::Replaced { existing, replaced } => {
                // The job now carries the request: its payload, and whether it validates.
                let was = self.payloads.get(existing, key.document);
                self.payloads.set(existing, payload);
                self.invalid.set(existing, invalid);
                self.record(Event::EnqueueReplaced {
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    existing,
                    replaced_operation: was.operation,
                    replaced_content: was.content,
                    replaced_payload: Some(replaced),
                });
                None
            }
            EnqueueOutcome::Conflict {
                existing,
                existing_payload,
            } => {
                self.record(Event::EnqueueConflict {
                    tenant,
                    key,
                    operation,
                    content,
                    payload: Some(hash),
                    existing,
                    existing_payload: Some(existing_payload),
                });
                None
            }
        }
    }

    pub(super) fn on_arrival(&mut self) {
        let a = self.arrivals.next(&self.scenario.arrivals);
        let tenant = self.tenant_ids[a.tenant.index()];
        self.enqueue(tenant, a.payload, 1, a.invalid, Origin::Producer);
        if self.arrivals.remaining() > 0 {
            let gap = self.arrivals.next_gap_ms(&self.scenario.arrivals);
            self.schedule(self.now + gap, Ev::Arrival);
        }
    }

    pub(super) fn on_explicit_enqueue(&mut self, index: usize) {
        decrement(&mut self.pending_timed, "pending_timed");
        self.probes.hit(Probe::IntakeExplicit);
        let e = &self.scenario.enqueue[index];
        let (tenant, document) = self.scenario.enqueue_ids(index);
        let payload = match &e.payload {
            Some(text) => Payload::from_text(document, text),
            None => Payload::of(document),
        };
        let (version, invalid) = (e.version, e.invalid);
        self.enqueue(tenant, payload, version, invalid, Origin::Producer);
    }

    /// A burst's documents are numbered after the generated arrivals' and the earlier bursts'.
    pub(super) fn on_burst(&mut self, index: usize) {
        let s = self.scenario;
        let b = &s.burst[index];
        let tenant = s.burst_tenant(index);
        self.probes.hit(Probe::IntakeBurst);
        let first = self.arrivals_total + s.burst[..index].iter().map(|b| b.jobs).sum::<u64>();
        for k in 0..b.jobs {
            let payload = Payload::of(crate::vocab::key::Documents::generated((first + k) as u32));
            self.enqueue(tenant, payload, 1, false, Origin::Producer);
        }
    }
}

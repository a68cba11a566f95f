//! Operator actions and scripted payload changes.
//!
//! Owns: picking an operator action's target, asking the DLQ to authorize a reprocess, the
//! reprocess as a new enqueue and the recording of its refusals; `mutate_payload` script entries.
//! Does not: decide whether a reprocess is allowed, which version it gets or which refusal code
//! applies (the dead-letter model does).

use super::intake::Origin;
use super::kernel::Sim;
use crate::base::ids::JobId;
use crate::history::{Event, Observer};
use crate::model::dead_letter::ReprocessRefusal;
use crate::model::queue::JobState;
use crate::model::semantics::QueueSemantics;
use crate::scenario::OperatorTarget;
use crate::vocab::key::MAX_VERSION;
use crate::vocab::payload::Payload;
use crate::vocab::probes::Probe;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn on_operator(&mut self, index: usize) {
        let action = &self.scenario.operator[index];
        let picked = match (action.job, action.target) {
            (Some(job), _) if action.follow => {
                let newest = self.queue.dead_letters().latest_in_chain(JobId(job));
                if newest != JobId(job) {
                    self.probes.hit(Probe::OperatorFollowChain);
                }
                Some(newest)
            }
            (Some(job), _) => {
                self.probes.hit(Probe::OperatorFixedJob);
                Some(JobId(job))
            }
            (None, Some(OperatorTarget::OldestDeadLettered)) => {
                self.probes.hit(Probe::OperatorOldest);
                self.queue
                    .dead_letters()
                    .entries()
                    .find(|e| e.reprocessed_as.is_none())
                    .map(|e| e.job)
            }
            (None, Some(OperatorTarget::Cancelled)) => {
                self.probes.hit(Probe::OperatorCancelled);
                self.first_cancelled
            }
            (None, None) => None,
        };
        let old = picked.unwrap_or(JobId(u32::MAX));
        let operator = action.operator.clone();
        if old.index() >= self.queue.len() {
            self.probes.hit(Probe::OperatorNoSuchJob);
            self.refuse_reprocess(None, operator, ReprocessRefusal::NoSuchJob);
            return;
        }
        let o = self.queue.job(old);
        let cancelled = o.state == JobState::Cancelled;
        let authorized = self.queue.dead_letters_mut().authorize_reprocess(
            self.now,
            old,
            o.tenant,
            operator.as_deref(),
            cancelled,
        );
        if let Err(refusal) = authorized {
            self.refuse_reprocess(Some(old), operator, refusal);
            return;
        }
        let operator = operator.expect("authorized reprocess has an operator");
        let payload = self.payloads.get(old, o.key.document);
        let invalid = self.invalid.invalid(old);
        // Same tenant, document and content at the DLQ's reprocess version: a new job; the dead
        // one stays dead.
        let version = self.queue.dead_letters().reprocess_version(o.key.version);
        if version > MAX_VERSION {
            let refusal = ReprocessRefusal::VersionExhausted;
            self.refuse_reprocess(Some(old), Some(operator), refusal);
            return;
        }
        let origin = Origin::Reprocess { of: old };
        match self.enqueue(o.tenant, payload, version, invalid, origin) {
            Some(new) => {
                if self.queue.dead_letters().get(old).is_some() {
                    self.queue
                        .dead_letters_mut()
                        .record_reprocess(self.now, old, o.tenant, new, &operator);
                }
                self.probes.hit(Probe::OperatorReprocessed);
                self.record(Event::Reprocessed {
                    old_job: old,
                    new_job: new,
                    operator: operator.into(),
                });
            }
            None => {
                self.refuse_reprocess(Some(old), Some(operator), ReprocessRefusal::VersionExists)
            }
        }
    }

    fn refuse_reprocess(
        &mut self,
        job: Option<JobId>,
        operator: Option<String>,
        refusal: ReprocessRefusal,
    ) {
        self.record(Event::ReprocessRefused {
            job,
            operator: operator.map(Into::into),
            reason: refusal.code(),
        });
    }

    /// `mutate_payload` script entry `index`, which aims at `job`.
    pub(super) fn on_mutate(&mut self, index: usize, job: JobId) {
        let e = &self.scenario.script[index];
        if job.index() >= self.queue.len() {
            self.probes.hit(Probe::MutatePayloadNoJob);
            return;
        }
        self.probes.hit(Probe::MutatePayloadApplied);
        let document = self.queue.job(job).key.document;
        let text = e
            .payload
            .clone()
            .unwrap_or_else(|| format!("mutated at {} ms", self.now));
        let payload = Payload::from_text(document, &text);
        let hash = self.payload_hash(&payload);
        self.payloads.set(job, payload);
        self.queue.mutate_payload(job, hash);
        self.record(Event::PayloadMutated {
            job,
            content: payload.content,
            payload: Some(hash),
        });
    }
}

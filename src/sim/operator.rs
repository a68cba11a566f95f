//! Operator actions and scripted payload changes.
//!
//! Owns: picking an operator action's target, asking the DLQ to authorize a reprocess, the
//! reprocess as a new enqueue (version + 1) and its refusals; `mutate_payload` script entries.
//! Does not: enforce the reprocess rules (the dead-letter model does).

use super::kernel::Sim;
use crate::history::{Event, Observer};
use crate::ids::JobId;
use crate::model::queue::JobState;
use crate::scenario::OperatorTarget;
use crate::vocab::payload::Payload;

impl<'s, O: Observer> Sim<'s, O> {
    pub(super) fn on_operator(&mut self, index: usize) {
        let action = &self.scenario.operator[index];
        let picked = match (action.job, action.target) {
            (Some(job), _) if action.follow => Some(self.dlq.latest_in_chain(JobId(job))),
            (Some(job), _) => Some(JobId(job)),
            (None, Some(OperatorTarget::OldestDeadLettered)) => self
                .dlq
                .entries()
                .iter()
                .find(|e| e.reprocessed_as.is_none())
                .map(|e| e.job),
            (None, Some(OperatorTarget::Cancelled)) => self.first_cancelled,
            (None, None) => None,
        };
        let old = picked.unwrap_or(JobId(u32::MAX));
        let operator = action.operator.clone();
        if old.index() >= self.queue.len() {
            self.record(Event::ReprocessRefused {
                job: None,
                operator: operator.map(Into::into),
                reason: "no_such_job",
            });
            return;
        }
        let tenant = self.queue.job(old).tenant;
        // Bug switch `reprocess_cancelled`: a cancelled job is let through as if dead-lettered.
        let let_through = self.bugs.reprocess_cancelled
            && self.queue.job(old).state == JobState::Cancelled
            && operator.as_deref().is_some_and(|o| !o.trim().is_empty());
        let authorized = self
            .dlq
            .authorize_reprocess(self.now, old, tenant, operator.as_deref());
        if let (Err(refusal), false) = (authorized, let_through) {
            let reason = if self.queue.job(old).state == JobState::Cancelled
                && refusal != crate::model::dead_letter::ReprocessRefusal::MissingOperator
            {
                "cancelled_is_terminal"
            } else {
                refusal.code()
            };
            self.record(Event::ReprocessRefused {
                job: Some(old),
                operator: operator.map(Into::into),
                reason,
            });
            return;
        }
        let operator = operator.expect("authorized reprocess has an operator");
        let o = *self.queue.job(old);
        let payload = self.payloads[old.index()];
        let invalid = self.invalid[old.index()];
        // Same tenant, document and content, version + 1: a new job; the dead one stays dead.
        // Bug switch `reprocess_same_version`: the version is not bumped.
        let version = o.key.version + u32::from(!self.bugs.reprocess_same_version);
        let new = self.enqueue(o.tenant, payload, version, invalid, Some(old));
        match new {
            Some(new) => {
                if self.dlq.get(old).is_some() {
                    self.dlq
                        .record_reprocess(self.now, old, tenant, new, &operator);
                }
                self.record(Event::Reprocessed {
                    old_job: old,
                    new_job: new,
                    operator: operator.into(),
                });
            }
            None => self.record(Event::ReprocessRefused {
                job: Some(old),
                operator: Some(operator.into()),
                reason: "version_exists",
            }),
        }
    }

    pub(super) fn on_mutate(&mut self, index: usize) {
        let e = &self.scenario.script[index];
        let job = JobId(e.job.expect("validated"));
        if job.index() >= self.queue.len() {
            return;
        }
        let document = self.queue.job(job).key.document;
        let text = e
            .payload
            .clone()
            .unwrap_or_else(|| format!("mutated at {} ms", self.now));
        let payload = Payload::from_text(document, &text);
        let hash = self.payload_hash(&payload);
        self.payloads[job.index()] = payload;
        self.queue.mutate_payload(job, hash);
        self.record(Event::PayloadMutated {
            job,
            content: payload.content,
            payload: Some(hash),
        });
    }
}

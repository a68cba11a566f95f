//! The payload each job was submitted with (or last mutated to), which an operator's reprocess
//! submits again.
//!
//! Owns: per job, its payload's operation and content, kept only where they differ from the
//! document's default content (`Payload::of`): a generated arrival, almost every job of a big
//! run, costs nothing here (16 bytes a job before). The document is the job's key's.
//! Does not: hash payloads or decide anything about them (`vocab::payload`, the queue).

use crate::base::ids::{DocumentId, JobId, OperationId};
use crate::vocab::payload::Payload;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Hash)]
pub struct JobPayloads {
    jobs: u32,
    /// (operation, content) of the jobs whose payload is not their document's default.
    other: BTreeMap<u32, (OperationId, u64)>,
}

impl JobPayloads {
    /// Records the payload of the next job created (jobs are numbered 0, 1, 2, ...).
    pub fn push(&mut self, job: JobId, payload: Payload) {
        assert_eq!(job.0, self.jobs, "jobs are created in id order");
        self.jobs += 1;
        self.set(job, payload);
    }

    /// The payload of `job`, whose key names `document`.
    pub fn get(&self, job: JobId, document: DocumentId) -> Payload {
        assert!(job.0 < self.jobs, "job {} was never created", job.0);
        match self.other.get(&job.0) {
            Some(&(operation, content)) => Payload {
                document,
                operation,
                content,
            },
            None => Payload::of(document),
        }
    }

    /// `job`'s payload changes (the fault `mutate_payload`); its document stays the key's.
    pub fn set(&mut self, job: JobId, payload: Payload) {
        if payload == Payload::of(payload.document) {
            self.other.remove(&job.0);
        } else {
            self.other
                .insert(job.0, (payload.operation, payload.content));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_payloads_cost_nothing_and_others_come_back() {
        let mut p = JobPayloads::default();
        let d = DocumentId(5);
        p.push(JobId(0), Payload::of(d));
        let other = Payload {
            operation: OperationId(3),
            ..Payload::from_text(d, "x")
        };
        p.push(JobId(1), other);
        assert_eq!(p.other.len(), 1);
        assert_eq!(p.get(JobId(0), d), Payload::of(d));
        assert_eq!(p.get(JobId(1), d), other);
        p.set(JobId(1), Payload::of(d));
        assert_eq!(p.get(JobId(1), d), Payload::of(d));
        assert!(p.other.is_empty());
        p.set(JobId(0), other);
        assert_eq!(p.get(JobId(0), d), other);
    }
}

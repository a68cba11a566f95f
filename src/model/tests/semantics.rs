//! The chapter's queue behind the queue-semantics seam: what a profile rule writes through
//! `chapter_mut` is what the seam then answers.
//! Owns: tests only.

use crate::ids::{DocumentId, JobId, TenantId};
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::queue::{EnqueueRequest, LeaseOutcome, Queue, QueueConfig};
use crate::model::semantics::{ChapterQueue, QueueSemantics};
use crate::vocab::config::Jitter;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

/// A profile rule reaches the chapter's queue through the seam (River's rescuer, BullMQ's
/// stalled count): a job it dooms is handed back for the DLQ at its next lease.
#[test]
fn a_profile_rule_writes_to_the_queue_the_seam_leases_from() {
    let mut chapter = ChapterQueue {
        queue: Queue::new(QueueConfig::new(1000, 30_000, 3)),
        policy: super::retry::policy(Jitter::None),
        dlq: DeadLetterQueue::default(),
    };
    let tenant = TenantId(0);
    chapter.enqueue(
        0,
        EnqueueRequest {
            tenant,
            key: IdempotencyKey::new(tenant, DocumentId(1), 1).unwrap(),
            payload: PayloadHash(1),
            visible_at: 0,
        },
    );
    chapter
        .chapter_mut()
        .expect("the chapter's queue is reachable")
        .doom(JobId(0));
    assert_eq!(
        chapter.lease_next(0),
        LeaseOutcome::AttemptsExhausted {
            job: JobId(0),
            attempts: 0
        }
    );
}

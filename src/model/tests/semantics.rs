//! The chapter's queue behind the queue-semantics seam: every question the kernel asks through
//! [`QueueSemantics`] gets the answer of the queue, policy and DLQ underneath, and what a profile
//! rule writes through `chapter_mut` is what the seam then answers.
//! Owns: tests only.

use crate::ids::{DocumentId, Fence, JobId, TenantId};
use crate::model::dead_letter::{DeadLetterQueue, DlqReason, StoredReason};
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, ExpiryOutcome, JobState, LeaseOutcome, Queue, QueueConfig,
};
use crate::model::retry::{Decision, ErrorKind};
use crate::model::semantics::{ChapterQueue, QueueSemantics};
use crate::vocab::config::Jitter;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

/// Lease 1000 ms, deadline 30 s, 3 attempts, backoff 100 ms doubling, no jitter.
fn chapter() -> ChapterQueue {
    ChapterQueue {
        queue: Queue::new(QueueConfig::new(1000, 30_000, 3)),
        policy: super::retry::policy(Jitter::None),
        dlq: DeadLetterQueue::default(),
    }
}

fn enqueue(c: &mut ChapterQueue, now: u64, doc: u32, visible_at: u64) -> EnqueueOutcome {
    let tenant = TenantId(0);
    c.enqueue(
        now,
        EnqueueRequest {
            tenant,
            key: IdempotencyKey::new(tenant, DocumentId(doc), 1).unwrap(),
            payload: PayloadHash(u64::from(doc)),
            visible_at,
        },
    )
}

fn leased(c: &mut ChapterQueue, now: u64) -> (JobId, Fence, u64) {
    match c.lease_next(now) {
        LeaseOutcome::Leased {
            job,
            fence,
            lease_until,
            ..
        } => (job, fence, lease_until),
        other => panic!("expected a lease, got {other:?}"),
    }
}

/// A profile rule reaches the chapter's queue through the seam (River's rescuer, BullMQ's
/// stalled count): a job it dooms is handed back for the DLQ at its next lease.
#[test]
fn a_profile_rule_writes_to_the_queue_the_seam_leases_from() {
    let mut chapter = chapter();
    enqueue(&mut chapter, 0, 1, 0);
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

/// Intake, reads and visibility through the seam.
#[test]
fn the_seam_reads_the_chapters_queue() {
    let mut c = chapter();
    assert!(c.is_empty() && c.all_terminal());
    assert_eq!(enqueue(&mut c, 0, 1, 0), EnqueueOutcome::Created(JobId(0)));
    assert_eq!(
        enqueue(&mut c, 100, 2, 500),
        EnqueueOutcome::Created(JobId(1))
    );
    assert_eq!((c.len(), c.is_empty(), c.depth()), (2, false, 1));
    assert!(!c.all_terminal());
    assert_eq!(c.deadline_at(JobId(1)), 30_100);
    assert_eq!(c.job(JobId(1)).visible_at, 500);
    assert!(!c.make_visible(499, JobId(1), 500), "too early");
    assert!(c.make_visible(500, JobId(1), 500));
    assert_eq!(c.depth(), 2);
    c.mutate_payload(JobId(1), PayloadHash(9));
    assert_eq!(c.job(JobId(1)).payload, PayloadHash(9));
}

/// Leases, renewals, expiry and the holder's transitions through the seam.
#[test]
fn the_seam_leases_renews_and_ends_jobs_on_the_chapters_queue() {
    let mut c = chapter();
    for doc in [1, 2, 3, 4] {
        enqueue(&mut c, 0, doc, 0);
    }
    let (a, fa, until) = leased(&mut c, 0);
    assert_eq!((a, until), (JobId(0), 1000));
    assert_eq!(c.heartbeat(600, a, fa), Ok(1600));
    assert_eq!(c.expiry_check_at(1600), Some(1601));
    assert_eq!(
        c.check_expiry(1600, a, fa),
        ExpiryOutcome::StillLeased { lease_until: 1600 }
    );
    assert_eq!(c.check_expiry(1601, a, fa), ExpiryOutcome::Expired);
    assert_eq!(c.depth(), 4);
    let (a2, fa2, _) = leased(&mut c, 1700);
    assert_eq!(a2, a);
    c.retry_at(1700, a, fa2, 2000).unwrap();
    assert_eq!(
        (c.job(a).state, c.job(a).visible_at),
        (JobState::Waiting, 2000)
    );
    let (b, fb, _) = leased(&mut c, 1700);
    c.ack(1800, b, fb).unwrap();
    let (d, fd, _) = leased(&mut c, 1800);
    c.dead_letter(1900, d, fd).unwrap();
    let (e, fe, _) = leased(&mut c, 1900);
    c.cancel(1950, e, fe).unwrap();
    let states = [b, d, e].map(|j| c.job(j).state);
    assert_eq!(
        states,
        [JobState::Acked, JobState::DeadLettered, JobState::Cancelled]
    );
    assert!(!c.all_terminal(), "job 0 waits for its retry");
}

/// The retry policy and the DLQ through the seam.
#[test]
fn the_seam_judges_failures_with_the_chapters_policy_and_files_in_its_dlq() {
    let mut c = chapter();
    enqueue(&mut c, 0, 1, 0);
    assert_eq!(c.policy().attempts_max, 3);
    let e = ErrorKind::ProviderUnavailable;
    assert_eq!(c.judged_error(30_000, JobId(0), 1, e), e);
    assert_eq!(
        c.judged_error(30_001, JobId(0), 1, e),
        ErrorKind::DeadlineExceeded
    );
    assert_eq!(c.decide(e, 2, 0.0), Decision::Retry { delay_ms: 200 });
    assert_eq!(
        c.decide(e, 3, 0.0),
        Decision::DeadLetter(DlqReason::MaxAttemptsExceeded)
    );
    c.dead_letters_mut()
        .push(10, JobId(0), StoredReason::Code(DlqReason::PermanentError));
    assert_eq!(c.dead_letters().len(), 1);
    assert_eq!(c.dlq.len(), 1, "the same DLQ");
}

//! The chapter's queue behind the queue-semantics seam: every question the kernel asks through
//! [`QueueSemantics`] gets the answer of the queue, policy and DLQ underneath, and a stale write
//! is refused by its fence.
//! Owns: tests only.

use crate::base::ids::{DocumentId, Fence, JobId, TenantId, WorkerId};
use crate::model::dead_letter::{DeadLetterQueue, DlqReason, StoredReason};
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, JobState, LeaseOutcome, Queue, QueueConfig, Rejection,
};
use crate::model::retry::{Decision, ErrorKind};
use crate::model::semantics::{ChapterQueue, LeaseCheck, QueueSemantics, Refused, Write, WriteOp};
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
            reprocess: false,
        },
    )
}

fn leased(c: &mut ChapterQueue, now: u64) -> (JobId, Fence, u64) {
    match c.lease_next(now, WorkerId(0)) {
        LeaseOutcome::Leased {
            job,
            fence,
            lease_until,
            ..
        } => (job, fence, lease_until),
        other => panic!("expected a lease, got {other:?}"),
    }
}

fn write(job: JobId, fence: Fence) -> Write {
    Write {
        worker: WorkerId(0),
        job,
        fence,
        coin: 0,
    }
}

/// Every write is fenced: a stale one is rejected with the fence it lost to, and no write asks
/// for a coin.
#[test]
fn the_chapters_queue_refuses_a_stale_write_by_its_fence() {
    let mut c = chapter();
    enqueue(&mut c, 0, 1, 0);
    let (a, old, _) = leased(&mut c, 0);
    assert_eq!(c.check_lease(1001, a, old), LeaseCheck::Expired);
    let (_, new, _) = leased(&mut c, 1001);
    for op in [WriteOp::Heartbeat, WriteOp::Ack, WriteOp::Retry] {
        assert!(!c.write_draws_coin(op, a, old));
    }
    let stale = Refused::Rejected(Rejection::StaleFence {
        held: new,
        presented: old,
    });
    assert_eq!(c.ack(1100, write(a, old)), Err(stale));
    assert_eq!(c.heartbeat(1100, write(a, old)), Err(stale));
    assert_eq!(c.retry_at(1100, write(a, old), 2000), Err(stale));
    assert_eq!(c.dead_letter(1100, write(a, old)), Err(stale));
    assert_eq!(c.ack(1100, write(a, new)), Ok(()));
    assert_eq!(
        c.ack(1200, write(a, new)),
        Err(Refused::Rejected(Rejection::Terminal(JobState::Acked)))
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
    assert_eq!(c.heartbeat(600, write(a, fa)), Ok(1600));
    assert_eq!(c.lease_check_at(a), Some(1601));
    assert_eq!(c.check_lease(1600, a, fa), LeaseCheck::Again(1601));
    assert_eq!(c.check_lease(1601, a, fa), LeaseCheck::Expired);
    assert_eq!(
        c.check_lease(1602, a, fa),
        LeaseCheck::Nothing,
        "already taken back"
    );
    assert_eq!(c.depth(), 4);
    let (a2, fa2, _) = leased(&mut c, 1700);
    assert_eq!(a2, a);
    c.retry_at(1700, write(a, fa2), 2000).unwrap();
    assert_eq!(
        (c.job(a).state, c.job(a).visible_at),
        (JobState::Waiting, 2000)
    );
    let (b, fb, _) = leased(&mut c, 1700);
    c.ack(1800, write(b, fb)).unwrap();
    let (d, fd, _) = leased(&mut c, 1800);
    c.dead_letter(1900, write(d, fd)).unwrap();
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
    assert_eq!(
        c.decide(0, JobId(0), 2, e, 0.0),
        Decision::Retry { delay_ms: 200 }
    );
    assert_eq!(
        c.decide(0, JobId(0), 3, e, 0.0),
        Decision::DeadLetter(DlqReason::MaxAttemptsExceeded)
    );
    c.dead_letters_mut()
        .push(10, JobId(0), StoredReason::Code(DlqReason::PermanentError));
    assert_eq!(c.dead_letters().len(), 1);
    assert_eq!(c.dlq.len(), 1, "the same DLQ");
}

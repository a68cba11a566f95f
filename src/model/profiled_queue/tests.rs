//! `ProfiledQueue`'s rules through the seam: which scenarios need it, each write's verdict as
//! the kernel receives it, the attempt a failure-counting profile decides with, and rescues.
//! Owns: tests only.

use super::ProfiledQueue;
use crate::base::ids::{DocumentId, Fence, JobId, TenantId, WorkerId};
use crate::model::dead_letter::DeadLetterQueue;
use crate::model::queue::{EnqueueRequest, JobState, LeaseOutcome, Queue, QueueConfig, Rejection};
use crate::model::retry::{Decision, ErrorKind, RetryPolicy};
use crate::model::semantics::{
    ChapterQueue, LeaseCheck, QueueSemantics, Refused, Rescued, Write, WriteOp,
};
use crate::profile::{
    backoff, BackoffFormula, Expiry, ExpiryKind, OnExpiry, Profile, Semantics, WriteGuard,
};
use crate::vocab::bugs::BugSet;
use crate::vocab::config::Jitter;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

/// durasim's defaults with `change` applied, on a queue with lease 1000 ms and one job.
fn queue(change: impl FnOnce(&mut Semantics)) -> ProfiledQueue {
    let mut sem = Profile::Durasim.defaults();
    change(&mut sem);
    let chapter = ChapterQueue {
        queue: Queue::new(QueueConfig::new(1000, 30_000, u32::MAX)),
        policy: RetryPolicy {
            attempts_max: 10,
            backoff_base_ms: 100,
            backoff_cap_ms: 2000,
            jitter: Jitter::None,
            permanent_retried: false,
            bugs: BugSet::EMPTY,
        },
        dlq: DeadLetterQueue::default(),
    };
    let mut q = ProfiledQueue::new(chapter, sem);
    let tenant = TenantId(0);
    q.enqueue(
        0,
        EnqueueRequest {
            tenant,
            key: IdempotencyKey::new(tenant, DocumentId(1), 1).unwrap(),
            payload: PayloadHash(1),
            visible_at: 0,
            reprocess: false,
        },
    );
    q
}

fn lease(q: &mut ProfiledQueue, now: u64, worker: u32) -> Fence {
    match q.lease_next(now, WorkerId(worker)) {
        LeaseOutcome::Leased { fence, .. } => fence,
        other => panic!("expected a lease, got {other:?}"),
    }
}

fn write(worker: u32, fence: Fence) -> Write {
    Write {
        worker: WorkerId(worker),
        job: JobId(0),
        fence,
        coin: 0,
    }
}

/// Worker 0's lease ran out at 1001 and worker 1 holds the job: (old fence, new fence).
fn zombie(q: &mut ProfiledQueue) -> (Fence, Fence) {
    let old = lease(q, 0, 0);
    assert_eq!(q.check_lease(1001, JobId(0), old), LeaseCheck::Expired);
    (old, lease(q, 1001, 1))
}

#[test]
fn only_a_profile_that_differs_from_the_chapters_queue_needs_one() {
    assert!(!ProfiledQueue::needed(&Profile::Durasim.defaults()));
    for p in [
        Profile::River,
        Profile::Bullmq,
        Profile::Sidekiq,
        Profile::Sqs,
    ] {
        assert!(ProfiledQueue::needed(&p.defaults()), "{p:?}");
    }
    let mut by_id = Profile::Durasim.defaults();
    by_id.stale.ack = WriteGuard::ById;
    assert!(ProfiledQueue::needed(&by_id));
    let mut pow4 = Profile::Durasim.defaults();
    pow4.backoff.formula = BackoffFormula::Pow4;
    assert!(ProfiledQueue::needed(&pow4));
    let mut kept = Profile::Durasim.defaults();
    kept.dlq.retention_ms = Some(10);
    assert!(ProfiledQueue::needed(&kept));
}

/// A stale ack by id finishes the job another worker runs; a fenced retry is then refused.
#[test]
fn a_stale_write_by_id_is_applied_and_a_fenced_one_refused() {
    let mut q = queue(|s| s.stale.ack = WriteGuard::ById);
    let (old, new) = zombie(&mut q);
    assert!(!q.write_draws_coin(WriteOp::Ack, JobId(0), old));
    assert_eq!(q.ack(1100, write(0, old)), Ok(()));
    assert_eq!(q.job(JobId(0)).state, JobState::Acked);
    assert_eq!(
        q.retry_at(1200, write(1, new), 5000),
        Err(Refused::Rejected(Rejection::Terminal(JobState::Acked)))
    );
}

/// `if_same_process`: the process that took the lease may write with an old token, no other.
#[test]
fn a_same_process_guard_ignores_another_process() {
    let mut q = queue(|s| s.stale.heartbeat = WriteGuard::IfSameProcess);
    let (old, _) = zombie(&mut q);
    assert_eq!(q.heartbeat(1100, write(0, old)), Err(Refused::Ignored));
    assert_eq!(q.heartbeat(1100, write(1, old)), Ok(2100));
}

/// `may_apply` asks for a coin only for a stale write, and applies it under the permille.
#[test]
fn may_apply_draws_a_coin_for_a_stale_write_only() {
    let mut q = queue(|s| {
        s.stale.ack = WriteGuard::MayApply;
        s.stale.apply_permille = 300;
    });
    let (old, new) = zombie(&mut q);
    assert!(q.write_draws_coin(WriteOp::Ack, JobId(0), old));
    assert!(!q.write_draws_coin(WriteOp::Ack, JobId(0), new));
    assert!(!q.write_draws_coin(WriteOp::Heartbeat, JobId(0), old));
    let coin = |c| Write {
        coin: c,
        ..write(0, old)
    };
    assert_eq!(q.ack(1100, coin(300)), Err(Refused::Ignored));
    assert_eq!(q.ack(1100, coin(299)), Ok(()));
}

/// A lock with a TTL: past `lease_until` its own holder's write finds no lock.
#[test]
fn a_lapsed_lock_refuses_its_holder() {
    let mut q = queue(|s| {
        s.lock_ttl = true;
        s.expiry = Expiry::NEVER;
    });
    let fence = lease(&mut q, 0, 0);
    assert_eq!(
        q.lease_check_at(JobId(0)),
        None,
        "nothing takes the job back"
    );
    assert_eq!(q.ack(1001, write(0, fence)), Err(Refused::LockExpired));
    assert_eq!(q.ack(1000, write(0, fence)), Ok(()));
}

/// A profile that counts failures decides the second failure as attempt 2, whatever the lease.
#[test]
fn a_failure_counting_profile_decides_with_its_failures() {
    let mut q = queue(|s| *s = Profile::Sidekiq.defaults());
    let b = Profile::Sidekiq.defaults().backoff;
    let e = ErrorKind::ProviderUnavailable;
    let draw = 0.5;
    let delay = |n| Decision::Retry {
        delay_ms: backoff::delay_ms(&b, n, 0, draw),
    };
    assert_ne!(delay(1), delay(2));
    lease(&mut q, 0, 0);
    assert_eq!(q.decide(0, JobId(0), 1, e, draw), delay(1));
    assert_eq!(q.decide(0, JobId(0), 1, e, draw), delay(2));
}

/// A sweeper's rescue after a retry delay holds the job, then releases it; a stall past the
/// limit dooms it for the DLQ at its next lease.
#[test]
fn rescues_hold_or_doom_the_job() {
    let mut q = queue(|s| {
        s.expiry = Expiry {
            kind: ExpiryKind::Sweep,
            sweep_ms: 5000,
            liveness_ms: 0,
        };
        s.on_expiry = OnExpiry::Retry;
        s.backoff.jitter = crate::profile::JitterMode::None;
    });
    let fence = lease(&mut q, 0, 0);
    assert_eq!(q.lease_check_at(JobId(0)), Some(5000));
    assert_eq!(
        q.check_lease(4999, JobId(0), fence),
        LeaseCheck::Again(5000)
    );
    assert_eq!(q.check_lease(5000, JobId(0), fence), LeaseCheck::Rescue);
    assert!(!q.rescue_draws_jitter());
    assert_eq!(
        q.rescue(5000, JobId(0), fence, 0.0),
        Rescued::HeldUntil(5100)
    );
    assert_eq!(q.depth(), 0, "held: not in the depth");
    assert!(q.release_rescued(JobId(0), fence));
    assert_eq!(q.depth(), 1);

    let mut q = queue(|s| {
        s.on_expiry = OnExpiry::Stall;
        s.stall_limit = 0;
        s.expiry = Expiry {
            kind: ExpiryKind::Sweep,
            sweep_ms: 5000,
            liveness_ms: 0,
        };
    });
    let fence = lease(&mut q, 0, 0);
    assert_eq!(q.rescue(5000, JobId(0), fence, 0.0), Rescued::Ready);
    assert!(matches!(
        q.lease_next(5000, WorkerId(1)),
        LeaseOutcome::AttemptsExhausted { .. }
    ));
}

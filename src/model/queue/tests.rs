//! The queue's unit tests: leases, fences, expiry, deadlines, idempotent enqueue and depth.

use super::*;
use crate::base::ids::DocumentId;

fn config() -> QueueConfig {
    QueueConfig::new(1000, 30_000, 3)
}

fn request(doc: u32, payload: u64, visible_at: SimTime) -> EnqueueRequest {
    let tenant = TenantId(0);
    EnqueueRequest {
        tenant,
        key: IdempotencyKey::new(tenant, DocumentId(doc), 1).unwrap(),
        payload: PayloadHash(payload),
        visible_at,
        reprocess: false,
    }
}

fn leased(q: &mut Queue, now: SimTime) -> (JobId, Fence) {
    match q.lease_next(now) {
        LeaseOutcome::Leased { job, fence, .. } => (job, fence),
        other => panic!("expected a lease, got {other:?}"),
    }
}

// Checklist: "divergent payload under the same key is rejected, not silently reused" (entry).
#[test]
fn enqueue_dedupes_same_payload_and_rejects_a_different_one() {
    let mut q = Queue::new(config());
    assert_eq!(
        q.enqueue(0, request(1, 7, 0)),
        EnqueueOutcome::Created(JobId(0))
    );
    assert_eq!(
        q.enqueue(1, request(1, 7, 1)),
        EnqueueOutcome::Deduplicated { existing: JobId(0) }
    );
    assert_eq!(
        q.enqueue(2, request(1, 8, 2)),
        EnqueueOutcome::Conflict {
            existing: JobId(0),
            existing_payload: PayloadHash(7)
        }
    );
    assert_eq!(q.len(), 1);
    let mut broken = Queue::new(QueueConfig {
        bugs: Bug::ReuseOnConflict.into(),
        ..config()
    });
    broken.enqueue(0, request(1, 7, 0));
    assert_eq!(
        broken.enqueue(2, request(1, 8, 2)),
        EnqueueOutcome::Deduplicated { existing: JobId(0) }
    );
}

#[test]
fn lease_order_is_visible_at_then_job_id_and_depth_counts_ready_jobs() {
    let mut q = Queue::new(config());
    q.enqueue(0, request(1, 1, 0));
    q.enqueue(0, request(2, 2, 0));
    q.enqueue(0, request(3, 3, 50));
    assert_eq!(q.depth(), 2);
    assert_eq!(leased(&mut q, 0).0, JobId(0));
    assert_eq!(q.depth(), 1);
    assert_eq!(leased(&mut q, 0).0, JobId(1));
    assert_eq!(
        q.lease_next(10),
        LeaseOutcome::Empty,
        "job 2 not visible yet"
    );
    assert!(!q.make_visible(10, JobId(2), 50), "too early");
    assert!(q.make_visible(50, JobId(2), 50));
    assert_eq!(leased(&mut q, 50).0, JobId(2));
}

// Checklist: "every job has lease, heartbeat and deadline" and the fence rejects zombies.
#[test]
fn fencing_tokens_are_monotonic_and_only_the_current_one_is_accepted() {
    let mut q = Queue::new(config());
    q.enqueue(0, request(1, 1, 0));
    let (job, f1) = leased(&mut q, 0);
    assert_eq!(q.heartbeat(600, job, f1), Ok(1600));
    assert_eq!(
        q.check_expiry(1001, job, f1),
        ExpiryOutcome::StillLeased { lease_until: 1600 }
    );
    assert_eq!(q.check_expiry(1601, job, f1), ExpiryOutcome::Expired);
    assert_eq!(q.depth(), 1);
    let (job2, f2) = leased(&mut q, 1700);
    assert_eq!(job2, job);
    assert!(f2 > f1);
    // The zombie wakes with its old token.
    let stale = Rejection::StaleFence {
        held: f2,
        presented: f1,
    };
    assert_eq!(q.heartbeat(1800, job, f1), Err(stale));
    assert_eq!(q.ack(1800, job, f1), Err(stale));
    assert_eq!(q.retry_at(1800, job, f1, 1900), Err(stale));
    assert_eq!(q.ack(1810, job, f2), Ok(()));
    assert_eq!(
        q.ack(1820, job, f2),
        Err(Rejection::Terminal(JobState::Acked))
    );
    assert_eq!(q.check_expiry(2800, job, f2), ExpiryOutcome::Stale);
    assert!(q.all_terminal());
}

#[test]
fn without_fencing_a_zombie_ack_is_accepted() {
    let mut q = Queue::new(QueueConfig {
        bugs: Bug::NoFencing.into(),
        ..config()
    });
    q.enqueue(0, request(1, 1, 0));
    let (job, f1) = leased(&mut q, 0);
    assert_eq!(q.check_expiry(1001, job, f1), ExpiryOutcome::Expired);
    let (_, _f2) = leased(&mut q, 1001);
    assert_eq!(q.ack(1500, job, f1), Ok(()));
}

// "deadlineAt is an absolute ceiling from creation, independent of the attempts left."
#[test]
fn a_job_past_its_deadline_is_cancelled_when_someone_tries_to_lease_it() {
    let mut q = Queue::new(config());
    q.enqueue(0, request(1, 1, 0));
    assert_eq!(
        q.lease_next(30_001),
        LeaseOutcome::Cancelled {
            job: JobId(0),
            deadline_at: 30_000
        }
    );
    assert_eq!(q.job(JobId(0)).state, JobState::Cancelled);
    assert_eq!(q.depth(), 0);
    assert_eq!(q.lease_next(30_001), LeaseOutcome::Empty);

    let mut broken = Queue::new(QueueConfig {
        bugs: Bug::SkipDeadlineCheck.into(),
        ..config()
    });
    broken.enqueue(0, request(1, 1, 0));
    assert!(matches!(
        broken.lease_next(30_001),
        LeaseOutcome::Leased { .. }
    ));
}

#[test]
fn an_expired_job_out_of_attempts_is_handed_back_for_the_dlq() {
    let mut q = Queue::new(config());
    q.enqueue(0, request(1, 1, 0));
    let mut now = 0;
    for attempt in 1..=3 {
        let (job, fence) = leased(&mut q, now);
        assert_eq!(q.job(job).attempt, attempt);
        now += 1001;
        assert_eq!(q.check_expiry(now, job, fence), ExpiryOutcome::Expired);
    }
    assert_eq!(
        q.lease_next(now),
        LeaseOutcome::AttemptsExhausted {
            job: JobId(0),
            attempts: 3
        }
    );
    assert_eq!(q.job(JobId(0)).state, JobState::DeadLettered);
}

#[test]
fn retry_waits_for_its_visible_at() {
    let mut q = Queue::new(config());
    q.enqueue(0, request(1, 1, 0));
    let (job, fence) = leased(&mut q, 0);
    q.retry_at(100, job, fence, 200).unwrap();
    assert_eq!(q.depth(), 0);
    assert_eq!(q.lease_next(150), LeaseOutcome::Empty);
    assert!(q.make_visible(200, job, 200));
    assert!(matches!(
        q.lease_next(200),
        LeaseOutcome::Leased { attempt: 2, .. }
    ));
}

/// A known key under each uniqueness mode: resolved against the key's newest job, which a
/// second job replaces as the one later submits meet.
#[test]
fn a_known_key_is_resolved_against_its_newest_job_by_the_mode() {
    let with = |unique| {
        Queue::new(QueueConfig {
            unique,
            ..QueueConfig::new(1000, 30_000, 3)
        })
    };
    let mut q = with(Unique::None);
    assert_eq!(
        q.enqueue(0, request(7, 1, 0)),
        EnqueueOutcome::Created(JobId(0))
    );
    assert_eq!(
        q.enqueue(1, request(8, 1, 0)),
        EnqueueOutcome::Created(JobId(1))
    );
    assert_eq!(
        q.enqueue(2, request(7, 2, 0)),
        EnqueueOutcome::Created(JobId(2))
    );

    let mut q = with(Unique::WhileActive);
    q.enqueue(0, request(7, 1, 0));
    let (job, fence) = leased(&mut q, 0);
    // Live: deduplicated whatever the payload (queues compare keys).
    let dedupe = EnqueueOutcome::Deduplicated { existing: JobId(0) };
    assert_eq!(q.enqueue(1, request(7, 2, 0)), dedupe);
    q.ack(2, job, fence).unwrap();
    assert_eq!(
        q.enqueue(3, request(7, 1, 0)),
        EnqueueOutcome::Created(JobId(1))
    );
    // The newest job (1) is live: the next submit meets it, not the acked job 0.
    let dedupe = EnqueueOutcome::Deduplicated { existing: JobId(1) };
    assert_eq!(q.enqueue(4, request(7, 1, 0)), dedupe);

    let mut q = with(Unique::ConflictWhileRunning);
    q.enqueue(0, request(7, 1, 0));
    assert_eq!(
        q.enqueue(1, request(7, 1, 0)),
        EnqueueOutcome::Conflict {
            existing: JobId(0),
            existing_payload: PayloadHash(1)
        }
    );
}

// A job a rescue holds (`Reopen::Hold`) is still under its old lease as the history tells it
// (its end is recorded at the release): a submit of its key under `while_waiting` makes a new
// job, as for a leased one, not a dedupe onto a job the history shows leased (swarm seeds
// 270194, 300138). Released, it waits in the ready line and a submit is deduplicated.
#[test]
fn a_job_held_by_a_rescue_counts_as_leased_for_uniqueness() {
    let cfg = QueueConfig {
        unique: Unique::WhileWaiting,
        ..config()
    };
    let mut q = Queue::new(cfg);
    assert_eq!(
        q.enqueue(0, request(1, 7, 0)),
        EnqueueOutcome::Created(JobId(0))
    );
    let (job, _) = leased(&mut q, 0);
    q.reopen(1001, job, Reopen::Hold, true);
    assert_eq!(q.state(job), JobState::Waiting);
    assert_eq!(
        q.enqueue(1002, request(1, 7, 1002)),
        EnqueueOutcome::Created(JobId(1))
    );
    let mut q = Queue::new(cfg);
    q.enqueue(0, request(1, 7, 0));
    let (job, _) = leased(&mut q, 0);
    q.reopen(1001, job, Reopen::Hold, true);
    assert!(q.release(job));
    assert_eq!(
        q.enqueue(1002, request(1, 7, 1002)),
        EnqueueOutcome::Deduplicated { existing: job }
    );
}

// An operator's reprocess takes a new key version: one that finds its key's job waiting under
// `replace` is refused and leaves that job's payload alone (swarm seed 317850: the waiting job
// then committed the dead job's payload, which no record gave it). A producer's submit replaces.
#[test]
fn a_reprocess_never_replaces_a_waiting_job() {
    let cfg = QueueConfig {
        unique: Unique::Replace,
        ..config()
    };
    let mut q = Queue::new(cfg);
    q.enqueue(0, request(1, 7, 0));
    let reprocess = EnqueueRequest {
        reprocess: true,
        ..request(1, 8, 1)
    };
    assert_eq!(
        q.enqueue(1, reprocess),
        EnqueueOutcome::Conflict {
            existing: JobId(0),
            existing_payload: PayloadHash(7)
        }
    );
    assert_eq!(q.payload(JobId(0)), PayloadHash(7));
    assert_eq!(
        q.enqueue(2, request(1, 8, 2)),
        EnqueueOutcome::Replaced {
            existing: JobId(0),
            replaced: PayloadHash(7)
        }
    );
    assert_eq!(q.payload(JobId(0)), PayloadHash(8));
}

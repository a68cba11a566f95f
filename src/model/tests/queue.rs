//! The queue's wake-ups, when every job is done, what the holder of an expired lease may still
//! do, and the `deadline_tripled` defect, pinned.
//! Owns: tests only.

use crate::ids::{DocumentId, JobId, SimTime, TenantId};
use crate::model::queue::{EnqueueRequest, ExpiryOutcome, LeaseOutcome, Queue, QueueConfig};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

fn request(doc: u32, visible_at: SimTime) -> EnqueueRequest {
    let tenant = TenantId(0);
    EnqueueRequest {
        tenant,
        key: IdempotencyKey::new(tenant, DocumentId(doc), 1).unwrap(),
        payload: PayloadHash(u64::from(doc)),
        visible_at,
    }
}

/// A wake-up is acted on only for a waiting job, at the visible time it was set for, once that
/// time has come; each condition alone refuses it.
#[test]
fn a_wake_up_for_a_job_that_moved_on_or_came_early_changes_nothing() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.enqueue(0, request(1, 50));
    assert!(!q.make_visible(60, JobId(0), 40), "set for another time");
    assert!(!q.make_visible(40, JobId(0), 50), "too early");
    assert_eq!(q.depth(), 0);
    assert!(q.make_visible(50, JobId(0), 50));
    assert_eq!(q.depth(), 1);
    assert!(!q.make_visible(50, JobId(0), 50), "no longer waiting");
    assert_eq!(q.depth(), 1, "a job is counted ready once");
}

/// The `deadline_tripled` switch plants exactly the defect it names: three deadlines after
/// enqueue instead of one.
#[test]
fn the_deadline_tripled_defect_is_three_deadlines() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.enqueue(100, request(1, 100));
    let job = *q.job(JobId(0));
    assert_eq!(job.deadline_at(&QueueConfig::new(1000, 30_000, 3)), 30_100);
    let tripled = QueueConfig {
        bug_deadline_tripled: true,
        ..QueueConfig::new(1000, 30_000, 3)
    };
    assert_eq!(job.deadline_at(&tripled), 90_100);
}

/// The kernel's quiescence asks the queue whether every job is terminal: not while one waits or
/// is leased.
#[test]
fn all_terminal_only_once_every_job_is_done() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    assert!(q.all_terminal(), "no job, nothing left to do");
    q.enqueue(0, request(1, 0));
    assert!(!q.all_terminal(), "ready");
    let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
        panic!("a ready job is leased");
    };
    assert!(!q.all_terminal(), "leased");
    q.ack(10, job, fence).unwrap();
    assert!(q.all_terminal());
}

/// The holder of a lease that ran out may still ack (nobody else holds the job yet): the job is
/// done, out of the depth, and its old entry in the ready line is never leased.
#[test]
fn a_job_acked_after_its_lease_ran_out_is_never_leased_again() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.enqueue(0, request(1, 0));
    let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
        panic!("a ready job is leased");
    };
    assert_eq!(q.check_expiry(1001, job, fence), ExpiryOutcome::Expired);
    assert_eq!(q.depth(), 1);
    q.ack(1002, job, fence).unwrap();
    assert_eq!(q.depth(), 0);
    assert_eq!(q.lease_next(1003), LeaseOutcome::Empty);
}

/// The holder of a lease that ran out may still ask for a retry: the job leaves the ready line
/// (the depth counts it no more), waits for its new visible time, and is then leased once, at
/// that visible time, not at the one it had before.
#[test]
fn a_retry_after_the_lease_ran_out_takes_the_job_out_of_the_ready_line() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.enqueue(0, request(1, 0));
    let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
        panic!("a ready job is leased");
    };
    assert_eq!(q.check_expiry(1001, job, fence), ExpiryOutcome::Expired);
    assert_eq!(q.depth(), 1);
    q.retry_at(1002, job, fence, 1500).unwrap();
    assert_eq!(q.depth(), 0, "waiting, not ready");
    assert!(q.make_visible(1500, job, 1500));
    assert_eq!(q.depth(), 1);
    assert!(matches!(
        q.lease_next(1500),
        LeaseOutcome::Leased {
            attempt: 2,
            visible_at: 1500,
            ..
        }
    ));
    assert_eq!(q.depth(), 0);
    assert_eq!(q.lease_next(1600), LeaseOutcome::Empty, "leased once");
}

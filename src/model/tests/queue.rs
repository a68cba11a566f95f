//! The queue's wake-ups, when every job is done, what the holder of an expired lease may still
//! do, and the `deadline_tripled` defect, pinned.
//! Owns: tests only.

use crate::base::ids::{DocumentId, JobId, SimTime, TenantId};
use crate::model::queue::{EnqueueRequest, ExpiryOutcome, LeaseOutcome, Queue, QueueConfig};
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

fn request(doc: u32, visible_at: SimTime) -> EnqueueRequest {
    let tenant = TenantId(0);
    EnqueueRequest {
        tenant,
        key: IdempotencyKey::new(tenant, DocumentId(doc), 1).unwrap(),
        payload: PayloadHash(u64::from(doc)),
        visible_at,
        reprocess: false,
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
    let job = q.job(JobId(0));
    assert_eq!(job.deadline_at(&QueueConfig::new(1000, 30_000, 3)), 30_100);
    let tripled = QueueConfig {
        bugs: Bug::DeadlineTripled.into(),
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

/// A lease is live through its `lease_until` and expires just after it; the `early_expiry`
/// defect ends it at `lease_until` itself.
#[test]
fn a_lease_is_live_through_its_end_and_early_expiry_ends_it_there() {
    for (early, expires_at) in [(false, 1001), (true, 1000)] {
        let mut q = Queue::new(QueueConfig {
            bugs: if early {
                Bug::EarlyExpiry.into()
            } else {
                BugSet::EMPTY
            },
            ..QueueConfig::new(1000, 30_000, 3)
        });
        assert_eq!(q.expiry_time(1000), expires_at);
        q.enqueue(0, request(1, 0));
        let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
            panic!("a ready job is leased");
        };
        assert_eq!(
            q.check_expiry(expires_at - 1, job, fence),
            ExpiryOutcome::StillLeased { lease_until: 1000 }
        );
        assert_eq!(
            q.check_expiry(expires_at, job, fence),
            ExpiryOutcome::Expired
        );
    }
}

/// `unfenced_heartbeat` lets a zombie's heartbeat (an old token) renew the lease of the job's
/// new holder; without it the old token is refused and the lease stays where it was.
#[test]
fn unfenced_heartbeat_renews_for_a_zombie_and_the_fenced_queue_refuses_it() {
    for unfenced in [false, true] {
        let mut q = Queue::new(QueueConfig {
            bugs: if unfenced {
                Bug::UnfencedHeartbeat.into()
            } else {
                BugSet::EMPTY
            },
            ..QueueConfig::new(1000, 30_000, 3)
        });
        q.enqueue(0, request(1, 0));
        let LeaseOutcome::Leased {
            job, fence: old, ..
        } = q.lease_next(0)
        else {
            panic!("a ready job is leased");
        };
        assert_eq!(q.check_expiry(1001, job, old), ExpiryOutcome::Expired);
        let LeaseOutcome::Leased { fence: new, .. } = q.lease_next(1001) else {
            panic!("the expired job is leased again");
        };
        let renewed = q.heartbeat(1500, job, old);
        if unfenced {
            assert_eq!(renewed, Ok(2500));
            assert_eq!(q.job(job).lease_until, 2500);
        } else {
            assert_eq!(
                renewed,
                Err(crate::model::queue::Rejection::StaleFence {
                    held: new,
                    presented: old
                })
            );
            assert_eq!(q.job(job).lease_until, 2001);
        }
    }
}

/// The deadline is inclusive: a job picked at its deadline is leased, one picked a millisecond
/// past it is cancelled (the checker allows a cancel only past the deadline).
#[test]
fn a_job_is_leased_at_its_deadline_and_cancelled_just_past_it() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.enqueue(0, request(1, 0));
    q.enqueue(0, request(2, 0));
    assert!(matches!(
        q.lease_next(30_000),
        LeaseOutcome::Leased { job: JobId(0), .. }
    ));
    assert!(matches!(
        q.lease_next(30_001),
        LeaseOutcome::Cancelled {
            job: JobId(1),
            deadline_at: 30_000
        }
    ));
}

/// `heartbeat_not_stored` plants exactly its defect: the holder is told the renewed end it
/// asked for, and the queue keeps the old one.
#[test]
fn heartbeat_not_stored_answers_the_renewal_and_keeps_the_old_lease_end() {
    let mut q = Queue::new(QueueConfig {
        bugs: Bug::HeartbeatNotStored.into(),
        ..QueueConfig::new(1000, 30_000, 3)
    });
    q.enqueue(0, request(1, 0));
    let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
        panic!("a ready job is leased");
    };
    assert_eq!(q.heartbeat(500, job, fence), Ok(1500));
    assert_eq!(q.job(job).lease_until, 1000);
}

/// A state's name is the word the history writes in a `rejected` record's `reason`
/// (docs/history-format.md), one word per state.
#[test]
fn a_states_name_is_its_history_word() {
    use crate::model::queue::JobState;
    let names = [
        (JobState::Waiting, "waiting"),
        (JobState::Ready, "ready"),
        (JobState::Leased, "leased"),
        (JobState::Acked, "acked"),
        (JobState::DeadLettered, "dead_lettered"),
        (JobState::Cancelled, "cancelled"),
    ];
    for (state, word) in names {
        assert_eq!(state.name(), word);
    }
}

/// A queue is empty until its first job is enqueued, and a finished job still counts: the
/// queue keeps every job it was given. (Mutants killed: `Queue::is_empty` answering always
/// true, always false.)
#[test]
fn a_queue_is_empty_until_a_job_is_enqueued_and_stays_not_empty() {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    assert!(q.is_empty());
    q.enqueue(0, request(1, 0));
    assert!(!q.is_empty());
    let LeaseOutcome::Leased { job, fence, .. } = q.lease_next(0) else {
        panic!("a ready job is leased");
    };
    q.ack(10, job, fence).unwrap();
    assert!(q.all_terminal());
    assert!(!q.is_empty(), "an acked job is still the queue's");
}

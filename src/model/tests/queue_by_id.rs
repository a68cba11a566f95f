//! The queue's writes by id (what a queue-semantics profile accepts without a token: ack,
//! dead-letter, renewal, reopen, release, doom, a payload changed in place) and the holder's
//! dead-letter and cancel, pinned through the queue's public answers.
//! Owns: tests only.

use crate::base::ids::{DocumentId, Fence, JobId, TenantId};
use crate::model::queue::{
    EnqueueOutcome, EnqueueRequest, ExpiryOutcome, JobState, LeaseOutcome, Queue, QueueConfig,
    Rejection, Reopen,
};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

/// A queue with two ready jobs (documents 1 and 2, payloads 1 and 2), lease 1000 ms.
fn two_jobs() -> Queue {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    for doc in [1, 2] {
        q.enqueue(0, request(doc, u64::from(doc)));
    }
    q
}

/// [`two_jobs`] in a queue whose finished rows stay whole, as a profile that reopens needs.
fn two_jobs_reopenable() -> Queue {
    let mut q = Queue::new(QueueConfig::new(1000, 30_000, 3));
    q.keep_finished_rows_whole();
    for doc in [1, 2] {
        q.enqueue(0, request(doc, u64::from(doc)));
    }
    q
}

fn request(doc: u32, payload: u64) -> EnqueueRequest {
    let tenant = TenantId(0);
    EnqueueRequest {
        tenant,
        key: IdempotencyKey::new(tenant, DocumentId(doc), 1).unwrap(),
        payload: PayloadHash(payload),
        visible_at: 0,
        reprocess: false,
    }
}

fn leased(q: &mut Queue, now: u64) -> (JobId, Fence) {
    match q.lease_next(now) {
        LeaseOutcome::Leased { job, fence, .. } => (job, fence),
        other => panic!("expected a lease, got {other:?}"),
    }
}

/// The holder's dead-letter and cancel end the job; its later calls are refused as terminal.
#[test]
fn the_holders_dead_letter_and_cancel_end_the_job() {
    let mut q = two_jobs();
    let (a, fa) = leased(&mut q, 0);
    let (b, fb) = leased(&mut q, 0);
    q.dead_letter(10, a, fa).unwrap();
    assert_eq!(q.job(a).state, JobState::DeadLettered);
    assert!(!q.all_terminal());
    q.cancel(10, b, fb).unwrap();
    assert_eq!(q.job(b).state, JobState::Cancelled);
    assert!(q.all_terminal());
    assert_eq!(
        q.ack(20, a, fa),
        Err(Rejection::Terminal(JobState::DeadLettered))
    );
    assert_eq!(
        q.heartbeat(20, b, fb),
        Err(Rejection::Terminal(JobState::Cancelled))
    );
}

/// A write by id ends a live job whoever holds it (even one whose lease ran out into the ready
/// line) and changes nothing on a job that already ended.
#[test]
fn writes_by_id_end_a_live_job_and_leave_a_finished_one_alone() {
    let mut q = two_jobs();
    let (a, fa) = leased(&mut q, 0);
    let (b, _) = leased(&mut q, 0);
    assert_eq!(q.check_expiry(1001, a, fa), ExpiryOutcome::Expired);
    assert_eq!(q.depth(), 1);
    q.ack_unfenced(a);
    assert_eq!(q.job(a).state, JobState::Acked);
    assert_eq!(q.depth(), 0, "acked, no longer ready");
    q.dead_letter_unfenced(a);
    assert_eq!(q.job(a).state, JobState::Acked, "already ended");
    assert!(!q.all_terminal());
    q.dead_letter_unfenced(b);
    assert_eq!(q.job(b).state, JobState::DeadLettered);
    q.ack_unfenced(b);
    assert_eq!(q.job(b).state, JobState::DeadLettered, "already ended");
    assert!(q.all_terminal());
    assert_eq!(q.lease_next(1100), LeaseOutcome::Empty);
}

/// A renewal by id moves a leased job's lease (so it is still held past its first end) and
/// does nothing to a job that is not leased.
#[test]
fn a_renewal_by_id_moves_only_a_live_lease() {
    let mut q = two_jobs();
    let (a, fa) = leased(&mut q, 0);
    assert_eq!(q.heartbeat_unfenced(600, a), Some(1600));
    assert_eq!(q.job(a).lease_until, 1600);
    assert_eq!(
        q.check_expiry(1001, a, fa),
        ExpiryOutcome::StillLeased { lease_until: 1600 }
    );
    assert_eq!(
        q.heartbeat_unfenced(600, JobId(1)),
        None,
        "ready, not leased"
    );
    assert_eq!(q.job(JobId(1)).lease_until, 0);
}

/// Reopen takes a job back from any state: a finished one is alive again (no longer counted
/// terminal), a ready one is counted ready once, and it is leased once more.
#[test]
fn reopen_revives_a_finished_job_and_counts_it_once() {
    let mut q = two_jobs_reopenable();
    let (a, fa) = leased(&mut q, 0);
    let (b, fb) = leased(&mut q, 0);
    q.ack(10, a, fa).unwrap();
    q.ack(10, b, fb).unwrap();
    assert!(q.all_terminal());
    assert!(q.reopen(10, a, Reopen::Ready, true), "it was finished");
    assert!(!q.all_terminal());
    assert_eq!(q.depth(), 1);
    assert!(
        !q.reopen(10, a, Reopen::Ready, true),
        "ready is not finished"
    );
    assert_eq!(q.depth(), 1, "a job is counted ready once");
    assert!(matches!(
        q.lease_next(20),
        LeaseOutcome::Leased {
            job: JobId(0),
            attempt: 2,
            visible_at: 0,
            after_expiry: true,
            ..
        }
    ));
    assert_eq!(q.depth(), 0);
    assert_eq!(q.lease_next(20), LeaseOutcome::Empty, "leased once");
}

/// A revived job is taken off the terminal count once: when it finishes again, every job is
/// finished again. (Mutant killed: `reopen`'s `terminal_count -= 1` -> `+= 1`, which the
/// test above cannot see, since a count too high also reads "not all finished".)
#[test]
fn a_revived_job_that_finishes_again_leaves_every_job_finished() {
    let mut q = two_jobs_reopenable();
    let (a, fa) = leased(&mut q, 0);
    let (b, fb) = leased(&mut q, 0);
    q.ack(10, a, fa).unwrap();
    q.ack(10, b, fb).unwrap();
    assert!(q.reopen(10, a, Reopen::Ready, false));
    assert!(!q.all_terminal());
    let (again, fence) = leased(&mut q, 20);
    assert_eq!(again, a);
    q.ack(30, again, fence).unwrap();
    assert!(q.all_terminal(), "both jobs are finished again");
}

/// `Hold` keeps a rescued job (its lease expired) out of the ready line until `release`;
/// `At(t)` until `t`.
#[test]
fn a_held_job_waits_for_release_and_a_timed_one_for_its_time() {
    let mut q = two_jobs();
    let (a, _) = leased(&mut q, 0);
    let (b, _) = leased(&mut q, 0);
    assert!(!q.reopen(10, a, Reopen::Hold, true));
    assert_eq!(q.job(a).state, JobState::Waiting);
    assert_eq!(q.lease_next(10), LeaseOutcome::Empty, "held");
    assert!(q.release(a));
    assert!(!q.release(a), "no longer held");
    assert_eq!(q.depth(), 1);
    assert!(matches!(
        q.lease_next(10),
        LeaseOutcome::Leased {
            job: JobId(0),
            after_expiry: true,
            ..
        }
    ));
    assert!(!q.reopen(10, b, Reopen::At(500), false));
    assert_eq!(q.job(b).visible_at, 500);
    assert!(!q.make_visible(499, b, 500));
    assert!(q.make_visible(500, b, 500));
    assert!(matches!(
        q.lease_next(500),
        LeaseOutcome::Leased {
            job: JobId(1),
            visible_at: 500,
            ..
        }
    ));
}

/// A doomed job goes to the DLQ at its next pick, whatever attempts it has left.
#[test]
fn a_doomed_job_is_handed_back_for_the_dlq_at_its_next_pick() {
    let mut q = two_jobs();
    q.doom(JobId(0));
    assert_eq!(
        q.lease_next(0),
        LeaseOutcome::AttemptsExhausted {
            job: JobId(0),
            attempts: 0
        }
    );
    assert_eq!(q.job(JobId(0)).state, JobState::DeadLettered);
    assert_eq!(leased(&mut q, 0).0, JobId(1));
}

/// A payload changed in place is the one the key's next enqueue is compared with.
#[test]
fn a_payload_changed_in_place_is_what_the_key_then_holds() {
    let mut q = two_jobs();
    q.mutate_payload(JobId(0), PayloadHash(9));
    assert_eq!(q.job(JobId(0)).payload, PayloadHash(9));
    assert_eq!(
        q.enqueue(5, request(1, 9)),
        EnqueueOutcome::Deduplicated { existing: JobId(0) }
    );
    assert_eq!(
        q.enqueue(5, request(1, 1)),
        EnqueueOutcome::Conflict {
            existing: JobId(0),
            existing_payload: PayloadHash(9)
        }
    );
}

/// A queue that keeps finished rows compact (the chapter's: nothing reopens a finished job)
/// refuses to reopen one: it no longer has the clocks to do it with.
#[test]
#[should_panic(expected = "its row compact")]
fn a_compact_queue_never_reopens_a_finished_job() {
    let mut q = two_jobs();
    let (a, fa) = leased(&mut q, 0);
    q.ack(10, a, fa).unwrap();
    q.reopen(10, a, Reopen::Ready, false);
}

/// A holder's retry puts the job off until 500; a sweeper's rescue written by id lands at 100
/// (River's rescuer, whatever the job became): the job is ready at once, visible at 100, and
/// leased then, never "before it is visible" (swarm seed 5068 with `permanent_error_retried`
/// tripped that assertion). A hold's release later puts it first in line, visible at the rescue.
#[test]
fn a_rescue_by_id_over_a_retry_makes_the_job_visible_now() {
    let mut q = two_jobs_reopenable();
    let (a, _) = leased(&mut q, 0);
    let (b, _) = leased(&mut q, 0);
    q.reopen(50, a, Reopen::At(500), false);
    q.reopen(100, a, Reopen::Ready, true);
    assert_eq!(leased(&mut q, 100).0, a);
    q.reopen(150, b, Reopen::At(900), false);
    q.reopen(200, b, Reopen::Hold, true);
    assert!(q.release(b));
    assert_eq!(leased(&mut q, 300).0, b);
}

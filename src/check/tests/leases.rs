//! The checker's tests for leases and fences (`check/leases.rs`): fenced writes, token order, one live lease, attempts and deadlines, one terminal record.

use super::*;

#[test]
fn a_stale_ack_accepted_breaks_fenced_writes() {
    let mut h = happy();
    h.insert(
        3,
        (
            150,
            Event::LeaseExpired {
                job: JobId(0),
                fence: Fence(1),
            },
        ),
    );
    h.insert(4, (150, leased(2, 2)));
    let r = judge(h);
    let v = r
        .verdict(Invariant::FencedWrites)
        .first
        .as_ref()
        .expect("caught");
    assert!(
        v.message.contains("fence-1") && v.message.contains("fence-2"),
        "{}",
        v.message
    );
    assert_eq!(v.evidence.len(), 1);
}

// Token reuse: the re-lease after expiry kept the old token, so the zombie's ack carries the
// current token. The token did not increase, and the ack is not the holder's.
#[test]
fn a_reused_token_breaks_fencing_token_increases_and_the_zombies_ack_is_caught() {
    let h = vec![
        (0, enqueued()),
        (0, lease(0, 0, 1)),
        (
            101,
            Event::LeaseExpired {
                job: JobId(0),
                fence: Fence(1),
            },
        ),
        (101, lease(0, 1, 1)),
        (110, committed(5, 1)),
        (120, acked(0, 0, 1)),
    ];
    let r = judge(h);
    assert!(first_message(&r, Invariant::FencingTokenIncreases).contains("not greater"));
    assert!(first_message(&r, Invariant::FencedWrites).contains("accepted from worker-0"));
}

#[test]
fn a_lease_while_a_renewed_lease_is_live_breaks_single_live_lease() {
    let h = vec![
        (0, enqueued()),
        (0, lease(0, 0, 1)),
        (
            60,
            Event::Heartbeat {
                job: JobId(0),
                worker: WorkerId(0),
                fence: Fence(1),
                lease_until: Some(100),
            },
        ),
        // The recorder thought the lease ended at 100 (no renewal): it is live until 160.
        (
            101,
            Event::LeaseExpired {
                job: JobId(0),
                fence: Fence(1),
            },
        ),
        (101, lease(0, 1, 2)),
    ];
    let r = judge(h);
    assert!(first_message(&r, Invariant::SingleLiveLease).contains("live until 160"));
    let m = first_message(&r, Invariant::RecordedValuesMatch);
    assert!(m.contains("lease_until 100") && m.contains("160"), "{m}");
}

#[test]
fn a_heartbeat_after_the_lease_ended_is_not_a_renewal() {
    let h = vec![
        (0, enqueued()),
        (0, lease(0, 0, 1)),
        (
            150,
            Event::Heartbeat {
                job: JobId(0),
                worker: WorkerId(0),
                fence: Fence(1),
                lease_until: None,
            },
        ),
    ];
    let r = judge(h);
    assert!(first_message(&r, Invariant::FencedWrites).contains("after its lease ended at 100"));
}

#[test]
fn leasing_past_the_deadline_or_past_max_attempts_is_caught() {
    let h = vec![
        (0, enqueued()),
        (1001, leased(1, 1)),
        (1200, leased(2, 2)),
        (1400, leased(3, 3)),
        (1600, leased(4, 4)),
    ];
    let r = judge(h);
    assert!(r.verdict(Invariant::DeadlineRespected).count >= 1);
    assert!(first_message(&r, Invariant::DeadlineRespected)
        .contains("enqueued at 0 ms + deadline 1000 ms"));
    assert_eq!(r.verdict(Invariant::AttemptsBounded).count, 1);
    assert_eq!(
        r.verdict(Invariant::NoSilentDrop).count,
        1,
        "never terminal"
    );
}

#[test]
fn a_second_terminal_record_breaks_terminal_once() {
    let mut h = happy();
    h.insert(h.len() - 1, (1040, cancelled(0)));
    assert_eq!(judge(h).violated(), vec![Invariant::TerminalOnce]);
}

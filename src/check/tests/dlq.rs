//! The checker's tests for the DLQ and reprocess (`check/dlq.rs`): redacted reasons, audited and justified reprocesses, capacity, silent drops.

use super::*;

#[test]
fn raw_dlq_reasons_and_unaudited_reprocesses_are_caught() {
    let mut h = vec![(0, enqueued())];
    h.extend(dies(0, 1, 0).into_iter().map(|(at, e)| match e {
        Event::DeadLettered { .. } => (at, dead(0, Some(1), "parser: total 'ACME' invalid")),
        e => (at, e),
    }));
    h.push((9, enqueue(1, T, key_of(1, 2), Some(0))));
    h.push((1010, cancelled(1)));
    h.push((1011, ended()));
    let r = judge(h);
    assert_eq!(
        r.violated(),
        vec![Invariant::RedactedDlq, Invariant::AuditedReprocess]
    );
}

// A DLQ with a capacity: the entry evicted before any reprocess was the job's only terminal
// record, so the job is lost; an entry already reprocessed can go.
#[test]
fn a_dlq_eviction_before_reprocess_is_a_silent_drop() {
    let mut h = vec![
        (0, enqueue(0, T, key_of(0, 1), None)),
        (0, enqueue(1, T, key_of(1, 1), None)),
    ];
    h.extend(dies(0, 1, 4));
    h.extend(dies(1, 2, 5));
    h.push((7, enqueue(2, T, key_of(1, 2), Some(1))));
    h.push((
        7,
        Event::Reprocessed {
            old_job: JobId(1),
            new_job: JobId(2),
            operator: "ana".into(),
        },
    ));
    h.push((8, lease(2, 0, 3)));
    h.push((9, failed(2, 3, "schema_invalid")));
    h.push((
        9,
        Event::DlqEvicted {
            job: JobId(0),
            capacity: Some(2),
            retention: None,
        },
    ));
    h.push((9, dead(2, Some(3), "permanent_error")));
    h.push((
        10,
        Event::DlqEvicted {
            job: JobId(1),
            capacity: Some(2),
            retention: None,
        },
    ));
    h.push((10, ended()));
    let r = judge(h);
    assert_eq!(r.violated(), vec![Invariant::NoSilentDrop]);
    let v = r.verdict(Invariant::NoSilentDrop);
    assert_eq!(v.count, 1, "the reprocessed job-1 is not lost");
    let first = v.first.as_ref().unwrap();
    assert_eq!((first.at, first.job), (9, Some(JobId(0))));
    assert!(
        first.message.contains("evicted") && first.message.contains("capacity 2"),
        "{}",
        first.message
    );
    assert_eq!(first.evidence.len(), 1);
}

// Unrecorded DLQ loss: the queue dropped an entry and said nothing.
#[test]
fn a_dlq_over_its_capacity_breaks_dlq_bounded() {
    let mut h = Vec::new();
    for j in 0..3 {
        h.push((0, enqueue(j, T, key_of(j, 1), None)));
    }
    for j in 0..3 {
        h.extend(dies(j, j as u64 + 1, j as u64 * 10));
    }
    let r = judge(h);
    assert!(first_message(&r, Invariant::DlqBounded).contains("over its capacity 2"));
    let mut h = vec![(0, enqueue(0, T, key_of(0, 1), None))];
    h.extend(dies(0, 1, 0));
    h.push((
        5,
        Event::DlqEvicted {
            job: JobId(0),
            capacity: None,
            retention: None,
        },
    ));
    let r = judge(h);
    assert!(first_message(&r, Invariant::DlqBounded).contains("only a full DLQ evicts"));
}

// Reprocess version not bumped: every reprocess refused as `version_exists`, silently "fine".
#[test]
fn a_refusal_must_be_true_of_the_history() {
    let refused = |reason| Event::ReprocessRefused {
        job: Some(JobId(0)),
        operator: Some("ana".into()),
        reason,
    };
    let mut h = vec![(0, enqueued())];
    h.extend(dies(0, 1, 0));
    h.push((10, refused("version_exists")));
    h.push((11, refused("not_dead_lettered")));
    h.push((12, refused("evicted")));
    // Version 1 is far from the last version a key may have.
    h.push((13, refused("version_exhausted")));
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::ReprocessJustified).count, 4);
    assert!(first_message(&r, Invariant::ReprocessJustified).contains("no job under version 2"));
    let mut h = vec![(0, enqueued())];
    h.push((1001, cancelled(0)));
    h.push((1002, refused("cancelled_is_terminal")));
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::ReprocessJustified).count, 0);
    assert_eq!(r.reached(Sometimes::OperatorAtCancelled), 1);
}

// Reprocess of a cancelled job, and past the rate limit.
#[test]
fn a_reprocess_needs_a_held_dlq_entry_and_room_in_the_rate_limit() {
    let mut h = vec![(0, enqueued())];
    h.push((1001, cancelled(0)));
    h.push((1002, enqueue(1, T, key_of(1, 2), Some(0))));
    h.push((
        1002,
        Event::Reprocessed {
            old_job: JobId(0),
            new_job: JobId(1),
            operator: "ana".into(),
        },
    ));
    let r = judge(h);
    assert!(first_message(&r, Invariant::AuditedReprocess)
        .contains("while cancelled, not dead-lettered"));
    let limited = RunConfig {
        reprocess_limit: Some(ReprocessLimit {
            max: 1,
            window: 100,
        }),
        dlq_capacity: None,
        ..config()
    };
    let mut h = Vec::new();
    for j in 0..2 {
        h.push((0, enqueue(j, T, key_of(j, 1), None)));
        h.extend(dies(j, j as u64 + 1, j as u64));
    }
    for (i, (old, at)) in [(0u32, 10u64), (1, 50)].into_iter().enumerate() {
        let new = 2 + i as u32;
        h.push((at, enqueue(new, T, key_of(old, 2), Some(old))));
        h.push((
            at,
            Event::Reprocessed {
                old_job: JobId(old),
                new_job: JobId(new),
                operator: "bot".into(),
            },
        ));
    }
    let r = judge_with(limited, h);
    assert!(first_message(&r, Invariant::ReprocessJustified).contains("limit 1"));
}

// DLQ retention by age (a profile's `[dlq] retention_ms`): an entry may leave without a full DLQ
// once it is older than the header's retention, and only then; leaving unreprocessed, the job is
// lost all the same.
#[test]
fn an_entry_expires_by_age_only_past_the_stated_retention() {
    use crate::vocab::config::DlqRetention;
    let expired = |at, retention| {
        (
            at,
            Event::DlqEvicted {
                job: JobId(0),
                capacity: None,
                retention,
            },
        )
    };
    let history = |at| {
        let mut h = vec![(0, enqueue(0, T, key_of(0, 1), None))];
        h.extend(dies(0, 1, 100)); // dead-lettered at 101
        h.push(expired(at, Some(60)));
        h.push((at + 1, ended()));
        h
    };
    let with = |after, from_enqueue| RunConfig {
        dlq_capacity: None,
        dlq_retention: Some(DlqRetention {
            after,
            from_enqueue,
        }),
        ..config()
    };
    // Past the retention: the DLQ did what it states; the unreprocessed job is lost.
    let r = judge_with(with(60, false), history(162));
    assert_eq!(r.violated(), vec![Invariant::NoSilentDrop]);
    assert!(first_message(&r, Invariant::NoSilentDrop).contains("after its retention of 60 ms"));
    // At its last moment it is still kept.
    let r = judge_with(with(60, false), history(161));
    assert!(first_message(&r, Invariant::DlqBounded)
        .contains("60 ms after it was dead-lettered, not older than the retention of 60 ms"));
    // Counted from the enqueue (an SQS redrive DLQ), the same moment is past it.
    let r = judge_with(with(60, true), history(161));
    assert_eq!(r.violated(), vec![Invariant::NoSilentDrop]);
    // A header with no retention, or another one: no entry may expire by age.
    let r = judge(history(1_000));
    assert!(first_message(&r, Invariant::DlqBounded).contains("states no dlq_retention"));
    let r = judge_with(with(30, false), history(1_000));
    assert!(
        first_message(&r, Invariant::DlqBounded).contains("the header's dlq_retention is 30 ms")
    );
}

// A job acked (or cancelled) and then dead-lettered by a late write: a sweeper's write by id
// after the ack (swarm seed 322738, oban), a stale holder's failure taken after a cancel (seed
// 46312). The second terminal record is terminal_once's; the job's entry is in the DLQ, so an
// operator's reprocess from there is audited, not a second violation. A job never dead-lettered
// stays caught.
#[test]
fn a_reprocess_of_a_job_dead_lettered_after_another_terminal_record_is_audited() {
    let reprocess = |h: &mut Vec<(SimTime, Event)>, at: SimTime| {
        h.push((at, enqueue(1, T, key_of(1, 2), Some(0))));
        h.push((
            at,
            Event::Reprocessed {
                old_job: JobId(0),
                new_job: JobId(1),
                operator: "ana".into(),
            },
        ));
        h.extend(dies(1, 2, at + 1));
        h.push((at + 10, ended()));
    };
    // One attempt: acked at 30, dead-lettered by id at 40 (no fence) as its lease's end,
    // reprocessed at 50.
    let once = RunConfig {
        attempts_max: Some(1),
        ..config()
    };
    let mut h = happy();
    h.pop();
    h.push((40, dead(0, None, "max_attempts_exceeded")));
    reprocess(&mut h, 50);
    let r = judge_with(once, h);
    assert_eq!(r.violated(), vec![Invariant::TerminalOnce]);
    // Cancelled at 1001, the holder's permanent failure dead-letters it at 1002.
    let mut h = vec![(0, enqueued()), (0, leased(1, 1)), (1001, cancelled(0))];
    h.push((1002, failed(0, 1, "schema_invalid")));
    h.push((1002, dead(0, Some(1), "permanent_error")));
    reprocess(&mut h, 1003);
    let r = judge(h);
    assert!(r.violated().contains(&Invariant::TerminalOnce));
    assert!(
        !r.violated().contains(&Invariant::AuditedReprocess),
        "{}",
        first_message(&r, Invariant::AuditedReprocess)
    );
    // Acked and never dead-lettered: nothing in the DLQ to reprocess.
    let mut h = happy();
    h.pop();
    reprocess(&mut h, 50);
    let r = judge(h);
    assert_eq!(r.violated(), vec![Invariant::AuditedReprocess]);
    assert!(
        first_message(&r, Invariant::AuditedReprocess).contains("while acked, not dead-lettered")
    );
}

// A job dead-lettered again while its entry is held (a by-id rescue revived it: swarm seed
// 313797, river rescue_race) is filed again, as the queue files a row once: its old entry
// leaves first. Counted twice, it filled a DLQ of capacity 2 and its own new entry was taken
// for evicted, so the operator's reprocess was judged to have nothing left to reprocess.
#[test]
fn a_job_dead_lettered_again_while_held_is_filed_once() {
    let once = RunConfig {
        attempts_max: Some(1),
        ..config()
    };
    let mut h = Vec::new();
    for j in 0..2 {
        h.push((0, enqueue(j, T, key_of(j, 1), None)));
        h.extend(dies(j, j as u64 + 1, j as u64));
    }
    // Job 0 again, by id: the DLQ holds [1, 0], two entries, within its capacity.
    h.push((20, dead(0, None, "max_attempts_exceeded")));
    h.push((30, enqueue(2, T, key_of(0, 2), Some(0))));
    h.push((
        30,
        Event::Reprocessed {
            old_job: JobId(0),
            new_job: JobId(2),
            operator: "ana".into(),
        },
    ));
    let mut done = h.clone();
    done.push((40, ended()));
    // (Job 2 never ends: no_silent_drop's.)
    let r = judge_with(once.clone(), done);
    assert_eq!(
        r.violated(),
        vec![Invariant::TerminalOnce, Invariant::NoSilentDrop]
    );
    // A third entry then fills it past its capacity with no eviction record: the oldest entry
    // is job 1's, job 0's having moved to the back.
    h.extend(dies(2, 3, 31));
    h.push((40, ended()));
    let r = judge_with(once, h);
    assert!(first_message(&r, Invariant::DlqBounded).contains("(the oldest is job-1)"));
}

//! The checker's tests for effects (`check/effects.rs`): one result per key, first result wins, acked with a result, payload conflicts, one event per result.

use super::*;

#[test]
fn two_effects_for_one_key_and_a_later_output_are_caught() {
    let mut h = happy();
    h.pop();
    h.push((40, committed(6, 2)));
    h.extend(delivered(2, 6).into_iter().map(|e| (50, e)));
    h.push((60, ended()));
    let r = judge(h);
    assert_eq!(
        r.violated(),
        vec![
            Invariant::SingleResultPerKey,
            Invariant::NoDuplicateEffect,
            Invariant::FirstResultWins
        ]
    );
}

#[test]
fn a_result_that_never_gets_an_event_breaks_event_per_result() {
    let h = vec![
        (0, enqueued()),
        (0, leased(1, 1)),
        (
            10,
            Event::ResultCommitted {
                job: JobId(0),
                worker: WorkerId(0),
                key: key(),
                payload: None,
                output: 5,
                event: None,
            },
        ),
        (30, acked(0, 0, 1)),
        (30, ended()),
    ];
    let r = judge(h);
    assert_eq!(
        r.violated(),
        vec![Invariant::EventPerResult, Invariant::EveryResultDelivered]
    );
}

// Ack before commit: the job is done, and nothing was ever written for it.
#[test]
fn an_ack_with_no_result_breaks_acked_with_result() {
    let h = vec![
        (0, enqueued()),
        (0, leased(1, 1)),
        (30, acked(0, 0, 1)),
        (30, ended()),
    ];
    let r = judge(h);
    assert_eq!(r.violated(), vec![Invariant::AckedWithResult]);
}

// Hash bugs: a different content deduplicated, or the same content refused.
#[test]
fn payload_equality_comes_from_the_recorded_content() {
    let request = |content, conflict: bool| {
        let (tenant, key, operation, payload, existing) =
            (T, key(), OperationId::EXTRACT, None, JobId(0));
        if conflict {
            Event::EnqueueConflict {
                tenant,
                key,
                operation,
                content,
                payload,
                existing,
                existing_payload: None,
            }
        } else {
            Event::EnqueueDeduped {
                tenant,
                key,
                operation,
                content,
                payload,
                existing,
            }
        }
    };
    let r = judge(vec![(0, enqueued()), (1, request(8, false))]);
    assert!(
        first_message(&r, Invariant::PayloadConflictRejected).contains("content 0000000000000008")
    );
    let r = judge(vec![(0, enqueued()), (1, request(7, true))]);
    assert!(first_message(&r, Invariant::PayloadConflictRejected).contains("same payload"));
    let r = judge(vec![
        (0, enqueued()),
        (1, request(7, false)),
        (2, request(9, true)),
    ]);
    assert_eq!(r.violated(), vec![Invariant::NoSilentDrop], "both right");
}

#[test]
fn a_recorded_payload_hash_is_recomputed() {
    let mut names = crate::vocab::key::KeyNames::default();
    names.tenants.register("acme").unwrap();
    let right = crate::vocab::payload::payload_hash(&names, DocumentId(1), OperationId::EXTRACT, 7);
    let judge_hash = |hash| {
        let mut c = Checker::new().with_names(names.clone());
        for (at, event) in [
            (
                0,
                Event::RunStarted {
                    config: Box::new(config()),
                },
            ),
            (
                0,
                Event::Enqueued {
                    job: JobId(0),
                    tenant: T,
                    key: key(),
                    operation: OperationId::EXTRACT,
                    content: 7,
                    payload: Some(hash),
                    visible_at: None,
                    deadline_at: Some(1000),
                    reprocess_of: None,
                },
            ),
        ] {
            c.observe_record(&Record { at, event });
        }
        c.finish()
    };
    assert_eq!(
        judge_hash(right)
            .verdict(Invariant::RecordedValuesMatch)
            .count,
        0
    );
    let wrong = crate::vocab::payload::PayloadHash(right.0 ^ 1);
    assert!(first_message(&judge_hash(wrong), Invariant::RecordedValuesMatch).contains("hash to"));
}

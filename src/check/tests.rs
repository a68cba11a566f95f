//! The checker judges hand-written histories: it needs no model to run. One test at least for
//! every invariant, each showing the record that breaks it.

use super::{CheckReport, Checker, Invariant, Sometimes};
use crate::history::{Event, Op, Record};
use crate::ids::{DocumentId, EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use crate::vocab::config::{Emits, Jitter, ReprocessLimit, RunConfig};
use crate::vocab::key::IdempotencyKey;

const T: TenantId = TenantId(0);

fn config() -> RunConfig {
    RunConfig {
        attempts_max: 3,
        lease: 100,
        heartbeat: 40,
        deadline: 1000,
        backoff_base: 10,
        backoff_cap: 40,
        jitter: Jitter::None,
        dlq_capacity: Some(2),
        emits: Emits::all(),
        ..RunConfig::default()
    }
}

fn judge_with(config: RunConfig, records: Vec<(SimTime, Event)>) -> CheckReport {
    let mut c = Checker::new();
    c.observe_record(&Record {
        at: 0,
        event: Event::RunStarted {
            config: Box::new(config),
        },
    });
    for (at, event) in records {
        c.observe_record(&Record { at, event });
    }
    c.finish()
}

fn judge(records: Vec<(SimTime, Event)>) -> CheckReport {
    judge_with(config(), records)
}

fn key_of(doc: u32, version: u32) -> IdempotencyKey {
    IdempotencyKey::new(T, DocumentId(doc), version).unwrap()
}

fn key() -> IdempotencyKey {
    key_of(1, 1)
}

fn enqueue(job: u32, tenant: TenantId, key: IdempotencyKey, from: Option<u32>) -> Event {
    Event::Enqueued {
        job: JobId(job),
        tenant,
        key,
        operation: OperationId::EXTRACT,
        content: 7,
        payload: None,
        visible_at: None,
        deadline_at: None,
        reprocess_of: from.map(JobId),
    }
}

fn enqueued() -> Event {
    enqueue(0, T, key(), None)
}

fn lease(job: u32, worker: u32, fence: u64) -> Event {
    Event::Leased {
        job: JobId(job),
        worker: WorkerId(worker),
        fence: Fence(fence),
        attempt: None,
        lease_until: None,
        visible_at: None,
    }
}

fn leased(fence: u64, _attempt: u32) -> Event {
    lease(0, 0, fence)
}

fn committed(output: u64, event: u64) -> Event {
    Event::ResultCommitted {
        job: JobId(0),
        worker: WorkerId(0),
        key: key(),
        payload: None,
        output,
        event: Some(EventId(event)),
    }
}

fn acked(job: u32, worker: u32, fence: u64) -> Event {
    Event::Acked {
        job: JobId(job),
        worker: WorkerId(worker),
        fence: Fence(fence),
    }
}

fn failed(job: u32, fence: u64, error: &'static str) -> Event {
    Event::AttemptFailed {
        job: JobId(job),
        worker: WorkerId(0),
        fence: Fence(fence),
        error,
        class: None,
    }
}

fn retry(job: u32, fence: u64, visible_at: SimTime) -> Event {
    Event::RetryScheduled {
        job: JobId(job),
        worker: WorkerId(0),
        fence: Fence(fence),
        attempt: None,
        visible_at,
    }
}

fn dead(job: u32, fence: Option<u64>, reason: &str) -> Event {
    Event::DeadLettered {
        job: JobId(job),
        worker: fence.map(|_| WorkerId(0)),
        fence: fence.map(Fence),
        attempts: None,
        reason: reason.into(),
    }
}

fn cancelled(job: u32) -> Event {
    Event::Cancelled {
        job: JobId(job),
        worker: None,
        fence: None,
        deadline_at: None,
    }
}

fn delivered(event: u64, output: u64) -> Vec<Event> {
    vec![
        Event::Published {
            event: EventId(event),
            key: key(),
            job: JobId(0),
            output,
            send: Some(1),
            direct: false,
        },
        Event::EffectApplied {
            event: EventId(event),
            key: key(),
            job: JobId(0),
            output,
        },
        Event::ReviewDone {
            event: EventId(event),
            key: key(),
            job: JobId(0),
        },
    ]
}

fn ended() -> Event {
    Event::RunEnded { quiescent: true }
}

fn happy() -> Vec<(SimTime, Event)> {
    let mut h = vec![(0, enqueued()), (0, leased(1, 1)), (10, committed(5, 1))];
    h.extend(delivered(1, 5).into_iter().map(|e| (20, e)));
    h.push((30, acked(0, 0, 1)));
    h.push((30, ended()));
    h
}

/// A job that fails permanently on its first lease and goes to the DLQ, as the policy says.
fn dies(job: u32, fence: u64, at: SimTime) -> Vec<(SimTime, Event)> {
    vec![
        (at, lease(job, 0, fence)),
        (at + 1, failed(job, fence, "schema_invalid")),
        (at + 1, dead(job, Some(fence), "permanent_error")),
    ]
}

fn first_message(r: &CheckReport, i: Invariant) -> String {
    r.verdict(i)
        .first
        .as_ref()
        .unwrap_or_else(|| panic!("{} holds: {:?}", i.name(), r.violated()))
        .message
        .clone()
}

#[test]
fn a_clean_history_holds() {
    let r = judge(happy());
    assert!(r.holds(), "{:?}", r.first_violation());
}

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

#[test]
fn a_request_resolved_to_another_tenants_job_breaks_isolation() {
    let tenantless = IdempotencyKey::tenantless_for_bug_switch(DocumentId(1), 1);
    let h = vec![
        (0, enqueue(0, T, tenantless, None)),
        (
            1,
            Event::EnqueueDeduped {
                tenant: TenantId(1),
                key: tenantless,
                operation: OperationId::EXTRACT,
                content: 7,
                payload: None,
                existing: JobId(0),
            },
        ),
    ];
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::TenantIsolation).count, 2);
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
        },
    ));
    h.push((9, dead(2, Some(3), "permanent_error")));
    h.push((
        10,
        Event::DlqEvicted {
            job: JobId(1),
            capacity: Some(2),
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
        },
    ));
    let r = judge(h);
    assert!(first_message(&r, Invariant::DlqBounded).contains("only a full DLQ evicts"));
}

#[test]
fn a_second_terminal_record_breaks_terminal_once() {
    let mut h = happy();
    h.insert(h.len() - 1, (1040, cancelled(0)));
    assert_eq!(judge(h).violated(), vec![Invariant::TerminalOnce]);
}

// Backoff ignored: a retried job leased before its visible time, and a delay off the policy.
#[test]
fn backoff_is_recomputed_from_the_configuration() {
    let h = vec![
        (0, enqueued()),
        (0, lease(0, 0, 1)),
        (5, failed(0, 1, "provider_unavailable")),
        (5, retry(0, 1, 15)),
        (10, lease(0, 0, 2)),
    ];
    let r = judge(h);
    assert!(first_message(&r, Invariant::BackoffRespected).contains("before its visible time 15"));
    let h = vec![
        (0, enqueued()),
        (0, lease(0, 0, 1)),
        (5, failed(0, 1, "provider_unavailable")),
        (5, retry(0, 1, 5)),
    ];
    let r = judge(h);
    assert!(first_message(&r, Invariant::BackoffRespected).contains("allow 10..=10"));
    let equal = RunConfig {
        jitter: Jitter::Equal,
        ..config()
    };
    let retried = |delay: u64| {
        vec![
            (0, enqueued()),
            (0, lease(0, 0, 1)),
            (10, failed(0, 1, "provider_unavailable")),
            (10, retry(0, 1, 10 + delay)),
            (10 + delay, Event::Visible { job: JobId(0) }),
            (10 + delay, lease(0, 0, 2)),
            (20 + delay, failed(0, 2, "provider_unavailable")),
            (20 + delay, retry(0, 2, 20 + delay + 15)),
        ]
    };
    assert_eq!(
        judge_with(equal.clone(), retried(5))
            .verdict(Invariant::BackoffRespected)
            .count,
        0
    );
    assert_eq!(
        judge_with(equal, retried(4))
            .verdict(Invariant::BackoffRespected)
            .count,
        1
    );
}

// Misclassified errors and decisions off the policy.
#[test]
fn every_failed_attempt_gets_the_decision_the_policy_calls_for() {
    let after = |error, decision: Event| {
        judge(vec![
            (0, enqueued()),
            (0, lease(0, 0, 1)),
            (5, failed(0, 1, error)),
            (5, decision),
        ])
    };
    let r = after("schema_invalid", retry(0, 1, 15));
    assert!(first_message(&r, Invariant::RetryPolicyFollowed)
        .contains("calls for the DLQ as permanent_error, but it went to a retry"));
    let r = after("provider_unavailable", dead(0, Some(1), "permanent_error"));
    assert!(first_message(&r, Invariant::RetryPolicyFollowed).contains("calls for a retry"));
    let r = after("deadline_exceeded", cancelled(0));
    assert!(first_message(&r, Invariant::RetryPolicyFollowed).contains("but its deadline is 1000"));
    let r = judge(vec![(0, enqueued()), (5, cancelled(0))]);
    assert!(first_message(&r, Invariant::RetryPolicyFollowed).contains("before its deadline"));
    let r = judge(vec![
        (0, enqueued()),
        (5, dead(0, None, "max_attempts_exceeded")),
    ]);
    assert!(first_message(&r, Invariant::RetryPolicyFollowed).contains("after 0 of 3 attempts"));
    let mut h = vec![(0, enqueued())];
    for (i, at) in [0u64, 20, 50].into_iter().enumerate() {
        let f = i as u64 + 1;
        h.push((at, lease(0, 0, f)));
        h.push((at + 5, failed(0, f, "provider_unavailable")));
    }
    h.push((55, retry(0, 3, 95)));
    let r = judge(h);
    assert!(first_message(&r, Invariant::RetryPolicyFollowed).contains("attempt 3 failed"));
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
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::ReprocessJustified).count, 3);
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
    assert!(first_message(&r, Invariant::AuditedReprocess).contains("while Some(Cancelled)"));
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

// A depth counter that never decrements.
#[test]
fn depth_samples_must_match_the_recomputed_depth() {
    let sample = |depth| Event::DepthSampled { depth };
    let h = vec![
        (0, enqueued()),
        (0, sample(1)),
        (1, lease(0, 0, 1)),
        (1, sample(0)),
    ];
    assert!(judge(h).holds_except(&[Invariant::NoSilentDrop]));
    let h = vec![(0, enqueued()), (1, lease(0, 0, 1)), (1, sample(1))];
    let r = judge(h);
    assert!(
        first_message(&r, Invariant::DepthMatchesHistory).contains("is 1, but the history has 0")
    );
    // Without lease_expired records, the expiry is inferred: at 101 the sample may or may not
    // count it; at 102 it must.
    let quiet = RunConfig {
        emits: Emits::default(),
        ..config()
    };
    let h = |late| {
        vec![
            (0, enqueued()),
            (0, lease(0, 0, 1)),
            (101, sample(0)),
            (101, sample(1)),
            (102, sample(late)),
        ]
    };
    assert_eq!(
        judge_with(quiet.clone(), h(1))
            .verdict(Invariant::DepthMatchesHistory)
            .count,
        0
    );
    assert_eq!(
        judge_with(quiet, h(0))
            .verdict(Invariant::DepthMatchesHistory)
            .count,
        1
    );
}

#[test]
fn summary_figures_are_cross_checked() {
    let mut r = judge(happy());
    let mut figures = r.figures.clone();
    r.cross_check_figures(&figures);
    assert!(r.holds());
    let acked = figures
        .iter_mut()
        .find(|(n, _)| *n == "jobs.acked")
        .unwrap();
    acked.1 = 2;
    r.cross_check_figures(&figures);
    assert!(first_message(&r, Invariant::SummaryMatchesHistory)
        .contains("jobs.acked = 2, but the history gives 1"));
}

#[test]
fn recorded_deadlines_and_lease_ends_are_cross_checked() {
    let h = vec![
        (
            0,
            Event::Enqueued {
                job: JobId(0),
                tenant: T,
                key: key(),
                operation: OperationId::EXTRACT,
                content: 7,
                payload: None,
                visible_at: None,
                deadline_at: Some(3000),
                reprocess_of: None,
            },
        ),
        (
            0,
            Event::Leased {
                job: JobId(0),
                worker: WorkerId(0),
                fence: Fence(1),
                attempt: Some(2),
                lease_until: Some(100),
                visible_at: Some(0),
            },
        ),
        (
            3,
            Event::Rejected {
                job: JobId(0),
                worker: WorkerId(1),
                op: Op::Ack,
                presented: Fence(0),
                held: Some(Fence(1)),
                reason: "stale_fence",
            },
        ),
    ];
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::RecordedValuesMatch).count, 2);
    assert!(first_message(&r, Invariant::RecordedValuesMatch).contains("deadline_at 3000 ms"));
    assert_eq!(r.reached(Sometimes::StaleFenceRejected), 1);
}

impl CheckReport {
    fn holds_except(&self, allowed: &[Invariant]) -> bool {
        self.violated().iter().all(|i| allowed.contains(i))
    }
}

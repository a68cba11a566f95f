//! The checker's tests for the retry policy (`check/policy.rs`): backoff and the decision each failure calls for.

use super::*;

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

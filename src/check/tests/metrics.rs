//! The checker's tests for metrics and summary figures (`check/metrics.rs`): depth samples and `summary.json` counts against the recomputation.

use super::*;

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
    use crate::vocab::counters::{Counter, Tally};
    use crate::vocab::faults::Held;
    let mut r = judge(happy());
    let mut reported = Tally::default();
    for (c, v) in r.figures.iter() {
        reported.set(c, v);
    }
    let mut held = r.held_figures;
    let d = r.distributions;
    r.cross_check_figures(&reported, &held, &d);
    assert!(r.holds());
    // A figure the checker does not count is not compared.
    reported.set(Counter::OutboxRowsMax, 9);
    r.cross_check_figures(&reported, &held, &d);
    assert!(r.holds());
    reported.set(Counter::Acked, 2);
    r.cross_check_figures(&reported, &held, &d);
    assert!(first_message(&r, Invariant::SummaryMatchesHistory)
        .contains("jobs.acked = 2, but the history gives 1"));
    let mut r = judge(happy());
    held.add(Held::Stall);
    r.cross_check_figures(&reported, &held, &d);
    let v = r.verdict(Invariant::SummaryMatchesHistory);
    assert_eq!(v.count, 2, "jobs.acked and crashes.stalls");
    assert!(first_message(&r, Invariant::SummaryMatchesHistory).contains("jobs.acked"));
    let mut r = judge(happy());
    reported.set(Counter::Acked, 1);
    r.cross_check_figures(&reported, &held, &d);
    assert!(first_message(&r, Invariant::SummaryMatchesHistory)
        .contains("crashes.stalls = 1, but the history gives 0"));
}

/// The queue wait, inference and review wait distributions are recomputed from the history and
/// compared with what the run's metrics reported: a queue wait measured from the enqueue time
/// instead of the visible time is caught.
#[test]
fn summary_distributions_are_recomputed_and_cross_checked() {
    use crate::vocab::counters::Tally;
    // Enqueued at 0, visible at 40, leased at 50: a queue wait of 10, not 50.
    let mut h = vec![(
        0,
        Event::Enqueued {
            job: JobId(0),
            tenant: T,
            key: key(),
            operation: OperationId::EXTRACT,
            content: 7,
            payload: None,
            visible_at: Some(40),
            deadline_at: None,
            reprocess_of: None,
        },
    )];
    h.push((40, Event::Visible { job: JobId(0) }));
    h.push((50, leased(1, 1)));
    h.push((55, committed(5, 1)));
    h.extend(delivered(1, 5).into_iter().map(|e| (60, e)));
    h[6].0 = 75; // the review 15 after the apply
    h.push((80, acked(0, 0, 1)));
    h.push((80, ended()));
    let r = judge(h);
    assert!(r.holds(), "{:?}", r.first_violation());
    let [queue, _, review] = r.distributions;
    assert_eq!((queue.count, queue.max), (1, 10));
    assert_eq!((review.count, review.max), (1, 15));
    let mut reported = Tally::default();
    for (c, v) in r.figures.iter() {
        reported.set(c, v);
    }
    let (held, mut d) = (r.held_figures, r.distributions);
    let mut same = r.clone();
    same.cross_check_figures(&reported, &held, &d);
    assert!(same.holds());
    // A metric measured from the enqueue time: 50.
    let mut from_created = crate::vocab::latency::Latency::default();
    from_created.record(50);
    d[0] = from_created.stats();
    let mut r = r;
    r.cross_check_figures(&reported, &held, &d);
    let m = first_message(&r, Invariant::SummaryMatchesHistory);
    assert!(m.contains("queueWaitMs count 1 min 50"), "{m}");
    assert!(m.contains("the history gives count 1 min 10"), "{m}");
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

//! The metrics' tests: every counter reads a figure, a job's lease count past its byte, and the
//! figures of race shapes counted as the history gives them (`summary_matches_history`).
use super::*;

/// Every counter has a value to read: a counted one its slot, a derived one its arm in
/// `Metrics::figure` (a derived row without an arm would index past the tally and panic).
#[test]
fn every_counter_reads_a_figure() {
    let m = Metrics::new(1, 0, None);
    for &c in Counter::ALL {
        let expected = match c {
            Counter::DepthMaxAfterRecovery => None,
            _ => Some(0),
        };
        assert_eq!(m.figure(c), expected, "{c:?}");
    }
}

/// A job's lease count is one byte until it passes 254, then exact in the side table: the
/// attempt number a recorder leaves out is the count either way.
#[test]
fn a_jobs_lease_count_is_exact_past_its_byte() {
    let mut m = Metrics::new(1, 0, None);
    for n in 1..=600u32 {
        for job in [JobId(2), JobId(5)] {
            let attempt = (job == JobId(5)).then_some(1);
            m.observe(&Record {
                at: n as u64,
                event: Event::Leased {
                    job,
                    worker: WorkerId(0),
                    fence: crate::base::ids::Fence(n as u64),
                    attempt,
                    lease_until: None,
                    visible_at: None,
                },
            });
        }
        assert_eq!(m.figure(Counter::MaxAttemptsSeen), Some(n as u64));
    }
    assert_eq!(m.job_leases[..], [0, 0, 255, 0, 0, 255]);
    assert_eq!(m.job_leases_wide.get(&2), Some(&600));
    assert_eq!(m.leased(JobId(5)), 601);
    assert_eq!(m.leased(JobId(1)), 1);
}

fn rec(at: SimTime, event: Event) -> Record {
    Record { at, event }
}

fn leased(job: u32, fence: u64, visible_at: SimTime) -> Event {
    Event::Leased {
        job: JobId(job),
        worker: WorkerId(0),
        fence: crate::base::ids::Fence(fence),
        attempt: None,
        lease_until: None,
        visible_at: Some(visible_at),
    }
}

fn enqueued(job: u32) -> Event {
    Event::Enqueued {
        job: JobId(job),
        tenant: TenantId(0),
        key: IdempotencyKey::opaque(TenantId(0), crate::base::ids::DocumentId(job)),
        operation: crate::base::ids::OperationId::EXTRACT,
        content: 0,
        payload: None,
        visible_at: None,
        deadline_at: None,
        reprocess_of: None,
    }
}

/// A sweeper's rescue by id lands over a holder's retry (swarm seed 150928): the queue makes
/// the job visible at the rescue (380), a time no record states, and its next lease records it.
/// Measured from the history, the wait is from the retry's visible time (716), as the checker
/// measures it; from the record, 342 ms the history does not show.
#[test]
fn a_rescue_race_waits_from_the_historys_visible_time() {
    let history = [
        rec(4, enqueued(0)),
        rec(4, leased(0, 1, 4)),
        rec(
            371,
            Event::RetryScheduled {
                job: JobId(0),
                worker: WorkerId(0),
                fence: crate::base::ids::Fence(1),
                attempt: None,
                visible_at: 716,
            },
        ),
        rec(
            722,
            Event::LeaseExpired {
                job: JobId(0),
                fence: crate::base::ids::Fence(1),
            },
        ),
        rec(722, leased(0, 2, 380)),
    ];
    let waits = |from_history: bool| {
        let mut m = Metrics::new(1, 1, None);
        if from_history {
            m.measure_waits_from_history();
        }
        history.iter().for_each(|r| m.observe(r));
        (m.queue_wait.stats().count, m.queue_wait.stats().max)
    };
    assert_eq!(waits(true), (2, 6));
    assert_eq!(waits(false), (2, 342), "the recorded visible time");
}

/// A job dead-lettered again while its entry is held (a stale write taken, a rescue race; swarm
/// seeds 123161, 313797) is filed once, its old entry leaving first, as the queue and the
/// checker's entries file it: the DLQ holds 1 at most, not 4 filings less 1 eviction = 3.
#[test]
fn a_job_filed_again_while_held_counts_as_the_checkers_entries() {
    let config = crate::vocab::config::RunConfig {
        dlq_capacity: Some(1),
        ..Default::default()
    };
    let dead = |job| Event::DeadLettered {
        job: JobId(job),
        worker: None,
        fence: None,
        attempts: None,
        reason: "max_attempts_exceeded".into(),
    };
    let mut m = Metrics::new(1, 2, None);
    let history = [
        rec(
            0,
            Event::RunStarted {
                config: Box::new(config),
            },
        ),
        rec(0, enqueued(0)),
        rec(10, dead(0)),
        rec(20, dead(0)),
        rec(20, Event::DepthSampled { depth: 0 }),
        rec(30, enqueued(1)),
        rec(
            40,
            Event::DlqEvicted {
                job: JobId(0),
                capacity: Some(1),
                retention: None,
            },
        ),
        rec(40, dead(1)),
        rec(40, Event::DepthSampled { depth: 0 }),
        rec(50, dead(1)),
        rec(50, Event::DepthSampled { depth: 0 }),
    ];
    history.iter().for_each(|r| m.observe(r));
    assert_eq!(m.figure(Counter::DlqSizeMax), Some(1));
    assert_eq!(m.figure(Counter::DeadLettered), Some(4));
    assert_eq!(m.dlq_rows, [(20, 1), (40, 1), (50, 1)]);
}

//! The checker judges hand-written histories: it needs no model to run. One test at least for
//! every invariant, each showing the record that breaks it.
//!
//! Here: the history builders every family's tests share, and the clean history. One file a
//! family of invariants beside: `dlq.rs`, `effects.rs`, `leases.rs`, `metrics.rs`, `policy.rs`, `tenancy.rs`.

use super::{CheckReport, Checker, Invariant, Sometimes};
use crate::base::ids::{
    DocumentId, EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId,
};
use crate::history::{Event, Op, Record};
use crate::vocab::config::{Emits, Jitter, ReprocessLimit, RunConfig};
use crate::vocab::key::IdempotencyKey;

const T: TenantId = TenantId(0);

fn config() -> RunConfig {
    RunConfig {
        attempts_max: Some(3),
        lease: 100,
        heartbeat: 40,
        deadline: Some(1000),
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

mod dlq;
mod effects;
mod leases;
mod metrics;
mod policy;
mod soundness;
mod tenancy;

#[test]
fn a_clean_history_holds() {
    let r = judge(happy());
    assert!(r.holds(), "{:?}", r.first_violation());
}

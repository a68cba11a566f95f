//! The recorded history: every observable step of a run, in order.
//!
//! Owns: the closed set of history events, the [`Observer`] interface through which the checker,
//! the metrics and the trace writer consume the history as a stream, the trace hash
//! (`trace_hash`), and the history file format (`format` writes it, `reader` reads it back or
//! reads one an external recorder wrote; the format is specified in `docs/history-format.md`).
//! Nothing needs the history in memory unless a trace is asked for.
//! Does not: judge anything (see `check`) or measure anything (see `observe`).
//!
//! Fields that hold a value the model computed (a `lease_until`, a `deadline_at`, a
//! `visible_at` on a lease, a payload hash, an error's class) are `Option`s: the simulator always
//! writes them, an external recorder may not, and the checker recomputes each one from the
//! header's configuration and the raw facts, and only cross-checks the recorded value.

pub mod format;
pub mod reader;
pub mod trace_hash;

pub use format::to_json_line;
pub use trace_hash::TraceHash;

use crate::base::ids::{EventId, Fence, JobId, OperationId, SimTime, TenantId, WorkerId};
use crate::vocab::config::RunConfig;
use crate::vocab::faults::{Held, Struck};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use serde::Serialize;

/// A queue operation a worker attempted, for rejections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Heartbeat,
    Ack,
    Retry,
    DeadLetter,
    Cancel,
}

impl Op {
    pub const ALL: [Op; 5] = [
        Op::Heartbeat,
        Op::Ack,
        Op::Retry,
        Op::DeadLetter,
        Op::Cancel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Heartbeat => "heartbeat",
            Op::Ack => "ack",
            Op::Retry => "retry",
            Op::DeadLetter => "dead_letter",
            Op::Cancel => "cancel",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// Everything that can be observed to happen. Field names are the history file's JSON keys.
#[derive(Clone, Debug, PartialEq, Serialize, Hash)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The header: the settings the checker must know to judge the history. Always first.
    RunStarted {
        config: Box<RunConfig>,
    },
    /// A new job. `operation` and `content` are what the payload hash is computed from;
    /// `reprocess_of` names the dead-lettered job an operator's reprocess brought back.
    Enqueued {
        job: JobId,
        tenant: TenantId,
        key: IdempotencyKey,
        operation: OperationId,
        content: u64,
        payload: Option<PayloadHash>,
        /// When the job may first be leased (a delayed enqueue; the enqueue time otherwise).
        visible_at: Option<SimTime>,
        deadline_at: Option<SimTime>,
        reprocess_of: Option<JobId>,
    },
    /// Same key, same payload: the request resolved to an existing job.
    EnqueueDeduped {
        tenant: TenantId,
        key: IdempotencyKey,
        operation: OperationId,
        content: u64,
        payload: Option<PayloadHash>,
        existing: JobId,
    },
    /// Same key, different payload: the request was refused.
    EnqueueConflict {
        tenant: TenantId,
        key: IdempotencyKey,
        operation: OperationId,
        content: u64,
        payload: Option<PayloadHash>,
        existing: JobId,
        existing_payload: Option<PayloadHash>,
    },
    /// `unique = "replace"`: the key's pending job `existing` took the request's payload; what
    /// it had before is `replaced_operation` and `replaced_content` (hash `replaced_payload`).
    EnqueueReplaced {
        tenant: TenantId,
        key: IdempotencyKey,
        operation: OperationId,
        content: u64,
        payload: Option<PayloadHash>,
        existing: JobId,
        replaced_operation: OperationId,
        replaced_content: u64,
        replaced_payload: Option<PayloadHash>,
    },
    /// A job became visible at the end of a wait (backoff or delayed enqueue). Optional.
    Visible {
        job: JobId,
    },
    Leased {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        attempt: Option<u32>,
        lease_until: Option<SimTime>,
        visible_at: Option<SimTime>,
    },
    /// A lease ran out without renewal or release. Optional.
    LeaseExpired {
        job: JobId,
        fence: Fence,
    },
    Heartbeat {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        lease_until: Option<SimTime>,
    },
    /// A fenced call refused: stale token, terminal job, or no live lease.
    Rejected {
        job: JobId,
        worker: WorkerId,
        op: Op,
        presented: Fence,
        held: Option<Fence>,
        reason: &'static str,
    },
    ExtractStarted {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        stalled: bool,
    },
    ExtractDone {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        inference: u64,
        output: u64,
    },
    AttemptFailed {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        error: &'static str,
        class: Option<&'static str>,
    },
    /// A result row written; `event` is the outbox event written in the same step (none for the
    /// naive dual write).
    ResultCommitted {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: Option<PayloadHash>,
        output: u64,
        event: Option<EventId>,
    },
    CommitDeduped {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: Option<PayloadHash>,
        output: u64,
        existing_payload: Option<PayloadHash>,
        existing_event: Option<EventId>,
    },
    CommitConflict {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: Option<PayloadHash>,
        existing_payload: Option<PayloadHash>,
    },
    Acked {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
    },
    /// The holder asked for a retry: the job may be leased again from `visible_at`.
    RetryScheduled {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        attempt: Option<u32>,
        visible_at: SimTime,
    },
    /// Into the DLQ: by the lease holder (`worker` and `fence` set) or at pick time.
    DeadLettered {
        job: JobId,
        worker: Option<WorkerId>,
        fence: Option<Fence>,
        attempts: Option<u32>,
        reason: Box<str>,
    },
    Cancelled {
        job: JobId,
        worker: Option<WorkerId>,
        fence: Option<Fence>,
        deadline_at: Option<SimTime>,
    },
    /// A full DLQ dropped its oldest entry, `job`, to make room (`capacity`), or the entry
    /// expired by age (`retention`, the header's `dlq_retention`): the job's terminal record is
    /// gone. Only with a DLQ capacity or retention.
    DlqEvicted {
        job: JobId,
        capacity: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retention: Option<u64>,
    },
    WorkerCrashed {
        worker: WorkerId,
        job: JobId,
        fence: Fence,
        point: &'static str,
    },
    WorkerRestarted {
        worker: WorkerId,
    },
    /// An event sent to the consumer: by the relay from the outbox, or directly (naive).
    Published {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
        send: Option<u32>,
        direct: bool,
    },
    MarkedPublished {
        count: u32,
    },
    /// Published outbox rows older than the retention were deleted.
    OutboxPruned {
        rows: u64,
    },
    EffectApplied {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
    },
    DuplicateEvent {
        event: EventId,
        key: IdempotencyKey,
    },
    ReviewDone {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
    },
    /// A caller changed a job's content under its key (the fault `mutate_payload`).
    PayloadMutated {
        job: JobId,
        content: u64,
        payload: Option<PayloadHash>,
    },
    /// An operator's reprocess refused; `job` is absent when the operator named no such job.
    ReprocessRefused {
        job: Option<JobId>,
        operator: Option<Box<str>>,
        reason: &'static str,
    },
    /// The audit entry of a reprocess: old job, new job, operator.
    Reprocessed {
        old_job: JobId,
        new_job: JobId,
        operator: Box<str>,
    },
    /// A program in a role wrote a line to the history (`log`, docs/worker-protocol.md):
    /// `role` is `worker`, `relay` or `consumer`, `instance` the worker's number.
    Log {
        role: &'static str,
        instance: u32,
        message: Box<str>,
    },
    /// Optional: the queue depth (visible, unleased, not terminal jobs) at this moment.
    DepthSampled {
        depth: u64,
    },
    /// The run stopped: `quiescent` when everything settled, false when the time limit hit.
    /// Always last.
    RunEnded {
        quiescent: bool,
    },
    /// A worker process renewed its liveness (version 2, `liveness` per process): every lease
    /// it holds is renewed. Recorders only; the simulator's liveness is per job.
    WorkerHeartbeat {
        worker: WorkerId,
    },
    /// The queue took the job back from a holder it judged dead (a stalled-jobs sweep, a
    /// reaper): the lease ends, and the job may be leased again from `visible_at` (the
    /// record's time when absent). Version 2; recorders only.
    Rescued {
        job: JobId,
        /// The holder whose lease was taken, as the recorder saw it (informative).
        worker: Option<WorkerId>,
        visible_at: Option<SimTime>,
    },
    /// A worker process died holding no job the recorder knows of (version 2's `worker_crashed`
    /// without `job`; version 1 too since `durasim conform --kills random`).
    #[serde(rename = "worker_crashed")]
    WorkerLost {
        worker: WorkerId,
    },
    /// The relay marked these outbox events as published (version 2's `marked_published` with
    /// `events`, in place of "the first `count` pending").
    #[serde(rename = "marked_published")]
    MarkedEvents {
        events: Box<[EventId]>,
    },
    /// The relay died after sending, before marking, its unmarked rows not recorded (version
    /// 2's `relay_crashed` without `unmarked`; version 1 too since `durasim conform --kills random`).
    #[serde(rename = "relay_crashed")]
    RelayLost {},
    /// A held fault struck (`vocab::faults::HELD`): `stall_began`, `pause_began`, ..., each
    /// written as its row says. Last, as serde wants an untagged variant.
    #[serde(untagged)]
    Held(HeldRecord),
    /// A fault of the delivery side struck (`vocab::faults::STRUCK`): `relay_crashed`, ...,
    /// each written as its row says.
    #[serde(untagged)]
    Struck(StruckRecord),
}

/// A held fault holding an attempt up: a stall (`stall_began`: the extraction hangs `stall`
/// with no heartbeat), a pause (`pause_began`: the holder stops for `pause` right after a
/// heartbeat renewed its lease; when it outlasts the lease, the renewed lease expires), and
/// every other row of `vocab::faults::HELD`. Written as `{type: <record>, worker, job, fence,
/// <field>: ms}`, the row's names, so each keeps its own record type in the file and the hash.
#[derive(Clone, Copy, Debug, PartialEq, Hash)]
pub struct HeldRecord {
    pub fault: Held,
    pub worker: WorkerId,
    pub job: JobId,
    pub fence: Fence,
    pub ms: u64,
}

impl Serialize for HeldRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let spec = self.fault.spec();
        // As serde's derive writes an internally tagged variant: the tag, then the fields.
        let mut st = s.serialize_struct("Event", 5)?;
        st.serialize_field("type", spec.record)?;
        st.serialize_field("worker", &self.worker)?;
        st.serialize_field("job", &self.job)?;
        st.serialize_field("fence", &self.fence)?;
        st.serialize_field(spec.field, &self.ms)?;
        st.end()
    }
}

/// A fault of the delivery side striking at its site (`vocab::faults::STRUCK`): a relay crash
/// (`relay_crashed`: the relay died after sending a batch of `unmarked` rows and before marking
/// them published), and every other row. Written as `{type: <record>, [job], <field>: value}`,
/// the row's names (`job` when its site takes one; what `value` holds is the site's), so each
/// keeps its own record type in the file and the hash: `relay_crashed` is hashed as it was when
/// it was a variant of its own (its type text, then `unmarked`).
#[derive(Clone, Copy, Debug, PartialEq, Hash)]
pub struct StruckRecord {
    pub fault: Struck,
    pub job: Option<JobId>,
    pub value: u64,
}

impl Serialize for StruckRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let spec = self.fault.spec();
        // As serde's derive writes an internally tagged variant: the tag, then the fields.
        let mut st = s.serialize_struct("Event", 2 + self.job.is_some() as usize)?;
        st.serialize_field("type", spec.record)?;
        if let Some(job) = &self.job {
            st.serialize_field("job", job)?;
        }
        st.serialize_field(spec.field, &self.value)?;
        st.end()
    }
}

impl Event {
    /// The record's type as the history file writes it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "run_started",
            Event::Enqueued { .. } => "enqueued",
            Event::EnqueueDeduped { .. } => "enqueue_deduped",
            Event::EnqueueConflict { .. } => "enqueue_conflict",
            Event::EnqueueReplaced { .. } => "enqueue_replaced",
            Event::Visible { .. } => "visible",
            Event::Leased { .. } => "leased",
            Event::LeaseExpired { .. } => "lease_expired",
            Event::Heartbeat { .. } => "heartbeat",
            Event::Rejected { .. } => "rejected",
            Event::ExtractStarted { .. } => "extract_started",
            Event::ExtractDone { .. } => "extract_done",
            Event::AttemptFailed { .. } => "attempt_failed",
            Event::ResultCommitted { .. } => "result_committed",
            Event::CommitDeduped { .. } => "commit_deduped",
            Event::CommitConflict { .. } => "commit_conflict",
            Event::Acked { .. } => "acked",
            Event::RetryScheduled { .. } => "retry_scheduled",
            Event::DeadLettered { .. } => "dead_lettered",
            Event::Cancelled { .. } => "cancelled",
            Event::DlqEvicted { .. } => "dlq_evicted",
            Event::WorkerCrashed { .. } | Event::WorkerLost { .. } => "worker_crashed",
            Event::WorkerHeartbeat { .. } => "worker_heartbeat",
            Event::Rescued { .. } => "rescued",
            Event::MarkedEvents { .. } => "marked_published",
            Event::RelayLost {} => "relay_crashed",
            Event::WorkerRestarted { .. } => "worker_restarted",
            Event::Published { .. } => "published",
            Event::MarkedPublished { .. } => "marked_published",
            Event::OutboxPruned { .. } => "outbox_pruned",
            Event::EffectApplied { .. } => "effect_applied",
            Event::DuplicateEvent { .. } => "duplicate_event",
            Event::ReviewDone { .. } => "review_done",
            Event::PayloadMutated { .. } => "payload_mutated",
            Event::ReprocessRefused { .. } => "reprocess_refused",
            Event::Reprocessed { .. } => "reprocessed",
            Event::Log { .. } => "log",
            Event::DepthSampled { .. } => "depth_sampled",
            Event::RunEnded { .. } => "run_ended",
            Event::Held(r) => r.fault.spec().record,
            Event::Struck(r) => r.fault.spec().record,
        }
    }
}

/// One history entry: what happened, and when (in the history's time unit).
#[derive(Clone, Debug, PartialEq, Serialize, Hash)]
pub struct Record {
    pub at: SimTime,
    #[serde(flatten)]
    pub event: Event,
}

/// A consumer of the history stream.
pub trait Observer {
    fn observe(&mut self, record: &Record);
}

/// An observer that ignores everything (the trace hash is computed by the kernel anyway).
pub struct NullObserver;

impl Observer for NullObserver {
    #[inline]
    fn observe(&mut self, _: &Record) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: SimTime, depth: u64) -> Record {
        Record {
            at,
            event: Event::DepthSampled { depth },
        }
    }

    #[test]
    fn the_hash_covers_time_fields_and_order() {
        let hash = |rs: &[Record]| {
            let mut h = TraceHash::default();
            rs.iter().for_each(|r| h.add(r));
            h.finish()
        };
        let base = hash(&[rec(1, 2), rec(3, 4)]);
        assert_eq!(base, hash(&[rec(1, 2), rec(3, 4)]));
        assert_ne!(base, hash(&[rec(1, 2), rec(3, 5)]));
        assert_ne!(base, hash(&[rec(1, 2), rec(4, 4)]));
        assert_ne!(base, hash(&[rec(3, 4), rec(1, 2)]));
        assert_ne!(base, hash(&[rec(1, 2)]));
        let dl = |reason: &str| Record {
            at: 0,
            event: Event::DeadLettered {
                job: JobId(0),
                worker: None,
                fence: None,
                attempts: Some(1),
                reason: reason.into(),
            },
        };
        assert_ne!(
            hash(&[dl("permanent_error")]),
            hash(&[dl("max_attempts_exceeded")])
        );
    }

    // The generic record writes `relay_crashed` exactly as the variant it replaced,
    // `RelayCrashed { unmarked: u32 }`, did (the same type text and field values, so the same
    // hash too: the golden hashes of `tests/it/scenarios.rs` with relay crashes pin that).
    #[test]
    fn a_struck_record_is_written_as_its_own_variant_was() {
        #[derive(Serialize, Hash)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Before {
            RelayCrashed { unmarked: u32 },
        }
        let now = Record {
            at: 5,
            event: Event::Struck(StruckRecord {
                fault: Struck::RelayCrash,
                job: None,
                value: 7,
            }),
        };
        #[derive(Serialize, Hash)]
        struct BeforeRecord {
            at: SimTime,
            #[serde(flatten)]
            event: Before,
        }
        let before = BeforeRecord {
            at: 5,
            event: Before::RelayCrashed { unmarked: 7 },
        };
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            serde_json::to_string(&before).unwrap()
        );
        assert_eq!(now.event.type_name(), "relay_crashed");
    }

    #[test]
    fn the_type_names_are_the_serde_tags() {
        let r = Record {
            at: 0,
            event: Event::RunEnded { quiescent: true },
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["type"], r.event.type_name());
        let key = IdempotencyKey::new(TenantId(3), crate::base::ids::DocumentId(42), 2).unwrap();
        assert_eq!(IdempotencyKey::unpack(key.packed()), key);
    }
}

//! What the checker remembers per key, per outbox event and about the DLQ, rebuilt from the
//! records: a key's payload as recorded at enqueue, its first commit and its applied effect; an
//! event's publishes; the DLQ's live entries and each tenant's accepted reprocesses.
//! Does not: judge (the invariant families do) or keep per-job state (`job_track.rs`).

use crate::ids::{EventId, JobId, OperationId, SimTime};
use std::collections::VecDeque;

/// What a payload is, as the history records it at enqueue: the operation and the content's
/// fingerprint (the document is the key's). Two requests under one key carry the same payload
/// exactly when these are equal; the recorded payload hash is not trusted for that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PayloadId {
    pub operation: OperationId,
    pub content: u64,
}

impl std::fmt::Display for PayloadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "content {:016x}", self.content)?;
        if self.operation != OperationId::EXTRACT {
            write!(f, " ({})", self.operation)?;
        }
        Ok(())
    }
}

/// What the history said about one key. Optional fields are kept as values plus flags
/// (`first_*` is meaningful once `results > 0`): a million keys are tracked.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KeyTrack {
    pub payload: PayloadId,
    pub first_at: SimTime,
    pub first_output: u64,
    pub result_event: EventId,
    pub applied_at: SimTime,
    pub applied_event: EventId,
    pub first_job: JobId,
    pub results: u32,
    pub events: u32,
    pub has_payload: bool,
    pub enqueued: bool,
    pub has_result_event: bool,
    pub applied: bool,
    pub reviewed: bool,
}

impl KeyTrack {
    pub fn payload(&self) -> Option<PayloadId> {
        self.has_payload.then_some(self.payload)
    }

    pub fn set_payload(&mut self, payload: PayloadId) {
        self.payload = payload;
        self.has_payload = true;
    }

    /// The first result committed for the key: when, by which job, with which output.
    pub fn first_commit(&self) -> Option<(SimTime, JobId, u64)> {
        (self.results > 0).then_some((self.first_at, self.first_job, self.first_output))
    }

    pub fn result_event(&self) -> Option<EventId> {
        self.has_result_event.then_some(self.result_event)
    }

    pub fn set_result_event(&mut self, event: EventId) {
        self.result_event = event;
        self.has_result_event = true;
    }

    /// When the key's effect was first applied, and from which event.
    pub fn applied(&self) -> Option<(SimTime, EventId)> {
        self.applied
            .then_some((self.applied_at, self.applied_event))
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct EventTrack {
    pub key: u64,
    pub job: u32,
    /// How many times it was published (a relay that dies before marking sends it again).
    pub publishes: u32,
    pub published: bool,
    pub applied: bool,
}

/// The DLQ as the checker sees it, and the reprocesses each tenant had accepted.
#[derive(Clone, Debug, Default)]
pub(super) struct DlqTrack {
    /// Live entries, oldest first.
    pub entries: VecDeque<JobId>,
    pub size_max: u64,
    /// Per tenant: when its accepted reprocesses happened (kept for the rate limit's window).
    pub reprocesses: Vec<VecDeque<SimTime>>,
}

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
/// (`first_*` is meaningful once `results > 0`): a million keys are tracked, so the track is
/// 64 bytes (the payload's operation beside the counts, the flags in one byte) where plain
/// `Option`s and `bool`s took 80.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KeyTrack {
    /// The payload's content; its operation is `operation` (see [`KeyTrack::payload`]).
    content: u64,
    pub first_at: SimTime,
    pub first_output: u64,
    result_event: EventId,
    applied_at: SimTime,
    applied_event: EventId,
    pub first_job: JobId,
    pub results: u32,
    pub events: u32,
    operation: OperationId,
    flags: u8,
}

const ENQUEUED: u8 = 1;
const HAS_RESULT_EVENT: u8 = 2;
const APPLIED: u8 = 4;
const REVIEWED: u8 = 8;

impl KeyTrack {
    /// The payload of the first commit, else of the first enqueue (none before either).
    pub fn payload(&self) -> Option<PayloadId> {
        (self.enqueued() || self.results > 0).then_some(PayloadId {
            operation: self.operation,
            content: self.content,
        })
    }

    /// Sets the payload; called at the first enqueue and at the first commit, so the payload is
    /// known exactly when one of them was seen.
    pub fn set_payload(&mut self, payload: PayloadId) {
        self.operation = payload.operation;
        self.content = payload.content;
    }

    /// An enqueue under the key was seen.
    pub fn enqueued(&self) -> bool {
        self.flags & ENQUEUED != 0
    }

    pub fn set_enqueued(&mut self) {
        self.flags |= ENQUEUED;
    }

    /// The first result committed for the key: when, by which job, with which output.
    pub fn first_commit(&self) -> Option<(SimTime, JobId, u64)> {
        (self.results > 0).then_some((self.first_at, self.first_job, self.first_output))
    }

    pub fn result_event(&self) -> Option<EventId> {
        (self.flags & HAS_RESULT_EVENT != 0).then_some(self.result_event)
    }

    pub fn set_result_event(&mut self, event: EventId) {
        self.result_event = event;
        self.flags |= HAS_RESULT_EVENT;
    }

    /// When the key's effect was first applied, and from which event.
    pub fn applied(&self) -> Option<(SimTime, EventId)> {
        (self.flags & APPLIED != 0).then_some((self.applied_at, self.applied_event))
    }

    pub fn set_applied(&mut self, at: SimTime, event: EventId) {
        (self.applied_at, self.applied_event) = (at, event);
        self.flags |= APPLIED;
    }

    /// The review of the key's effect finished.
    pub fn reviewed(&self) -> bool {
        self.flags & REVIEWED != 0
    }

    pub fn set_reviewed(&mut self) {
        self.flags |= REVIEWED;
    }
}

/// What the checker remembers per outbox event: two bits, published and applied, for the whole
/// run (a republish or a second apply can come until the end), and the run's publish counts.
/// A record naming an event carries its key and job, so nothing else is kept (24 bytes an event
/// before, of which the key and the job were never read back).
#[derive(Clone, Debug, Default)]
pub(super) struct EventTracks {
    /// Two bits an event, 32 events a word: bit `2 * (e % 32)` published, the next applied.
    bits: Vec<u64>,
    /// Every `published` record, a republish included.
    publishes: u64,
    /// Events published at least once.
    published: u64,
}

const EVENT_PUBLISHED: u64 = 1;
const EVENT_APPLIED: u64 = 2;

impl EventTracks {
    pub fn reserve(&mut self, events: usize) {
        self.bits.reserve(events.div_ceil(32));
    }

    /// The word and the shift of an event's two bits, growing the table to hold it.
    fn slot(&mut self, event: EventId) -> (&mut u64, u32) {
        let word = (event.0 / 32) as usize;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        (&mut self.bits[word], 2 * (event.0 % 32) as u32)
    }

    fn get(&self, event: EventId) -> u64 {
        self.bits
            .get((event.0 / 32) as usize)
            .map_or(0, |w| (w >> (2 * (event.0 % 32))) & 3)
    }

    /// A `published` record for the event: whether it is its first.
    pub fn publish(&mut self, event: EventId) -> bool {
        let (word, shift) = self.slot(event);
        let first = *word & (EVENT_PUBLISHED << shift) == 0;
        *word |= EVENT_PUBLISHED << shift;
        self.publishes += 1;
        self.published += first as u64;
        first
    }

    /// An `effect_applied` record for the event: whether it had been applied already.
    pub fn apply(&mut self, event: EventId) -> bool {
        let (word, shift) = self.slot(event);
        let twice = *word & (EVENT_APPLIED << shift) != 0;
        *word |= EVENT_APPLIED << shift;
        twice
    }

    /// Whether the event was ever published.
    pub fn published(&self, event: EventId) -> bool {
        self.get(event) & EVENT_PUBLISHED != 0
    }

    /// `published` records in all, and events published at least once.
    pub fn publish_counts(&self) -> (u64, u64) {
        (self.publishes, self.published)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_two_bits_and_the_counts_are_exact() {
        let mut e = EventTracks::default();
        assert!(!e.published(EventId(70)));
        assert!(e.publish(EventId(70)));
        assert!(
            !e.publish(EventId(70)),
            "a republish is not a first publish"
        );
        assert!(e.publish(EventId(3)));
        assert!(e.published(EventId(70)) && e.published(EventId(3)));
        assert!(!e.published(EventId(71)) && !e.published(EventId(2)));
        assert!(!e.apply(EventId(70)));
        assert!(e.apply(EventId(70)), "a second apply is seen");
        assert!(!e.apply(EventId(71)));
        assert!(e.published(EventId(70)) && !e.published(EventId(71)));
        assert_eq!(e.publish_counts(), (3, 2));
        assert_eq!(e.bits.len(), 3);
    }

    #[test]
    fn a_key_track_is_64_bytes() {
        assert_eq!(std::mem::size_of::<KeyTrack>(), 64);
    }
}

//! What the checker remembers per key, rebuilt from the records: the key's payload as recorded
//! at enqueue, its first commit, its result event, its applied effect, its newest job.
//!
//! Owns: [`PayloadId`], [`KeyTrack`] (the fields the invariant families read, as a plain value)
//! and the key's part of a packed record (`record.rs`): a key's track is kept in the record of
//! the first job enqueued under it, so its payload, its job, its newest job and its first
//! committer are the job's unless the history says otherwise (a `unique` mode other than
//! `forever` gives a key a second job; a broken history commits under a key from another job);
//! the applied event is the result event unless the history says otherwise; times, event ids
//! and counts that do not fit their packed field (3 bits a count) are kept exactly in the side
//! table. The usual
//! first commit, publish and apply change the record in place; the rare ones go through the
//! plain track.
//! Does not: judge (the invariant families do), find a key's record (`tracks.rs`), keep per-job
//! state (`job_track.rs`) or per-event state (`event_track.rs`).

use super::record::*;
use crate::base::ids::{EventId, JobId, OperationId, SimTime};

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
/// (`first_*` is meaningful once `results > 0`). A plain value, read and changed through
/// [`KeyTracks`], which stores it packed.
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
    /// The newest job an `enqueued` record created under the key (`uniqueness.rs`).
    newest: Option<JobId>,
    /// [`ENQUEUED`], [`HAS_RESULT_EVENT`], [`APPLIED`], [`REVIEWED`] (as in the packed record).
    flags: u16,
}

/// A key's first commit: when, by which job, with which output.
pub(super) type FirstCommit = (SimTime, JobId, u64);

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
    pub fn first_commit(&self) -> Option<FirstCommit> {
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

    #[cfg(test)]
    pub fn set_reviewed(&mut self) {
        self.flags |= REVIEWED;
    }

    /// The newest job the history created under the key, if any.
    pub fn newest(&self) -> Option<JobId> {
        self.newest
    }

    pub fn set_newest(&mut self, job: JobId) {
        self.newest = Some(job);
    }
}

/// What an `effect_applied` finds: when and from which event the effect was applied before (if
/// it was), and the key's first commit.
pub(super) type Applied = (Option<(SimTime, EventId)>, Option<FirstCommit>);

/// The plain track's flags, as kept in a record's `key_flags`.
const PLAIN: u16 = ENQUEUED | HAS_RESULT_EVENT | APPLIED | REVIEWED;

/// The key's track from the record that holds it: `id` is the record's number in `side`, `home`
/// its job (`None`: an orphan key's record, which has no job: `tracks.rs`), `base` the job's
/// enqueue time (0 for an orphan's). The key's newest job and first committer are `home` unless
/// the flags put them apart.
pub(super) fn unpack(
    id: u32,
    r: &PackedTrack,
    home: Option<u32>,
    base: SimTime,
    side: &Side,
) -> KeyTrack {
    let f = r.key_flags;
    let job = |apart: u16, field: Field| match (f & apart, home) {
        (0, Some(h)) => JobId(h),
        _ => JobId(side.get(id, field) as u32),
    };
    let results = side.count3(id, Field::Results, r.results3());
    let mut k = KeyTrack {
        content: side.content(id, r),
        operation: OperationId(r.operation),
        first_output: join(r.first_output),
        results,
        events: side.count2(id, Field::Events, r.events2()),
        newest: (f & HAS_NEWEST != 0).then(|| job(NEWEST_APART, Field::Newest)),
        flags: f & PLAIN,
        ..KeyTrack::default()
    };
    if results > 0 {
        k.first_at = side.offset(id, Field::FirstAt, base, r.first_at);
        k.first_job = job(FIRST_JOB_APART, Field::FirstJob);
    }
    if f & HAS_RESULT_EVENT != 0 {
        k.result_event = EventId(side.number(id, Field::ResultEvent, r.result_event));
    }
    if f & APPLIED != 0 {
        k.applied_at = side.offset(id, Field::AppliedAt, k.first_at, r.applied_at);
        k.applied_event = match f & APPLIED_EVENT_APART {
            0 => k.result_event,
            _ => EventId(side.get(id, Field::AppliedEvent)),
        };
    }
    k
}

/// Packs the key's track into the record that holds it (see [`unpack`]); the record's own
/// bits (`HOME`, `JOB_PAYLOAD_APART`) stay.
pub(super) fn pack(
    id: u32,
    r: &mut PackedTrack,
    k: &KeyTrack,
    (home, base): (Option<u32>, SimTime),
    side: &mut Side,
) {
    let mut f = (r.key_flags & (HOME | JOB_PAYLOAD_APART)) | (k.flags & PLAIN);
    if let Some(n) = k.newest {
        f |= HAS_NEWEST;
        if Some(n.0) != home {
            f |= NEWEST_APART;
            side.put(id, Field::Newest, n.0 as u64);
        }
    }
    // The first committer and the first commit's time are unread until the first commit.
    r.first_at = 0;
    if k.results > 0 {
        if Some(k.first_job.0) != home {
            f |= FIRST_JOB_APART;
            side.put(id, Field::FirstJob, k.first_job.0 as u64);
        }
        r.first_at = side.put_offset(id, Field::FirstAt, base, k.first_at);
    }
    r.operation = k.operation.0;
    r.first_output = split(k.first_output);
    r.result_event = match k.result_event() {
        Some(e) => side.put_number(id, Field::ResultEvent, e.0),
        None => 0,
    };
    r.applied_at = 0;
    if let Some((at, event)) = k.applied() {
        r.applied_at = side.put_offset(id, Field::AppliedAt, k.first_at, at);
        if k.result_event() != Some(event) {
            f |= APPLIED_EVENT_APART;
            side.put(id, Field::AppliedEvent, event.0);
        }
    }
    r.key_flags = f;
    side.set_content(id, r, k.content);
    let results = side.put_count3(id, Field::Results, k.results);
    r.set_results3(results);
    let events = side.put_count2(id, Field::Events, k.events);
    r.set_events2(events);
}

/// The payload the record stores: its key's (`HOME`, or an orphan key's record), else its job's.
#[inline]
pub(super) fn stored_payload(id: u32, r: &PackedTrack, side: &Side) -> PayloadId {
    PayloadId {
        operation: OperationId(r.operation),
        content: side.content(id, r),
    }
}

/// The first commit of a `HOME` record's key with no first committer apart, and no first
/// commit's time too wide, read in place (`None`: take the plain track).
#[inline]
fn first_in_place(job: u32, r: &PackedTrack, base: SimTime) -> Option<FirstCommit> {
    (r.results3() != 0
        && r.results3() != WIDE3
        && r.key_flags & FIRST_JOB_APART == 0
        && r.first_at != WIDE)
        .then(|| (base + r.first_at as u64, JobId(job), join(r.first_output)))
}

/// A `result_committed` under the key of `HOME` record `r` (job `job`), done in place when it is
/// the usual first commit: by the record's own job, with the key's payload, before any apply.
/// `base` is the job's enqueue time. `None`: the caller takes the plain track.
#[inline]
pub(super) fn commit_in_place(
    (job, base): (u32, SimTime),
    r: &mut PackedTrack,
    (at, by, output): (SimTime, JobId, u64),
    payload: PayloadId,
    event: Option<EventId>,
    side: &mut Side,
) -> Option<(Option<FirstCommit>, u32)> {
    let events = side.count2(job, Field::Events, r.events2());
    let usual = r.results3() == 0
        && r.key_flags & APPLIED == 0
        && by.0 == job
        && stored_payload(job, r, side) == payload
        && events < WIDE2 as u32 - 1;
    if !usual {
        return None;
    }
    r.first_at = side.put_offset(job, Field::FirstAt, base, at);
    r.first_output = split(output);
    r.set_results3(1);
    if let Some(e) = event {
        r.result_event = side.put_number(job, Field::ResultEvent, e.0);
        r.key_flags |= HAS_RESULT_EVENT;
        r.set_events2(events as u8 + 1);
    }
    Some((None, 1))
}

/// An event for the key published for the first time straight from the committer: it counts as
/// the key's event, and is its result event if it had none. In place, whatever the record.
#[inline]
pub(super) fn publish_direct(id: u32, r: &mut PackedTrack, event: EventId, side: &mut Side) {
    let events = side.count2(id, Field::Events, r.events2());
    let events = side.put_count2(id, Field::Events, events + 1);
    r.set_events2(events);
    if r.key_flags & HAS_RESULT_EVENT == 0 {
        r.result_event = side.put_number(id, Field::ResultEvent, event.0);
        r.key_flags |= HAS_RESULT_EVENT;
    }
}

/// An `effect_applied` for the key of `HOME` record `r`, done in place when it is the usual
/// first apply: from the result event, after the first commit. `base` is the job's enqueue
/// time. `None`: take the plain track.
#[inline]
pub(super) fn apply_in_place(
    (job, base): (u32, SimTime),
    r: &mut PackedTrack,
    at: SimTime,
    event: EventId,
    side: &mut Side,
) -> Option<Applied> {
    let from_result_event = r.key_flags & (HAS_RESULT_EVENT | APPLIED) == HAS_RESULT_EVENT
        && r.result_event != WIDE
        && r.result_event as u64 == event.0;
    let first = first_in_place(job, r, base).filter(|_| from_result_event)?;
    r.applied_at = side.put_offset(job, Field::AppliedAt, first.0, at);
    r.key_flags |= APPLIED;
    Some((None, Some(first)))
}

/// Results committed under the key of `HOME` record `r`.
#[inline]
pub(super) fn results(id: u32, r: &PackedTrack, side: &Side) -> u32 {
    side.count3(id, Field::Results, r.results3())
}

/// The key's newest job (see [`unpack`]).
#[inline]
pub(super) fn newest(id: u32, r: &PackedTrack, home: Option<u32>, side: &Side) -> Option<JobId> {
    match (r.key_flags & (HAS_NEWEST | NEWEST_APART), home) {
        (HAS_NEWEST, Some(h)) => Some(JobId(h)),
        (0, _) => None,
        _ => Some(JobId(side.get(id, Field::Newest) as u32)),
    }
}

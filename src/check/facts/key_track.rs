//! What the checker remembers per key, rebuilt from the records: the key's payload as recorded
//! at enqueue or first commit, its commits, its events, its applied effect, its newest job.
//!
//! Owns: [`PayloadId`], [`KeyTrack`] (the facts the rules read, as a plain value: every field
//! exact, or absent by type) and the key's part of a packed record (`record.rs`): a key's track
//! is kept in the record of the first job enqueued under it, so its payload, its job, its newest
//! job and its first committer are the job's unless the history says otherwise (a `unique`
//! mode other than `forever` gives a key a second job; a broken history commits under a key from
//! another job); the applied event is the first commit's event unless the history says
//! otherwise; times, event ids and counts that do not fit their packed field are kept exactly in
//! the side table; the commits after the first and the events published directly ([`KeyRare`])
//! in the key rare table. Each change is written once, field by field, by the reducer's writers
//! in `tracks.rs`; every packed value is read back in a debug build.
//! Does not: judge (the rules do), find a key's record (`tracks.rs`), keep per-job state
//! (`job_track.rs`) or per-event state (`event_track.rs`).

use super::record::*;
use crate::base::ids::{EventId, JobId, OperationId, SimTime};

/// What a payload is, as the history records it at enqueue: the operation and the content's
/// fingerprint (the document is the key's). Two requests under one key carry the same payload
/// exactly when these are equal; the recorded payload hash is not trusted for that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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

/// A key's first commit: when, by which job, with which output, and the event it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) struct FirstCommit {
    pub at: SimTime,
    pub job: JobId,
    pub output: u64,
    pub event: Option<EventId>,
}

/// A commit after a key's first (only a history that breaks `single_result_per_key` has one),
/// or an event published directly for the key: the job, the output and the event, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) struct Written {
    pub job: JobId,
    pub output: u64,
    pub event: Option<EventId>,
}

/// What a key seldom has, kept apart by key ([`KEY_RARE`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(in crate::check) struct KeyRare {
    /// The `result_committed` records after the first, in order.
    pub commits: Vec<Written>,
    /// The events published directly (`direct: true`), each with its first publish's job and
    /// output, in order.
    pub direct: Vec<Written>,
}

/// What the history said about one key, as a plain value read from its packed record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(in crate::check) struct KeyTrack {
    /// The payload of the first commit, else of the first enqueue (none before either).
    pub payload: Option<PayloadId>,
    pub first: Option<FirstCommit>,
    pub results: u32,
    /// The event the key's effect was first applied from.
    pub applied: Option<EventId>,
    pub reviewed: bool,
    /// An `enqueued` record named the key.
    pub enqueued: bool,
    /// The newest job an `enqueued` record created under the key.
    pub newest: Option<JobId>,
    /// The key has a [`KeyRare`] entry.
    pub rare: bool,
}

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
    let first = (results > 0).then(|| FirstCommit {
        at: side.offset(id, Field::FirstAt, base, r.first_at),
        job: job(FIRST_JOB_APART, Field::FirstJob),
        output: join(r.first_output),
        event: (f & HAS_RESULT_EVENT != 0)
            .then(|| EventId(side.number(id, Field::ResultEvent, r.result_event))),
    });
    let applied = (f & APPLIED != 0).then(|| match f & APPLIED_EVENT_APART {
        0 => first
            .and_then(|c| c.event)
            .expect("an applied event not apart is the first commit's"),
        _ => EventId(side.get(id, Field::AppliedEvent)),
    });
    KeyTrack {
        payload: (f & ENQUEUED != 0 || results > 0).then(|| stored_payload(id, r, side)),
        first,
        results,
        applied,
        reviewed: f & REVIEWED != 0,
        enqueued: f & ENQUEUED != 0,
        newest: (f & HAS_NEWEST != 0).then(|| job(NEWEST_APART, Field::Newest)),
        rare: f & KEY_RARE != 0,
    }
}

/// The payload the record stores: its key's (`HOME`, or an orphan key's record), else its job's.
#[inline]
pub(super) fn stored_payload(id: u32, r: &PackedTrack, side: &Side) -> PayloadId {
    PayloadId {
        operation: OperationId(r.operation),
        content: side.content(id, r),
    }
}

/// Sets the payload the record stores.
pub(super) fn set_payload(id: u32, r: &mut PackedTrack, p: PayloadId, side: &mut Side) {
    r.operation = p.operation.0;
    side.set_content(id, r, p.content);
}

/// The first commit of the key of record `r` (number `id`, job `home`), written field by field.
pub(super) fn set_first(
    id: u32,
    r: &mut PackedTrack,
    (home, base): (Option<u32>, SimTime),
    c: FirstCommit,
    side: &mut Side,
) {
    if Some(c.job.0) != home {
        r.key_flags |= FIRST_JOB_APART;
        side.put(id, Field::FirstJob, c.job.0 as u64);
    }
    r.first_at = side.put_offset(id, Field::FirstAt, base, c.at);
    r.first_output = split(c.output);
    if let Some(e) = c.event {
        r.result_event = side.put_number(id, Field::ResultEvent, e.0);
        r.key_flags |= HAS_RESULT_EVENT;
    }
}

/// The key's results count.
#[inline]
pub(super) fn results(id: u32, r: &PackedTrack, side: &Side) -> u32 {
    side.count3(id, Field::Results, r.results3())
}

pub(super) fn set_results(id: u32, r: &mut PackedTrack, n: u32, side: &mut Side) {
    let packed = side.put_count3(id, Field::Results, n);
    r.set_results3(packed);
}

/// The key's effect was first applied from `event`: apart unless it is the first commit's.
pub(super) fn set_applied(id: u32, r: &mut PackedTrack, event: EventId, side: &mut Side) {
    let first_event = (r.key_flags & HAS_RESULT_EVENT != 0 && r.results3() != 0)
        .then(|| side.number(id, Field::ResultEvent, r.result_event));
    r.key_flags |= APPLIED;
    if first_event != Some(event.0) {
        r.key_flags |= APPLIED_EVENT_APART;
        side.put(id, Field::AppliedEvent, event.0);
    }
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

/// Sets the key's newest job.
pub(super) fn set_newest(
    id: u32,
    r: &mut PackedTrack,
    home: Option<u32>,
    job: JobId,
    side: &mut Side,
) {
    r.key_flags |= HAS_NEWEST;
    if Some(job.0) == home {
        r.key_flags &= !NEWEST_APART;
    } else {
        r.key_flags |= NEWEST_APART;
        side.put(id, Field::Newest, job.0 as u64);
    }
    debug_assert_eq!(
        newest(id, r, home, side),
        Some(job),
        "the newest job reads back"
    );
}

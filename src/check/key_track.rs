//! What the checker remembers per key, rebuilt from the records: the key's payload as recorded
//! at enqueue, its first commit, its result event, its applied effect, its newest job.
//!
//! Owns: [`PayloadId`], [`KeyTrack`] (the fields the invariant families read, as a plain value)
//! and [`KeyTracks`]: every key's track, packed into 44 bytes (the 64-byte plain track and a
//! 4-byte newest job before) and found through the checker's own index on keys. A key's job, its
//! first committer and its newest job are one number unless the history gave the key a second
//! job (a uniqueness mode other than `forever`, or a broken history); the applied event is the
//! result event unless the history says otherwise; times, event ids and counts that do not fit
//! their packed field are kept exactly in a side table, as in `job_track.rs`.
//! Does not: judge (the invariant families do), keep per-job state (`job_track.rs`) or per-event
//! state (`event_track.rs`).

use crate::ids::{EventId, JobId, OperationId, SimTime};
use crate::key_index::KeyIndex;
use crate::vocab::key::IdempotencyKey;
use std::collections::BTreeMap;

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
    flags: u8,
}

/// A key's first commit: when, by which job, with which output.
pub(super) type FirstCommit = (SimTime, JobId, u64);

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

/// A key's track as stored (44 bytes, aligned to 4). `job` is the key's newest job, else its
/// first committer: [`FIRST_JOB_APART`] says the first committer is another job (kept in the
/// side table; before the first commit the first committer is not read, and reads back as
/// `job`). The applied time is an offset from the first commit's time; the applied event is the
/// result event unless [`APPLIED_EVENT_APART`] says otherwise; both are stored only once the
/// effect was applied, the result event only once there is one. [`WIDE`] (or [`WIDE16`]) in a
/// field: the exact value is in the side table.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    content: [u32; 2],
    first_output: [u32; 2],
    first_at: [u32; 2],
    applied_at: u32,
    result_event: u32,
    job: u32,
    results: u16,
    events: u16,
    operation: u16,
    /// The plain track's flags in the low byte, and the bits below.
    flags: u16,
}

const HAS_NEWEST: u16 = 1 << 8;
const FIRST_JOB_APART: u16 = 1 << 9;
const APPLIED_EVENT_APART: u16 = 1 << 10;

/// A packed field whose value is in the side table.
const WIDE: u32 = u32::MAX;
/// A packed `u16` field whose value is in the side table.
const WIDE16: u16 = u16::MAX;

/// The side table's field numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Field {
    AppliedAt,
    ResultEvent,
    AppliedEvent,
    FirstJob,
    Results,
    Events,
}

fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

fn join(v: [u32; 2]) -> u64 {
    v[0] as u64 | (v[1] as u64) << 32
}

/// Every key's track, by the slot of the checker's index on keys (slots in the order the
/// history first names each key).
#[derive(Clone, Debug, Default)]
pub(super) struct KeyTracks {
    index: KeyIndex,
    packed: Vec<Packed>,
    /// Values apart from their packed field, by slot and field: exact, and empty in a run whose
    /// keys each have one job, whose effects are applied from their result event within 2^32 - 1
    /// units of the first commit, and whose event ids and counts fit their fields.
    wide: BTreeMap<(u32, Field), u64>,
}

impl KeyTracks {
    pub fn with_capacity(keys: usize) -> KeyTracks {
        KeyTracks {
            index: KeyIndex::with_capacity(keys),
            packed: Vec::with_capacity(keys),
            wide: BTreeMap::new(),
        }
    }

    /// Keys the history named.
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    /// The key's track so far (empty if the history never named it).
    #[inline]
    pub fn get(&self, key: &IdempotencyKey) -> KeyTrack {
        self.index
            .get(key)
            .map_or_else(KeyTrack::default, |slot| self.unpack(slot))
    }

    /// The key in `slot` and its track.
    pub fn at(&self, slot: u32) -> (IdempotencyKey, KeyTrack) {
        (self.index.key(slot), self.unpack(slot))
    }

    /// Changes the key's track, created (empty) the first time the history names the key.
    #[cfg(test)]
    pub fn update<R>(
        &mut self,
        key: &IdempotencyKey,
        change: impl FnOnce(&mut KeyTrack) -> R,
    ) -> R {
        let slot = self.slot_mut(key);
        self.change(slot, change)
    }

    /// The key's slot, created (empty) the first time the history names the key.
    #[inline]
    fn slot_mut(&mut self, key: &IdempotencyKey) -> usize {
        let (slot, new) = self.index.insert(*key);
        if new {
            assert_eq!(
                slot as usize,
                self.packed.len(),
                "slots are handed out in order"
            );
            self.packed.push(Packed::default());
        }
        slot as usize
    }

    /// The newest job the history created under `key`, if any.
    #[inline]
    pub fn newest(&self, key: &IdempotencyKey) -> Option<JobId> {
        let p = &self.packed[self.index.get(key)? as usize];
        (p.flags & HAS_NEWEST != 0).then_some(JobId(p.job))
    }

    /// Results committed under `key`.
    #[inline]
    pub fn results(&self, key: &IdempotencyKey) -> u32 {
        self.index.get(key).map_or(0, |slot| {
            self.number16(slot, Field::Results, self.packed[slot as usize].results)
        })
    }

    /// An `enqueued` record created `job` under `key`: it is the key's newest job, and the first
    /// enqueue's payload is the key's until a commit. Returns the newest job before it.
    #[inline]
    pub fn enqueue(
        &mut self,
        key: &IdempotencyKey,
        job: JobId,
        payload: PayloadId,
    ) -> Option<JobId> {
        let slot = self.slot_mut(key);
        let p = &mut self.packed[slot];
        if p.flags & (HAS_NEWEST | ENQUEUED as u16) == 0 && p.results == 0 {
            // A key never enqueued nor committed (the usual case): no first committer to keep.
            p.job = job.0;
            p.flags |= HAS_NEWEST | ENQUEUED as u16;
            (p.operation, p.content) = (payload.operation.0, split(payload.content));
            return None;
        }
        self.change(slot, |k| {
            let before = k.newest();
            k.set_newest(job);
            if !k.enqueued() {
                k.set_enqueued();
                k.set_payload(payload);
            }
            before
        })
    }

    /// A `result_committed` record under `key` by `job` (with the job's payload, and its event
    /// if any). Returns the first commit before this one, and the results committed with it.
    #[inline]
    pub fn commit(
        &mut self,
        key: &IdempotencyKey,
        (at, job, output): (SimTime, JobId, u64),
        payload: PayloadId,
        event: Option<EventId>,
    ) -> (Option<FirstCommit>, u32) {
        let slot = self.slot_mut(key);
        let p = &mut self.packed[slot];
        let first_job_packs = p.flags & HAS_NEWEST == 0 || p.job == job.0;
        let event_packs = event.is_none_or(|e| e.0 < WIDE as u64);
        if p.results == 0
            && p.flags & APPLIED as u16 == 0
            && first_job_packs
            && event_packs
            && p.events < WIDE16 - 1
        {
            // The first commit, before any apply (the usual case).
            (p.first_at, p.job, p.first_output) = (split(at), job.0, split(output));
            (p.operation, p.content) = (payload.operation.0, split(payload.content));
            p.results = 1;
            if let Some(e) = event {
                p.result_event = e.0 as u32;
                p.flags |= HAS_RESULT_EVENT as u16;
                p.events += 1;
            }
            return (None, 1);
        }
        self.change(slot, |k| {
            let first = k.first_commit();
            if first.is_none() {
                (k.first_at, k.first_job, k.first_output) = (at, job, output);
                k.set_payload(payload);
            }
            k.results += 1;
            if let Some(e) = event {
                k.set_result_event(e);
                k.events += 1;
            }
            (first, k.results)
        })
    }

    /// An event for `key` published for the first time straight from the committer (no outbox
    /// row): it counts as the key's event, and is its result event if it had none.
    #[inline]
    pub fn publish_direct(&mut self, key: &IdempotencyKey, event: EventId) {
        let slot = self.slot_mut(key);
        let p = &mut self.packed[slot];
        let has_event = p.flags & HAS_RESULT_EVENT as u16 != 0;
        if p.events < WIDE16 - 1 && (has_event || event.0 < WIDE as u64) {
            p.events += 1;
            if !has_event {
                p.result_event = event.0 as u32;
                p.flags |= HAS_RESULT_EVENT as u16;
            }
            return;
        }
        self.change(slot, |k| {
            k.events += 1;
            if k.result_event().is_none() {
                k.set_result_event(event);
            }
        })
    }

    /// An `effect_applied` record for `key` from `event`. Returns when and from which event the
    /// effect was applied before (if it was), and the key's first commit.
    #[inline]
    pub fn apply(
        &mut self,
        key: &IdempotencyKey,
        at: SimTime,
        event: EventId,
    ) -> (Option<(SimTime, EventId)>, Option<FirstCommit>) {
        let slot = self.slot_mut(key);
        let p = &mut self.packed[slot];
        let first_at = join(p.first_at);
        let from_result_event = p.flags & HAS_RESULT_EVENT as u16 != 0
            && p.result_event != WIDE
            && p.result_event as u64 == event.0;
        let offset = at.checked_sub(first_at).filter(|d| *d < WIDE as u64);
        if p.flags & (APPLIED as u16 | FIRST_JOB_APART) == 0
            && p.results != 0
            && p.results != WIDE16
            && from_result_event
        {
            if let Some(d) = offset {
                // Applied from the result event after the first commit (the usual case).
                p.applied_at = d as u32;
                p.flags |= APPLIED as u16;
                let first = (first_at, JobId(p.job), join(p.first_output));
                return (None, Some(first));
            }
        }
        self.change(slot, |k| {
            let earlier = k.applied();
            if earlier.is_none() {
                k.set_applied(at, event);
            }
            (earlier, k.first_commit())
        })
    }

    /// The review of the key's effect finished.
    #[inline]
    pub fn review(&mut self, key: &IdempotencyKey) {
        let slot = self.slot_mut(key);
        self.packed[slot].flags |= REVIEWED as u16;
    }

    /// Changes the track in `slot` through its plain form (the rare cases).
    fn change<R>(&mut self, slot: usize, change: impl FnOnce(&mut KeyTrack) -> R) -> R {
        let mut k = self.unpack(slot as u32);
        let r = change(&mut k);
        self.packed[slot] = self.pack(slot as u32, &k);
        r
    }

    fn wide(&self, slot: u32, field: Field) -> u64 {
        *self
            .wide
            .get(&(slot, field))
            .expect("a key's field apart from its packed form has its value in the side table")
    }

    fn number(&self, slot: u32, field: Field, packed: u32) -> u64 {
        match packed {
            WIDE => self.wide(slot, field),
            n => n as u64,
        }
    }

    fn put_number(&mut self, slot: u32, field: Field, v: u64) -> u32 {
        if v < WIDE as u64 {
            v as u32
        } else {
            self.wide.insert((slot, field), v);
            WIDE
        }
    }

    fn number16(&self, slot: u32, field: Field, packed: u16) -> u32 {
        match packed {
            WIDE16 => self.wide(slot, field) as u32,
            n => n as u32,
        }
    }

    fn put_number16(&mut self, slot: u32, field: Field, v: u32) -> u16 {
        if v < WIDE16 as u32 {
            v as u16
        } else {
            self.wide.insert((slot, field), v as u64);
            WIDE16
        }
    }

    fn unpack(&self, slot: u32) -> KeyTrack {
        let p = &self.packed[slot as usize];
        let flags = (p.flags & 0xff) as u8;
        let first_at = join(p.first_at);
        let mut k = KeyTrack {
            content: join(p.content),
            first_at,
            first_output: join(p.first_output),
            first_job: match p.flags & FIRST_JOB_APART {
                0 => JobId(p.job),
                _ => JobId(self.wide(slot, Field::FirstJob) as u32),
            },
            results: self.number16(slot, Field::Results, p.results),
            events: self.number16(slot, Field::Events, p.events),
            operation: OperationId(p.operation),
            newest: (p.flags & HAS_NEWEST != 0).then_some(JobId(p.job)),
            flags,
            ..KeyTrack::default()
        };
        if flags & HAS_RESULT_EVENT != 0 {
            k.result_event = EventId(self.number(slot, Field::ResultEvent, p.result_event));
        }
        if flags & APPLIED != 0 {
            k.applied_at = match p.applied_at {
                WIDE => self.wide(slot, Field::AppliedAt),
                d => first_at + d as u64,
            };
            k.applied_event = match p.flags & APPLIED_EVENT_APART {
                0 => k.result_event,
                _ => EventId(self.wide(slot, Field::AppliedEvent)),
            };
        }
        k
    }

    fn pack(&mut self, slot: u32, k: &KeyTrack) -> Packed {
        let job = k.newest.unwrap_or(k.first_job);
        let mut flags = k.flags as u16;
        if k.newest.is_some() {
            flags |= HAS_NEWEST;
        }
        // The first committer is unread until the first commit (`first_commit`).
        if k.results > 0 && k.first_job != job {
            flags |= FIRST_JOB_APART;
            self.wide
                .insert((slot, Field::FirstJob), k.first_job.0 as u64);
        }
        let mut p = Packed {
            content: split(k.content),
            first_output: split(k.first_output),
            first_at: split(k.first_at),
            job: job.0,
            results: self.put_number16(slot, Field::Results, k.results),
            events: self.put_number16(slot, Field::Events, k.events),
            operation: k.operation.0,
            ..Packed::default()
        };
        let result_event = k.result_event();
        if let Some(e) = result_event {
            p.result_event = self.put_number(slot, Field::ResultEvent, e.0);
        }
        if let Some((at, event)) = k.applied() {
            p.applied_at = match at.checked_sub(k.first_at).filter(|d| *d < WIDE as u64) {
                Some(d) => d as u32,
                None => {
                    self.wide.insert((slot, Field::AppliedAt), at);
                    WIDE
                }
            };
            if result_event != Some(event) {
                flags |= APPLIED_EVENT_APART;
                self.wide.insert((slot, Field::AppliedEvent), event.0);
            }
        }
        p.flags = flags;
        p
    }
}

#[cfg(test)]
mod tests;

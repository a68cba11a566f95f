//! Where the checker keeps what it remembers of every job and every key: one [`PackedTrack`] per job
//! (`record.rs`), which also holds the track of the job's key when the job was the first the
//! history enqueued under it (under `unique = "forever"`, every job), and the checker's own
//! index on keys.
//!
//! Owns: [`Tracks`]: the records by job id; the slab of live jobs' plain tracks (a job without a
//! terminal record is read and changed in place there, and packed into its record when it
//! ends, its slot reused, so the slab holds as many tracks as there are unfinished jobs); the
//! side and rare tables (a job's, a key's); the enqueue times' bases by runs of job ids
//! (`record.rs`, `Epochs`); the index
//! on keys (key → the job whose record holds the key's track: a document's first key's record
//! guessed from the document's number by runs ([`Heads`]), the key read back from the record,
//! and a map for a document's other keys, its other tenants and versions); and the orphan keys: a key a record names before any job was
//! enqueued under it (only a broken history does that) keeps its track apart, in the layout of
//! a record with no job.
//! A key with several jobs (a `unique` mode other than `forever`) keeps its track in its first
//! job's record; the others' records hold only their job's part, the newest job is in the side
//! table.
//! Every change goes through the writers here, called by the reducer (`facts/mod.rs`) alone;
//! the rules read through `get` and the key readers.
//! Does not: judge (the rules do), decide what a record changes (the reducer does) or what a
//! field means (`job_track.rs`, `key_track.rs`).

use super::job_track::{self, JobTrack, Place, Rare};
use super::key_track::{self, FirstCommit, KeyRare, KeyTrack, PayloadId, Written};
use super::record::*;
use crate::base::ids::{EventId, JobId, SimTime};
use crate::base::state_hash::StateMap;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::key_index::KeyIndex;
use std::borrow::Cow;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Hash)]
pub(super) struct Tracks {
    records: Vec<PackedTrack>,
    /// The live jobs' plain tracks; `free` lists the slots to reuse (last freed first).
    live: Vec<JobTrack>,
    free: Vec<u32>,
    /// Values too wide for their packed field, by job and field.
    side: Side,
    /// A finished job's rare parts (`job_track::Rare`), by job, when it has one ([`HAS_RARE`]).
    rare: BTreeMap<u32, Rare>,
    /// A key's rare parts (`key_track::KeyRare`), by packed key, when it has one ([`KEY_RARE`]).
    key_rare: BTreeMap<u64, KeyRare>,
    /// The bases of the records' enqueue times.
    epochs: Epochs,
    /// The record holding the first key of each document.
    heads: Heads,
    /// The records holding the keys that are not their document's first, by packed key (a
    /// document's other tenants and versions: a reprocess, a tenant reusing a document name).
    others: StateMap<u64, u32>,
    /// Records holding their key's track.
    homes: u32,
    orphans: Orphans,
}

/// Keys a record named before any job was enqueued under them (a broken history's): each keeps
/// its track in a record of its own (its job's part unused), found through an index of its own.
#[derive(Clone, Debug, Default, Hash)]
struct Orphans {
    index: KeyIndex,
    records: Vec<PackedTrack>,
    side: Side,
    /// How many keys the jobs' records held when the history first named it: the keys are
    /// visited at the end in the order the history first named them.
    after: Vec<u32>,
}

/// The record holding each document's first key, guessed from the document's number: document
/// d's is record d + shift, the shift kept by runs of document numbers. A run starts at a
/// document beyond every document with a key whose first key is not where the run before puts
/// it (one run for a history whose jobs are each a new document's first, as `doc-N` for job N,
/// or named documents in the order the history names them; a new run after a job that is not a
/// new document's first: a resubmission, a reprocess). A first key the runs do not guess (a
/// document numbered below one seen before) is in a map. Exact for any history: the guessed
/// record is read back and compared, key and all; a document's guess never changes once it has
/// a key (runs start only beyond those). (A 4-byte head a document, reserved for the run's
/// jobs, before.)
#[derive(Clone, Debug, Default, Hash)]
struct Heads {
    /// The first document of each run, increasing, and the run's shift (record − document).
    starts: Vec<u32>,
    shifts: Vec<i64>,
    /// The greatest document with a key.
    max: Option<u32>,
    /// First keys' records the runs do not guess, by document.
    apart: BTreeMap<u32, u32>,
}

impl Heads {
    /// The record the runs put `document`'s first key in.
    #[inline]
    fn guess(&self, document: u32) -> Option<u32> {
        let shift = match self.starts.last() {
            Some(&s) if s <= document => self.shifts[self.shifts.len() - 1],
            _ => match self.starts.partition_point(|s| *s <= document) {
                0 => return None,
                n => self.shifts[n - 1],
            },
        };
        u32::try_from(document as i64 + shift).ok()
    }

    /// `document`'s first key is in record `job`.
    fn insert(&mut self, document: u32, job: u32) {
        if self.guess(document) != Some(job) {
            if self.max.is_none_or(|m| document > m) {
                self.starts.push(document);
                self.shifts.push(job as i64 - document as i64);
            } else {
                self.apart.insert(document, job);
            }
        }
        self.max = self.max.max(Some(document));
    }

    #[cfg(test)]
    fn runs(&self) -> usize {
        self.starts.len()
    }
}

/// Where a key's track is.
#[derive(Clone, Copy, Debug, Hash)]
pub(in crate::check) enum At {
    /// In its first job's record.
    Home(u32),
    Orphan(u32),
}

/// A place in the visit of every key ([`Tracks::next_key`]).
#[derive(Clone, Copy, Debug, Default, Hash)]
pub(in crate::check) struct KeyCursor {
    record: usize,
    orphan: usize,
    homes: u32,
}

/// A key's record, borrowed to change it: its number in its side table, the record, the side
/// table, its home job (none: an orphan's), the base of its times.
struct KeyParts<'a> {
    id: u32,
    r: &'a mut PackedTrack,
    side: &'a mut Side,
    home: Option<u32>,
    base: SimTime,
}

impl Tracks {
    pub fn reserve(&mut self, jobs: usize) {
        self.records.reserve_exact(jobs);
    }

    /// The enqueue time of the job of record `r`.
    #[inline]
    fn enqueued_at(&self, job: u32, r: &PackedTrack) -> SimTime {
        match r.enqueued_at {
            WIDE => self.side.get(job, Field::EnqueuedAt),
            d => self.epochs.base(job) + d as u64,
        }
    }

    /// Job ids seen (the records held, gaps included).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    #[inline]
    fn exists(&self, job: JobId) -> Option<&PackedTrack> {
        self.records.get(job.index()).filter(|r| holds_job(r))
    }

    /// A finished job's track, unpacked.
    fn unpack_job(&self, job: u32, r: &PackedTrack) -> JobTrack {
        let base = self.enqueued_at(job, r);
        let rare = match r.flags & HAS_RARE {
            0 => Rare::default(),
            _ => *self
                .rare
                .get(&job)
                .expect("a record flagged with rare parts has them in `rare`"),
        };
        let payload = rare
            .payload
            .unwrap_or_else(|| key_track::stored_payload(job, r, &self.side));
        job_track::unpack(job, r, &self.side, base, payload, rare)
    }

    /// The job's track, if an `enqueued` record created it: borrowed while the job is live,
    /// unpacked once it has finished.
    #[inline]
    pub fn get(&self, job: JobId) -> Option<Cow<'_, JobTrack>> {
        let r = self.exists(job)?;
        Some(match r.flags & LIVE {
            0 => Cow::Owned(self.unpack_job(job.0, r)),
            _ => Cow::Borrowed(&self.live[r.visible_from as usize]),
        })
    }

    /// An `enqueued` record created `job` with track `t` (live): its record is written, and it
    /// becomes its key's newest job (the key's first: its record holds the key's track, whose
    /// payload is the job's). Returns the key's newest job before it.
    pub fn create(&mut self, job: JobId, t: &JobTrack) -> Option<JobId> {
        let i = job.index();
        assert!(
            self.exists(job).is_none(),
            "{job} enqueued twice (the reader refuses such a history)"
        );
        assert!(t.terminal.is_none(), "a new job has no terminal record");
        // Job ids grow with the enqueues (the reader numbers jobs in order of first appearance,
        // which is the enqueue; the kernel as it enqueues), so the jobs' keys are visited at the
        // end in the order the history first named them.
        debug_assert!(i >= self.records.len(), "{job} enqueued after a later job");
        let last = i >= self.records.len();
        if self.records.len() <= i {
            self.records.resize(i + 1, PackedTrack::default());
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.live[slot as usize] = *t;
                slot
            }
            None => {
                self.live.push(*t);
                (self.live.len() - 1) as u32
            }
        };
        let found = self.find(&t.key, None);
        let enqueued_at = self.epochs.put(job.0, t.enqueued_at, last);
        if enqueued_at == WIDE {
            self.side.put(job.0, Field::EnqueuedAt, t.enqueued_at);
        }
        let r = &mut self.records[i];
        *r = PackedTrack {
            enqueued_at,
            visible_from: slot,
            flags: LIVE,
            ..PackedTrack::default()
        };
        job_track::write_key(job.0, r, &t.key, t.tenant, &mut self.side);
        debug_assert_eq!(self.enqueued_at(job.0, &self.records[i]), t.enqueued_at);
        match found {
            None => {
                let r = &mut self.records[i];
                r.key_flags = HOME | ENQUEUED | HAS_NEWEST;
                key_track::set_payload(job.0, r, t.payload, &mut self.side);
                self.index_insert(job.0, &t.key);
                None
            }
            Some(at) => {
                let k = self.key_parts(at);
                let before = key_track::newest(k.id, k.r, k.home, k.side);
                key_track::set_newest(k.id, k.r, k.home, job, k.side);
                if k.r.key_flags & ENQUEUED == 0 {
                    if key_track::results(k.id, k.r, k.side) == 0 {
                        key_track::set_payload(k.id, k.r, t.payload, k.side);
                    }
                    k.r.key_flags |= ENQUEUED;
                }
                // The record's own payload is the job's (the key's track is elsewhere).
                key_track::set_payload(job.0, &mut self.records[i], t.payload, &mut self.side);
                before
            }
        }
    }

    /// Changes the job's track (the reducer's writer); `None` if it was never enqueued. A live
    /// job's track is changed in place, and packed into its record when it gets its terminal
    /// record; a finished job's is unpacked, changed and packed again.
    #[inline]
    pub fn update<R>(&mut self, job: JobId, change: impl FnOnce(&mut JobTrack) -> R) -> Option<R> {
        let r = self.exists(job)?;
        if r.flags & LIVE != 0 {
            let slot = r.visible_from;
            let t = &mut self.live[slot as usize];
            let out = change(t);
            if t.terminal.is_some() {
                let t = *t;
                self.free.push(slot);
                self.pack_job(job.0, &t);
            }
            return Some(out);
        }
        let mut t = self.unpack_job(job.0, r);
        let out = change(&mut t);
        assert!(
            t.terminal.is_some(),
            "a terminal record is never taken back"
        );
        self.pack_job(job.0, &t);
        Some(out)
    }

    /// Packs a finished job's track into its record: its payload is its record's unless it
    /// differs, then it goes to the rare table with the other rare parts. A debug build reads
    /// the track back and compares.
    fn pack_job(&mut self, job: u32, t: &JobTrack) {
        let base = self.enqueued_at(job, &self.records[job as usize]);
        let r = &mut self.records[job as usize];
        job_track::pack(job, r, t, &mut self.side, base);
        let mut rare = Rare {
            failure: t.failure,
            reprocessed_from: t.reprocessed_from,
            audited: t.audited,
            reprocessed: t.reprocessed,
            payload: None,
        };
        if r.key_flags & HOME == 0 {
            key_track::set_payload(job, r, t.payload, &mut self.side);
        } else if key_track::stored_payload(job, r, &self.side) != t.payload {
            rare.payload = Some(t.payload);
        }
        if !rare.is_empty() {
            r.flags |= HAS_RARE;
            self.rare.insert(job, rare);
        } else {
            r.flags &= !HAS_RARE;
            if !self.rare.is_empty() {
                self.rare.remove(&job);
            }
        }
        debug_assert_eq!(
            self.unpack_job(job, &self.records[job as usize]),
            *t,
            "a packed track reads back as it was"
        );
    }

    /// The job's latest lease if it is held (read without unpacking a finished job whose lease
    /// is not held, as nearly every finished job's is not).
    #[inline]
    pub fn held_lease(&self, job: JobId) -> Option<super::Lease> {
        let r = self.exists(job)?;
        match r.flags & (LIVE | LEASE_HELD) {
            0 => None,
            f if f & LIVE != 0 => self.live[r.visible_from as usize].held().copied(),
            _ => self.unpack_job(job.0, r).held().copied(),
        }
    }

    /// Where the job stands for the depth (`None`: never enqueued).
    #[inline]
    pub fn place(&self, job: JobId) -> Option<Place> {
        let r = self.exists(job)?;
        Some(match r.flags & LIVE {
            0 => job_track::place_of(r.flags),
            _ => self.live[r.visible_from as usize].place,
        })
    }

    #[inline]
    pub fn set_place(&mut self, job: JobId, place: Place) {
        if let Some(r) = self.records.get_mut(job.index()) {
            if r.flags & LIVE != 0 {
                self.live[r.visible_from as usize].place = place;
            } else if holds_job(r) {
                r.flags = (r.flags & !(3 << PLACE_SHIFT)) | ((place as u16) << PLACE_SHIFT);
            }
        }
    }

    /// Plain tracks held (the unfinished jobs at most, and never more than were ever unfinished
    /// at once).
    #[cfg(test)]
    pub fn live_capacity(&self) -> usize {
        self.live.len()
    }

    /// Whether the job has its terminal record, and its leases (`None`: never enqueued), read
    /// without unpacking: the end-of-run figures visit every job.
    pub fn ended_and_leases(&self, job: JobId) -> Option<(bool, u64)> {
        let r = self.exists(job)?;
        Some(match r.flags & LIVE {
            0 => job_track::ended_and_leases(job.0, r, &self.side),
            _ => {
                let t = &self.live[r.visible_from as usize];
                (t.terminal.is_some(), t.leases as u64)
            }
        })
    }

    /// Whether the end-of-run rules have anything to say about the job: it has no terminal
    /// record, or it was created by a reprocess (read without unpacking the others).
    pub fn needs_finish_check(&self, job: JobId) -> bool {
        self.exists(job).is_some_and(|r| {
            r.flags & LIVE != 0
                || (r.flags & HAS_RARE != 0
                    && self
                        .rare
                        .get(&job.0)
                        .is_some_and(|x| x.reprocessed_from.is_some()))
        })
    }
}

/// The keys.
impl Tracks {
    /// The record the heads guess for `document`, if it holds a key's track.
    #[inline]
    fn guessed(&self, document: u32) -> Option<(u32, &PackedTrack)> {
        let j = self.heads.guess(document)?;
        let r = self.records.get(j as usize)?;
        (r.key_flags & HOME != 0).then_some((j, r))
    }

    /// The job whose record holds `key`'s track, if a job was enqueued under it first.
    #[inline]
    fn home(&self, key: &IdempotencyKey) -> Option<u32> {
        if let Some((j, r)) = self.guessed(key.document.0) {
            if job_track::has_key(j, r, key, &self.side) {
                return Some(j);
            }
        }
        if self.heads.apart.is_empty() && self.others.is_empty() {
            return None;
        }
        self.home_apart(key)
    }

    /// The record holding `key`'s track when it is not where the heads guess: its document's
    /// first key's apart, or a document's other key.
    #[cold]
    fn home_apart(&self, key: &IdempotencyKey) -> Option<u32> {
        if let Some(&j) = self.heads.apart.get(&key.document.0) {
            if job_track::has_key(j, &self.records[j as usize], key, &self.side) {
                return Some(j);
            }
        }
        if self.others.is_empty() {
            return None;
        }
        self.others.get(&key.packed()).copied()
    }

    /// Whether a record other than `job`'s holds a key of `document`.
    fn has_document(&self, document: u32, job: u32) -> bool {
        self.guessed(document)
            .is_some_and(|(g, r)| g != job && r.document == document)
            || self.heads.apart.contains_key(&document)
    }

    /// Where `key`'s track is; `hint` is a job the record at hand names with the key, whose
    /// record holds the key's track when the key is its (the usual case: no search).
    #[inline]
    pub fn find(&self, key: &IdempotencyKey, hint: Option<JobId>) -> Option<At> {
        if let Some(j) = hint {
            let r = self.records.get(j.index());
            if r.is_some_and(|r| {
                r.key_flags & HOME != 0 && job_track::has_key(j.0, r, key, &self.side)
            }) {
                return Some(At::Home(j.0));
            }
        }
        if let Some(job) = self.home(key) {
            return Some(At::Home(job));
        }
        if self.orphans.records.is_empty() {
            return None;
        }
        self.orphans.index.get(key).map(At::Orphan)
    }

    /// Where `key`'s track is, an orphan's created (empty) if the history never named the key:
    /// every record that names a key registers it, so the keys are visited at the end in the
    /// order the history first named them.
    #[inline]
    pub fn register(&mut self, key: &IdempotencyKey, hint: Option<JobId>) -> KeyAt {
        let found = self.find(key, hint);
        self.register_found(key, found)
    }

    /// [`Tracks::register`] when the key's place was already looked up (`found`, by
    /// [`Tracks::find`] since the last change).
    #[inline]
    pub fn register_found(&mut self, key: &IdempotencyKey, found: Option<At>) -> KeyAt {
        if let Some(at) = found {
            return KeyAt(at, *key);
        }
        let (slot, new) = self.orphans.index.insert(*key);
        assert!(new && slot as usize == self.orphans.records.len());
        self.orphans.records.push(PackedTrack::default());
        self.orphans.after.push(self.homes);
        KeyAt(At::Orphan(slot), *key)
    }

    /// Indexes record `job` as the home of `key`, a key no record held before: its document's
    /// head if it is the document's first key, else in the map of the other keys.
    fn index_insert(&mut self, job: u32, key: &IdempotencyKey) {
        let d = key.document.0;
        if self.heads.guess(d) == Some(job) {
            // The usual case: the record is where the runs guess (found there whatever keys the
            // document had before; the guess stays once the document has a key).
            self.heads.max = self.heads.max.max(Some(d));
            self.homes += 1;
            return;
        }
        if self.has_document(d, job) {
            let before = self.others.insert(key.packed(), job);
            debug_assert!(before.is_none(), "a key indexed twice");
        } else {
            self.heads.insert(d, job);
        }
        self.homes += 1;
    }

    fn unpack_key(&self, at: At) -> KeyTrack {
        match at {
            At::Home(j) => {
                let r = &self.records[j as usize];
                key_track::unpack(j, r, Some(j), self.enqueued_at(j, r), &self.side)
            }
            At::Orphan(o) => {
                let o_ = &self.orphans;
                key_track::unpack(o, &o_.records[o as usize], None, 0, &o_.side)
            }
        }
    }

    /// A key's record, to change it.
    fn key_parts(&mut self, at: At) -> KeyParts<'_> {
        match at {
            At::Home(j) => {
                let base = self.enqueued_at(j, &self.records[j as usize]);
                KeyParts {
                    id: j,
                    r: &mut self.records[j as usize],
                    side: &mut self.side,
                    home: Some(j),
                    base,
                }
            }
            At::Orphan(o) => KeyParts {
                id: o,
                r: &mut self.orphans.records[o as usize],
                side: &mut self.orphans.side,
                home: None,
                base: 0,
            },
        }
    }

    /// The key's track so far (empty if the history never named it). `hint`: a job the record
    /// at hand names with the key (see [`Tracks::find`]), as for every method below.
    #[inline]
    pub fn key(&self, key: &IdempotencyKey, hint: Option<JobId>) -> KeyTrack {
        self.find(key, hint)
            .map_or_else(KeyTrack::default, |at| self.unpack_key(at))
    }

    /// The track of a key found at `at`.
    #[inline]
    pub fn key_found(&self, at: Option<At>) -> KeyTrack {
        at.map_or_else(KeyTrack::default, |at| self.unpack_key(at))
    }

    /// The key's commits after the first and its events published directly (empty if none).
    pub fn key_rare(&self, key: &IdempotencyKey) -> Option<&KeyRare> {
        self.key_rare.get(&key.packed())
    }

    /// The newest job the history created under `key`, if any.
    #[inline]
    pub fn newest(&self, key: &IdempotencyKey, hint: Option<JobId>) -> Option<JobId> {
        match self.find(key, hint)? {
            At::Home(j) => key_track::newest(j, &self.records[j as usize], Some(j), &self.side),
            At::Orphan(o) => {
                let o_ = &self.orphans;
                key_track::newest(o, &o_.records[o as usize], None, &o_.side)
            }
        }
    }

    /// A `result_committed` under a registered key by `job`, whose payload is `payload`: the
    /// key's first commit (the key takes the payload), or one more in the key's rare parts.
    pub fn commit(&mut self, key: &KeyAt, at: SimTime, w: Written, payload: PayloadId) {
        let k = self.key_parts(key.0);
        let results = key_track::results(k.id, k.r, k.side);
        if results == 0 {
            let first = FirstCommit {
                at,
                job: w.job,
                output: w.output,
                event: w.event,
            };
            key_track::set_first(k.id, k.r, (k.home, k.base), first, k.side);
            let before = key_track::stored_payload(k.id, k.r, k.side);
            // A finished home job whose payload was the record's keeps its own apart.
            let mut detach = None;
            if before != payload {
                key_track::set_payload(k.id, k.r, payload, k.side);
                if k.r.flags & (LIVE | TERMINAL_MASK) != 0 && k.r.flags & LIVE == 0 {
                    detach = k.home;
                }
            }
            if let Some(h) = detach {
                let rare = self.rare.entry(h).or_default();
                if rare.payload.is_none() {
                    rare.payload = Some(before);
                    self.records[h as usize].flags |= HAS_RARE;
                }
            }
        } else {
            k.r.key_flags |= KEY_RARE;
            self.key_rare
                .entry(key.1.packed())
                .or_default()
                .commits
                .push(w);
        }
        let k = self.key_parts(key.0);
        key_track::set_results(k.id, k.r, results + 1, k.side);
        debug_assert!(
            {
                let t = self.unpack_key(key.0);
                t.results == results + 1 && t.first.is_some() && t.payload.is_some()
            },
            "a commit reads back"
        );
    }

    /// An event published directly for a registered key, for the first time for that key.
    pub fn publish_direct(&mut self, key: &KeyAt, w: Written) {
        let k = self.key_parts(key.0);
        k.r.key_flags |= KEY_RARE;
        let rare = self.key_rare.entry(key.1.packed()).or_default();
        if !rare.direct.iter().any(|d| d.event == w.event) {
            rare.direct.push(w);
        }
    }

    /// An `effect_applied` under a registered key from `event`: the key's first, if it is.
    pub fn apply(&mut self, key: &KeyAt, event: EventId) {
        let k = self.key_parts(key.0);
        if k.r.key_flags & APPLIED == 0 {
            key_track::set_applied(k.id, k.r, event, k.side);
            debug_assert_eq!(self.unpack_key(key.0).applied, Some(event), "reads back");
        }
    }

    /// A `review_done` named the registered key.
    #[inline]
    pub fn review(&mut self, key: &KeyAt) {
        self.key_parts(key.0).r.key_flags |= REVIEWED;
    }

    /// The next key and its track, in the order the history first named the keys (the jobs'
    /// keys in job order, which is the order of their enqueues, with the orphans between).
    pub fn next_key(&self, c: &mut KeyCursor) -> Option<(IdempotencyKey, KeyTrack)> {
        let o_ = &self.orphans;
        let orphan = |c: &mut KeyCursor| {
            let o = c.orphan as u32;
            c.orphan += 1;
            let k = key_track::unpack(o, &o_.records[o as usize], None, 0, &o_.side);
            Some((o_.index.key(o), k))
        };
        if o_
            .after
            .get(c.orphan)
            .is_some_and(|after| *after <= c.homes)
        {
            return orphan(c);
        }
        while let Some(r) = self.records.get(c.record) {
            let j = c.record as u32;
            c.record += 1;
            if r.key_flags & HOME != 0 {
                c.homes += 1;
                let k = key_track::unpack(j, r, Some(j), self.enqueued_at(j, r), &self.side);
                return Some((job_track::key_of(j, r, &self.side), k));
            }
        }
        (c.orphan < o_.records.len()).then(|| orphan(c)).flatten()
    }
}

/// A registered key: where its track is, and the key.
#[derive(Clone, Copy, Debug, Hash)]
pub(super) struct KeyAt(At, IdempotencyKey);

#[cfg(test)]
mod key_tests;
#[cfg(test)]
mod tests;

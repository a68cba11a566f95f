//! Where the checker keeps what it remembers of every job and every key: one [`PackedTrack`] per job
//! (`record.rs`), which also holds the track of the job's key when the job was the first the
//! history enqueued under it (under `unique = "forever"`, every job), and the checker's own
//! index on keys.
//!
//! Owns: [`Tracks`]: the records by job id; the slab of live jobs' plain tracks (a job without a
//! terminal record is read and changed in place there, and packed into its record when it
//! ends, its slot reused, so the slab holds as many tracks as there are unfinished jobs); the
//! side and rare tables; the enqueue times' bases by runs of job ids (`record.rs`, `Epochs`);
//! a finished job's renewal time when it is not its lease time and may still be read; the index
//! on keys (key → the job whose record holds the key's track: a document's first key's record
//! guessed from the document's number by runs ([`Heads`]), the key read back from the record,
//! and a map for a document's other keys, its other tenants and versions); and the orphan keys: a key a record names before any job was
//! enqueued under it (only a broken history does that) keeps its track apart, in the layout of
//! a record with no job.
//! A key with several jobs (a `unique` mode other than `forever`) keeps its track in its first
//! job's record; the others' records hold only their job's part, the newest job is in the side
//! table.
//! Does not: judge (the families do) or decide what a field means (`job_track.rs`,
//! `key_track.rs`).

use super::job_track::{self, JobTrack, Place, Rare};
use super::key_track::{self, FirstCommit, KeyTrack, PayloadId};
use super::record::*;
use crate::base::fastmap::FastMap;
use crate::base::ids::{EventId, JobId, SimTime};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::key_index::KeyIndex;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub(super) struct Tracks {
    records: Vec<PackedTrack>,
    /// The live jobs' plain tracks; `free` lists the slots to reuse (last freed first).
    live: Vec<JobTrack>,
    free: Vec<u32>,
    /// Values too wide for their packed field, by job and field.
    side: Side,
    /// A finished job's rare parts (`job_track::Rare`), by job, when it has one.
    rare: BTreeMap<u32, Rare>,
    /// The bases of the records' enqueue times.
    epochs: Epochs,
    /// Whether a finished job's renewal time can still be read whatever its lease: the header's
    /// retry formula waits out what is left of the failed attempt's lease (`backoff.rs`), and a
    /// zombie's retry with the latest token reads it. Else it is read only while a lease is
    /// held, and a finished job's held lease is a lease taken after its end, whose renewal is
    /// its lease time.
    keep_renewals: bool,
    /// The renewal times kept apart ([`RENEWAL_APART`]), by job, packed as the record's times;
    /// grown only when one is kept.
    renewals: Vec<u32>,
    /// The record holding the first key of each document.
    heads: Heads,
    /// The records holding the keys that are not their document's first, by packed key (a
    /// document's other tenants and versions: a reprocess, a tenant reusing a document name).
    others: FastMap<u64, u32>,
    /// Records holding their key's track.
    homes: u32,
    orphans: Orphans,
}

/// Keys a record named before any job was enqueued under them (a broken history's): each keeps
/// its track in a record of its own (its job's part unused), found through an index of its own.
#[derive(Clone, Debug, Default)]
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
#[derive(Clone, Debug, Default)]
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
#[derive(Clone, Copy, Debug)]
enum At {
    /// In its first job's record.
    Home(u32),
    Orphan(u32),
}

/// A place in the visit of every key ([`Tracks::next_key`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KeyCursor {
    record: usize,
    orphan: usize,
    homes: u32,
}

impl Tracks {
    pub fn reserve(&mut self, jobs: usize) {
        self.records.reserve_exact(jobs);
    }

    /// Whether finished jobs keep a renewal time that is not their lease time (see
    /// `keep_renewals`); set from the header, before any job.
    pub fn keep_renewals(&mut self, keep: bool) {
        debug_assert!(
            !keep || self.records.is_empty(),
            "the header comes before any job"
        );
        self.keep_renewals = keep;
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
    fn unpack_job(&self, job: u32, r: &PackedTrack, deadline: SimTime) -> JobTrack {
        let base = self.enqueued_at(job, r);
        let renewed_at = (r.flags & RENEWAL_APART != 0).then(|| {
            let packed = self.renewals[job as usize];
            self.side.time(job, Field::RenewedAt, base, packed)
        });
        let rare = match (r.flags & (HAS_FAILURE | HAS_REPROCESSED_FROM), r.key_flags & JOB_PAYLOAD_APART) {
            (0, 0) => Rare::default(),
            _ => *self.rare.get(&job).expect(
                "a record flagged with a failure, a reprocess link or a payload apart has it in `rare`",
            ),
        };
        let payload = rare
            .payload
            .unwrap_or_else(|| key_track::stored_payload(job, r, &self.side));
        job_track::unpack(
            job, r, &self.side, base, renewed_at, payload, rare, deadline,
        )
    }

    /// The job's track, if an `enqueued` record created it. `deadline` is the configured one.
    #[inline]
    pub fn get(&self, job: JobId, deadline: SimTime) -> Option<JobTrack> {
        let r = self.exists(job)?;
        Some(match r.flags & LIVE {
            0 => self.unpack_job(job.0, r, deadline),
            _ => self.live[r.visible_from as usize],
        })
    }

    /// Reads the job's track (without copying it when live). The job must exist: every record
    /// names only jobs an earlier `enqueued` created (the reader refuses any other history, and
    /// the kernel cannot write one).
    #[inline]
    pub fn read_known<R>(
        &self,
        job: JobId,
        deadline: SimTime,
        f: impl FnOnce(&JobTrack) -> R,
    ) -> R {
        let Some(r) = self.exists(job) else {
            panic!("history names {job} before it was enqueued")
        };
        match r.flags & LIVE {
            0 => f(&self.unpack_job(job.0, r, deadline)),
            _ => f(&self.live[r.visible_from as usize]),
        }
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
        let payload = t.payload;
        let enqueue = |k: &mut KeyTrack| {
            let before = k.newest();
            k.set_newest(job);
            if !k.enqueued() {
                k.set_enqueued();
                k.set_payload(payload);
            }
            before
        };
        match found {
            None => {
                r.operation = payload.operation.0;
                r.key_flags = HOME | ENQUEUED | HAS_NEWEST;
                self.side.set_content(job.0, r, payload.content);
                self.index_insert(job.0, &t.key);
                None
            }
            Some(at) => self.change_key(at, enqueue),
        }
    }

    /// Changes the job's track in place; `None` if it was never enqueued. A live job whose
    /// track gets its terminal record is packed.
    #[inline]
    pub fn update<R>(
        &mut self,
        job: JobId,
        deadline: SimTime,
        change: impl FnOnce(&mut JobTrack) -> R,
    ) -> Option<R> {
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
        let mut t = self.unpack_job(job.0, r, deadline);
        let out = change(&mut t);
        assert!(
            t.terminal.is_some(),
            "a terminal record is never taken back"
        );
        self.pack_job(job.0, &t);
        Some(out)
    }

    /// Packs a finished job's track into its record: its payload is its key's unless it
    /// differs, then it goes to the rare table with the other rare parts.
    fn pack_job(&mut self, job: u32, t: &JobTrack) {
        let base = self.enqueued_at(job, &self.records[job as usize]);
        let r = &mut self.records[job as usize];
        job_track::pack(job, r, t, &mut self.side, base);
        // A renewal that is not the lease time is read later only under a formula that reads
        // it, or while a lease is held (see `keep_renewals`; kept then whatever the history).
        if t.renewed_at != t.leased_at && (self.keep_renewals || t.lease_held) {
            r.flags |= RENEWAL_APART;
            let i = job as usize;
            if self.renewals.len() <= i {
                self.renewals.resize(i + 1, 0);
            }
            self.renewals[i] = self
                .side
                .put_time(job, Field::RenewedAt, base, t.renewed_at);
        }
        let mut rare = Rare {
            failure: t.failure,
            reprocessed_from: t.reprocessed_from,
            payload: None,
        };
        let r = &mut self.records[job as usize];
        if r.key_flags & HOME == 0 {
            r.operation = t.payload.operation.0;
            self.side.set_content(job, r, t.payload.content);
        } else if key_track::stored_payload(job, r, &self.side) == t.payload {
            r.key_flags &= !JOB_PAYLOAD_APART;
        } else {
            r.key_flags |= JOB_PAYLOAD_APART;
            rare.payload = Some(t.payload);
        }
        if !rare.is_empty() {
            self.rare.insert(job, rare);
        } else if !self.rare.is_empty() {
            self.rare.remove(&job);
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

    /// Whether the end-of-run checks have anything to say about the job: it has no terminal
    /// record, or it was created by a reprocess with no audit entry.
    pub fn needs_finish_check(&self, job: JobId) -> bool {
        self.exists(job).is_some_and(|r| {
            r.flags & LIVE != 0 || (r.flags & HAS_REPROCESSED_FROM != 0 && r.flags & AUDITED == 0)
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
    fn find(&self, key: &IdempotencyKey, hint: Option<JobId>) -> Option<At> {
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

    /// Where `key`'s track is, an orphan's created (empty) if the history never named the key.
    #[inline]
    fn find_or_orphan(&mut self, key: &IdempotencyKey, hint: Option<JobId>) -> At {
        if let Some(at) = self.find(key, hint) {
            return at;
        }
        let (slot, new) = self.orphans.index.insert(*key);
        assert!(new && slot as usize == self.orphans.records.len());
        self.orphans.records.push(PackedTrack::default());
        self.orphans.after.push(self.homes);
        At::Orphan(slot)
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

    /// Changes a key's track through its plain form (the rare cases). A key's payload that
    /// changes under its first job's finished track moves that job's payload to the rare table.
    fn change_key<R>(&mut self, at: At, change: impl FnOnce(&mut KeyTrack) -> R) -> R {
        let mut k = self.unpack_key(at);
        let out = change(&mut k);
        match at {
            At::Home(j) => {
                let base = self.enqueued_at(j, &self.records[j as usize]);
                let r = &mut self.records[j as usize];
                let before = key_track::stored_payload(j, r, &self.side);
                key_track::pack(j, r, &k, (Some(j), base), &mut self.side);
                let detach = r.flags & LIVE == 0 && r.key_flags & JOB_PAYLOAD_APART == 0;
                if detach && key_track::stored_payload(j, r, &self.side) != before {
                    r.key_flags |= JOB_PAYLOAD_APART;
                    self.rare.entry(j).or_default().payload = Some(before);
                }
            }
            At::Orphan(o) => {
                let o_ = &mut self.orphans;
                key_track::pack(o, &mut o_.records[o as usize], &k, (None, 0), &mut o_.side);
            }
        }
        out
    }

    /// The key's track so far (empty if the history never named it). `hint`: a job the record
    /// at hand names with the key (see [`Tracks::find`]), as for every method below.
    #[inline]
    pub fn key(&self, key: &IdempotencyKey, hint: Option<JobId>) -> KeyTrack {
        self.find(key, hint)
            .map_or_else(KeyTrack::default, |at| self.unpack_key(at))
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

    /// Results committed under `key`.
    #[inline]
    pub fn results(&self, key: &IdempotencyKey, hint: Option<JobId>) -> u32 {
        match self.find(key, hint) {
            None => 0,
            Some(At::Home(j)) => key_track::results(j, &self.records[j as usize], &self.side),
            Some(At::Orphan(o)) => {
                let o_ = &self.orphans;
                key_track::results(o, &o_.records[o as usize], &o_.side)
            }
        }
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
        let found = self.find_or_orphan(key, Some(job));
        if let At::Home(h) = found {
            let base = self.enqueued_at(h, &self.records[h as usize]);
            let r = &mut self.records[h as usize];
            let commit = (at, job, output);
            if let Some(out) =
                key_track::commit_in_place((h, base), r, commit, payload, event, &mut self.side)
            {
                return out;
            }
        }
        self.change_key(found, |k| {
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
    pub fn publish_direct(&mut self, key: &IdempotencyKey, hint: Option<JobId>, event: EventId) {
        match self.find_or_orphan(key, hint) {
            At::Home(j) => {
                key_track::publish_direct(j, &mut self.records[j as usize], event, &mut self.side)
            }
            At::Orphan(o) => {
                let o_ = &mut self.orphans;
                key_track::publish_direct(o, &mut o_.records[o as usize], event, &mut o_.side)
            }
        }
    }

    /// An `effect_applied` record for `key` from `event`. Returns when and from which event the
    /// effect was applied before (if it was), and the key's first commit.
    #[inline]
    pub fn apply(
        &mut self,
        key: &IdempotencyKey,
        hint: Option<JobId>,
        at: SimTime,
        event: EventId,
    ) -> key_track::Applied {
        let found = self.find_or_orphan(key, hint);
        if let At::Home(h) = found {
            let base = self.enqueued_at(h, &self.records[h as usize]);
            let r = &mut self.records[h as usize];
            if let Some(out) = key_track::apply_in_place((h, base), r, at, event, &mut self.side) {
                return out;
            }
        }
        self.change_key(found, |k| {
            let earlier = k.applied();
            if earlier.is_none() {
                k.set_applied(at, event);
            }
            (earlier, k.first_commit())
        })
    }

    /// The review of the key's effect finished.
    #[inline]
    pub fn review(&mut self, key: &IdempotencyKey, hint: Option<JobId>) {
        match self.find_or_orphan(key, hint) {
            At::Home(j) => self.records[j as usize].key_flags |= REVIEWED,
            At::Orphan(o) => self.orphans.records[o as usize].key_flags |= REVIEWED,
        }
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

#[cfg(test)]
impl Tracks {
    /// Changes the key's track through its plain form, created (an orphan) if new.
    pub fn update_key<R>(
        &mut self,
        key: &IdempotencyKey,
        change: impl FnOnce(&mut KeyTrack) -> R,
    ) -> R {
        let at = self.find_or_orphan(key, None);
        self.change_key(at, change)
    }
}

#[cfg(test)]
mod key_tests;
#[cfg(test)]
mod tests;

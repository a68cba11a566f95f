//! The transactional outbox and its relay.
//!
//! Owns: the results table (one row per idempotency key: the event id and whether the payload
//! is the key's document's default, 4 bytes, by the key's slot in the queue's unique index, which
//! every committed key went through first; any other payload in a side map; the committing job
//! goes with the event, and no rule reads it back from the row) and the outbox events, committed together in one atomic step; the commit-time idempotency check
//! (same payload: dedupe, returning the existing result and event id; different payload: an
//! explicit conflict); the relay's view (pending rows, publish, then mark published).
//! Beyond the chapter (whose outbox never deletes anything): with a retention, published rows
//! are kept `retention_ms` after they were marked, then pruned; unpublished rows never are.
//! Does not: deliver anything (the kernel hands published events to the consumer) or fence
//! commits (the fence guards queue transitions; idempotency guards the result).

use crate::base::ids::{EventId, JobId, SimTime};
use crate::base::state_hash::StateMap;
use crate::model::job_rows::default_payload;
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use crate::vocab::probes::{Probe, Probes};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct OutboxConfig {
    /// The bug switches on; the outbox reads `no_idempotency` (never look up the key: every
    /// commit writes a new row and event) and `reuse_on_conflict` (a different payload silently
    /// reuses the existing result).
    pub bugs: BugSet,
    /// Published rows are pruned this long after they were marked; none: kept for ever.
    pub retention_ms: Option<u64>,
}

/// One committed result, as a later commit under the key reads it: the payload it is compared
/// with and the event it dedupes onto. `event` is `None` only for rows written by the naive dual
/// write. The output and the committing job go with the event to the relay; no later commit or
/// lookup reads them from the row, so it does not keep them (16 bytes with the job before).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResultRow {
    pub payload: PayloadHash,
    pub event: Option<EventId>,
}

/// A [`ResultRow`] as the table stores it, 4 bytes: `APART` (the payload is in
/// `apart_payloads`; without it, the payload is the default of the key's document,
/// [`default_payload`]) and in the other 31 bits the event id (ids start at one, so 0 stands for
/// no event), `FAR` for one in `far_events`; `NO_ROW` for no row. The payload is kept apart only
/// when it is not the default: a generated arrival's committed payload is its document's default
/// in almost every run.
type StoredRow = u32;

/// No row under this slot (a key that has no result yet).
const NO_ROW: StoredRow = u32::MAX;
/// The row's payload is in `apart_payloads`.
const APART: u32 = 1 << 31;
/// The row's event id does not fit below `FAR`: it is in `far_events`.
const FAR: u32 = APART - 2;
const EVENT_MASK: u32 = APART - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutboxEvent {
    pub id: EventId,
    pub key: IdempotencyKey,
    pub job: JobId,
    pub output: u64,
    /// How many times the relay has sent it (a relay that dies before marking sends it again).
    pub sends: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommitOutcome {
    /// A new result, and (unless written by the naive dual write) its event, in one step.
    Committed { event: Option<EventId> },
    /// The key already has a result with the same payload: returns it; no new event.
    Deduped { existing: ResultRow },
    /// The key already has a result with a different payload: refused.
    Conflict { existing: ResultRow },
}

#[derive(Clone, Debug, Default, Hash)]
pub struct Outbox {
    config: OutboxConfig,
    /// The results table: `rows[slot]` is the row of the key in `slot` of the queue's unique
    /// index (the caller passes it), `NO_ROW` where the key has no result.
    rows: Vec<StoredRow>,
    /// Event ids of rows that do not fit below `FAR`, by slot.
    far_events: BTreeMap<u32, u64>,
    /// Payloads of rows whose payload is not their key's document's default, by slot.
    apart_payloads: StateMap<u32, PayloadHash>,
    pending: Vec<OutboxEvent>,
    last_event: u64,
    results_count: u64,
    /// With a retention: the published rows still held, as (marked at, rows) batches, oldest
    /// first.
    published: VecDeque<(SimTime, u64)>,
    published_rows: u64,
    /// The outbox's decisions taken so far (`vocab::probes`).
    pub probes: Probes,
}

impl Outbox {
    pub fn new(config: OutboxConfig) -> Outbox {
        Outbox {
            config,
            ..Outbox::default()
        }
    }

    pub fn with_capacity(config: OutboxConfig, keys: usize) -> Outbox {
        let mut o = Outbox::new(config);
        o.rows.reserve(keys);
        o
    }

    /// The result of `key`, in `slot` of the queue's unique index.
    #[inline]
    pub fn result(&self, slot: u32, key: &IdempotencyKey) -> Option<ResultRow> {
        let r = *self.rows.get(slot as usize).filter(|&&r| r != NO_ROW)?;
        let event = match r & EVENT_MASK {
            0 => None,
            FAR => Some(EventId(self.far_events[&slot])),
            e => Some(EventId(e as u64)),
        };
        let payload = match r & APART {
            0 => default_payload(key.document).expect("a row kept as the default has one"),
            _ => self.apart_payloads[&slot],
        };
        Some(ResultRow { payload, event })
    }

    pub fn results_count(&self) -> u64 {
        self.results_count
    }

    fn lookup(
        &mut self,
        slot: u32,
        key: &IdempotencyKey,
        payload: PayloadHash,
    ) -> Option<CommitOutcome> {
        if self.config.bugs.contains(Bug::NoIdempotency) {
            return None;
        }
        let existing = self.result(slot, key)?;
        Some(
            if existing.payload == payload || self.config.bugs.contains(Bug::ReuseOnConflict) {
                self.probes.hit(Probe::OutboxCommitDedupe);
                CommitOutcome::Deduped { existing }
            } else {
                self.probes.hit(Probe::OutboxCommitConflict);
                CommitOutcome::Conflict { existing }
            },
        )
    }

    /// Writes the row of `key`, in `slot` (over an earlier one only on the `no_idempotency`
    /// path).
    fn write_row(&mut self, slot: u32, key: &IdempotencyKey, row: ResultRow) {
        let event = match row.event.map(|e| e.0) {
            None => 0,
            Some(0) => panic!("event ids start at 1"),
            Some(e) => match u32::try_from(e) {
                Ok(e) if e < FAR => {
                    self.far_events.remove(&slot);
                    e
                }
                _ => {
                    self.far_events.insert(slot, e);
                    FAR
                }
            },
        };
        let at = slot as usize;
        let apart = if default_payload(key.document) == Some(row.payload) {
            if self
                .rows
                .get(at)
                .is_some_and(|&r| r != NO_ROW && r & APART != 0)
            {
                self.apart_payloads.remove(&slot);
            }
            0
        } else {
            self.probes.hit(Probe::OutboxSpillPayload);
            self.apart_payloads.insert(slot, row.payload);
            APART
        };
        if at >= self.rows.len() {
            self.rows.resize(at + 1, NO_ROW);
        }
        self.rows[at] = apart | event;
    }

    fn new_event_id(&mut self) -> EventId {
        self.last_event += 1;
        EventId(self.last_event)
    }

    /// `commitResultWithEvent`: the result row and its outbox event are written together or not
    /// at all. Nothing can interleave between the two writes: this is one call. `slot` is the
    /// key's slot in the queue's unique index.
    pub fn commit(
        &mut self,
        slot: u32,
        key: IdempotencyKey,
        job: JobId,
        payload: PayloadHash,
        output: u64,
    ) -> CommitOutcome {
        if let Some(outcome) = self.lookup(slot, &key, payload) {
            return outcome;
        }
        let id = self.new_event_id();
        self.probes.hit(Probe::OutboxCommitNew);
        self.write_row(
            slot,
            &key,
            ResultRow {
                payload,
                event: Some(id),
            },
        );
        self.results_count += 1;
        self.pending.push(OutboxEvent {
            id,
            key,
            job,
            output,
            sends: 0,
        });
        CommitOutcome::Committed { event: Some(id) }
    }

    /// The anti-pattern behind the `naive_dual_write` bug switch, first half: write the result
    /// row with no outbox event. The caller then publishes by itself, if it lives that long.
    pub fn naive_write_result(
        &mut self,
        slot: u32,
        key: IdempotencyKey,
        payload: PayloadHash,
    ) -> CommitOutcome {
        if let Some(outcome) = self.lookup(slot, &key, payload) {
            return outcome;
        }
        self.write_row(
            slot,
            &key,
            ResultRow {
                payload,
                event: None,
            },
        );
        self.results_count += 1;
        CommitOutcome::Committed { event: None }
    }

    /// Second half of the naive dual write: an event id for a direct publish to the broker,
    /// bypassing the outbox (nothing durable records that it should exist).
    pub fn naive_publish_id(&mut self) -> EventId {
        self.new_event_id()
    }

    /// The relay's batch: every pending event, oldest first.
    pub fn pending(&self) -> &[OutboxEvent] {
        &self.pending
    }

    /// The relay sent the first `count` pending events (they stay pending until marked).
    pub fn note_sent(&mut self, count: usize) {
        for e in &mut self.pending[..count] {
            if e.sends > 0 {
                self.probes.hit(Probe::OutboxSendAgain);
            }
            e.sends += 1;
        }
    }

    /// The relay marks the first `count` pending events published at `now`.
    pub fn mark_published(&mut self, now: SimTime, count: usize) {
        self.pending.drain(..count);
        if self.config.retention_ms.is_some() {
            self.probes.hit(Probe::OutboxMarkRetained);
            self.published.push_back((now, count as u64));
            self.published_rows += count as u64;
        } else {
            self.probes.hit(Probe::OutboxMarkDropped);
        }
    }

    /// Deletes the published rows marked at least `retention_ms` before `now`; returns how many.
    /// Without a retention nothing is ever deleted.
    pub fn prune(&mut self, now: SimTime) -> u64 {
        let Some(retention) = self.config.retention_ms else {
            return 0;
        };
        let mut pruned = 0;
        while let Some(&(at, rows)) = self.published.front() {
            if at + retention > now {
                self.probes.hit(Probe::OutboxPruneYoung);
                break;
            }
            self.probes.hit(Probe::OutboxPrunePruned);
            self.published.pop_front();
            pruned += rows;
        }
        self.published_rows -= pruned;
        pruned
    }

    /// Outbox rows held: pending ones plus, with a retention, published ones not yet pruned.
    pub fn rows_held(&self) -> u64 {
        self.pending.len() as u64 + self.published_rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::{DocumentId, TenantId};
    use crate::vocab::payload::Payload;

    fn key(doc: u32) -> IdempotencyKey {
        IdempotencyKey::new(TenantId(0), DocumentId(doc), 1).unwrap()
    }

    #[test]
    fn a_stored_row_is_4_bytes_and_gives_back_its_row_under_far_slots_events_and_payloads() {
        assert_eq!(std::mem::size_of::<StoredRow>(), 4);
        let mut o = Outbox::default();
        let events = [
            None,
            Some(EventId(1)),
            Some(EventId(FAR as u64 - 1)),
            Some(EventId(FAR as u64)),
            Some(EventId(EVENT_MASK as u64)),
            Some(EventId(APART as u64)),
            Some(EventId(u32::MAX as u64 - 1)),
            Some(EventId(u32::MAX as u64)),
            Some(EventId(u64::MAX)),
        ];
        let slots = [3, 0, 1_000, 7, 8, 9, 10, 11, 12];
        for (i, event) in events.into_iter().enumerate() {
            let slot = slots[i];
            let k = key(slot);
            let default = default_payload(k.document).unwrap();
            // The document's default payload (no side entry), and any other (a side entry).
            for payload in [default, PayloadHash(u64::MAX - i as u64), default] {
                let row = ResultRow { payload, event };
                o.write_row(slot, &k, row);
                assert_eq!(o.result(slot, &k), Some(row));
            }
        }
        assert!(
            o.apart_payloads.is_empty(),
            "every row is back to its default"
        );
        assert_eq!(o.result(2, &key(2)), None, "a slot between rows has none");
        assert_eq!(o.result(5_000, &key(5_000)), None, "nor one past the end");
        // A far event overwritten by a near one (`no_idempotency`) leaves no far entry.
        let near = ResultRow {
            payload: PayloadHash(2),
            event: Some(EventId(3)),
        };
        o.write_row(7, &key(7), near);
        assert_eq!(o.result(7, &key(7)), Some(near));
        assert_eq!(o.apart_payloads.len(), 1);
        assert_eq!(o.far_events.len(), 5, "slots 8 to 12");
    }

    /// A named document has no default: its row's payload is always kept apart, exactly.
    #[test]
    fn a_named_documents_payload_reads_back_exactly() {
        let mut names = crate::vocab::key::KeyNames::default();
        let doc = names.documents.named("invoice-7").unwrap();
        let k = IdempotencyKey::new(TenantId(0), doc, 1).unwrap();
        assert_eq!(default_payload(doc), None);
        let mut o = Outbox::default();
        let p = Payload::of(doc).hash(&names);
        o.commit(0, k, JobId(0), p, 1);
        assert_eq!(o.result(0, &k).unwrap().payload, p);
        assert!(matches!(
            o.commit(0, k, JobId(0), p, 2),
            CommitOutcome::Deduped { .. }
        ));
    }

    /// A commit whose payload is not its document's default (a mutated job's, an explicit one)
    /// keeps it apart: a second commit with the default payload conflicts with it, one with the
    /// same payload dedupes, exactly as with the hash in the row; and the other way round.
    #[test]
    fn a_row_whose_payload_differs_is_judged_as_before() {
        let mut o = Outbox::default();
        let k = key(4);
        let default = default_payload(k.document).unwrap();
        let names = crate::vocab::key::KeyNames::default();
        assert_eq!(default, Payload::of(k.document).hash(&names));
        let mutated = Payload::from_text(k.document, "mutated").hash(&names);
        assert_ne!(mutated, default);
        o.commit(4, k, JobId(4), mutated, 1);
        assert_eq!(
            o.commit(4, k, JobId(4), default, 2),
            CommitOutcome::Conflict {
                existing: ResultRow {
                    payload: mutated,
                    event: Some(EventId(1))
                }
            }
        );
        assert!(matches!(
            o.commit(4, k, JobId(4), mutated, 3),
            CommitOutcome::Deduped { .. }
        ));
        let k5 = key(5);
        let default5 = default_payload(k5.document).unwrap();
        o.commit(5, k5, JobId(5), default5, 1);
        assert_eq!(
            o.commit(5, k5, JobId(5), mutated, 2),
            CommitOutcome::Conflict {
                existing: ResultRow {
                    payload: default5,
                    event: Some(EventId(2))
                }
            }
        );
        assert_eq!(
            o.commit(5, k5, JobId(5), default5, 2),
            CommitOutcome::Deduped {
                existing: ResultRow {
                    payload: default5,
                    event: Some(EventId(2))
                }
            }
        );
        assert_eq!(o.apart_payloads.len(), 1, "only the mutated row");
    }

    // Checklist: "result and notification event are persisted together".
    #[test]
    fn a_commit_writes_result_and_event_together_and_a_retry_dedupes() {
        let mut o = Outbox::default();
        let first = o.commit(1, key(1), JobId(0), PayloadHash(5), 111);
        assert_eq!(
            first,
            CommitOutcome::Committed {
                event: Some(EventId(1))
            }
        );
        assert_eq!(o.pending().len(), 1);
        // A later attempt's different *output* is not a different payload: the first result wins.
        let again = o.commit(1, key(1), JobId(0), PayloadHash(5), 222);
        let row = ResultRow {
            payload: PayloadHash(5),
            event: Some(EventId(1)),
        };
        assert_eq!(again, CommitOutcome::Deduped { existing: row });
        assert_eq!(o.pending().len(), 1, "no second event");
        assert_eq!(o.result(1, &key(1)), Some(row));
        assert_eq!(
            o.pending()[0].output,
            111,
            "the first output goes to the relay"
        );
        assert_eq!(o.results_count(), 1);
    }

    // Checklist: divergent payload rejected at persistence too.
    #[test]
    fn a_different_payload_under_the_same_key_is_a_conflict() {
        let mut o = Outbox::default();
        o.commit(1, key(1), JobId(0), PayloadHash(5), 111);
        assert!(matches!(
            o.commit(1, key(1), JobId(0), PayloadHash(6), 111),
            CommitOutcome::Conflict { .. }
        ));
        let mut broken = Outbox::new(OutboxConfig {
            bugs: Bug::ReuseOnConflict.into(),
            ..Default::default()
        });
        broken.commit(1, key(1), JobId(0), PayloadHash(5), 111);
        assert!(matches!(
            broken.commit(1, key(1), JobId(0), PayloadHash(6), 1),
            CommitOutcome::Deduped { .. }
        ));
    }

    #[test]
    fn without_idempotency_every_commit_makes_a_new_event() {
        let mut o = Outbox::new(OutboxConfig {
            bugs: Bug::NoIdempotency.into(),
            ..Default::default()
        });
        o.commit(1, key(1), JobId(0), PayloadHash(5), 1);
        o.commit(1, key(1), JobId(0), PayloadHash(5), 2);
        assert_eq!(o.pending().len(), 2);
        assert_eq!(o.results_count(), 2);
    }

    // The relay publishes, then marks; a relay that died in between sends the rows again.
    #[test]
    fn relay_marks_after_sending_and_resends_unmarked_rows() {
        let mut o = Outbox::default();
        o.commit(1, key(1), JobId(0), PayloadHash(5), 1);
        o.commit(2, key(2), JobId(1), PayloadHash(6), 1);
        o.note_sent(2); // ...and the relay dies before marking
        assert_eq!(
            o.pending().iter().map(|e| e.sends).collect::<Vec<_>>(),
            vec![1, 1]
        );
        o.note_sent(2);
        o.mark_published(10, 2);
        assert!(o.pending().is_empty());
    }

    // Beyond the chapter: published rows go after the retention; pending rows never do.
    #[test]
    fn published_rows_are_pruned_after_the_retention_and_pending_ones_never() {
        let mut o = Outbox::new(OutboxConfig {
            retention_ms: Some(100),
            ..Default::default()
        });
        o.commit(1, key(1), JobId(0), PayloadHash(5), 1);
        o.commit(2, key(2), JobId(1), PayloadHash(6), 1);
        o.mark_published(10, 1);
        o.commit(3, key(3), JobId(2), PayloadHash(7), 1);
        o.mark_published(50, 1);
        assert_eq!(o.rows_held(), 3);
        assert_eq!(o.prune(109), 0);
        assert_eq!(o.prune(110), 1);
        assert_eq!(o.prune(500), 1);
        assert_eq!(o.rows_held(), 1, "the unpublished row stays");
        assert_eq!(o.pending().len(), 1);
        assert!(
            o.result(1, &key(1)).is_some(),
            "results are not outbox rows"
        );
        let mut forever = Outbox::default();
        forever.commit(1, key(1), JobId(0), PayloadHash(5), 1);
        forever.mark_published(0, 1);
        assert_eq!(forever.prune(u64::MAX / 2), 0);
    }

    // Failure 3: the naive dual write leaves a result with no durable trace of its event.
    #[test]
    fn the_naive_write_leaves_no_outbox_row() {
        let mut o = Outbox::default();
        assert_eq!(
            o.naive_write_result(1, key(1), PayloadHash(5)),
            CommitOutcome::Committed { event: None }
        );
        assert!(o.result(1, &key(1)).is_some());
        assert!(o.pending().is_empty());
    }
}

//! The transactional outbox and its relay.
//!
//! Owns: the results table (one row per idempotency key: payload hash, output, event id) and the
//! outbox events, committed together in one atomic step; the commit-time idempotency check
//! (same payload: dedupe, returning the existing result and event id; different payload: an
//! explicit conflict); the relay's view (pending rows, publish, then mark published).
//! Beyond the chapter (whose outbox never deletes anything): with a retention, published rows
//! are kept `retention_ms` after they were marked, then pruned; unpublished rows never are.
//! Does not: deliver anything (the kernel hands published events to the consumer) or fence
//! commits (the fence guards queue transitions; idempotency guards the result).

use crate::ids::{EventId, JobId, SimTime};
use crate::key_index::KeyIndex;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, Default)]
pub struct OutboxConfig {
    /// Bug switch `no_idempotency`: never look up the key; every commit writes a new row and event.
    pub bug_no_idempotency: bool,
    /// Bug switch `reuse_on_conflict`: a different payload silently reuses the existing result.
    pub bug_reuse_on_conflict: bool,
    /// Published rows are pruned this long after they were marked; none: kept for ever.
    pub retention_ms: Option<u64>,
}

/// One committed result. `event` is `None` only for rows written by the naive dual write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultRow {
    pub job: JobId,
    pub payload: PayloadHash,
    pub output: u64,
    pub event: Option<EventId>,
}

/// A [`ResultRow`] as the table stores it, 32 bytes instead of 40: the event id 0 (never handed
/// out: ids start at 1) stands for no event.
#[derive(Clone, Copy, Debug)]
struct StoredRow {
    payload: PayloadHash,
    output: u64,
    event: u64,
    job: JobId,
}

impl StoredRow {
    fn of(row: ResultRow) -> StoredRow {
        assert!(row.event != Some(EventId(0)), "event ids start at 1");
        StoredRow {
            payload: row.payload,
            output: row.output,
            event: row.event.map_or(0, |e| e.0),
            job: row.job,
        }
    }

    fn row(&self) -> ResultRow {
        ResultRow {
            job: self.job,
            payload: self.payload,
            output: self.output,
            event: (self.event != 0).then_some(EventId(self.event)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutboxEvent {
    pub id: EventId,
    pub key: IdempotencyKey,
    pub job: JobId,
    pub output: u64,
    /// How many times the relay has sent it (a relay that dies before marking sends it again).
    pub sends: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    /// A new result, and (unless written by the naive dual write) its event, in one step.
    Committed { event: Option<EventId> },
    /// The key already has a result with the same payload: returns it; no new event.
    Deduped { existing: ResultRow },
    /// The key already has a result with a different payload: refused.
    Conflict { existing: ResultRow },
}

#[derive(Clone, Debug, Default)]
pub struct Outbox {
    config: OutboxConfig,
    /// The results table: `rows[slot]` is the row of the key in `slot` of the unique index.
    index: KeyIndex,
    rows: Vec<StoredRow>,
    pending: Vec<OutboxEvent>,
    last_event: u64,
    results_count: u64,
    /// With a retention: the published rows still held, as (marked at, rows) batches, oldest
    /// first.
    published: VecDeque<(SimTime, u64)>,
    published_rows: u64,
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
        o.index = KeyIndex::with_capacity(keys);
        o.rows.reserve(keys);
        o
    }

    pub fn result(&self, key: &IdempotencyKey) -> Option<ResultRow> {
        self.index
            .get(key)
            .map(|slot| self.rows[slot as usize].row())
    }

    pub fn results_count(&self) -> u64 {
        self.results_count
    }

    fn lookup(&self, key: &IdempotencyKey, payload: PayloadHash) -> Option<CommitOutcome> {
        if self.config.bug_no_idempotency {
            return None;
        }
        let existing = self.result(key)?;
        Some(
            if existing.payload == payload || self.config.bug_reuse_on_conflict {
                CommitOutcome::Deduped { existing }
            } else {
                CommitOutcome::Conflict { existing }
            },
        )
    }

    /// Writes the key's row (over an earlier one only on the `no_idempotency` path).
    fn write_row(&mut self, key: IdempotencyKey, row: ResultRow) {
        let row = StoredRow::of(row);
        match self.index.insert(key) {
            (_, true) => self.rows.push(row),
            (slot, false) => self.rows[slot as usize] = row,
        }
    }

    fn new_event_id(&mut self) -> EventId {
        self.last_event += 1;
        EventId(self.last_event)
    }

    /// `commitResultWithEvent`: the result row and its outbox event are written together or not
    /// at all. Nothing can interleave between the two writes: this is one call.
    pub fn commit(
        &mut self,
        key: IdempotencyKey,
        job: JobId,
        payload: PayloadHash,
        output: u64,
    ) -> CommitOutcome {
        if let Some(outcome) = self.lookup(&key, payload) {
            return outcome;
        }
        let id = self.new_event_id();
        self.write_row(
            key,
            ResultRow {
                job,
                payload,
                output,
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
        key: IdempotencyKey,
        job: JobId,
        payload: PayloadHash,
        output: u64,
    ) -> CommitOutcome {
        if let Some(outcome) = self.lookup(&key, payload) {
            return outcome;
        }
        self.write_row(
            key,
            ResultRow {
                job,
                payload,
                output,
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
            e.sends += 1;
        }
    }

    /// The relay marks the first `count` pending events published at `now`.
    pub fn mark_published(&mut self, now: SimTime, count: usize) {
        self.pending.drain(..count);
        if self.config.retention_ms.is_some() {
            self.published.push_back((now, count as u64));
            self.published_rows += count as u64;
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
                break;
            }
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
    use crate::ids::{DocumentId, TenantId};

    fn key(doc: u32) -> IdempotencyKey {
        IdempotencyKey::new(TenantId(0), DocumentId(doc), 1).unwrap()
    }

    #[test]
    fn a_stored_row_is_32_bytes_and_gives_back_its_row() {
        assert_eq!(std::mem::size_of::<StoredRow>(), 32);
        for event in [None, Some(EventId(1)), Some(EventId(u64::MAX))] {
            let row = ResultRow {
                job: JobId(7),
                payload: PayloadHash(9),
                output: 11,
                event,
            };
            assert_eq!(StoredRow::of(row).row(), row);
        }
    }

    // Checklist: "result and notification event are persisted together".
    #[test]
    fn a_commit_writes_result_and_event_together_and_a_retry_dedupes() {
        let mut o = Outbox::default();
        let first = o.commit(key(1), JobId(0), PayloadHash(5), 111);
        assert_eq!(
            first,
            CommitOutcome::Committed {
                event: Some(EventId(1))
            }
        );
        assert_eq!(o.pending().len(), 1);
        // A later attempt's different *output* is not a different payload: the first result wins.
        let again = o.commit(key(1), JobId(0), PayloadHash(5), 222);
        let row = ResultRow {
            job: JobId(0),
            payload: PayloadHash(5),
            output: 111,
            event: Some(EventId(1)),
        };
        assert_eq!(again, CommitOutcome::Deduped { existing: row });
        assert_eq!(o.pending().len(), 1, "no second event");
        assert_eq!(o.result(&key(1)).unwrap().output, 111);
        assert_eq!(o.results_count(), 1);
    }

    // Checklist: divergent payload rejected at persistence too.
    #[test]
    fn a_different_payload_under_the_same_key_is_a_conflict() {
        let mut o = Outbox::default();
        o.commit(key(1), JobId(0), PayloadHash(5), 111);
        assert!(matches!(
            o.commit(key(1), JobId(0), PayloadHash(6), 111),
            CommitOutcome::Conflict { .. }
        ));
        let mut broken = Outbox::new(OutboxConfig {
            bug_reuse_on_conflict: true,
            ..Default::default()
        });
        broken.commit(key(1), JobId(0), PayloadHash(5), 111);
        assert!(matches!(
            broken.commit(key(1), JobId(0), PayloadHash(6), 1),
            CommitOutcome::Deduped { .. }
        ));
    }

    #[test]
    fn without_idempotency_every_commit_makes_a_new_event() {
        let mut o = Outbox::new(OutboxConfig {
            bug_no_idempotency: true,
            ..Default::default()
        });
        o.commit(key(1), JobId(0), PayloadHash(5), 1);
        o.commit(key(1), JobId(0), PayloadHash(5), 2);
        assert_eq!(o.pending().len(), 2);
        assert_eq!(o.results_count(), 2);
    }

    // The relay publishes, then marks; a relay that died in between sends the rows again.
    #[test]
    fn relay_marks_after_sending_and_resends_unmarked_rows() {
        let mut o = Outbox::default();
        o.commit(key(1), JobId(0), PayloadHash(5), 1);
        o.commit(key(2), JobId(1), PayloadHash(6), 1);
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
        o.commit(key(1), JobId(0), PayloadHash(5), 1);
        o.commit(key(2), JobId(1), PayloadHash(6), 1);
        o.mark_published(10, 1);
        o.commit(key(3), JobId(2), PayloadHash(7), 1);
        o.mark_published(50, 1);
        assert_eq!(o.rows_held(), 3);
        assert_eq!(o.prune(109), 0);
        assert_eq!(o.prune(110), 1);
        assert_eq!(o.prune(500), 1);
        assert_eq!(o.rows_held(), 1, "the unpublished row stays");
        assert_eq!(o.pending().len(), 1);
        assert!(o.result(&key(1)).is_some(), "results are not outbox rows");
        let mut forever = Outbox::default();
        forever.commit(key(1), JobId(0), PayloadHash(5), 1);
        forever.mark_published(0, 1);
        assert_eq!(forever.prune(u64::MAX / 2), 0);
    }

    // Failure 3: the naive dual write leaves a result with no durable trace of its event.
    #[test]
    fn the_naive_write_leaves_no_outbox_row() {
        let mut o = Outbox::default();
        assert_eq!(
            o.naive_write_result(key(1), JobId(0), PayloadHash(5), 1),
            CommitOutcome::Committed { event: None }
        );
        assert!(o.result(&key(1)).is_some());
        assert!(o.pending().is_empty());
    }
}

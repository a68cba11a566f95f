//! The store's calls, and what a commit records in the history, in the words the checker reads.
//!
//! Owns: `store.begin` .. `store.rollback` against `model::store` (a program uses only its own
//! transactions; a role writes only its own tables, `protocol::may_write`; a row's key must be
//! `tenant:document:vN` or `document:vN` of a tenant and document this run knows, its job one
//! the run enqueued), the relay crash that strikes at a commit that marks published events,
//! and the records of a commit: a results row inserted is `result_committed` (its event: the
//! outbox row of the same key inserted in the same transaction), a worker's transaction that
//! found its key's result and inserted none is `commit_deduped` (or `commit_conflict` when the
//! payloads differ), an effects row is `effect_applied` and starts the review, a consumer's
//! transaction that found the event in `consumer_seen` and applied nothing is
//! `duplicate_event`, marked rows are `marked_published`, deleted ones `outbox_pruned`.
//! Does not: keep the tables (`model::store`) or judge a record (the checker).

use super::protocol::{self, may_write, row_json, Call, Role};
use super::state::Arm;
use crate::base::ids::{EventId, JobId, WorkerId};
use crate::history::{Event, Observer, StruckRecord};
use crate::model::semantics::QueueSemantics;
use crate::model::store::{Committed, Row, StoreError, Table};
use crate::model::worker::CrashPoint;
use crate::sim::kernel::{Ev, Sim};
use crate::vocab::faults::Site;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use serde_json::json;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn store_call(&mut self, slot: u32, line: u64, id: u64, call: Call) {
        let role = self.progs().slots[slot as usize].role;
        let tx = match &call {
            Call::Begin => {
                let tx = self.progs().store.begin(slot);
                return self.post(slot, protocol::ok(id, json!({ "tx": tx })), None);
            }
            Call::Get { tx, .. }
            | Call::Insert { tx, .. }
            | Call::Scan { tx, .. }
            | Call::MarkPublished { tx, .. }
            | Call::Delete { tx, .. }
            | Call::Commit { tx }
            | Call::Rollback { tx } => *tx,
            _ => unreachable!("a store call"),
        };
        if self.progs().store.owner(tx) != Some(slot) {
            let e = StoreError::NoTransaction(tx);
            return self.post(slot, protocol::error(id, e.code(), e.to_string()), None);
        }
        let written = match &call {
            Call::Insert { row, .. } => Some(row.table()),
            Call::MarkPublished { .. } => Some(Table::Outbox),
            Call::Delete { table, .. } => Some(*table),
            _ => None,
        };
        if let Some(table) = written.filter(|t| !may_write(role, *t)) {
            let m = format!(
                "{}: a {} may not write {}",
                protocol::call_name(&call),
                role.name(),
                table.name()
            );
            return self.program_fault(slot, Some(line), &m);
        }
        let result = match call {
            Call::Get { table, key, .. } => self
                .progs()
                .store
                .get(tx, table, key)
                .map(|r| json!({ "row": r.as_ref().map(row_json) })),
            Call::Insert {
                row, skip_existing, ..
            } => return self.insert_call(slot, line, id, tx, row, skip_existing),
            Call::Scan {
                table,
                unpublished,
                limit,
                ..
            } => self
                .progs()
                .store
                .scan(tx, table, unpublished, limit)
                .map(|rows| json!({ "rows": rows.iter().map(row_json).collect::<Vec<_>>() })),
            Call::MarkPublished { event, .. } => self
                .progs()
                .store
                .mark_published(tx, event)
                .map(|u| json!({ "updated": u })),
            Call::Delete { table, key, .. } => self
                .progs()
                .store
                .delete(tx, table, key)
                .map(|d| json!({ "deleted": d })),
            Call::Rollback { .. } => self.progs().store.rollback(tx).map(|()| json!({})),
            Call::Commit { .. } => return self.commit_call(slot, id, tx),
            _ => unreachable!("a store call"),
        };
        let reply = match result {
            Ok(v) => protocol::ok(id, v),
            Err(e) => protocol::error(id, e.code(), e.to_string()),
        };
        self.post(slot, reply, None);
    }

    /// `tenant:document:vN` (or `document:vN`, a key without its tenant, which the checker
    /// reports) of a tenant and a document this run knows.
    pub(super) fn program_key(&self, text: &str) -> Option<IdempotencyKey> {
        let parts: Vec<&str> = text.split(':').collect();
        let (tenant, document, version) = match parts.as_slice() {
            [t, d, v] => (Some(*t), *d, *v),
            [d, v] => (None, *d, *v),
            _ => return None,
        };
        let version: u32 = version
            .strip_prefix('v')
            .filter(|n| !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))?
            .parse()
            .ok()?;
        let document = self.names.documents.find(document)?;
        match tenant {
            Some(t) => IdempotencyKey::new(self.names.tenants.find(t)?, document, version).ok(),
            None => (1..=crate::vocab::key::MAX_VERSION)
                .contains(&version)
                .then(|| IdempotencyKey::tenantless_for_bug_switch(document, version)),
        }
    }

    /// Checks a row's key, job and event, and gives an outbox or effects row its id.
    fn insert_call(&mut self, slot: u32, line: u64, id: u64, tx: u32, row: Row, skip: bool) {
        let (key, job, event) = match &row {
            Row::Result(r) => (Some(r.key.as_str()), Some(r.job), r.event),
            Row::Outbox(r) => (Some(r.key.as_str()), Some(r.job), None),
            Row::Seen(e) => (None, None, Some(*e)),
            Row::Effect(r) => (Some(r.key.as_str()), Some(r.job), Some(r.event)),
        };
        let bad = if key.is_some_and(|k| self.program_key(k).is_none()) {
            Some(format!(
                "key {}: not tenant:document:vN (or document:vN) of a tenant and a document of this run",
                crate::base::messages::clip(key.unwrap_or_default())
            ))
        } else if job.is_some_and(|j| j as usize >= self.queue.len()) {
            Some(format!("job {}: no such job in this run", job.unwrap_or(0)))
        } else if event.is_some_and(|e| !self.known_event(e)) {
            Some(format!(
                "event {}: no outbox row ever had this id",
                event.unwrap_or(0)
            ))
        } else {
            None
        };
        if let Some(m) = bad {
            let m = format!("store.insert into {}: {m}", row.table().name());
            return self.program_fault(slot, Some(line), &m);
        }
        let store = &mut self.progs().store;
        let row = match row {
            Row::Outbox(mut r) => {
                r.event = store.next_id(Table::Outbox);
                Row::Outbox(r)
            }
            Row::Effect(mut r) => {
                r.id = store.next_id(Table::Effects);
                Row::Effect(r)
            }
            r => r,
        };
        let reply = match store.insert(tx, row, skip) {
            Ok((inserted, row)) => {
                protocol::ok(id, json!({ "inserted": inserted, "row": row_json(&row) }))
            }
            Err(e) => protocol::error(id, e.code(), e.to_string()),
        };
        self.post(slot, reply, None);
    }

    /// Whether an outbox event with this id was ever handed out.
    fn known_event(&mut self, event: u64) -> bool {
        event >= 1 && event <= self.progs().store.last_event()
    }

    fn commit_call(&mut self, slot: u32, id: u64, tx: u32) {
        let role = self.progs().slots[slot as usize].role;
        if role == Role::Relay && self.relay_dies_marking(slot, tx) {
            return;
        }
        let done = match self.progs().store.commit(tx) {
            Ok(done) => done,
            Err(e) => {
                let reply = protocol::error(id, e.code(), e.to_string());
                return self.post(slot, reply, None);
            }
        };
        let arm = match role {
            Role::Worker => self.record_worker_commit(slot, &done),
            Role::Relay => {
                self.record_marks(slot, &done);
                None
            }
            Role::Consumer => self.record_consumer_commit(&done),
        };
        self.post(slot, protocol::ok(id, json!({})), arm);
    }

    /// A relay commit that marks events it published: the relay may die first (a relay crash:
    /// the batch stays unmarked, and a new relay starts after `[relay] restart_ms`, or at its
    /// next tick). True when it died.
    fn relay_dies_marking(&mut self, slot: u32, tx: u32) -> bool {
        let marks = self.progs().store.marks(tx);
        let unmarked = self.progs().slots[slot as usize].unmarked;
        if marks == 0 || unmarked == 0 {
            return false;
        }
        let Some(fault) = self.struck_at(Site::RelayTick, None) else {
            return false;
        };
        self.record(Event::Struck(StruckRecord {
            fault,
            job: None,
            value: unmarked,
        }));
        self.kill(slot);
        let s = self.scenario;
        let back = s.relay.restart_ms.unwrap_or(s.relay.interval_ms);
        self.schedule(self.now + back, Ev::ProgramStart { slot });
        true
    }

    fn record_marks(&mut self, slot: u32, done: &Committed) {
        if !done.published.is_empty() {
            let n = done.published.len() as u64;
            let sl = &mut self.progs().slots[slot as usize];
            sl.unmarked = sl.unmarked.saturating_sub(n);
            self.record(Event::MarkedPublished { count: n as u32 });
        }
        if !done.deleted.is_empty() {
            self.record(Event::OutboxPruned {
                rows: done.deleted.len() as u64,
            });
        }
    }

    /// A worker's commit: results written (with the event written beside them), or the result
    /// it found. Arms the crash after the commit, before the ack, when the plan has it.
    fn record_worker_commit(&mut self, slot: u32, done: &Committed) -> Option<Arm> {
        let w = WorkerId(slot);
        let attempt = self.progs().slots[slot as usize].attempt;
        let mut wrote = false;
        for row in &done.inserted {
            let Row::Result(r) = row else { continue };
            wrote = true;
            let event = done.inserted.iter().find_map(|o| match o {
                Row::Outbox(o) if o.key == r.key => Some(EventId(o.event)),
                _ => None,
            });
            let key = self.program_key(&r.key).expect("checked at insert");
            self.record(Event::ResultCommitted {
                job: attempt.map_or(JobId(r.job), |a| a.job),
                worker: w,
                key,
                payload: Some(PayloadHash(r.payload)),
                output: r.output,
                event,
            });
        }
        if let (false, Some(a)) = (wrote, attempt) {
            let found = done.found.iter().find_map(|r| match r {
                Row::Result(r) => Some(r.clone()),
                _ => None,
            });
            if let Some(r) = found {
                self.record_found(w, a.job, a.plan.output, &r);
            }
        }
        let crash = attempt.and_then(|a| a.plan.crash);
        (crash == Some(CrashPoint::AfterCommitBeforeAck) && done.touched(Table::Results))
            .then_some(Arm::Crash(CrashPoint::AfterCommitBeforeAck))
    }

    /// A worker found `r` and wrote no result: deduplicated onto it, or, with another payload
    /// than its job's, refused as a conflict.
    fn record_found(
        &mut self,
        w: WorkerId,
        job: JobId,
        output: u64,
        r: &crate::model::store::ResultRow,
    ) {
        let key = self.program_key(&r.key).expect("checked at insert");
        let (_, _, payload) = self.queue.key_and_payload(job);
        let existing = PayloadHash(r.payload);
        self.record(if existing == payload {
            Event::CommitDeduped {
                job,
                worker: w,
                key,
                payload: Some(payload),
                output,
                existing_payload: Some(existing),
                existing_event: r.event.map(EventId),
            }
        } else {
            Event::CommitConflict {
                job,
                worker: w,
                key,
                payload: Some(payload),
                existing_payload: Some(existing),
            }
        });
    }

    /// A consumer's commit: each effect applied (and its review started), or the event it found
    /// already seen. Arms the chance of a consumer crash right after an effect.
    fn record_consumer_commit(&mut self, done: &Committed) -> Option<Arm> {
        let mut arm = None;
        for row in &done.inserted {
            let Row::Effect(e) = row else { continue };
            let key = self.program_key(&e.key).expect("checked at insert");
            let (event, job) = (EventId(e.event), JobId(e.job));
            self.record(Event::EffectApplied {
                event,
                key,
                job,
                output: e.output,
            });
            let review_ms = self
                .scenario
                .stages
                .review_ms
                .sample(&mut self.review_stream);
            self.reviews_pending += 1;
            self.schedule(
                self.now + review_ms,
                Ev::ReviewDone {
                    event: e.event,
                    job: e.job,
                },
            );
            arm = Some(Arm::Applied {
                job,
                event: e.event,
            });
        }
        if arm.is_none() {
            for row in &done.found {
                let Row::Seen(e) = row else { continue };
                let key = self.event_key(*e);
                if let Some(key) = key {
                    self.record(Event::DuplicateEvent {
                        event: EventId(*e),
                        key,
                    });
                }
            }
        }
        arm
    }

    /// The key of event `e`, from the consumer's delivery in hand or the outbox.
    fn event_key(&mut self, e: u64) -> Option<IdempotencyKey> {
        let consumer = self.progs().consumer() as usize;
        let text = match &self.progs().slots[consumer].in_hand {
            Some(d) if d.event == e => Some(d.key.clone()),
            _ => match self
                .progs()
                .store
                .row(Table::Outbox, &crate::model::store::Pk::Id(e))
            {
                Some(Row::Outbox(o)) => Some(o.key.clone()),
                _ => None,
            },
        }?;
        self.program_key(&text)
    }
}

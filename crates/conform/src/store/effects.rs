//! The effects: result + outbox row in one transaction (split in two calls so the harness can
//! kill the worker between the INSERTs and the `COMMIT`), the relay's claim and mark, the
//! consumer's dedupe by event id, reviews.
//! Does not: touch the queue's rows (`lease.rs`, `fenced.rs`).

use super::*;

impl Store {
    /// Opens the commit transaction and writes the result and its outbox row (or, with
    /// `with_outbox` false — the naive dual write — the result only). The transaction stays
    /// open: [`Store::commit_end`] sends the `COMMIT`, and the harness may kill the worker in
    /// between. Returns the outcome and, for a fresh result, its event id.
    pub fn commit_begin(
        &mut self,
        worker: u32,
        l: &Lease,
        output: u64,
        with_outbox: bool,
    ) -> Result<(Committed, Option<i64>)> {
        self.db.begin()?;
        let output = output as i64;
        let existing = if self.cfg.bugs.contains(Bug::NoIdempotency) {
            None
        } else {
            self.db.query_opt(
                "SELECT payload, event FROM results WHERE key = $1",
                &[l.key.as_str().into()],
            )?
        };
        if let Some(row) = existing {
            let now = self.db.now_us()?;
            let outcome = if row[0].t() == l.payload {
                self.hist(now, json!({"type": "commit_deduped", "job": l.job, "worker": worker, "key": l.key, "payload": l.payload, "output": hex(output), "existing_payload": row[0].t(), "existing_event": row[1].oi()}))?;
                Committed::Deduped
            } else {
                self.hist(now, json!({"type": "commit_conflict", "job": l.job, "worker": worker, "key": l.key, "payload": l.payload, "existing_payload": row[0].t()}))?;
                Committed::Conflict
            };
            return Ok((outcome, None));
        }
        let event = self.next("event")?;
        let conflict = if self.cfg.bugs.contains(Bug::NoIdempotency) {
            ""
        } else {
            "ON CONFLICT (key) DO NOTHING"
        };
        let key_col = if self.cfg.bugs.contains(Bug::NoIdempotency) {
            // Without idempotency the key is not unique: each commit gets its own row.
            format!("{}#{}", l.key, event)
        } else {
            l.key.clone()
        };
        let inserted = self.db.exec(
            &format!("INSERT INTO results (key, job, payload, output, event) VALUES ($1, $2, $3, $4, $5) {conflict}"),
            &[key_col.into(), l.job.into(), l.payload.as_str().into(), output.into(), if with_outbox { Some(event) } else { None }.into()],
        )?;
        if inserted == 0 {
            // A concurrent commit of the same key won the race (it committed while we waited
            // on the unique index): this is a dedupe, decided by the UNIQUE constraint.
            let row = self.db.query(
                "SELECT payload, event FROM results WHERE key = $1",
                &[l.key.as_str().into()],
            )?;
            let now = self.db.now_us()?;
            let same = row[0][0].t() == l.payload;
            if same {
                self.hist(now, json!({"type": "commit_deduped", "job": l.job, "worker": worker, "key": l.key, "payload": l.payload, "output": hex(output), "existing_payload": row[0][0].t(), "existing_event": row[0][1].oi()}))?;
            } else {
                self.hist(now, json!({"type": "commit_conflict", "job": l.job, "worker": worker, "key": l.key, "payload": l.payload, "existing_payload": row[0][0].t()}))?;
            }
            return Ok((
                if same {
                    Committed::Deduped
                } else {
                    Committed::Conflict
                },
                None,
            ));
        }
        if with_outbox {
            self.db.exec(
                "INSERT INTO outbox (event, key, job, output) VALUES ($1, $2, $3, $4)",
                &[
                    event.into(),
                    l.key.as_str().into(),
                    l.job.into(),
                    output.into(),
                ],
            )?;
        }
        let now = self.db.now_us()?;
        let ev = if with_outbox { Some(event) } else { None };
        self.hist(now, json!({"type": "result_committed", "job": l.job, "worker": worker, "key": l.key, "payload": l.payload, "output": hex(output), "event": ev}))?;
        Ok((Committed::Fresh, Some(event)))
    }

    /// Sends the `COMMIT` of [`Store::commit_begin`], alone.
    pub fn commit_end(&mut self) -> Result<()> {
        self.db.commit()
    }

    /// Opens the relay's transaction and claims unpublished rows: `FOR UPDATE SKIP LOCKED` on
    /// PostgreSQL, so competing relays take disjoint rows; SQLite has one writer and one relay.
    pub fn relay_claim(&mut self, limit: u32) -> Result<Vec<OutboxRow>> {
        self.db.batch("BEGIN")?;
        let lock = if self.pg() {
            "FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let rows = self.db.query(
            &format!("SELECT event, key, job, output FROM outbox WHERE published_us IS NULL ORDER BY event LIMIT $1 {lock}"),
            &[limit.into()],
        )?;
        Ok(rows
            .iter()
            .map(|r: &Row| OutboxRow {
                event: r[0].i(),
                key: r[1].t().to_string(),
                job: r[2].i(),
                output: r[3].i(),
            })
            .collect())
    }

    /// Marks the claimed rows published and commits the relay's transaction.
    pub fn relay_mark(&mut self, rows: &[OutboxRow]) -> Result<()> {
        if self.db.is_sqlite() {
            // SQLite: the claim was a read; upgrade to the write lock for the mark.
            self.db.rollback()?;
            self.db.begin()?;
        }
        let now = self.db.now_us()?;
        for r in rows {
            self.db.exec(
                "UPDATE outbox SET published_us = $2 WHERE event = $1 AND published_us IS NULL",
                &[r.event.into(), now.into()],
            )?;
        }
        self.hist(
            now,
            // By id: two relays claim disjoint batches and commits finish out of event-id
            // order, so "the first n pending" would name other rows.
            json!({"type": "marked_published", "events": rows.iter().map(|r| r.event).collect::<Vec<_>>()}),
        )?;
        self.db.commit()
    }

    pub fn relay_release(&mut self) -> Result<()> {
        self.db.rollback()
    }

    /// One event reaches the consumer (the "broker" is the consumer's own transaction): the
    /// delivery is recorded, then applied once per event id, with a review due `review_ms`
    /// later. `direct` is the naive dual write's publish, outside any outbox.
    pub fn deliver(&mut self, r: &OutboxRow, direct: bool, review_ms: u64) -> Result<()> {
        self.db.begin()?;
        // The event's consumer row first: it is the lock that orders two deliveries of one
        // event (the second waits for the first to commit), so the clock is read after it.
        let seen = self.db.exec(
            "INSERT INTO consumer_seen (event) VALUES ($1) ON CONFLICT (event) DO NOTHING",
            &[r.event.into()],
        )?;
        let now = self.db.now_us()?;
        let send = self.db.query(
            "SELECT count(*) FROM deliveries WHERE event = $1",
            &[r.event.into()],
        )?[0][0]
            .i()
            + 1;
        self.db.exec(
            "INSERT INTO deliveries (event, send, at_us) VALUES ($1, $2, $3)",
            &[r.event.into(), send.into(), now.into()],
        )?;
        self.hist(now, json!({"type": "published", "event": r.event, "key": r.key, "job": r.job, "output": hex(r.output), "send": send, "direct": direct}))?;
        let fresh = if self.cfg.bugs.contains(Bug::NoConsumerDedupe) {
            1
        } else {
            seen
        };
        if fresh == 1 {
            self.db.exec(
                "INSERT INTO effects (event, key, job, output) VALUES ($1, $2, $3, $4)",
                &[
                    r.event.into(),
                    r.key.as_str().into(),
                    r.job.into(),
                    r.output.into(),
                ],
            )?;
            self.db.exec(
                "INSERT INTO reviews (event, key, job, due_us) VALUES ($1, $2, $3, $4) ON CONFLICT (event) DO NOTHING",
                &[r.event.into(), r.key.as_str().into(), r.job.into(), (now + review_ms as i64 * 1000).into()],
            )?;
            self.hist(now, json!({"type": "effect_applied", "event": r.event, "key": r.key, "job": r.job, "output": hex(r.output)}))?;
        } else {
            self.hist(
                now,
                json!({"type": "duplicate_event", "event": r.event, "key": r.key}),
            )?;
        }
        self.db.commit()
    }

    /// The naive dual write's second half: a new event id, published outside any transaction
    /// with the result.
    pub fn naive_event(&mut self) -> Result<i64> {
        self.db.begin()?;
        let e = self.next("event")?;
        self.db.commit()?;
        Ok(e)
    }

    /// Reviews whose time has come are done.
    pub fn finish_reviews(&mut self) -> Result<u32> {
        let probe = self.db.now_us()?;
        if self
            .db
            .query_opt(
                "SELECT 1 FROM reviews WHERE done_us IS NULL AND due_us <= $1 LIMIT 1",
                &[probe.into()],
            )?
            .is_none()
        {
            return Ok(0);
        }
        self.db.begin()?;
        let now = self.db.now_us()?;
        let due = self.db.query("SELECT event, key, job FROM reviews WHERE done_us IS NULL AND due_us <= $1 ORDER BY due_us, event", &[now.into()])?;
        for r in &due {
            self.db.exec(
                "UPDATE reviews SET done_us = $2 WHERE event = $1",
                &[r[0].clone(), now.into()],
            )?;
            self.hist(
                now,
                json!({"type": "review_done", "event": r[0].i(), "key": r[1].t(), "job": r[2].i()}),
            )?;
        }
        self.db.commit()?;
        Ok(due.len() as u32)
    }
}

//! The chapter's pipeline, for real: every step is one database transaction that also appends
//! the step's history record.
//!
//! Owns: enqueue with the idempotency key as a UNIQUE column, leasing (with `FOR UPDATE SKIP
//! LOCKED` on PostgreSQL), heartbeats, the fencing-token check on every queue write, result +
//! outbox row in one transaction (the commit is split in two calls so the harness can kill the
//! worker between the INSERTs and the `COMMIT`), retries / dead letters / cancellations, the
//! relay's claim and mark, the consumer's dedupe by event id, reviews, operator reprocess. For
//! `pgmq` the queue steps are pgmq's own functions (`read`, `set_vt`, `delete`, `archive`).
//!
//! History: each record is inserted in the transaction whose effect it describes, with the
//! store's clock, so a record exists exactly when its effect committed — whatever happened to
//! the client. Records describe what the store did and answered; the only client-supplied facts
//! are who asked (worker, presented token) and what the model returned.
//! Does not: decide anything the application decides (retry delays, when to crash); it is told.

use crate::db::{Db, Row, Val};
use anyhow::{anyhow, bail, Result};
use durasim::model::retry::{classify, Decision, ErrorClass, ErrorKind, RetryPolicy};
use serde_json::{json, Value};

/// Which real store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
    Pgmq,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Pgmq => "pgmq",
        }
    }
}

/// The pgmq queue the pipeline uses.
pub const PGMQ_QUEUE: &str = "jobs";

/// What the store must know of the run's configuration.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub kind: Kind,
    pub lease_ms: u64,
    pub deadline_ms: u64,
    pub max_attempts: u32,
    pub policy: RetryPolicy,
    /// Bug switch: queue writes do not check the fencing token.
    pub no_fencing: bool,
    /// Bug switch: the consumer applies every delivery (no dedupe by event id).
    pub no_consumer_dedupe: bool,
    /// Bug switch: results are inserted without the key lookup (a second result per key).
    pub no_idempotency: bool,
}

/// One enqueue request.
#[derive(Clone, Debug)]
pub struct Request {
    pub at_ms: u64,
    pub tenant: String,
    pub document: String,
    pub version: u32,
    /// The idempotency key as the application built it.
    pub key: String,
    /// The operation asked for (`extract`).
    pub operation: String,
    /// A fingerprint of the submitted bytes, 16 hex digits.
    pub content: String,
    /// The payload hash (document, operation, content), 16 hex digits: what "same payload"
    /// compares.
    pub payload: String,
    pub invalid: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enqueued {
    Created(u32),
    Deduped(u32),
    Conflict(u32),
}

/// A lease as the worker holds it.
#[derive(Clone, Debug)]
pub struct Lease {
    pub job: u32,
    pub fence: u64,
    pub attempt: u32,
    pub key: String,
    pub payload: String,
    pub invalid: bool,
    pub leased_at_us: i64,
    /// pgmq's message id (the queue's own id for the job).
    pub msg_id: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// Written (the transaction is still open until [`Store::commit_end`]).
    Fresh,
    Deduped,
    Conflict,
}

/// An outbox row the relay claimed.
#[derive(Clone, Debug)]
pub struct OutboxRow {
    pub event: i64,
    pub key: String,
    pub job: i64,
    pub output: i64,
}

pub struct Store {
    pub db: Db,
    pub cfg: StoreConfig,
}

/// A fingerprint (payload, content, model output) as the history spells it.
pub fn hex(x: i64) -> String {
    format!("{:016x}", x as u64)
}

fn terminal(state: &str) -> bool {
    matches!(state, "acked" | "dead_lettered" | "cancelled")
}

impl Store {
    pub fn new(db: Db, cfg: StoreConfig) -> Store {
        Store { db, cfg }
    }

    fn pg(&self) -> bool {
        !self.db.is_sqlite()
    }

    fn pgmq(&self) -> bool {
        self.cfg.kind == Kind::Pgmq
    }

    /// Appends one history record (inside the caller's transaction).
    pub fn hist(&mut self, at_us: i64, body: Value) -> Result<()> {
        self.db.exec(
            "INSERT INTO history (at_us, body) VALUES ($1, $2)",
            &[at_us.into(), body.to_string().into()],
        )?;
        Ok(())
    }

    /// A record only the client can know (extract started, a crash), in its own transaction.
    pub fn note(&mut self, body: Value) -> Result<()> {
        self.db.begin()?;
        let now = self.db.now_us()?;
        self.hist(now, body)?;
        self.db.commit()
    }

    fn next(&mut self, counter: &str) -> Result<i64> {
        if self.pg() {
            let seq = if counter == "fence" {
                "fence_seq"
            } else {
                "event_seq"
            };
            Ok(self.db.query(&format!("SELECT nextval('{seq}')"), &[])?[0][0].i())
        } else {
            Ok(self.db.query(
                "UPDATE counters SET value = value + 1 WHERE name = $1 RETURNING value",
                &[counter.into()],
            )?[0][0]
                .i())
        }
    }

    // ---- enqueue and reprocess ----------------------------------------------------------------

    /// The harness is the only producer, so job ids are dense in enqueue order.
    pub fn enqueue(&mut self, r: &Request, from: Option<u32>) -> Result<Enqueued> {
        self.db.begin()?;
        let existing = self.db.query_opt(
            "SELECT id, payload, tenant FROM jobs WHERE key = $1",
            &[r.key.as_str().into()],
        )?;
        let now = self.db.now_us()?;
        let outcome = match existing {
            Some(row) => {
                let id = row[0].i() as u32;
                if row[1].t() == r.payload {
                    self.hist(now, json!({"type": "enqueue_deduped", "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "existing": id}))?;
                    Enqueued::Deduped(id)
                } else {
                    self.hist(now, json!({"type": "enqueue_conflict", "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "existing": id, "existing_payload": row[1].t()}))?;
                    Enqueued::Conflict(id)
                }
            }
            None => {
                let id = self.db.query("SELECT count(*) FROM jobs", &[])?[0][0].i();
                let deadline = now + self.cfg.deadline_ms as i64 * 1000;
                let msg_id = if self.pgmq() {
                    let row = self.db.query(
                        "SELECT pgmq.send($1, jsonb_build_object('job', $2::bigint))",
                        &[PGMQ_QUEUE.into(), id.into()],
                    )?;
                    Some(row[0][0].i())
                } else {
                    None
                };
                self.db.exec(
                    "INSERT INTO jobs (id, tenant, document, version, key, payload, invalid, state, created_us, visible_us, deadline_us, msg_id, operation, content)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $8, $9, $10, $11, $12)",
                    &[
                        id.into(),
                        r.tenant.as_str().into(),
                        r.document.as_str().into(),
                        r.version.into(),
                        r.key.as_str().into(),
                        r.payload.as_str().into(),
                        (r.invalid as i64).into(),
                        now.into(),
                        deadline.into(),
                        msg_id.into(),
                        r.operation.as_str().into(),
                        r.content.as_str().into(),
                    ],
                )?;
                self.hist(now, json!({"type": "enqueued", "job": id, "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "visible_at": now, "reprocess_of": from}))?;
                Enqueued::Created(id as u32)
            }
        };
        self.db.commit()?;
        Ok(outcome)
    }

    /// An operator's reprocess of a dead-lettered job: a new job, version + 1, and the audit
    /// entry, in one transaction.
    pub fn reprocess(
        &mut self,
        old: u32,
        operator: Option<&str>,
        key_of: &dyn Fn(&str, &str, u32) -> String,
    ) -> Result<()> {
        let row = self.db.query_opt(
            "SELECT state, tenant, document, version, payload, invalid, operation, content FROM jobs WHERE id = $1",
            &[old.into()],
        )?;
        let refuse = |s: &mut Store, reason: &str| -> Result<()> {
            s.note(json!({"type": "reprocess_refused", "job": old, "operator": operator, "reason": reason}))
        };
        let Some(row) = row else {
            return refuse(self, "no_such_job");
        };
        let Some(operator) = operator.filter(|o| !o.trim().is_empty()) else {
            return refuse(self, "missing_operator");
        };
        match row[0].t() {
            "dead_lettered" => {}
            "cancelled" => return refuse(self, "cancelled_is_terminal"),
            _ => return refuse(self, "not_dead_lettered"),
        }
        let (tenant, document, version) = (
            row[1].t().to_string(),
            row[2].t().to_string(),
            row[3].i() as u32 + 1,
        );
        let request = Request {
            at_ms: 0,
            key: key_of(&tenant, &document, version),
            tenant,
            document,
            version,
            operation: row[6].t().to_string(),
            content: row[7].t().to_string(),
            payload: row[4].t().to_string(),
            invalid: row[5].i() != 0,
        };
        match self.enqueue(&request, Some(old))? {
            Enqueued::Created(new) => {
                self.db.begin()?;
                let now = self.db.now_us()?;
                self.db.exec(
                    "INSERT INTO audit (old_job, new_job, operator, at_us) VALUES ($1, $2, $3, $4)",
                    &[old.into(), new.into(), operator.into(), now.into()],
                )?;
                self.hist(now, json!({"type": "reprocessed", "old_job": old, "new_job": new, "operator": operator}))?;
                self.db.commit()
            }
            _ => refuse(self, "version_exists"),
        }
    }

    // ---- leasing --------------------------------------------------------------------------------

    /// `leaseNext`: cancels jobs past their deadline and dead-letters jobs out of attempts on
    /// the way, like the model, then leases the next ready job (if any).
    pub fn lease(&mut self, worker: u32) -> Result<Option<Lease>> {
        // A read first, outside any transaction: an idle worker polling must not take
        // SQLite's write lock (or open a PostgreSQL transaction) just to find nothing.
        let probe = self.db.now_us()?;
        let ready = if self.pgmq() {
            self.db.query_opt(
                &format!("SELECT 1 FROM pgmq.q_{PGMQ_QUEUE} WHERE vt <= clock_timestamp() LIMIT 1"),
                &[],
            )?
        } else {
            self.db.query_opt(
                "SELECT 1 FROM jobs WHERE (state = 'queued' AND visible_us <= $1) OR (state = 'leased' AND lease_until_us < $1) LIMIT 1",
                &[probe.into()],
            )?
        };
        if ready.is_none() {
            return Ok(None);
        }
        if self.pgmq() {
            return self.lease_pgmq(worker);
        }
        self.db.begin()?;
        let result = self.lease_own(worker);
        match result {
            Ok(l) => {
                self.db.commit()?;
                Ok(l)
            }
            Err(e) => {
                let _ = self.db.rollback();
                Err(e)
            }
        }
    }

    fn lease_own(&mut self, worker: u32) -> Result<Option<Lease>> {
        let lock = if self.pg() {
            "FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let sql = format!(
            "SELECT id, state, lease_until_us, fence, attempt, deadline_us, visible_us, key, payload, invalid FROM jobs
             WHERE (state = 'queued' AND visible_us <= $1) OR (state = 'leased' AND lease_until_us < $1)
             ORDER BY CASE WHEN state = 'leased' THEN lease_until_us ELSE visible_us END, id LIMIT 1 {lock}"
        );
        loop {
            let probe = self.db.now_us()?;
            let Some(row) = self.db.query_opt(&sql, &[probe.into()])? else {
                return Ok(None);
            };
            let now = self.db.now_us()?;
            let (id, fence, attempt, deadline) = (row[0].i(), row[3].i(), row[4].i(), row[5].i());
            if row[1].t() == "leased" {
                self.hist(
                    now,
                    json!({"type": "lease_expired", "job": id, "fence": fence}),
                )?;
            }
            if now > deadline {
                self.db.exec(
                    "UPDATE jobs SET state = 'cancelled' WHERE id = $1",
                    &[id.into()],
                )?;
                self.hist(
                    now,
                    json!({"type": "cancelled", "job": id, "worker": null, "fence": null}),
                )?;
                continue;
            }
            if attempt >= self.cfg.max_attempts as i64 {
                self.dead_letter_row(now, id, None, None, attempt, "max_attempts_exceeded")?;
                continue;
            }
            let fence = self.next("fence")?;
            let until = now + self.cfg.lease_ms as i64 * 1000;
            self.db.exec(
                "UPDATE jobs SET state = 'leased', fence = $2, attempt = attempt + 1, lease_until_us = $3 WHERE id = $1",
                &[id.into(), fence.into(), until.into()],
            )?;
            self.hist(now, json!({"type": "leased", "job": id, "worker": worker, "fence": fence, "attempt": attempt + 1, "visible_at": row[6].i()}))?;
            return Ok(Some(Lease {
                job: id as u32,
                fence: fence as u64,
                attempt: attempt as u32 + 1,
                key: row[7].t().to_string(),
                payload: row[8].t().to_string(),
                invalid: row[9].i() != 0,
                leased_at_us: now,
                msg_id: None,
            }));
        }
    }

    /// pgmq: `read(queue, vt, 1)` is the lease; `read_ct` is the attempt and the only token there
    /// is. The application's own checks (deadline, attempts) run in the same transaction.
    fn lease_pgmq(&mut self, worker: u32) -> Result<Option<Lease>> {
        self.db.begin()?;
        let vt_s = self.cfg.lease_ms.div_ceil(1000) as i64;
        loop {
            let row = self.db.query_opt(
                "SELECT msg_id, read_ct::bigint, (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint, (message->>'job')::bigint
                 FROM pgmq.read($1, ($2::bigint)::integer, 1)",
                &[PGMQ_QUEUE.into(), vt_s.into()],
            )?;
            let Some(row) = row else {
                self.db.commit()?;
                return Ok(None);
            };
            let now = self.db.now_us()?;
            let (msg, read_ct, vt, id) = (row[0].i(), row[1].i(), row[2].i(), row[3].i());
            let j = self.db.query(
                "SELECT state, fence, deadline_us, key, payload, invalid, visible_us FROM jobs WHERE id = $1 FOR UPDATE",
                &[id.into()],
            )?;
            let j = j
                .first()
                .ok_or_else(|| anyhow!("pgmq message {msg} names job {id}, which is not in jobs"))?
                .clone();
            if j[0].t() == "leased" {
                // Read again while the application still counts it leased: the visibility
                // timeout ran out.
                self.hist(
                    now,
                    json!({"type": "lease_expired", "job": id, "fence": j[1].i()}),
                )?;
            }
            if now > j[2].i() {
                self.db.query(
                    "SELECT pgmq.delete($1, $2::bigint)",
                    &[PGMQ_QUEUE.into(), msg.into()],
                )?;
                self.db.exec(
                    "UPDATE jobs SET state = 'cancelled' WHERE id = $1",
                    &[id.into()],
                )?;
                self.hist(
                    now,
                    json!({"type": "cancelled", "job": id, "worker": null, "fence": null}),
                )?;
                continue;
            }
            if read_ct > self.cfg.max_attempts as i64 {
                self.db.query(
                    "SELECT pgmq.archive($1, $2::bigint)",
                    &[PGMQ_QUEUE.into(), msg.into()],
                )?;
                self.dead_letter_row(now, id, None, None, read_ct - 1, "max_attempts_exceeded")?;
                continue;
            }
            self.db.exec(
                "UPDATE jobs SET state = 'leased', fence = $2, attempt = $2, lease_until_us = $3 WHERE id = $1",
                &[id.into(), read_ct.into(), vt.into()],
            )?;
            // The lease began when pgmq read the message (its `vt` is that moment + the
            // timeout), not when this transaction next looked at the clock.
            let granted = (vt - vt_s * 1_000_000).min(now);
            self.hist(granted, json!({"type": "leased", "job": id, "worker": worker, "fence": read_ct, "attempt": read_ct, "visible_at": j[6].i()}))?;
            self.db.commit()?;
            return Ok(Some(Lease {
                job: id as u32,
                fence: read_ct as u64,
                attempt: read_ct as u32,
                key: j[3].t().to_string(),
                payload: j[4].t().to_string(),
                invalid: j[5].i() != 0,
                leased_at_us: now,
                msg_id: Some(msg),
            }));
        }
    }

    // ---- fenced queue writes ----------------------------------------------------------------------

    /// The fenced UPDATE every queue write goes through: it changes the row only if the job is
    /// leased under the presented token (any token with `no_fencing`). On refusal, records why.
    #[allow(clippy::too_many_arguments)]
    fn fenced_update(
        &mut self,
        now: i64,
        worker: u32,
        l: &Lease,
        op: &str,
        set: &str,
        extra: &[Val],
        live_only: bool,
    ) -> Result<bool> {
        let mut params: Vec<Val> = vec![l.job.into(), (l.fence as i64).into(), now.into()];
        params.extend_from_slice(extra);
        let fence = if self.cfg.no_fencing {
            ""
        } else {
            "AND fence = $2"
        };
        let live = if live_only {
            "AND lease_until_us >= $3"
        } else {
            ""
        };
        let sql = format!("UPDATE jobs SET {set} WHERE id = $1 AND state = 'leased' {fence} {live} AND CAST($2 AS BIGINT) IS NOT NULL AND CAST($3 AS BIGINT) IS NOT NULL");
        if self.db.exec(&sql, &params)? == 1 {
            return Ok(true);
        }
        let row = self.db.query(
            "SELECT state, fence FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?;
        let (state, held) = (row[0][0].t().to_string(), row[0][1].i());
        let reason = if terminal(&state) {
            state
        } else if held != l.fence as i64 {
            "stale_fence".to_string()
        } else {
            // Leased under this token but expired (a heartbeat), or released: the model's
            // queue would have made it ready again.
            "ready".to_string()
        };
        self.hist(now, json!({"type": "rejected", "job": l.job, "worker": worker, "op": op, "presented": l.fence, "held": held, "reason": reason}))?;
        Ok(false)
    }

    pub fn heartbeat(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        self.db.begin()?;
        let now = self.db.now_us()?;
        let ok = if self.pgmq() {
            // set_vt(queue, msg_id, seconds): by message id, no token. The application's own row
            // follows pgmq's answer.
            let vt_s = self.cfg.lease_ms.div_ceil(1000) as i64;
            let row = self.db.query_opt(
                "SELECT (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint FROM pgmq.set_vt($1, $2::bigint, ($3::bigint)::integer)",
                &[PGMQ_QUEUE.into(), l.msg_id.into(), vt_s.into()],
            )?;
            match row {
                Some(r) => {
                    let until = r[0].i();
                    self.db.exec(
                        "UPDATE jobs SET lease_until_us = $2 WHERE id = $1",
                        &[l.job.into(), until.into()],
                    )?;
                    self.hist(now, json!({"type": "heartbeat", "job": l.job, "worker": worker, "fence": l.fence}))?;
                    true
                }
                None => {
                    self.pgmq_rejected(now, worker, l, "heartbeat")?;
                    false
                }
            }
        } else {
            let until = now + self.cfg.lease_ms as i64 * 1000;
            let ok = self.fenced_update(
                now,
                worker,
                l,
                "heartbeat",
                "lease_until_us = $4",
                &[until.into()],
                true,
            )?;
            if ok {
                self.hist(
                    now,
                    json!({"type": "heartbeat", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            }
            ok
        };
        self.db.commit()?;
        Ok(ok)
    }

    pub fn ack(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        self.db.begin()?;
        let now = self.db.now_us()?;
        let ok = if self.pgmq() {
            let deleted = self.db.query(
                "SELECT pgmq.delete($1, $2::bigint)::int",
                &[PGMQ_QUEUE.into(), l.msg_id.into()],
            )?[0][0]
                .i()
                == 1;
            if deleted {
                self.db.exec(
                    "UPDATE jobs SET state = 'acked' WHERE id = $1",
                    &[l.job.into()],
                )?;
                self.hist(
                    now,
                    json!({"type": "acked", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            } else {
                self.pgmq_rejected(now, worker, l, "ack")?;
            }
            deleted
        } else {
            let ok = self.fenced_update(now, worker, l, "ack", "state = 'acked'", &[], false)?;
            if ok {
                self.hist(
                    now,
                    json!({"type": "acked", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            }
            ok
        };
        self.db.commit()?;
        Ok(ok)
    }

    fn dead_letter_row(
        &mut self,
        now: i64,
        job: i64,
        worker: Option<u32>,
        fence: Option<u64>,
        attempts: i64,
        reason: &str,
    ) -> Result<()> {
        self.db.exec(
            "UPDATE jobs SET state = 'dead_lettered' WHERE id = $1",
            &[job.into()],
        )?;
        self.db.exec(
            "INSERT INTO dlq (job, reason, at_us) VALUES ($1, $2, $3)",
            &[job.into(), reason.into(), now.into()],
        )?;
        self.hist(now, json!({"type": "dead_lettered", "job": job, "worker": worker, "fence": fence, "attempts": attempts, "reason": reason}))
    }

    /// A failed attempt: the retry policy decides (with the store's clock for the deadline), the
    /// queue applies the decision if the token still holds.
    pub fn fail(
        &mut self,
        worker: u32,
        l: &Lease,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Result<()> {
        self.db.begin()?;
        let now = self.db.now_us()?;
        let deadline = self.db.query(
            "SELECT deadline_us FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?[0][0]
            .i();
        let error = if now > deadline && classify(error) == ErrorClass::Transient {
            ErrorKind::DeadlineExceeded
        } else {
            error
        };
        self.hist(now, json!({"type": "attempt_failed", "job": l.job, "worker": worker, "fence": l.fence, "error": error.name()}))?;
        match self.cfg.policy.decide(error, l.attempt, jitter_draw) {
            Decision::Retry { delay_ms } => {
                let visible = now + delay_ms as i64 * 1000;
                if self.pgmq() {
                    let vt_s = delay_ms.div_ceil(1000) as i64;
                    let row = self.db.query_opt(
                        "SELECT (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint FROM pgmq.set_vt($1, $2::bigint, ($3::bigint)::integer)",
                        &[PGMQ_QUEUE.into(), l.msg_id.into(), vt_s.into()],
                    )?;
                    match row {
                        Some(_) => {
                            // What the worker asked for (in pgmq's whole seconds), as the
                            // format wants; pgmq's own `vt` counts from its clock at set_vt, a
                            // fraction of a millisecond later.
                            let asked = now + vt_s * 1_000_000;
                            self.db.exec(
                                "UPDATE jobs SET state = 'queued', visible_us = $2 WHERE id = $1",
                                &[l.job.into(), asked.into()],
                            )?;
                            self.hist(now, json!({"type": "retry_scheduled", "job": l.job, "worker": worker, "fence": l.fence, "attempt": l.attempt, "visible_at": asked}))?;
                        }
                        None => self.pgmq_rejected(now, worker, l, "retry")?,
                    }
                } else if self.fenced_update(
                    now,
                    worker,
                    l,
                    "retry",
                    "state = 'queued', visible_us = $4",
                    &[visible.into()],
                    false,
                )? {
                    self.hist(now, json!({"type": "retry_scheduled", "job": l.job, "worker": worker, "fence": l.fence, "attempt": l.attempt, "visible_at": visible}))?;
                }
            }
            Decision::DeadLetter(reason) => {
                let reason = match reason {
                    durasim::model::dead_letter::DlqReason::PermanentError => "permanent_error",
                    durasim::model::dead_letter::DlqReason::MaxAttemptsExceeded => {
                        "max_attempts_exceeded"
                    }
                };
                if self.pgmq() {
                    let archived = self.db.query(
                        "SELECT pgmq.archive($1, $2::bigint)::int",
                        &[PGMQ_QUEUE.into(), l.msg_id.into()],
                    )?[0][0]
                        .i()
                        == 1;
                    if archived {
                        self.dead_letter_row(
                            now,
                            l.job as i64,
                            Some(worker),
                            Some(l.fence),
                            l.attempt as i64,
                            reason,
                        )?;
                    } else {
                        self.pgmq_rejected(now, worker, l, "dead_letter")?;
                    }
                } else if self.fenced_update(
                    now,
                    worker,
                    l,
                    "dead_letter",
                    "state = state",
                    &[],
                    false,
                )? {
                    self.dead_letter_row(
                        now,
                        l.job as i64,
                        Some(worker),
                        Some(l.fence),
                        l.attempt as i64,
                        reason,
                    )?;
                }
            }
            Decision::Cancel => {
                let done = if self.pgmq() {
                    let deleted = self.db.query(
                        "SELECT pgmq.delete($1, $2::bigint)::int",
                        &[PGMQ_QUEUE.into(), l.msg_id.into()],
                    )?[0][0]
                        .i()
                        == 1;
                    if !deleted {
                        self.pgmq_rejected(now, worker, l, "cancel")?;
                    }
                    deleted
                } else {
                    self.fenced_update(now, worker, l, "cancel", "state = 'cancelled'", &[], false)?
                };
                if done {
                    self.db.exec(
                        "UPDATE jobs SET state = 'cancelled' WHERE id = $1",
                        &[l.job.into()],
                    )?;
                    self.hist(now, json!({"type": "cancelled", "job": l.job, "worker": worker, "fence": l.fence}))?;
                }
            }
        }
        self.db.commit()
    }

    /// pgmq refused (the message is gone: deleted or archived); the reason is the job's state
    /// in the application's own table.
    fn pgmq_rejected(&mut self, now: i64, worker: u32, l: &Lease, op: &str) -> Result<()> {
        let row = self.db.query(
            "SELECT fence, state FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?;
        let (held, state) = (row[0][0].i(), row[0][1].t().to_string());
        let reason = if state == "queued" {
            "ready".to_string()
        } else {
            state
        };
        self.hist(now, json!({"type": "rejected", "job": l.job, "worker": worker, "op": op, "presented": l.fence, "held": held, "reason": reason}))
    }

    // ---- commit: result + outbox in one transaction ----------------------------------------------

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
        let existing = if self.cfg.no_idempotency {
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
        let conflict = if self.cfg.no_idempotency {
            ""
        } else {
            "ON CONFLICT (key) DO NOTHING"
        };
        let key_col = if self.cfg.no_idempotency {
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

    // ---- relay, consumer, review -------------------------------------------------------------------

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
            json!({"type": "marked_published", "count": rows.len()}),
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
        let fresh = if self.cfg.no_consumer_dedupe {
            1
        } else {
            self.db.exec(
                "INSERT INTO consumer_seen (event) VALUES ($1) ON CONFLICT (event) DO NOTHING",
                &[r.event.into()],
            )?
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

    /// Scripted faults fire once: the first attempt to claim one gets it.
    pub fn claim_script(&mut self, index: usize) -> Result<bool> {
        self.db.begin()?;
        let n = self.db.exec(
            "INSERT INTO fired (idx) VALUES ($1) ON CONFLICT (idx) DO NOTHING",
            &[(index as i64).into()],
        )?;
        self.db.commit()?;
        Ok(n == 1)
    }

    /// Nothing left to do: every job terminal, the outbox drained, every review done.
    pub fn settled(&mut self) -> Result<bool> {
        let r = self.db.query(
            "SELECT (SELECT count(*) FROM jobs WHERE state NOT IN ('acked', 'dead_lettered', 'cancelled')),
                    (SELECT count(*) FROM outbox WHERE published_us IS NULL),
                    (SELECT count(*) FROM reviews WHERE done_us IS NULL)",
            &[],
        )?;
        Ok(r[0].iter().all(|v| v.i() == 0))
    }

    /// The history in the store's order.
    pub fn history(&mut self) -> Result<Vec<(i64, String)>> {
        let rows = self
            .db
            .query("SELECT at_us, body FROM history ORDER BY seq", &[])?;
        Ok(rows
            .into_iter()
            .map(|r| (r[0].i(), r[1].t().to_string()))
            .collect())
    }

    /// Whether a result row exists for the key (the rollback proof reads it).
    pub fn result_rows(&mut self, key: &str) -> Result<i64> {
        Ok(self
            .db
            .query("SELECT count(*) FROM results WHERE key = $1", &[key.into()])?[0][0]
            .i())
    }

    pub fn outbox_rows_for(&mut self, key: &str) -> Result<i64> {
        Ok(self
            .db
            .query("SELECT count(*) FROM outbox WHERE key = $1", &[key.into()])?[0][0]
            .i())
    }

    pub fn check_kind(&self) -> Result<()> {
        if self.pgmq() && self.db.is_sqlite() {
            bail!("pgmq runs on PostgreSQL only");
        }
        Ok(())
    }
}

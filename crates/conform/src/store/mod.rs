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
//! Time and order: a transaction reads the clock only once it holds the locks that order it
//! against the transactions it conflicts with (the job's row — pgmq: the message's row, then the
//! job's —, the claimed outbox rows, the event's consumer row; SQLite's one write lock), and the
//! history is read back in clock order. So a transaction that waited for another records a later
//! time than everything that one recorded, and no record's time is moved to fit an order.
//! Here: the shared types, the `Store` and its history, counters and queries; one file a
//! concern beside: `intake.rs`, `lease.rs` (SQLite and PostgreSQL, which share their SQL but
//! for a lock clause), `pgmq.rs`, `fenced.rs`, `effects.rs`.
//! Does not: decide anything the application decides (retry delays, when to crash); it is told.

use crate::db::{Db, Row, Val};
use anyhow::{anyhow, bail, Result};
use durasim::model::retry::{classify, Decision, ErrorClass, ErrorKind, RetryPolicy};
use durasim::vocab::bugs::Bug;
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
    /// The bug switches on; the store reads `no_fencing` (queue writes do not check the fencing
    /// token), `no_consumer_dedupe` (the consumer applies every delivery) and `no_idempotency`
    /// (results are inserted without the key lookup: a second result per key).
    pub bugs: durasim::vocab::bugs::BugSet,
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

mod effects;
mod fenced;
mod intake;
mod lease;
mod pgmq;

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

    /// The store's clock for a transaction that writes under lease `l`, read once the
    /// transaction holds the job's row lock (pgmq: the message's row first, in the order pgmq's
    /// own `read` takes them, then the job's), so it is later than every time recorded by a
    /// transaction this one waited for. SQLite: `BEGIN IMMEDIATE` already holds the one lock.
    pub(super) fn locked_now(&mut self, l: &Lease) -> Result<i64> {
        if self.pgmq() {
            self.db.query(
                &format!("SELECT 1 FROM pgmq.q_{PGMQ_QUEUE} WHERE msg_id = $1 FOR UPDATE"),
                &[l.msg_id.into()],
            )?;
        }
        if self.pg() {
            self.db.query(
                "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE",
                &[l.job.into()],
            )?;
        }
        self.db.now_us()
    }

    /// The history in clock order (the order of conflicting transactions, see the file's
    /// header); records of one transaction share a time and keep their insertion order.
    pub fn history(&mut self) -> Result<Vec<(i64, String)>> {
        let rows = self
            .db
            .query("SELECT at_us, body FROM history ORDER BY at_us, seq", &[])?;
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

//! The pipeline's tables, in SQLite's and PostgreSQL's dialects.
//!
//! Owns: the DDL. `jobs` is the queue (for pgmq, only the application's own bookkeeping next to
//! pgmq's queue table); `results` has the idempotency key as its primary key (UNIQUE);
//! `outbox` rows are written in the same transaction as their result; `consumer_seen` is the
//! consumer's dedupe set; `history` is the store-side record every transaction appends to.
//! Does not: hold any logic (see `store`).

/// Tables common to all stores. `{BIGSERIAL}` and `{AUTO}` are filled per dialect.
const TABLES: &str = "
CREATE TABLE jobs (
    id BIGINT PRIMARY KEY,
    tenant TEXT NOT NULL,
    document TEXT NOT NULL,
    version BIGINT NOT NULL,
    key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    operation TEXT NOT NULL,
    content TEXT NOT NULL,
    invalid BIGINT NOT NULL,
    state TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    visible_us BIGINT NOT NULL,
    deadline_us BIGINT NOT NULL,
    lease_until_us BIGINT,
    fence BIGINT NOT NULL DEFAULT 0,
    attempt BIGINT NOT NULL DEFAULT 0,
    msg_id BIGINT
);
CREATE INDEX jobs_live ON jobs (state, visible_us);
CREATE TABLE results (
    key TEXT PRIMARY KEY,
    job BIGINT NOT NULL,
    payload TEXT NOT NULL,
    output BIGINT NOT NULL,
    event BIGINT
);
CREATE TABLE outbox (
    event BIGINT PRIMARY KEY,
    key TEXT NOT NULL,
    job BIGINT NOT NULL,
    output BIGINT NOT NULL,
    published_us BIGINT
);
CREATE TABLE deliveries (event BIGINT NOT NULL, send BIGINT NOT NULL, at_us BIGINT NOT NULL);
CREATE INDEX deliveries_event ON deliveries (event);
CREATE TABLE consumer_seen (event BIGINT PRIMARY KEY);
CREATE TABLE effects (event BIGINT NOT NULL, key TEXT NOT NULL, job BIGINT NOT NULL, output BIGINT NOT NULL);
CREATE TABLE reviews (event BIGINT PRIMARY KEY, key TEXT NOT NULL, job BIGINT NOT NULL, due_us BIGINT NOT NULL, done_us BIGINT);
CREATE TABLE dlq (job BIGINT PRIMARY KEY, reason TEXT NOT NULL, at_us BIGINT NOT NULL);
CREATE TABLE audit (old_job BIGINT NOT NULL, new_job BIGINT NOT NULL, operator TEXT NOT NULL, at_us BIGINT NOT NULL);
CREATE TABLE fired (idx BIGINT PRIMARY KEY);
CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO counters VALUES ('fence', 0), ('event', 0);
CREATE TABLE history (seq {AUTO}, at_us BIGINT NOT NULL, body TEXT NOT NULL);
";

/// SQLite: WAL (readers never block the one writer), a busy timeout instead of errors while
/// another process holds the write lock, and `synchronous = NORMAL` (durable at checkpoints;
/// process crashes, which is what the harness causes, lose nothing committed).
pub const SQLITE_PRAGMAS: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA busy_timeout = 10000;
";

pub fn sqlite() -> String {
    TABLES.replace("{AUTO}", "INTEGER PRIMARY KEY AUTOINCREMENT")
}

/// PostgreSQL: the run's start on the server's clock, sequences for fencing tokens and event
/// ids (a counter row would serialise every lease on one row lock).
pub fn postgres() -> String {
    TABLES.replace("{AUTO}", "BIGSERIAL PRIMARY KEY")
        + "
CREATE TABLE run (t0 TIMESTAMPTZ NOT NULL);
CREATE SEQUENCE fence_seq;
CREATE SEQUENCE event_seq;
CREATE INDEX outbox_pending ON outbox (event) WHERE published_us IS NULL;
"
}

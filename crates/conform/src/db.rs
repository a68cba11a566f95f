//! One database connection, SQLite or PostgreSQL, behind the few calls the pipeline makes.
//!
//! Owns: the dialect differences that are not business logic — placeholders (`$1` in the
//! pipeline's SQL, rewritten to `?1` for SQLite), how a write transaction begins (`BEGIN
//! IMMEDIATE` takes SQLite's single write lock at once; PostgreSQL locks rows as it goes), the
//! store's clock (see [`Db::now_us`]), and turning rows into plain values.
//! Does not: know any table. Transactions are explicit statements: `COMMIT` always travels as a
//! statement of its own, never in the same query string as the work, so a client killed before
//! sending it leaves an open transaction that the server rolls back.

use anyhow::{anyhow, Context, Result};

/// A value going into or coming out of a statement. Integers are 64-bit everywhere (PostgreSQL
/// columns are BIGINT), text is text.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    I(i64),
    T(String),
    Null,
}

impl Val {
    pub fn i(&self) -> i64 {
        match self {
            Val::I(x) => *x,
            other => panic!("expected an integer column, got {other:?}"),
        }
    }

    pub fn oi(&self) -> Option<i64> {
        match self {
            Val::I(x) => Some(*x),
            Val::Null => None,
            other => panic!("expected an integer or NULL column, got {other:?}"),
        }
    }

    pub fn t(&self) -> &str {
        match self {
            Val::T(s) => s,
            other => panic!("expected a text column, got {other:?}"),
        }
    }
}

impl From<i64> for Val {
    fn from(x: i64) -> Val {
        Val::I(x)
    }
}
impl From<u32> for Val {
    fn from(x: u32) -> Val {
        Val::I(x as i64)
    }
}
impl From<u64> for Val {
    fn from(x: u64) -> Val {
        Val::I(x as i64)
    }
}
impl From<&str> for Val {
    fn from(s: &str) -> Val {
        Val::T(s.to_string())
    }
}
impl From<String> for Val {
    fn from(s: String) -> Val {
        Val::T(s)
    }
}
impl From<Option<i64>> for Val {
    fn from(x: Option<i64>) -> Val {
        x.map_or(Val::Null, Val::I)
    }
}

pub type Row = Vec<Val>;

// One connection per process: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Db {
    /// `t0` is the run's start on CLOCK_MONOTONIC (µs), shared by every process of the run.
    Sqlite { conn: rusqlite::Connection, t0: i64 },
    /// Statements are prepared once per connection and kept (each `query` with a string would
    /// otherwise cost a second round trip to prepare it).
    Pg {
        client: postgres::Client,
        cache: std::collections::HashMap<String, postgres::Statement>,
    },
}

/// The run's monotonic clock in µs (CLOCK_MONOTONIC is one clock for every process on the
/// machine, so workers, relays and the harness agree).
pub fn mono_us() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC is always available on Linux");
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
}

/// `$1` → `?1`: SQLite numbers `?N` parameters exactly, whatever their order of appearance.
fn sqlite_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

fn pg_params(params: &[Val]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    params
        .iter()
        .map(|v| -> Box<dyn postgres::types::ToSql + Sync> {
            match v {
                Val::I(x) => Box::new(*x),
                Val::T(s) => Box::new(s.clone()),
                Val::Null => Box::new(None::<i64>),
            }
        })
        .collect()
}

fn pg_value(row: &postgres::Row, i: usize) -> Result<Val> {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    Ok(if ty == Type::INT8 {
        row.get::<_, Option<i64>>(i).map_or(Val::Null, Val::I)
    } else if ty == Type::INT4 {
        row.get::<_, Option<i32>>(i)
            .map_or(Val::Null, |x| Val::I(x as i64))
    } else if ty == Type::BOOL {
        row.get::<_, Option<bool>>(i)
            .map_or(Val::Null, |x| Val::I(x as i64))
    } else if ty == Type::TEXT || ty == Type::VARCHAR {
        row.get::<_, Option<String>>(i).map_or(Val::Null, Val::T)
    } else {
        return Err(anyhow!(
            "column {} has type {ty}, which the harness does not read",
            row.columns()[i].name()
        ));
    })
}

impl Db {
    pub fn is_sqlite(&self) -> bool {
        matches!(self, Db::Sqlite { .. })
    }

    /// Runs statements with no parameters and no rows (schema, BEGIN, COMMIT, ROLLBACK).
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite { conn, .. } => conn.execute_batch(sql).with_context(|| short(sql)),
            Db::Pg { client, .. } => client.batch_execute(sql).with_context(|| short(sql)),
        }
    }

    /// Begins a write transaction. SQLite: `BEGIN IMMEDIATE` takes the database's one write
    /// lock now (waiting up to the busy timeout), so the clock read next is in commit order.
    pub fn begin(&mut self) -> Result<()> {
        if self.is_sqlite() {
            self.batch("BEGIN IMMEDIATE")
        } else {
            self.batch("BEGIN")
        }
    }

    /// `COMMIT`, alone in its query string.
    pub fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    pub fn rollback(&mut self) -> Result<()> {
        self.batch("ROLLBACK")
    }

    /// Rows changed.
    pub fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        match self {
            Db::Sqlite { conn, .. } => {
                let sql = sqlite_placeholders(sql);
                let mut st = conn.prepare_cached(&sql).with_context(|| short(&sql))?;
                let n = st
                    .execute(rusqlite::params_from_iter(params.iter().map(sqlite_param)))
                    .with_context(|| short(&sql))?;
                Ok(n as u64)
            }
            Db::Pg { client, cache } => {
                let st = pg_statement(client, cache, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                client.execute(&st, &refs).with_context(|| short(sql))
            }
        }
    }

    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
        match self {
            Db::Sqlite { conn, .. } => {
                let sql = sqlite_placeholders(sql);
                let mut st = conn.prepare_cached(&sql).with_context(|| short(&sql))?;
                let n = st.column_count();
                let rows = st
                    .query_map(
                        rusqlite::params_from_iter(params.iter().map(sqlite_param)),
                        |r| {
                            (0..n)
                                .map(|i| {
                                    Ok(match r.get_ref(i)? {
                                        rusqlite::types::ValueRef::Null => Val::Null,
                                        rusqlite::types::ValueRef::Integer(x) => Val::I(x),
                                        rusqlite::types::ValueRef::Text(t) => {
                                            Val::T(String::from_utf8_lossy(t).into_owned())
                                        }
                                        rusqlite::types::ValueRef::Real(x) => Val::I(x as i64),
                                        rusqlite::types::ValueRef::Blob(_) => Val::Null,
                                    })
                                })
                                .collect::<rusqlite::Result<Row>>()
                        },
                    )
                    .with_context(|| short(&sql))?;
                rows.collect::<rusqlite::Result<Vec<Row>>>()
                    .with_context(|| short(&sql))
            }
            Db::Pg { client, cache } => {
                let st = pg_statement(client, cache, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                let rows = client.query(&st, &refs).with_context(|| short(sql))?;
                rows.iter()
                    .map(|r| (0..r.len()).map(|i| pg_value(r, i)).collect())
                    .collect()
            }
        }
    }

    pub fn query_opt(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The store's clock, µs since the run started. SQLite has no clock of its own that all
    /// processes share at µs resolution: the run's CLOCK_MONOTONIC, read inside the write lock.
    /// PostgreSQL: the server's `clock_timestamp()` against the start it recorded itself.
    pub fn now_us(&mut self) -> Result<i64> {
        match self {
            Db::Sqlite { t0, .. } => Ok(mono_us() - *t0),
            Db::Pg { .. } => {
                let r = self.query(
                    "SELECT (extract(epoch FROM clock_timestamp() - t0) * 1000000)::bigint FROM run",
                    &[],
                )?;
                Ok(r.first().ok_or_else(|| anyhow!("the run table is empty"))?[0].i())
            }
        }
    }
}

fn pg_statement(
    client: &mut postgres::Client,
    cache: &mut std::collections::HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement> {
    if let Some(st) = cache.get(sql) {
        return Ok(st.clone());
    }
    let st = client.prepare(sql).with_context(|| short(sql))?;
    cache.insert(sql.to_string(), st.clone());
    Ok(st)
}

impl Db {
    pub fn pg(client: postgres::Client) -> Db {
        Db::Pg {
            client,
            cache: Default::default(),
        }
    }
}

fn sqlite_param(v: &Val) -> rusqlite::types::Value {
    match v {
        Val::I(x) => rusqlite::types::Value::Integer(*x),
        Val::T(s) => rusqlite::types::Value::Text(s.clone()),
        Val::Null => rusqlite::types::Value::Null,
    }
}

fn short(sql: &str) -> String {
    let one: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = one.chars().take(120).collect();
    format!("statement failed: {cut}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_numbered_sqlite_parameters() {
        assert_eq!(
            sqlite_placeholders("SELECT $2, $1, '$x', $10"),
            "SELECT ?2, ?1, '$x', ?10"
        );
    }
}

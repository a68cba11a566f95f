//! Setting up the store for one run: a new database on a PostgreSQL server (a throwaway one when
//! no URL is given), dropped at the end; pgmq's install from the SQL the `pgmq` crate ships;
//! the schema, the pgmq queue and the run's clock origin.
//! Does not: choose the store (`args.rs`) or write any pipeline data (`crate::store`).

use crate::store::{Kind, Store};
use anyhow::{anyhow, Context, Result};

fn with_dbname(url: &str, db: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let host_end = head[scheme_end..]
        .find('/')
        .map_or(head.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &head[..host_end])
}

/// A PostgreSQL server for one run: its URL and, if we started it, the server itself.
pub(super) struct Pg {
    _server: Option<crate::server::Server>,
    admin: String,
    db: String,
}

impl Pg {
    pub(super) fn open(url: Option<&str>) -> Result<Pg> {
        let (server, admin) = match url {
            Some(u) => (None, u.to_string()),
            None => {
                let s = crate::server::Server::start()?;
                let u = format!(
                    "postgres://postgres@localhost/postgres?host={}",
                    s.dir().display()
                );
                (Some(s), u)
            }
        };
        let db = format!(
            "durasim_conform_{}_{}",
            std::process::id(),
            crate::db::mono_us() % 1_000_000_000
        );
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .with_context(|| format!("cannot connect to PostgreSQL at {admin}"))?;
        c.batch_execute(&format!("CREATE DATABASE {db}"))?;
        Ok(Pg {
            _server: server,
            admin,
            db,
        })
    }

    pub(super) fn url(&self) -> String {
        with_dbname(&self.admin, &self.db)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db));
        }
    }
}

/// pgmq's install script and version, as the `pgmq` crate ships them (see build.rs).
const PGMQ_SQL: &str = include_str!(concat!(env!("OUT_DIR"), "/pgmq.sql"));
const PGMQ_CONTROL: &str = include_str!(concat!(env!("OUT_DIR"), "/pgmq.control"));

/// The pgmq version the script installs (its control file's `default_version`).
fn pgmq_version() -> &'static str {
    PGMQ_CONTROL
        .lines()
        .find_map(|l| l.strip_prefix("default_version"))
        .and_then(|v| v.split('\'').nth(1))
        .unwrap_or("unknown")
}

/// Installs pgmq from the SQL the `pgmq` crate ships, in one transaction, as that crate's own
/// installer does on a fresh database (which also records the script in a bookkeeping table of
/// its own, `pgmq.__pgmq_migrations`, that nothing here reads).
pub(super) fn install_pgmq(url: &str) -> Result<()> {
    let mut c = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| anyhow!("pgmq: cannot connect: {e}"))?;
    let mut tx = c.transaction()?;
    tx.batch_execute(PGMQ_SQL)
        .map_err(|e| anyhow!("pgmq {}: install failed: {e}", pgmq_version()))?;
    tx.commit()?;
    Ok(())
}

pub(super) fn prepare(store: &mut Store, kind: Kind) -> Result<()> {
    if kind == Kind::Sqlite {
        store.db.batch(&crate::schema::sqlite())
    } else {
        store.db.batch(&crate::schema::postgres())?;
        if kind == Kind::Pgmq {
            store.db.batch(&format!(
                "SELECT pgmq.create('{}')",
                crate::store::PGMQ_QUEUE
            ))?;
        }
        store.db.batch("INSERT INTO run VALUES (clock_timestamp())")
    }
}

//! What every process of a run must know, written once by the harness as `spec.json` and read
//! by each worker and relay it spawns; and how a process opens the store.
//!
//! Owns: the run's settings after the command line (store, seed, bug switches, forced kills, the
//! kill mode,
//! the run's start on CLOCK_MONOTONIC) and the connection to the store.
//! Does not: decide anything.

use crate::db::Db;
use crate::kills::KillMode;
use crate::plan::ForcedKill;
use crate::store::{Kind, Store, StoreConfig};
use anyhow::{Context, Result};
use durasim::model::retry::RetryPolicy;
use durasim::scenario::Scenario;
use durasim::vocab::bugs::{Bug, BugSet};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    pub scenario_file: String,
    pub scenario_text: String,
    pub seed: u64,
    pub jobs: Option<u64>,
    pub kind: String,
    /// SQLite: the database file. PostgreSQL: a libpq connection string.
    pub target: String,
    pub t0_us: i64,
    pub bugs: BugSet,
    pub kills: Vec<String>,
    /// The lease the store grants (pgmq's visibility timeout is whole seconds).
    pub lease_ms: u64,
    /// Cooperative kills at announced points, or random ones from outside (`--kills`).
    #[serde(default)]
    pub kill_mode: KillMode,
    /// The random mode's mean time between kills of each process (`--kill-mean-ms`).
    #[serde(default)]
    pub kill_mean_ms: Option<u64>,
}

impl Spec {
    pub fn kind(&self) -> Kind {
        match self.kind.as_str() {
            "sqlite" => Kind::Sqlite,
            "postgres" => Kind::Postgres,
            _ => Kind::Pgmq,
        }
    }

    pub fn scenario(&self) -> Result<Scenario> {
        Scenario::parse(&self.scenario_file, &self.scenario_text)
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    pub fn bug(&self, bug: Bug) -> bool {
        self.bugs.contains(bug)
    }

    pub fn forced(&self) -> Vec<ForcedKill> {
        self.kills
            .iter()
            .filter_map(|k| ForcedKill::parse(k).ok())
            .collect()
    }

    pub fn store_config(&self, s: &Scenario) -> StoreConfig {
        let q = &s.queue;
        StoreConfig {
            kind: self.kind(),
            lease_ms: self.lease_ms,
            deadline_ms: q.deadline_ms,
            max_attempts: q.max_attempts,
            policy: RetryPolicy {
                attempts_max: q.max_attempts,
                backoff_base_ms: s.retry.backoff_base_ms,
                backoff_cap_ms: s.retry.backoff_cap_ms,
                jitter: s.retry.jitter,
                permanent_retried: false,
                bugs: self.bugs,
            },
            bugs: self.bugs,
        }
    }

    /// Opens one connection to the run's store.
    pub fn open(&self, s: &Scenario) -> Result<Store> {
        let db = match self.kind() {
            Kind::Sqlite => {
                let conn = rusqlite::Connection::open(&self.target)
                    .with_context(|| format!("cannot open SQLite database {}", self.target))?;
                conn.execute_batch(crate::schema::SQLITE_PRAGMAS)?;
                Db::Sqlite {
                    conn,
                    t0: self.t0_us,
                }
            }
            Kind::Postgres | Kind::Pgmq => Db::pg(
                postgres::Client::connect(&self.target, postgres::NoTls)
                    .with_context(|| format!("cannot connect to PostgreSQL ({})", self.target))?,
            ),
        };
        Ok(Store::new(db, self.store_config(s)))
    }
}

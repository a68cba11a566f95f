//! `durasim conform`'s command line: its flags and help, the `--store` forms, the bug switches
//! implemented against real code, and what a real run supports (with the clear refusal of what
//! it does not).
//! Does not: set up a store (`setup.rs`), run anything (`conform.rs`) or judge (`judge.rs`).

use crate::kills::KillMode;
use crate::store::Kind;
use anyhow::{anyhow, Result};
use clap::Parser;
use durasim::scenario::Scenario;
use durasim::shell::cli::BadInput;
use durasim::vocab::bugs::Bug;
use std::path::PathBuf;

// The examples and exit codes, shared with `durasim conform --help` when this program is missing.
use durasim::shell::cli::args::CONFORM_HELP;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "durasim conform",
    about = "Run a scenario against a real store (SQLite, PostgreSQL or pgmq) with real processes and real SIGKILLs, and judge the store's history with durasim's checker",
    after_help = CONFORM_HELP
)]
pub struct ConformArgs {
    /// The scenario file (scenarios/*.toml)
    pub scenario: PathBuf,
    /// sqlite:PATH (a new database file), postgres (a throwaway server), postgres://URL (a new
    /// database on that server, dropped afterwards), pgmq, or pgmq:postgres://URL
    #[arg(long)]
    pub store: String,
    /// Seed (default: the scenario's `seed`)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the scenario's arrivals.jobs
    #[arg(long)]
    pub jobs: Option<u64>,
    /// Turn a bug switch on (repeatable): no_fencing, tenantless_keys, naive_dual_write,
    /// no_consumer_dedupe, no_idempotency
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Force a kill: JOB:ATTEMPT:POINT (repeatable), e.g. 0:1:mid_commit
    #[arg(long = "kill", value_name = "JOB:ATTEMPT:POINT")]
    pub kills: Vec<String>,
    /// How processes are killed: cooperative (at a seeded point the process announces and
    /// blocks at) or random (SIGKILL at random moments drawn from the seed, no handshake: kills
    /// land anywhere, a COMMIT in flight included)
    #[arg(long = "kills", value_enum, value_name = "MODE", default_value_t = KillMode::Cooperative)]
    pub kill_mode: KillMode,
    /// With --kills random: the mean time between kills of each worker and relay process, in
    /// ms (default: from the scenario's crash and relay_crash rates)
    #[arg(long, value_name = "MS")]
    pub kill_mean_ms: Option<u64>,
    /// Output directory (default: reports/<scenario name>-conform-<store>/)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Give up after this many seconds of wall time (default 120)
    #[arg(long, default_value_t = 120)]
    pub time_limit_s: u64,
    /// Print only the verdict line
    #[arg(long)]
    pub quiet: bool,
}

/// The bug switches implemented against real code.
pub const REAL_BUGS: [Bug; 5] = [
    Bug::NoFencing,
    Bug::TenantlessKeys,
    Bug::NaiveDualWrite,
    Bug::NoConsumerDedupe,
    Bug::NoIdempotency,
];

pub(super) fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(BadInput(msg.into()))
}

/// Where the run's data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreArg {
    Sqlite(PathBuf),
    Postgres(Option<String>),
    Pgmq(Option<String>),
}

impl StoreArg {
    pub fn parse(s: &str) -> Result<StoreArg> {
        let url = |u: &str| u.starts_with("postgres://") || u.starts_with("postgresql://");
        Ok(match s {
            "postgres" | "postgresql" => StoreArg::Postgres(None),
            "pgmq" => StoreArg::Pgmq(None),
            u if url(u) => StoreArg::Postgres(Some(u.to_string())),
            _ => match s.split_once(':') {
                Some(("sqlite", path)) if !path.is_empty() => StoreArg::Sqlite(PathBuf::from(path)),
                Some(("pgmq", u)) if url(u) => StoreArg::Pgmq(Some(u.to_string())),
                _ => return Err(bad(format!("--store {}: allowed: sqlite:PATH, postgres, postgres://URL, pgmq, pgmq:postgres://URL", durasim::scenario::clip(s)))),
            },
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            StoreArg::Sqlite(_) => Kind::Sqlite,
            StoreArg::Postgres(_) => Kind::Postgres,
            StoreArg::Pgmq(_) => Kind::Pgmq,
        }
    }
}

/// What a real run cannot do, with the reason; `None` when the scenario runs.
pub fn unsupported(s: &Scenario) -> Option<String> {
    let why = if s.dlq.capacity.is_some() || s.dlq.reprocess_limit.is_some() {
        "[dlq] capacity / reprocess_limit: the real stores keep every DLQ entry and do not rate-limit reprocess (beyond the chapter; simulated only)"
    } else if s.outbox.retention_ms.is_some() {
        "[outbox] retention_ms: the real outbox keeps published rows (retention is simulated only)"
    } else if s.consumer.dedupe_window_ms.is_some() {
        "[consumer] dedupe_window_ms: the real consumer remembers every event id (the window is simulated only)"
    } else if s
        .script
        .iter()
        .any(|e| e.fault == durasim::scenario::FaultKind::MutatePayload)
    {
        "mutate_payload: a real queue row is not rewritten under a running job here (simulated only)"
    } else if let Some(h) = durasim::vocab::faults::Held::ALL.into_iter().find(|h| {
        !crate::child::PERFORMED.contains(h)
            && (s.faults.held(*h).rate > 0.0 || s.script.iter().any(|e| e.fault == h.spec().kind))
    }) {
        return Some(format!(
            "{}: the real worker does not perform this fault yet (crates/conform/src/child.rs; simulated only)",
            h.spec().name
        ));
    } else if let Some(st) = durasim::vocab::faults::Struck::ALL.into_iter().find(|st| {
        !crate::child::PERFORMED_STRUCK.contains(st)
            && (s.faults.struck(*st) > 0.0 || s.script.iter().any(|e| e.fault == st.spec().kind))
    }) {
        return Some(format!(
            "{}: the real relay and consumer do not perform this fault yet (crates/conform/src/child.rs; simulated only)",
            st.spec().name
        ));
    } else if s.arrivals.jobs + s.burst_jobs() + s.enqueue.len() as u64 > 20_000 {
        "more than 20,000 jobs: a real run takes real time (bench-size workloads are for the simulator)"
    } else {
        return None;
    };
    Some(why.to_string())
}

/// A queue profile the chosen store does not implement, with the reason; `None` when it does.
/// SQLite and PostgreSQL implement durasim's own queue; `pgmq` is pgmq's, and also runs
/// durasim's scenarios (that is how its missing fence shows). Any other profile would be
/// simulated under its semantics but run under the store's, and the two verdicts compared
/// would be of different queues.
pub fn unsupported_profile(s: &Scenario, kind: Kind) -> Option<String> {
    use durasim::profile::{Profile, Word};
    let p = s.queue_profile();
    match (p, kind) {
        (Profile::Durasim, _) | (Profile::Pgmq, Kind::Pgmq) => None,
        (Profile::Pgmq, _) => Some(format!(
            "[queue] profile = \"pgmq\": --store {} implements durasim's queue; the pgmq profile runs on --store pgmq",
            kind.name()
        )),
        _ => Some(format!(
            "[queue] profile = \"{}\": the real stores implement durasim's queue (sqlite, postgres) and pgmq's (pgmq); this profile is simulated only",
            p.name()
        )),
    }
}

//! Queue-semantics profiles: what a real queue does where exactly-once breaks, as data.
//!
//! Owns: the [`Profile`] names (`[queue] profile = "..."`), the resolved parameter set
//! [`Semantics`] a run uses, each profile's defaults with their sources (`systems/`, one file a
//! system, each value cited from docs/queues.md), and the pure mechanisms the profiles need
//! beyond durasim's queue: the per-operation write guard (`guard`), lease-end detection by
//! timer, sweeper, two-pass checker or worker liveness (`detection`), BullMQ's stall counter
//! (`stall`), the backoff formulas and jitter modes (`backoff`), time-based DLQ retention
//! (`retention`) and the enqueue-uniqueness modes (`unique`). Every mechanism is a plain function
//! or state machine that takes `now` and already-drawn chance.
//! Does not: read scenario files (see `scenario`), run anything (the kernel asks these
//! functions), or judge a history: the checker's invariants are the same under every profile, so
//! a profile that cannot keep them under a fault shows the violation.

pub mod backoff;
pub mod detection;
pub mod effective;
pub mod guard;
pub mod resolve;
pub mod retention;
pub mod stall;
pub mod systems;
pub mod unique;

use crate::base::ids::SimTime;
/// The parameters' word lists live in `vocab/queue_params.rs` (a history's header is spelled in
/// some of them); `profile::params` names them here too.
pub use crate::vocab::queue_params as params;
pub use effective::Effective;
pub use params::*;

/// A queue whose semantics a scenario can run on (`[queue] profile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// durasim's own queue, the chapter's: fenced writes, heartbeats, exact expiry.
    #[default]
    Durasim,
    Sqs,
    Bullmq,
    River,
    Oban,
    GraphileWorker,
    Pgmq,
    PgBoss,
    Procrastinate,
    Sidekiq,
    Temporal,
}

impl Word for Profile {
    const ALL: &'static [Self] = &[
        Profile::Durasim,
        Profile::Sqs,
        Profile::Bullmq,
        Profile::River,
        Profile::Oban,
        Profile::GraphileWorker,
        Profile::Pgmq,
        Profile::PgBoss,
        Profile::Procrastinate,
        Profile::Sidekiq,
        Profile::Temporal,
    ];
    fn name(self) -> &'static str {
        match self {
            Profile::Durasim => "durasim",
            Profile::Sqs => "sqs",
            Profile::Bullmq => "bullmq",
            Profile::River => "river",
            Profile::Oban => "oban",
            Profile::GraphileWorker => "graphile-worker",
            Profile::Pgmq => "pgmq",
            Profile::PgBoss => "pg-boss",
            Profile::Procrastinate => "procrastinate",
            Profile::Sidekiq => "sidekiq",
            Profile::Temporal => "temporal",
        }
    }
}

impl Profile {
    /// The system's defaults, before a scenario's overrides.
    pub fn defaults(self) -> Semantics {
        use systems::*;
        match self {
            Profile::Durasim => durasim::semantics(),
            Profile::Sqs => sqs::semantics(),
            Profile::Bullmq => bullmq::semantics(),
            Profile::River => river::semantics(),
            Profile::Oban => oban::semantics(),
            Profile::GraphileWorker => graphile_worker::semantics(),
            Profile::Pgmq => pgmq::semantics(),
            Profile::PgBoss => pg_boss::semantics(),
            Profile::Procrastinate => procrastinate::semantics(),
            Profile::Sidekiq => sidekiq::semantics(),
            Profile::Temporal => temporal::semantics(),
        }
    }
}

/// Everything a profile sets, resolved: the system's defaults with the scenario's overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Semantics {
    pub profile: Profile,
    /// The store-side lease, or for a queue without one the rescuer's horizon from the
    /// attempt's start. `None`: the system has no lease at all (Sidekiq, procrastinate).
    pub lease_ms: Option<SimTime>,
    pub heartbeat: Heartbeat,
    pub heartbeat_ms: SimTime,
    /// Renewals are refused past `leasedAt + cap` (SQS: 12 h from the receive).
    pub lease_cap_ms: Option<SimTime>,
    pub stale: StaleWrites,
    /// The lease is a lock with a TTL: once it lapses, even its holder's writes are refused,
    /// before any rescue (BullMQ: `removeLock` returns −2 for a missing lock).
    pub lock_ttl: bool,
    /// How long a finished job's row stays where a by-id write can still find it (`None`: for
    /// ever). A `by_id` write to a finished job whose row is gone does nothing.
    pub finished_rows_kept_ms: Option<SimTime>,
    pub expiry: Expiry,
    pub on_expiry: OnExpiry,
    /// BullMQ's `maxStalledCount` (`on_expiry = "stall"`).
    pub stall_limit: u32,
    pub rescue_write: RescueWrite,
    /// Time between a sweeper's read and its write (`rescue_write = "by_id"`).
    pub rescue_gap_ms: SimTime,
    pub fetch: Fetch,
    /// `None`: unlimited.
    pub max_attempts: Option<u32>,
    pub attempts_count: AttemptsCount,
    pub permanent_error: PermanentError,
    pub backoff: Backoff,
    pub dlq: Dlq,
    pub unique: Unique,
    /// The queue refuses to lease a job past `createdAt + deadline` (durasim; Temporal's
    /// Schedule-To-Close). `None`: no deadline.
    pub deadline_ms: Option<SimTime>,
    /// Where the values come from: docs/queues.md's section and the code or page it cites.
    pub sources: &'static str,
}

impl Semantics {
    /// A sweeper reads a job and writes by id later, whatever the job became
    /// (riverqueue/river#1302): its rescue can land over a holder's retry, so a lease can follow
    /// at a visible time no record states (the swarm's `rescue_race` hazard).
    pub fn rescue_races(&self) -> bool {
        self.rescue_write == RescueWrite::ById && self.rescue_gap_ms > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eleven_profiles_each_named_once_and_durasim_is_the_default() {
        assert_eq!(Profile::ALL.len(), 11);
        assert_eq!(Profile::default(), Profile::Durasim);
        for p in Profile::ALL {
            assert_eq!(Profile::parse(p.name()), Some(*p));
            assert_eq!(p.defaults().profile, *p, "{} names itself", p.name());
            assert!(!p.defaults().sources.is_empty());
        }
    }

    /// The profiles differ exactly where exactly-once breaks: no two share every mechanism.
    #[test]
    fn no_two_profiles_are_the_same_queue() {
        for a in Profile::ALL {
            for b in Profile::ALL {
                if a < b {
                    let (x, y) = (a.defaults(), b.defaults());
                    assert_ne!(
                        Semantics {
                            profile: y.profile,
                            sources: y.sources,
                            ..x
                        },
                        y,
                        "{} and {}",
                        a.name(),
                        b.name()
                    );
                }
            }
        }
    }
}

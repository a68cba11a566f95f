//! What a run of a scenario may cost, from the scenario alone: an upper bound on the kernel's
//! events, the depth samples (the rows of `depth.csv` and `outbox.csv`, held in memory for the
//! whole run), the CSV rows and the memory, and the budget it is held to.
//!
//! Owns: [`Cost`] (the estimate, term by term, with the fields that multiply in each) and
//! [`Budget`] (`--max-events`; the samples' budget is a hundredth of it).
//! Why: every field has a documented range, but their product need not: `time_limit_ms = 10^12`
//! with a relay tick every 50 ms is 2·10^10 events, `depth_sample_ms = 1` a sample a virtual
//! millisecond held until the run ends. The formula is in docs/limits.md.
//! Does not: run anything; the kernel stops a run that passes the budget anyway
//! (`RunRequest::max_events`).

use super::{DepthSampling, Scenario};
use crate::profile::effective::NEVER_MS;

/// Kernel events an attempt takes besides its heartbeats: its visibility, lease check, the
/// worker's wake-ups, the sweeper's rescue, the review and the DLQ's expiry, with room to spare.
pub const EVENTS_PER_ATTEMPT: u64 = 16;
/// Attempts a job is counted for when `max_attempts = "unlimited"` (the highest finite value;
/// the kernel's guard stops a run that takes more).
pub const UNLIMITED_ATTEMPTS: u64 = 1000;
/// Bytes a job holds for the whole run (its queue row, key index, checker records, outbox row
/// and metrics; docs/memory-layout.md has about 80, this leaves room).
pub const BYTES_PER_JOB: u64 = 160;
/// Bytes a depth sample holds (the depth series and the outbox series, vectors that double).
pub const BYTES_PER_SAMPLE: u64 = 80;
/// Bytes a worker holds (its slot and its three random streams).
pub const BYTES_PER_WORKER: u64 = 512;
/// The default `--max-events`.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;
/// The samples' budget is the events' divided by this (10,000,000 by default: 800 MB).
pub const EVENTS_PER_SAMPLE_BUDGET: u64 = 100;

/// One term of the estimate: how many, and the formula in the scenario's own fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub what: &'static str,
    pub count: u64,
    /// The fields that multiply, with their values (`run.time_limit_ms 86400000 / relay.interval_ms 50`).
    pub formula: String,
    /// The field a refusal points at (its line in the file).
    pub field: &'static str,
}

/// The upper bound on a run's cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cost {
    /// Relay ticks, depth samples, heartbeats, the jobs' attempts, timed entries.
    pub terms: Vec<Term>,
    /// Their sum: the kernel's events.
    pub events: u64,
    /// Depth samples (each a row of `depth.csv` and of `outbox.csv`).
    pub samples: u64,
    /// Rows of every CSV file (`jobs.csv` and `attempts.csv` included; `--no-rows` skips them).
    pub csv_rows: u64,
    /// Bytes held for the whole run.
    pub memory_bytes: u64,
}

/// What a run may cost (`--max-events`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub max_events: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

impl Budget {
    pub fn max_samples(&self) -> u64 {
        self.max_events / EVENTS_PER_SAMPLE_BUDGET
    }
}

fn per(horizon: u64, period: u64) -> u64 {
    horizon / period.max(1) + 1
}

impl Scenario {
    /// The bound on a run's cost, with `jobs` (`--jobs`) in place of `arrivals.jobs` when given.
    pub fn cost(&self, jobs: Option<u64>) -> Cost {
        let t = self.run.time_limit_ms;
        let sem = self.semantics();
        let eff = crate::profile::Effective::of(&sem);
        let j = self.run_jobs(jobs);
        let workers = self.workers.count as u64;
        let attempts = match eff.attempts_max {
            u32::MAX => UNLIMITED_ATTEMPTS,
            n => n.max(1) as u64,
        };
        let mut terms = Vec::new();
        let relay_period = self
            .relay
            .interval_ms
            .min(self.relay.restart_ms.unwrap_or(u64::MAX));
        terms.push(Term {
            what: "relay ticks",
            count: per(t, relay_period),
            formula: format!("run.time_limit_ms {t} / relay.interval_ms {relay_period}"),
            field: "relay.interval_ms",
        });
        let attempts_total = j.saturating_mul(attempts);
        let (samples, sample_formula, sample_field) = match self.metrics.depth_sample {
            DepthSampling::Interval => (
                per(t, self.metrics.depth_sample_ms),
                format!(
                    "run.time_limit_ms {t} / metrics.depth_sample_ms {}",
                    self.metrics.depth_sample_ms
                ),
                "metrics.depth_sample_ms",
            ),
            DepthSampling::PerLease => (
                attempts_total,
                format!("jobs {j} x queue.max_attempts {attempts} (one a lease)"),
                "metrics.depth_sample",
            ),
        };
        terms.push(Term {
            what: "depth samples",
            count: samples,
            formula: sample_formula,
            field: sample_field,
        });
        if eff.heartbeat_ms < NEVER_MS {
            let hb = eff.heartbeat_ms.max(1);
            let extraction = self.stages.inference_ms.max_possible().unwrap_or(t).min(t);
            let by_workers = workers.min(j).saturating_mul(per(t, hb));
            let by_attempts = attempts_total.saturating_mul(extraction / hb + 1);
            let (count, formula) = if by_workers <= by_attempts {
                (
                    by_workers,
                    format!(
                        "min(workers.count {workers}, jobs {j}) x run.time_limit_ms {t} / queue.heartbeat_ms {hb}"
                    ),
                )
            } else {
                (
                    by_attempts,
                    format!(
                        "jobs {j} x queue.max_attempts {attempts} x stages.inference_ms's largest {extraction} / queue.heartbeat_ms {hb}"
                    ),
                )
            };
            terms.push(Term {
                what: "heartbeats",
                count,
                formula,
                field: "queue.heartbeat_ms",
            });
        }
        terms.push(Term {
            what: "attempts' events",
            count: attempts_total.saturating_mul(EVENTS_PER_ATTEMPT),
            formula: format!("jobs {j} x queue.max_attempts {attempts} x {EVENTS_PER_ATTEMPT}"),
            field: "arrivals.jobs",
        });
        let operator: u64 = self.operator.iter().map(|o| o.repeat as u64 + 1).sum();
        terms.push(Term {
            what: "timed entries",
            count: operator + self.script.len() as u64 + self.burst.len() as u64,
            formula: "operator actions and their repeats, [[script]], [[burst]]".to_string(),
            field: "operator",
        });
        let events = terms
            .iter()
            .fold(0u64, |sum, term| sum.saturating_add(term.count));
        let csv_rows = samples
            .saturating_mul(2)
            .saturating_add(j)
            .saturating_add(attempts_total);
        let memory_bytes = j
            .saturating_mul(BYTES_PER_JOB)
            .saturating_add(samples.saturating_mul(BYTES_PER_SAMPLE))
            .saturating_add(workers * BYTES_PER_WORKER);
        Cost {
            terms,
            events,
            samples,
            csv_rows,
            memory_bytes,
        }
    }
}

impl Cost {
    /// Why a run would pass `budget`, naming the fields that multiply and the bound; `None`
    /// within it. Returns the field to point at and the message.
    pub fn refusal(&self, budget: Budget) -> Option<(&'static str, String)> {
        if self.samples > budget.max_samples() {
            let term = &self.terms[1];
            return Some((
                term.field,
                format!(
                    "a run could take {} depth samples ({}), over the budget of {} (a hundredth of \
                     --max-events {}): each is held until the run ends and written to depth.csv \
                     and outbox.csv; sample less often, shorten the run, or raise --max-events",
                    term.count,
                    term.formula,
                    budget.max_samples(),
                    budget.max_events
                ),
            ));
        }
        if self.events > budget.max_events {
            let term = self
                .terms
                .iter()
                .max_by_key(|t| t.count)
                .expect("a cost has terms");
            return Some((
                term.field,
                format!(
                    "a run could take {} kernel events, over the budget of --max-events {}: the \
                     most are {} {} ({}); shorten run.time_limit_ms, lengthen the period, or \
                     raise --max-events",
                    self.events, budget.max_events, term.count, term.what, term.formula
                ),
            ));
        }
        None
    }

    /// The estimate, a line a term, for `check --verbose`.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .terms
            .iter()
            .map(|t| format!("{:>16} {} ({})", t.count, t.what, t.formula))
            .collect();
        out.push(format!("{:>16} kernel events at most", self.events));
        out.push(format!("{:>16} CSV rows at most", self.csv_rows));
        out.push(format!(
            "{:>16} bytes held at most (jobs x {BYTES_PER_JOB} + samples x {BYTES_PER_SAMPLE} + workers x {BYTES_PER_WORKER})",
            self.memory_bytes
        ));
        out
    }
}

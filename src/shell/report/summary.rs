//! `summary.json`: a run's summary as data.
//!
//! Owns: the summary's shape, building it from a run's report, the verdicts as `summary.json`
//! and the verdict block show them, and what `replay` reads back from it.
//! Does not: compute anything new (it formats what the run, the checker and the metrics found)
//! or write a file (`run_dir` does).

use crate::check::{CheckReport, Invariant, Kind, Violation};
use crate::history::to_json_line;
use crate::observe::metrics::{DepthStats, OutboxRows, RetryWaves, Stats};
use crate::run::{RunReport, Unmet};
use crate::vocab::counters::{Counter, Group, Tally};
use crate::vocab::faults::HeldCounts;
use crate::vocab::key::KeyNames;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencySummary {
    pub queue_wait_ms: Stats,
    /// The share of attempts whose queueWaitMs is above 0 (rounded to 4 decimals).
    pub queue_waited_share: f64,
    pub inference_ms: Stats,
    pub review_wait_ms: Stats,
    pub job_age_ms: Stats,
    pub queue_depth: DepthStats,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ViolationSummary {
    pub at_ms: u64,
    pub job: Option<u32>,
    pub key: Option<String>,
    pub message: String,
    pub evidence: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantSummary {
    pub name: &'static str,
    pub kind: Kind,
    pub holds: bool,
    pub violations: u64,
    pub first_violation: Option<ViolationSummary>,
}

/// One tenant's figures: where a noisy tenant's burst shows as the others' waiting.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantSummary {
    pub tenant: String,
    pub enqueued: u64,
    pub acked: u64,
    pub dead_lettered: u64,
    pub cancelled: u64,
    pub queue_wait_ms: Stats,
    pub job_age_ms: Stats,
}

/// `summary.json`'s counts: an object per [`Group`] of counters (`jobs`, `effects`, ...; the
/// top-level ones at the top level), in [`Group::ALL`]'s order, each holding its counters in the
/// table's order (`vocab/counters.rs`) and then its other figures: the held faults' counts in
/// `crashes`, the bytes in `outbox`, the waves in `retries`.
#[derive(Clone, Debug)]
pub struct SummaryCounts {
    pub tally: Tally,
    pub held: HeldCounts,
    pub outbox: OutboxRows,
    pub retries: RetryWaves,
}

impl SummaryCounts {
    pub fn get(&self, c: Counter) -> u64 {
        self.tally.get(c)
    }
}

/// One group's counters, as map entries.
struct GroupCounts<'a>(&'a Tally, Group);

impl Serialize for GroupCounts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (c, key) in Counter::of_group(self.1) {
            map.serialize_entry(key, &self.0.get(c))?;
        }
        map.end()
    }
}

/// A group's object: its counters, then its other figures.
#[derive(Serialize)]
struct GroupObject<'a, R: Serialize> {
    #[serde(flatten)]
    counts: GroupCounts<'a>,
    #[serde(flatten)]
    rest: &'a R,
}

impl Serialize for SummaryCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for group in Group::ALL {
            let counts = GroupCounts(&self.tally, group);
            match (group.key(), group) {
                (None, _) => {
                    for (c, key) in Counter::of_group(group) {
                        map.serialize_entry(key, &self.tally.get(c))?;
                    }
                }
                (Some(key), Group::Crashes) => {
                    let rest = &self.held;
                    map.serialize_entry(key, &GroupObject { counts, rest })?;
                }
                (Some(key), Group::Outbox) => {
                    let rest = &self.outbox;
                    map.serialize_entry(key, &GroupObject { counts, rest })?;
                }
                (Some(key), Group::Retries) => {
                    let rest = &self.retries;
                    map.serialize_entry(key, &GroupObject { counts, rest })?;
                }
                (Some(key), _) => map.serialize_entry(key, &counts)?,
            }
        }
        map.end()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct UnmetSummary {
    pub field: String,
    pub expected: String,
    pub actual: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub scenario: String,
    pub scenario_file: String,
    /// blake3 of the scenario file's bytes: identifies exactly what produced this run.
    pub scenario_digest: String,
    pub durasim_version: &'static str,
    pub seed: u64,
    pub jobs_override: Option<u64>,
    pub bugs: Vec<&'static str>,
    pub trace_hash: String,
    pub virtual_time_ms: u64,
    pub events: u64,
    pub kernel_events: u64,
    pub quiescent: bool,
    /// `jobs`, `effects`, `leases`, `crashes`, `dlq`, the reprocess counts, `outbox`, `retries`.
    #[serde(flatten)]
    pub counts: SummaryCounts,
    pub attempts: u64,
    pub metrics: LatencySummary,
    pub tenants: Vec<TenantSummary>,
    pub invariants: Vec<InvariantSummary>,
    pub sometimes: BTreeMap<&'static str, u64>,
    /// Which coverage probes the run reached, and how often (`vocab::probes`); absent for a
    /// history `verify` judged (no model ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeSummary>,
    pub expectations_met: bool,
    pub unmet_expectations: Vec<UnmetSummary>,
    pub reproduce: String,
    /// With programs in the roles (`--worker`, `--relay`, `--consumer`): each role's command,
    /// or `durasim` for durasim's own program. Absent for the kernel's own roles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<BTreeMap<&'static str, String>>,
    /// Timing fields: the only ones that differ between two runs of the same seed.
    pub wall_s: f64,
    pub events_per_wall_s: f64,
    pub sim_to_wall_ratio: f64,
}

/// A run's coverage probes: how many of them it reached, and every probe's count by name.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeSummary {
    pub reached: usize,
    pub total: usize,
    pub counts: crate::vocab::probes::Probes,
}

impl ProbeSummary {
    pub fn of(probes: &crate::vocab::probes::Probes) -> ProbeSummary {
        ProbeSummary {
            reached: probes.reached(),
            total: crate::vocab::probes::PROBE_COUNT,
            counts: probes.clone(),
        }
    }
}

/// The fields `replay` needs back from a summary.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayInfo {
    pub scenario_digest: String,
    pub seed: u64,
    pub jobs_override: Option<u64>,
    pub bugs: Vec<String>,
    pub trace_hash: String,
}

pub fn violation_summary(v: &Violation, names: &KeyNames) -> ViolationSummary {
    ViolationSummary {
        at_ms: v.at,
        job: v.job.map(|j| j.0),
        key: v.key.map(|k| names.key(&k)),
        message: v.message.clone(),
        evidence: v
            .evidence
            .iter()
            .map(|r| serde_json::from_str(&to_json_line(r, names)).expect("json"))
            .collect(),
    }
}

/// What produced a run: enough to identify and reproduce it.
pub struct RunIdentity<'a> {
    pub scenario_name: &'a str,
    pub scenario_file: &'a str,
    pub scenario_text: &'a str,
    pub jobs_override: Option<u64>,
    pub bugs: Vec<&'static str>,
    pub seed: u64,
    /// The command that re-runs it.
    pub reproduce: String,
    /// With programs in the roles (`--worker` ...): each role's command, or `durasim`.
    pub roles: Option<Vec<(&'static str, String)>>,
}

/// Builds the summary of a run.
pub fn summarize(report: &RunReport, unmet: &[Unmet], id: RunIdentity<'_>) -> Summary {
    let names = &report.outcome.names;
    let m = &report.metrics;
    let wall = report.wall_s.max(1e-9);
    Summary {
        scenario: id.scenario_name.to_string(),
        scenario_file: id.scenario_file.to_string(),
        scenario_digest: blake3::hash(id.scenario_text.as_bytes())
            .to_hex()
            .to_string(),
        durasim_version: env!("CARGO_PKG_VERSION"),
        seed: id.seed,
        jobs_override: id.jobs_override,
        bugs: id.bugs,
        trace_hash: crate::history::TraceHash::hex(report.outcome.trace_hash),
        virtual_time_ms: report.outcome.virtual_time_ms,
        events: report.outcome.records,
        kernel_events: report.outcome.heap_events,
        quiescent: report.outcome.quiescent,
        counts: SummaryCounts {
            tally: m.counts,
            held: m.held,
            outbox: m.outbox.clone(),
            retries: m.retries.clone(),
        },
        attempts: m.attempts(),
        metrics: LatencySummary {
            queue_wait_ms: m.queue_wait.stats(),
            queue_waited_share: (m.queue_wait.share_above(0) * 1e4).round() / 1e4,
            inference_ms: m.inference.stats(),
            review_wait_ms: m.review_wait.stats(),
            job_age_ms: m.job_age.stats(),
            queue_depth: m.depth_stats(),
        },
        tenants: m
            .tenants
            .iter()
            .enumerate()
            .filter(|(_, t)| t.enqueued > 0)
            .map(|(i, t)| TenantSummary {
                tenant: names
                    .tenants
                    .name(crate::base::ids::TenantId(i as u16))
                    .to_string(),
                enqueued: t.enqueued,
                acked: t.acked,
                dead_lettered: t.dead_lettered,
                cancelled: t.cancelled,
                queue_wait_ms: t.queue_wait.stats(),
                job_age_ms: t.job_age.stats(),
            })
            .collect(),
        invariants: invariant_summaries(&report.check, names),
        sometimes: report
            .check
            .sometimes
            .iter()
            .map(|(s, n)| (s.name(), *n))
            .collect(),
        probes: report.outcome.probes.as_ref().map(ProbeSummary::of),
        expectations_met: unmet.is_empty(),
        unmet_expectations: unmet
            .iter()
            .map(|u| UnmetSummary {
                field: u.field.clone(),
                expected: u.expected.clone(),
                actual: u.actual.clone(),
            })
            .collect(),
        reproduce: id.reproduce,
        roles: id.roles.map(|r| r.into_iter().collect()),
        wall_s: (report.wall_s * 1e6).round() / 1e6,
        events_per_wall_s: (report.outcome.records as f64 / wall).round(),
        sim_to_wall_ratio: (report.outcome.virtual_time_ms as f64 / 1000.0 / wall).round(),
    }
}

/// Every invariant's verdict, in `Invariant::ALL` order, as `summary.json` and the verdict block
/// show it.
pub fn invariant_summaries(check: &CheckReport, names: &KeyNames) -> Vec<InvariantSummary> {
    Invariant::ALL
        .iter()
        .map(|i| {
            let v = check.verdict(*i);
            InvariantSummary {
                name: i.name(),
                kind: i.kind(),
                holds: v.count == 0,
                violations: v.count,
                first_violation: v.first.as_ref().map(|f| violation_summary(f, names)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `summary.json`'s counts keep their shape whatever order the counters' table lists them
    /// in for `[expect]`: each object's keys, in order (what readers of the file see).
    #[test]
    fn the_counts_keep_summary_jsons_shape() {
        let counts = SummaryCounts {
            tally: Tally::default(),
            held: HeldCounts::default(),
            outbox: OutboxRows::default(),
            retries: RetryWaves::default(),
        };
        let json = serde_json::to_string(&counts).unwrap();
        let keys: Vec<&str> = json
            .split('"')
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[1].starts_with(':'))
            .map(|w| w[0])
            .collect();
        let expected = "jobs enqueued acked deadLettered cancelled unfinished enqueueDeduped \
            enqueueConflicts effects extractCalls resultsCommitted dedupedCommits \
            payloadConflicts outboxEvents published republished consumerApplied \
            consumerDuplicates reviewsDone leases granted expired heartbeats staleRejections \
            ackRejections maxAttemptsSeen crashes worker relay consumer stalls pauses slowHeartbeats \
            dlq permanent_error max_attempts_exceeded other evicted size_max reprocessed \
            reprocessRefused reprocessRateLimited outbox pruned rowsMax rowsFinal bytesPerRow \
            bytesMax retries total peakPerS peakSecond peakRatePerS100ms outageFromMs \
            recoveryAtMs quietWindowsInOutage depthAtRecovery depthMaxAfterRecovery drainedAtMs";
        assert_eq!(keys.join(" "), expected);
    }
}

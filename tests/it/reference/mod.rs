//! The reference checker: a plain restatement of every rule of docs/checker-rules.md (the
//! specification the real checker implements), that the real, packed, streaming checker must
//! agree with, invariant by invariant and first violation by first violation (issue 27).
//!
//! Owns: the executable specification and the agreement tests. [`judge`] reads a history (the
//! reader's `Record`s, the header first, and the reader's names) and returns a [`RefReport`]:
//! per invariant ([`Inv`], the specification's 28, by name) a count and the first violation (the
//! index of the record it was raised at, its time, job and key), the `sometimes` counts and the
//! figures `summary.json` reports. The facts are ordinary maps (`facts.rs`, their one writer);
//! each invariant family reads them in a file of its own (`leases.rs`, `policy.rs`,
//! `effects.rs`, `chain.rs`, `dlq.rs`, `depth.rs`, `figures.rs`) before the record is applied:
//! every rule judges a record against the facts as the records before it left them.
//! `agree.rs` compares a reference report with the real `CheckReport`; `scenarios.rs`,
//! `chaos.rs` and `generated.rs` are the agreement tests (docs/testing.md, "The reference
//! checker", says how to run the full counts).
//!
//! Shares no code with `durasim::check`: it imports from there only the output names it compares
//! (`Invariant`, `Sometimes`, `CheckReport`); the backoff formulas, the error classes, the payload
//! hash and the depth are restated here. Clarity over speed: no packing, no fast paths.
//! Does not: read files (the tests hand it records read by `durasim::history::reader`).

mod agree;
mod chain;
mod chaos;
mod depth;
mod dlq;
mod effects;
mod facts;
mod figures;
mod generated;
mod late_dead_letter;
mod leases;
mod policy;
mod refiled_dead_letter;
mod scenarios;
mod v2;

pub use agree::{assert_agree, disagreements};
pub use figures::RefStats;

use durasim::base::ids::{JobId, SimTime};
use durasim::check::Sometimes;
use durasim::history::{Event, Record};
use durasim::observe::metrics::Metrics;
use durasim::vocab::counters::{Counter, Tally};
use durasim::vocab::faults::HeldCounts;
use durasim::vocab::key::{IdempotencyKey, KeyNames};
use facts::Facts;
use std::collections::BTreeMap;

/// The invariants of docs/checker-rules.md, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Inv {
    SingleResultPerKey,
    EventPerResult,
    NoDuplicateEffect,
    EveryResultDelivered,
    FencedWrites,
    SingleLiveLease,
    AttemptsBounded,
    DeadlineRespected,
    TerminalOnce,
    TenantIsolation,
    RedactedDlq,
    AuditedReprocess,
    PayloadConflictRejected,
    FirstResultWins,
    NoSilentDrop,
    FencingTokenIncreases,
    BackoffRespected,
    RetryPolicyFollowed,
    AckedWithResult,
    DlqBounded,
    ReprocessJustified,
    DepthMatchesHistory,
    RecordedValuesMatch,
    SummaryMatchesHistory,
    DeliveryChain,
    FencesIssued,
    RejectionJustified,
    LeaseEndDetected,
}

impl Inv {
    pub const ALL: [Inv; 28] = [
        Inv::SingleResultPerKey,
        Inv::EventPerResult,
        Inv::NoDuplicateEffect,
        Inv::EveryResultDelivered,
        Inv::FencedWrites,
        Inv::SingleLiveLease,
        Inv::AttemptsBounded,
        Inv::DeadlineRespected,
        Inv::TerminalOnce,
        Inv::TenantIsolation,
        Inv::RedactedDlq,
        Inv::AuditedReprocess,
        Inv::PayloadConflictRejected,
        Inv::FirstResultWins,
        Inv::NoSilentDrop,
        Inv::FencingTokenIncreases,
        Inv::BackoffRespected,
        Inv::RetryPolicyFollowed,
        Inv::AckedWithResult,
        Inv::DlqBounded,
        Inv::ReprocessJustified,
        Inv::DepthMatchesHistory,
        Inv::RecordedValuesMatch,
        Inv::SummaryMatchesHistory,
        Inv::DeliveryChain,
        Inv::FencesIssued,
        Inv::RejectionJustified,
        Inv::LeaseEndDetected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Inv::SingleResultPerKey => "single_result_per_key",
            Inv::EventPerResult => "event_per_result",
            Inv::NoDuplicateEffect => "no_duplicate_effect",
            Inv::EveryResultDelivered => "every_result_delivered",
            Inv::FencedWrites => "fenced_writes",
            Inv::SingleLiveLease => "single_live_lease",
            Inv::AttemptsBounded => "attempts_bounded",
            Inv::DeadlineRespected => "deadline_respected",
            Inv::TerminalOnce => "terminal_once",
            Inv::TenantIsolation => "tenant_isolation",
            Inv::RedactedDlq => "redacted_dlq",
            Inv::AuditedReprocess => "audited_reprocess",
            Inv::PayloadConflictRejected => "payload_conflict_rejected",
            Inv::FirstResultWins => "first_result_wins",
            Inv::NoSilentDrop => "no_silent_drop",
            Inv::FencingTokenIncreases => "fencing_token_increases",
            Inv::BackoffRespected => "backoff_respected",
            Inv::RetryPolicyFollowed => "retry_policy_followed",
            Inv::AckedWithResult => "acked_with_result",
            Inv::DlqBounded => "dlq_bounded",
            Inv::ReprocessJustified => "reprocess_justified",
            Inv::DepthMatchesHistory => "depth_matches_history",
            Inv::RecordedValuesMatch => "recorded_values_match",
            Inv::SummaryMatchesHistory => "summary_matches_history",
            Inv::DeliveryChain => "delivery_chain",
            Inv::FencesIssued => "fences_issued",
            Inv::RejectionJustified => "rejection_justified",
            Inv::LeaseEndDetected => "lease_end_detected",
        }
    }

    pub fn parse(name: &str) -> Option<Inv> {
        Inv::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// One violation as the reference finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefViolation {
    pub at: SimTime,
    pub job: Option<JobId>,
    pub key: Option<IdempotencyKey>,
    /// The index (in the records judged, the header being 0) of the record it was raised at
    /// (`run_ended`'s for an eventually rule).
    pub record: usize,
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefVerdict {
    pub count: u64,
    pub first: Option<RefViolation>,
}

/// The reference's conclusion on one history.
#[derive(Clone, Debug, Default)]
pub struct RefReport {
    pub verdicts: BTreeMap<Inv, RefVerdict>,
    pub sometimes: BTreeMap<Sometimes, u64>,
    /// Every figure of `summary.json` the history determines.
    pub figures: BTreeMap<Counter, u64>,
    pub held: HeldCounts,
    /// queueWaitMs, inferenceMs and reviewWaitMs, recomputed from the history.
    pub distributions: [RefStats; 3],
}

/// What a run (or `verify`) reported, for `summary_matches_history`: its counts, held faults'
/// counts and latency distributions.
pub struct Reported<'a> {
    pub counts: &'a Tally,
    pub held: &'a HeldCounts,
    pub distributions: [RefStats; 3],
}

impl Reported<'_> {
    /// The figures of a run's (or `verify`'s) metrics.
    pub fn of(m: &Metrics) -> Reported<'_> {
        let s = |l: &durasim::observe::metrics::Latency| {
            let s = l.stats();
            RefStats {
                count: s.count,
                min: s.min,
                p50: s.p50,
                p95: s.p95,
                p99: s.p99,
                max: s.max,
                mean: s.mean,
            }
        };
        Reported {
            counts: &m.counts,
            held: &m.held,
            distributions: [s(&m.queue_wait), s(&m.inference), s(&m.review_wait)],
        }
    }
}

impl RefReport {
    pub fn verdict(&self, i: Inv) -> RefVerdict {
        self.verdicts.get(&i).cloned().unwrap_or_default()
    }

    pub fn violated(&self) -> Vec<Inv> {
        Inv::ALL
            .into_iter()
            .filter(|i| self.verdict(*i).count > 0)
            .collect()
    }
}

/// Where the violations of one history are collected, in the order they are found.
#[derive(Default)]
pub struct Verdicts {
    by_invariant: BTreeMap<Inv, RefVerdict>,
}

impl Verdicts {
    /// One violation of `invariant`, raised at the record of index `record`, time `at`.
    pub fn raise(
        &mut self,
        invariant: Inv,
        (at, record): (SimTime, usize),
        job: Option<JobId>,
        key: Option<IdempotencyKey>,
        message: impl Into<String>,
    ) {
        let v = self.by_invariant.entry(invariant).or_default();
        v.count += 1;
        if v.first.is_none() {
            v.first = Some(RefViolation {
                at,
                job,
                key,
                record,
                message: message.into(),
            });
        }
    }
}

/// What a rule is judging: the record, its index, and the facts before it.
pub struct Ctx<'a> {
    pub facts: &'a Facts,
    pub r: &'a Record,
    pub index: usize,
    pub names: Option<&'a KeyNames>,
}

impl Ctx<'_> {
    pub fn at(&self) -> SimTime {
        self.r.at
    }

    /// The record's place, for [`Verdicts::raise`].
    pub fn here(&self) -> (SimTime, usize) {
        (self.r.at, self.index)
    }

    /// The key `job` was enqueued under (none if no `enqueued` created it).
    pub fn key_of(&self, job: JobId) -> Option<IdempotencyKey> {
        self.facts.jobs.get(&job).map(|j| j.key)
    }

    /// A violation about one job, proved by this record: its key is the job's.
    pub fn job_violation(
        &self,
        out: &mut Verdicts,
        invariant: Inv,
        job: JobId,
        message: impl Into<String>,
    ) {
        out.raise(invariant, self.here(), Some(job), self.key_of(job), message);
    }

    /// The time unit's suffix, for messages.
    pub fn unit(&self) -> &'static str {
        self.facts.config.time_unit.suffix()
    }
}

/// Judges a whole history: `records` as the reader returns them (the header, `run_started`,
/// first; `run_ended` last), `names` the reader's (to recompute payload hashes; none: hashes
/// are not recomputed), `reported` the figures a run's metrics reported (none: not compared, and
/// `summary_matches_history` holds).
pub fn judge(
    records: &[Record],
    names: Option<&KeyNames>,
    reported: Option<Reported>,
) -> RefReport {
    let mut facts = Facts::default();
    let mut out = Verdicts::default();
    let mut sometimes: BTreeMap<Sometimes, u64> = BTreeMap::new();
    for (index, r) in records.iter().enumerate() {
        // Visibility and lease ends that fell due before this record's time happened; lease
        // detection deadlines passed.
        facts.advance_to(r.at);
        let overdue = facts.overdue(r.at);
        if !matches!(r.event, Event::RunStarted { .. }) {
            for (deadline, job) in overdue {
                out.raise(
                    Inv::LeaseEndDetected,
                    (r.at, index),
                    Some(job),
                    facts.jobs.get(&job).map(|j| j.key),
                    format!("{job}'s lease had to be recorded as expired by {deadline}, but it is still held"),
                );
            }
            let cx = Ctx {
                facts: &facts,
                r,
                index,
                names,
            };
            leases::judge(&cx, &mut out);
            policy::judge(&cx, &mut out);
            effects::judge(&cx, &mut out);
            chain::judge(&cx, &mut out);
            dlq::judge(&cx, &mut out);
            depth::judge(&cx, &mut out);
            for s in figures::sometimes(&cx) {
                *sometimes.entry(s).or_default() += 1;
            }
        }
        facts.apply(r);
    }
    // The eventually rules, at `run_ended` (the last record).
    let end = (
        facts.ended.map_or(0, |e| e.0),
        records.len().saturating_sub(1),
    );
    effects::finish(&facts, end, &mut out);
    dlq::finish(&facts, end, &mut out);
    let (figures, held) = figures::figures(&facts);
    let distributions = [
        figures::stats(&facts.queue_waits),
        figures::stats(&facts.inferences),
        figures::stats(&facts.review_waits),
    ];
    if let Some(reported) = reported {
        let own = (&figures, &held, &distributions);
        figures::summary(end, own, &reported, &mut out);
    }
    RefReport {
        verdicts: out.by_invariant,
        sometimes,
        figures,
        held,
        distributions,
    }
}

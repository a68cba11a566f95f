//! The reference checker: a plain restatement of every rule of durasim's checker, written from
//! docs/history-format.md and `durasim::check::Invariant`'s sentences, that the real (packed,
//! streaming) checker must agree with, invariant by invariant and first violation by first
//! violation (issue 27).
//!
//! Owns: the executable specification and the agreement tests. [`judge`] reads a history (the
//! reader's `Record`s, the header first, and the reader's names) and returns a [`RefReport`]:
//! per invariant a count and the first violation (its time, job, key and the index of the record
//! that proves it), the `sometimes` counts and the figures `summary.json` reports. The state is
//! ordinary maps (`facts.rs`, the one writer of it); each invariant family reads it in a file of
//! its own (`leases.rs`, `policy.rs`, `effects.rs`, `dlq.rs`, `depth.rs`, `figures.rs`), before
//! the record is applied: every rule judges a record against the facts as the records before it
//! left them. `agree.rs` compares a reference report with the real `CheckReport`; `scenarios.rs`,
//! `chaos.rs` and `generated.rs` are the agreement tests (docs/testing.md, "The reference
//! checker", says how to run the full counts).
//! Shares no code with `durasim::check`: it imports from there only the output names it compares
//! (`Invariant`, `Sometimes`, `CheckReport`); the backoff formulas, the error classes, the payload
//! hash and the depth are restated here. Clarity over speed: no packing, no fast paths.
//! Does not: read files (the tests hand it records read by `durasim::history::reader`).

mod agree;
mod chaos;
mod depth;
mod dlq;
mod effects;
mod facts;
mod figures;
mod generated;
mod leases;
mod policy;
mod scenarios;

pub use agree::{assert_agree, disagreements};

use durasim::base::ids::{JobId, SimTime};
use durasim::check::{Invariant, Sometimes};
use durasim::history::{Event, Record};
use durasim::vocab::counters::{Counter, Tally};
use durasim::vocab::faults::HeldCounts;
use durasim::vocab::key::{IdempotencyKey, KeyNames};
use facts::Facts;
use std::collections::BTreeMap;

/// One violation as the reference finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefViolation {
    pub at: SimTime,
    pub job: Option<JobId>,
    pub key: Option<IdempotencyKey>,
    /// The index (in the records judged, the header being 0) of the record that proves it; none
    /// for a violation found at the end of the history.
    pub record: Option<usize>,
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
    pub verdicts: BTreeMap<Invariant, RefVerdict>,
    pub sometimes: BTreeMap<Sometimes, u64>,
    /// Every figure of `summary.json` the history determines.
    pub figures: BTreeMap<Counter, u64>,
    pub held: HeldCounts,
}

impl RefReport {
    pub fn verdict(&self, i: Invariant) -> RefVerdict {
        self.verdicts.get(&i).cloned().unwrap_or_default()
    }

    pub fn violated(&self) -> Vec<Invariant> {
        Invariant::ALL
            .into_iter()
            .filter(|i| self.verdict(*i).count > 0)
            .collect()
    }
}

/// Where the violations of one history are collected, in the order they are found.
#[derive(Default)]
pub struct Verdicts {
    by_invariant: BTreeMap<Invariant, RefVerdict>,
}

impl Verdicts {
    /// One violation of `invariant`, proved by record `record` (none: found at the end).
    pub fn raise(
        &mut self,
        invariant: Invariant,
        (at, record): (SimTime, Option<usize>),
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
    pub fn here(&self) -> (SimTime, Option<usize>) {
        (self.r.at, Some(self.index))
    }

    /// The key `job` was enqueued under (none if no `enqueued` created it).
    pub fn key_of(&self, job: JobId) -> Option<IdempotencyKey> {
        self.facts.jobs.get(&job).map(|j| j.key)
    }

    /// A violation about one job, proved by this record: its key is the job's.
    pub fn job_violation(
        &self,
        out: &mut Verdicts,
        invariant: Invariant,
        job: JobId,
        message: impl Into<String>,
    ) {
        out.raise(
            invariant,
            self.here(),
            Some(job),
            self.key_of(job),
            message,
        );
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
    reported: Option<(&Tally, &HeldCounts)>,
) -> RefReport {
    let mut facts = Facts::default();
    let mut out = Verdicts::default();
    let mut sometimes: BTreeMap<Sometimes, u64> = BTreeMap::new();
    for (index, r) in records.iter().enumerate() {
        // Visibility and lease ends that fell due before this record's time happened.
        facts.advance_to(r.at);
        if !matches!(r.event, Event::RunStarted { .. }) {
            let cx = Ctx {
                facts: &facts,
                r,
                index,
                names,
            };
            leases::judge(&cx, &mut out);
            policy::judge(&cx, &mut out);
            effects::judge(&cx, &mut out);
            dlq::judge(&cx, &mut out);
            depth::judge(&cx, &mut out);
            for s in figures::sometimes(&cx) {
                *sometimes.entry(s).or_default() += 1;
            }
        }
        facts.apply(r);
    }
    effects::finish(&facts, &mut out);
    dlq::finish(&facts, &mut out);
    let (figures, held) = figures::figures(&facts);
    if let Some((tally, reported_held)) = reported {
        figures::summary(&facts, &figures, &held, tally, reported_held, &mut out);
    }
    RefReport {
        verdicts: out.by_invariant,
        sometimes,
        figures,
        held,
    }
}

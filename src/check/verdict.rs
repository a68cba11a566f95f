//! The checker's conclusion: a violation with the records that prove it (and which record it was
//! raised at), the verdict on one invariant, and the report on a whole history (verdicts,
//! `sometimes` counts, the checker's own figures).
//! Does not: judge anything (the families in `rules/` do) or print (the shell does).

use super::invariant::{Invariant, Sometimes};
use crate::base::ids::{JobId, SimTime};
use crate::history::Record;
use crate::vocab::counters::Counts;
use crate::vocab::faults::HeldCounts;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::latency::Stats;

/// One violation, with the records that prove it.
#[derive(Clone, Debug, Hash)]
pub struct Violation {
    pub invariant: Invariant,
    pub at: SimTime,
    /// The record it was raised at: 0 the header (the file's line 1), n the file's line n + 1
    /// (docs/checker-rules.md, "Agreement and the first violation").
    pub record: u64,
    pub job: Option<JobId>,
    pub key: Option<IdempotencyKey>,
    pub message: String,
    pub evidence: Vec<Record>,
}

#[derive(Clone, Debug, Default, Hash)]
pub struct Verdict {
    pub count: u64,
    pub first: Option<Violation>,
}

/// The checker's conclusion.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub verdicts: Vec<(Invariant, Verdict)>,
    pub sometimes: Vec<(Sometimes, u64)>,
    pub quiescent: bool,
    /// The time of `run_ended`.
    pub end: SimTime,
    /// The checker's own count of each `summary.json` figure the history determines (none for
    /// the figures it does not count), and of each held fault.
    pub figures: Counts,
    pub held_figures: HeldCounts,
    /// The checker's own queueWaitMs, inferenceMs and reviewWaitMs (`rules/summary.rs`).
    pub distributions: [Stats; 3],
    /// The index of `run_ended` (or of the last record read).
    pub end_record: u64,
}

impl CheckReport {
    pub fn violated(&self) -> Vec<Invariant> {
        self.verdicts
            .iter()
            .filter(|(_, v)| v.count > 0)
            .map(|(i, _)| *i)
            .collect()
    }

    pub fn holds(&self) -> bool {
        self.verdicts.iter().all(|(_, v)| v.count == 0)
    }

    pub fn verdict(&self, invariant: Invariant) -> &Verdict {
        &self
            .verdicts
            .iter()
            .find(|(i, _)| *i == invariant)
            .expect("every invariant has a verdict")
            .1
    }

    pub(in crate::check) fn verdict_mut(&mut self, invariant: Invariant) -> &mut Verdict {
        &mut self
            .verdicts
            .iter_mut()
            .find(|(i, _)| *i == invariant)
            .expect("every invariant has a verdict")
            .1
    }

    pub fn reached(&self, s: Sometimes) -> u64 {
        self.sometimes
            .iter()
            .find(|(x, _)| *x == s)
            .map_or(0, |(_, n)| *n)
    }

    /// The earliest first violation across invariants (by time, then invariant order).
    pub fn first_violation(&self) -> Option<&Violation> {
        self.verdicts
            .iter()
            .filter_map(|(_, v)| v.first.as_ref())
            .min_by_key(|v| (v.at, v.invariant))
    }
}

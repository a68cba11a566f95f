//! The checker: judges a history, and nothing else.
//!
//! Owns: [`Checker`]: for each record as it streams past, the inferred transitions due before
//! it (`facts`), the families' judgements against the facts as they stood before it (`rules/`:
//! each family reads the record kinds its mask names and raises only its own invariants), then
//! the reducer's application of the record to the facts; at the end, the `eventually` rules and
//! the report (the verdict on every invariant, the `sometimes` counts, the checker's own figures).
//! Every rule is restated from the configuration in the history's header and the raw facts in
//! the records (docs/checker-rules.md); a value the recorder computed (a lease end, a deadline, a
//! payload hash, an error's class) is only cross-checked. It could judge a history recorded
//! from a real queue and database.
//! Does not: keep the history (a violation keeps the few records that prove it), or hold a rule
//! (the families do) or a fact (`facts/` does).

use super::facts::Facts;
pub use super::facts::PayloadId;
use super::invariant::{Invariant, Sometimes};
use super::rules::{self, chain, depth, detection, dlq, effects, fences, leases, payloads};
use super::rules::{policy, recorded, sometimes, summary, tenancy, Ctx, End, Family, Out};
pub use super::verdict::{CheckReport, Verdict, Violation};
use crate::base::ids::SimTime;
use crate::history::{Event, Observer, Record};
use crate::vocab::key::KeyNames;

/// The families, each with its own state.
#[derive(Default, Hash)]
struct Families {
    leases: leases::Leases,
    policy: policy::Policy,
    effects: effects::Effects,
    payloads: payloads::Payloads,
    tenancy: tenancy::Tenancy,
    dlq: dlq::Dlq,
    depth: depth::Depth,
    recorded: recorded::Recorded,
    chain: chain::Chain,
    fences: fences::Fences,
    detection: detection::Detection,
    summary: summary::Summary,
    sometimes: sometimes::Counts,
}

/// Calls `$m` on every family, in one order (the order only matters within an invariant, and
/// each invariant is one family's).
macro_rules! each_family {
    ($f:expr, $m:ident) => {
        $m!($f.leases);
        $m!($f.policy);
        $m!($f.effects);
        $m!($f.payloads);
        $m!($f.tenancy);
        $m!($f.dlq);
        $m!($f.depth);
        $m!($f.recorded);
        $m!($f.chain);
        $m!($f.fences);
        $m!($f.detection);
        $m!($f.summary);
        $m!($f.sometimes);
    };
}

#[derive(Hash)]
pub struct Checker {
    /// The names behind keys and operations, to recompute payload hashes. Without them (a
    /// checker fed records by hand) hashes are not recomputed.
    names: Option<Box<KeyNames>>,
    facts: Facts,
    families: Families,
    verdicts: Vec<Verdict>,
    /// The index of the next record (0: the header).
    record: u64,
    /// `run_ended`: its time, whether it settled, its index.
    ended: Option<(SimTime, bool, u64)>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    pub fn new() -> Checker {
        Checker {
            names: None,
            facts: Facts::default(),
            families: Families::default(),
            verdicts: vec![Verdict::default(); Invariant::ALL.len()],
            record: 0,
            ended: None,
        }
    }

    pub fn with_capacity(jobs: usize) -> Checker {
        let mut c = Checker::new();
        c.facts.reserve(jobs);
        c
    }

    /// Gives the checker the run's names, so that recorded payload hashes are recomputed.
    pub fn with_names(mut self, names: KeyNames) -> Checker {
        self.names = Some(Box::new(names));
        self
    }

    /// Judges one record with the names the checker was given (if any).
    pub fn observe_record(&mut self, r: &Record) {
        // Only records that carry a payload hash need the names: lent for the record (taken and
        // put back: no reference count to touch, a record at a time).
        let carries_payload = matches!(
            r.event,
            Event::Enqueued { .. }
                | Event::EnqueueDeduped { .. }
                | Event::EnqueueConflict { .. }
                | Event::EnqueueReplaced { .. }
                | Event::ResultCommitted { .. }
                | Event::CommitDeduped { .. }
                | Event::CommitConflict { .. }
                | Event::PayloadMutated { .. }
        );
        if !carries_payload {
            return self.observe_named(r, None);
        }
        let names = self.names.take();
        self.observe_named(r, names.as_deref());
        self.names = names;
    }

    /// Judges one record; `names` (a reader's, growing as it reads) lets payload hashes be
    /// recomputed.
    pub fn observe_named(&mut self, r: &Record, names: Option<&KeyNames>) {
        self.facts.catch_up(r.at);
        let bit = rules::kind(&r.event);
        let c = Ctx::new(r, &self.facts, names);
        let mut out = Out::new(&mut self.verdicts[..], self.record, &[]);
        macro_rules! judge {
            ($family:expr) => {
                if reads(&$family) & bit != 0 {
                    // Only a debug build checks that a violation is the family's own.
                    if cfg!(debug_assertions) {
                        out.owns = owns(&$family);
                    }
                    $family.judge(&c, &mut out);
                }
            };
        }
        each_family!(self.families, judge);
        let found = c.key_located();
        self.facts.apply(r, found);
        self.families.detection.after(r, &self.facts);
        if let Event::RunEnded { quiescent } = r.event {
            self.ended = Some((r.at, quiescent, self.record));
        }
        self.record += 1;
    }

    /// Evaluates the `eventually` invariants (at the end of the history) and returns the
    /// verdict of every invariant.
    pub fn finish(mut self) -> CheckReport {
        let last = self.record.saturating_sub(1);
        let (at, quiescent, end_record) = self.ended.unwrap_or((0, false, last));
        self.facts.catch_up(at.saturating_add(1));
        let e = End {
            at,
            quiescent,
            facts: &self.facts,
        };
        let verdicts = &mut self.verdicts[..];
        macro_rules! finish {
            ($family:expr) => {
                let mut out = Out::new(verdicts, end_record, owns(&$family));
                $family.finish(&e, &mut out);
            };
        }
        each_family!(self.families, finish);
        let (figures, held_figures, distributions) = self.families.summary.figures(&e);
        let counts = &self.families.sometimes.0;
        CheckReport {
            verdicts: Invariant::ALL
                .iter()
                .map(|i| (*i, self.verdicts[*i as usize].clone()))
                .collect(),
            sometimes: Sometimes::ALL
                .iter()
                .map(|s| (*s, counts[s.index()]))
                .collect(),
            quiescent,
            end: at,
            figures,
            held_figures,
            distributions,
            end_record,
        }
    }
}

/// A family's record mask and invariants, from a value (for the macros).
#[inline(always)]
fn reads<F: Family>(_: &F) -> u64 {
    F::READS
}

#[inline(always)]
fn owns<F: Family>(_: &F) -> &'static [Invariant] {
    F::OWNS
}

impl Observer for Checker {
    #[inline]
    fn observe(&mut self, record: &Record) {
        self.observe_record(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every invariant is raised by exactly one family, and its name is its own.
    #[test]
    fn every_invariant_belongs_to_one_family() {
        let f = Families::default();
        let mut owned = Vec::new();
        macro_rules! collect {
            ($family:expr) => {
                owned.extend_from_slice(owns(&$family));
            };
        }
        each_family!(f, collect);
        for i in Invariant::ALL {
            let n = owned.iter().filter(|o| **o == i).count();
            assert_eq!(n, 1, "{} is owned by {n} families", i.name());
            assert_eq!(Invariant::parse(i.name()), Some(i));
        }
        assert_eq!(owned.len(), Invariant::ALL.len());
    }
}

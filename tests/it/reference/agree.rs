//! Agreement: the real checker's report against the reference's, on one history.
//!
//! Owns: what "agree" means: for every invariant the same count and the same first violation
//! (its time, job, key, and the record that proves it: the real violation's first evidence
//! record is the record at the reference's index, none for a violation found at the end), the
//! same `sometimes` counts, and the same figures.
//! Does not: judge (the reference does) or pick histories (the tests do).

use super::{Inv, RefReport};
use durasim::check::{CheckReport, Invariant, Sometimes};
use durasim::history::Record;

/// Every difference between `real` and `reference` on `records`, one line each (empty: they
/// agree). Agreement is docs/checker-rules.md's: per invariant the real checker knows, both hold
/// or both are violated first at the same record (the real violation's first evidence record is
/// the record at the reference's index; no evidence: the reference's record is `run_ended`),
/// time, job and key; plus the same `sometimes` counts and figures. With `counts`, the numbers of
/// violations too (informative in the specification).
pub fn disagreements(
    records: &[Record],
    real: &CheckReport,
    reference: &RefReport,
    counts: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let last = records.len().saturating_sub(1);
    for i in Invariant::ALL {
        let Some(r) = Inv::parse(i.name()) else {
            out.push(format!("{}: the reference does not know it", i.name()));
            continue;
        };
        let (a, b) = (real.verdict(i), reference.verdict(r));
        let shown_real = a
            .first
            .as_ref()
            .map(|f| (f.at, f.job, f.key, &f.message, f.evidence.first()));
        let shown_ref = b
            .first
            .as_ref()
            .map(|f| (f.at, f.job, f.key, f.record, &f.message));
        match (&a.first, &b.first) {
            (None, None) => {}
            (Some(x), Some(y)) => {
                let same_record = match x.evidence.first() {
                    Some(e) => Some(e) == records.get(y.record),
                    None => y.record == last,
                };
                if (x.at, x.job, x.key) != (y.at, y.job, y.key) || !same_record {
                    out.push(format!(
                        "{}: first violation differs: real {shown_real:?}, reference {shown_ref:?}",
                        i.name()
                    ));
                }
            }
            _ => out.push(format!(
                "{}: real {} ({shown_real:?}), reference {} ({shown_ref:?})",
                i.name(),
                if a.first.is_some() {
                    "violated"
                } else {
                    "holds"
                },
                if b.first.is_some() {
                    "violated"
                } else {
                    "holds"
                },
            )),
        }
        if counts && a.count != b.count && a.first.is_some() == b.first.is_some() {
            out.push(format!(
                "{}: {} violations (real) vs {} (reference)",
                i.name(),
                a.count,
                b.count
            ));
        }
    }
    for s in Sometimes::ALL {
        let (a, b) = (
            real.reached(s),
            reference.sometimes.get(&s).copied().unwrap_or(0),
        );
        if a != b {
            out.push(format!(
                "sometimes {}: {a} (real) vs {b} (reference)",
                s.name()
            ));
        }
    }
    let mut real_figures: Vec<_> = real.figures.iter().collect();
    real_figures.sort();
    let ref_figures: Vec<_> = reference.figures.iter().map(|(c, v)| (*c, *v)).collect();
    if real_figures != ref_figures {
        out.push(format!(
            "figures: {real_figures:?} (real) vs {ref_figures:?} (reference)"
        ));
    }
    if real.held_figures.0 != reference.held.0 {
        out.push(format!(
            "held figures: {:?} (real) vs {:?} (reference)",
            real.held_figures.0, reference.held.0
        ));
    }
    out
}

/// Fails, naming `what`, unless the two agree (with `main`'s checker, the numbers of violations
/// too).
#[track_caller]
pub fn assert_agree(what: &str, records: &[Record], real: &CheckReport, reference: &RefReport) {
    let d = disagreements(records, real, reference, true);
    assert!(
        d.is_empty(),
        "{what}: the real checker and the reference disagree:\n  {}",
        d.join("\n  ")
    );
}

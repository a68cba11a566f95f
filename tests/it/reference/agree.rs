//! Agreement: the real checker's report against the reference's, on one history.
//!
//! Owns: what "agree" means: for every invariant the same count and the same first violation
//! (its time, job, key, and the record that proves it: the real violation's first evidence
//! record is the record at the reference's index, none for a violation found at the end), the
//! same `sometimes` counts, and the same figures.
//! Does not: judge (the reference does) or pick histories (the tests do).

use super::RefReport;
use durasim::check::{CheckReport, Invariant, Sometimes};
use durasim::history::Record;

/// Every difference between `real` and `reference` on `records`, one line each (empty: they
/// agree).
pub fn disagreements(records: &[Record], real: &CheckReport, reference: &RefReport) -> Vec<String> {
    let mut out = Vec::new();
    for i in Invariant::ALL {
        let (a, b) = (real.verdict(i), reference.verdict(i));
        if a.count != b.count {
            out.push(format!(
                "{}: count {} (real) vs {} (reference); first real {:?}; first reference {:?}",
                i.name(),
                a.count,
                b.count,
                a.first.as_ref().map(|f| (f.at, f.job, f.key, &f.message)),
                b.first.as_ref().map(|f| (f.at, f.job, f.key, f.record, &f.message)),
            ));
            continue;
        }
        match (&a.first, &b.first) {
            (None, None) => {}
            (Some(x), Some(y)) => {
                let record = y.record.map(|n| &records[n]);
                if (x.at, x.job, x.key) != (y.at, y.job, y.key) || x.evidence.first() != record {
                    out.push(format!(
                        "{}: first violation differs: real at {} {:?} {:?} ({}; evidence {:?}), reference at {} {:?} {:?} ({}; record {:?})",
                        i.name(),
                        x.at,
                        x.job,
                        x.key,
                        x.message,
                        x.evidence.first(),
                        y.at,
                        y.job,
                        y.key,
                        y.message,
                        y.record,
                    ));
                }
            }
            _ => out.push(format!("{}: one side has no first violation", i.name())),
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
    let real_figures: Vec<_> = real.figures.iter().collect();
    let ref_figures: Vec<_> = reference
        .figures
        .iter()
        .map(|(c, v)| (*c, *v))
        .collect::<Vec<_>>();
    let mut sorted_real = real_figures.clone();
    sorted_real.sort();
    if sorted_real != ref_figures {
        out.push(format!(
            "figures: {sorted_real:?} (real) vs {ref_figures:?} (reference)"
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

/// Fails, naming `what`, unless the two agree.
#[track_caller]
pub fn assert_agree(what: &str, records: &[Record], real: &CheckReport, reference: &RefReport) {
    let d = disagreements(records, real, reference);
    assert!(
        d.is_empty(),
        "{what}: the real checker and the reference disagree:\n  {}",
        d.join("\n  ")
    );
}

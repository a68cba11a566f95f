//! A run against its scenario's `[expect]` block.
//!
//! Owns: `Unmet` (one expectation a run did not meet: the field, what was expected, what the
//! run showed) and `check_expectations`, which compares a run's figures, verdicts, `sometimes`
//! properties, trace hash and self-replay with the typed expectations validation read, and
//! `check_judged`, the same without the self-replay for a history `verify --expect` judged.
//! Does not: read `[expect]` (`scenario/expect.rs`), run anything (`run/mod.rs` runs the
//! self-replay `replay` asks for) or print (the shell does).

use super::RunReport;
use crate::check::CheckReport;
use crate::history::TraceHash;
use crate::observe::metrics::Metrics;
use crate::scenario::{Expectations, ReplayExpectation};

/// One unmet expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmet {
    pub field: String,
    pub expected: String,
    pub actual: String,
}

/// Compares a run with an `[expect]` block (a scenario's `expectations()`), in the block's
/// order: the counts, the violations, the `sometimes` properties, the trace hash, the replay.
pub fn check_expectations(e: &Expectations, r: &RunReport) -> Vec<Unmet> {
    let mut unmet = check_judged(e, &r.check, &r.metrics, r.outcome.trace_hash);
    if let (Some(want), Some(again)) = (e.replay, r.replay_hash) {
        replay(want, again == r.outcome.trace_hash, &mut unmet);
    }
    unmet
}

/// What [`check_expectations`] checks of a history however it was made (`durasim verify
/// --expect`: a recorded one, which is never re-run): the counts, the violations, the
/// `sometimes` properties and the trace hash.
pub fn check_judged(
    e: &Expectations,
    check: &CheckReport,
    metrics: &Metrics,
    trace_hash: u64,
) -> Vec<Unmet> {
    let mut unmet = Vec::new();
    counts(e, metrics, &mut unmet);
    violations(e, check, &mut unmet);
    for s in &e.sometimes {
        if check.reached(*s) == 0 {
            unmet.push(Unmet {
                field: format!("sometimes.{}", s.name()),
                expected: "reached".into(),
                actual: "never".into(),
            });
        }
    }
    if let Some(want) = &e.trace_hash {
        if want.value != trace_hash {
            unmet.push(Unmet {
                field: "trace_hash".into(),
                expected: want.written.clone(),
                actual: TraceHash::hex(trace_hash),
            });
        }
    }
    unmet
}

/// Each pinned figure the run does not show exactly.
fn counts(e: &Expectations, metrics: &Metrics, unmet: &mut Vec<Unmet>) {
    for (counter, expected) in e.counts.iter() {
        // A figure the run does not have (a recovery depth without an outage) never matches.
        let actual = metrics.figure(counter).unwrap_or(u64::MAX);
        if expected != actual {
            unmet.push(Unmet {
                field: counter.name().expect("an [expect] key").to_string(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
    }
}

/// The invariants violated, unless exactly those expected (none expected: all must hold).
fn violations(e: &Expectations, check: &CheckReport, unmet: &mut Vec<Unmet>) {
    let expected: Vec<&str> = e.violations.iter().map(|i| i.name()).collect();
    let actual: Vec<&str> = check.violated().iter().map(|i| i.name()).collect();
    if expected != actual {
        unmet.push(Unmet {
            field: "violations".into(),
            expected: format!("[{}]", expected.join(", ")),
            actual: format!("[{}]", actual.join(", ")),
        });
    }
}

/// The self-replay, unless it came out as `want` (`same`: it gave the run's trace hash).
fn replay(want: ReplayExpectation, same: bool, unmet: &mut Vec<Unmet>) {
    let ok = match want {
        ReplayExpectation::Identical => same,
        ReplayExpectation::Diverges => !same,
    };
    if !ok {
        unmet.push(Unmet {
            field: "replay".into(),
            expected: format!("{want:?}").to_lowercase(),
            actual: if same {
                "identical".into()
            } else {
                "diverges".into()
            },
        });
    }
}

//! The queue depth, restated: `depth_matches_history`, and a `visible` record for
//! `recorded_values_match`.
//!
//! Owns: the rule as docs/checker-rules.md ("The depth") states it: each `depth_sampled` equals
//! the jobs in place ready (`facts.rs` keeps the places: moved by the records, and by the
//! transitions inferred when the header does not declare `visible` or `lease_expired`, the
//! moment a visible time comes or the moment after a lease ends), a sample in the very tick
//! such a transition falls due counting it or not.
//! Does not: keep the jobs' places (`facts.rs` does).

use super::facts::Place;
use super::Inv;
use super::{Ctx, Verdicts};
use durasim::history::Event;

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let f = cx.facts;
    let at = cx.at();
    match &cx.r.event {
        Event::DepthSampled { depth } => {
            // The places, as the records left them: a job leased or retried after its terminal
            // record is counted by its place, as the specification's depth says.
            let (mut low, mut maybe) = (0, 0);
            for j in f.jobs.values() {
                if j.place == Place::Ready {
                    low += 1;
                } else if f.due(j) == Some(at) {
                    maybe += 1;
                }
            }
            if *depth < low || *depth > low + maybe {
                out.raise(
                    Inv::DepthMatchesHistory,
                    cx.here(),
                    None,
                    None,
                    format!("depth {depth} at {at}, but the history has {low}..={} jobs visible, unleased and unfinished", low + maybe),
                );
            }
        }
        Event::Visible { job } => {
            let j = f.job(*job);
            if j.place != Place::Waiting || at < j.visible_from {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!(
                        "{job} recorded visible at {at}, but it was {:?} with visible time {}",
                        j.place, j.visible_from
                    ),
                );
            }
        }
        _ => {}
    }
}

//! The queue depth, restated: `depth_matches_history`, and a `visible` record for
//! `recorded_values_match`.
//!
//! Owns: the rule as docs/history-format.md states it: each `depth_sampled` equals the jobs
//! visible, unleased and not terminal at that moment, from the records (with `visible` and
//! `lease_expired` when the header declares them; otherwise from the visible times and the
//! recomputed lease ends: `facts.rs` moves a job to visible the moment its visible time comes or
//! the moment after its lease ends), a sample in the very tick such a transition falls due
//! counting it or not.
//! Does not: keep the jobs' places (`facts.rs` does).

use super::facts::Place;
use super::{Ctx, Verdicts};
use super::Inv;
use durasim::history::Event;

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let f = cx.facts;
    let at = cx.at();
    match &cx.r.event {
        Event::DepthSampled { depth } => {
            let unfinished = f.jobs.values().filter(|j| j.terminal.is_none());
            let (mut low, mut maybe) = (0, 0);
            for j in unfinished {
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
                    format!("{job} recorded visible at {at}, but it was {:?} with visible time {}", j.place, j.visible_from),
                );
            }
        }
        _ => {}
    }
}

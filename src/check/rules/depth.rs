//! Invariant family: the queue depth.
//!
//! Owns: `depth_matches_history`: every `depth_sampled` record equals the jobs visible, unleased
//! and unfinished, recomputed from the history (the facts' depth: from the `visible` and
//! `lease_expired` records when the header declares them, otherwise inferred from the recorded
//! visible times and the recomputed lease ends; a sample taken in the very tick such an
//! inferred transition falls due may count it or not).
//! Does not: keep the depth (a fact, `facts/depth.rs`).

use super::{k, Ctx, Family, Out, Spec};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;

pub(in crate::check) const DEPTH_MATCHES_HISTORY: Spec = Spec {
    name: "depth_matches_history",
    kind: Kind::Always,
    sentence: "every queue depth sample equals the number of visible, unleased, unfinished jobs recomputed from the history",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Depth;

impl Family for Depth {
    const READS: u64 = k::DEPTH_SAMPLED;
    const OWNS: &'static [Invariant] = &[Invariant::DepthMatchesHistory];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let Event::DepthSampled { depth } = c.r.event else {
            return;
        };
        let low = c.facts.ready();
        // Transitions falling due at this very time may or may not have happened yet.
        let pending = c.facts.due_at(c.at());
        let high = low + pending;
        if depth < low || depth > high {
            let (at, u) = (c.at(), c.unit());
            let expected = match pending {
                0 => format!("{low}"),
                _ => format!("{low} to {high}"),
            };
            out.at_record(Invariant::DepthMatchesHistory, c, (None, None), || {
                format!("the queue depth sampled at {at} {u} is {depth}, but the history has {expected} jobs visible, unleased and unfinished then")
            });
        }
    }
}

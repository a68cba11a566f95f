//! The depth's facts: how many jobs are ready (visible, unleased, unfinished), and the
//! transitions the checker infers when the header does not declare the records that show them
//! (a visible time coming, a lease ending), due at their times.
//! Does not: keep each job's place (its track does) or judge a sample (`rules/depth.rs`).

use crate::base::ids::SimTime;
use std::collections::BTreeSet;

/// An inferred transition: a job becomes visible (its visible time came, or its lease ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(in crate::check) struct Due {
    pub at: SimTime,
    pub job: u32,
    /// For an expiry, the lease's token; for a visibility, none (ordered after every token, as
    /// `u64::MAX` was).
    pub fence: Option<u64>,
}

impl Due {
    /// The order docs/checker-rules.md gives: time, job, then fence (a visibility last).
    fn order(&self) -> (SimTime, u32, u64) {
        (self.at, self.job, self.fence.unwrap_or(u64::MAX))
    }

    fn from_order((at, job, f): (SimTime, u32, u64)) -> Due {
        Due {
            at,
            job,
            fence: (f != u64::MAX).then_some(f),
        }
    }
}

/// The depth's counts and the transitions due, in their order (a set: the samples ask for
/// those due at one time).
#[derive(Clone, Debug, Default, Hash)]
pub(super) struct Depth {
    pub ready: u64,
    due: BTreeSet<(SimTime, u32, u64)>,
}

impl Depth {
    pub fn push(&mut self, d: Due) {
        self.due.insert(d.order());
    }

    /// Whether no transition is due at all (a history that records them: the simulator's).
    #[inline]
    pub fn nothing_due(&self) -> bool {
        self.due.is_empty()
    }

    /// The next transition due strictly before `at`, taken off.
    #[inline]
    pub fn next_before(&mut self, at: SimTime) -> Option<Due> {
        let first = *self.due.first()?;
        (first.0 < at).then(|| {
            self.due.pop_first();
            Due::from_order(first)
        })
    }

    /// The transitions due at exactly `at` (valid or not).
    pub fn due_at(&self, at: SimTime) -> impl Iterator<Item = Due> + '_ {
        self.due
            .range((at, 0, 0)..=(at, u32::MAX, u64::MAX))
            .map(|o| Due::from_order(*o))
    }
}

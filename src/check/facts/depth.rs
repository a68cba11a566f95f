//! The depth's facts: how many jobs are ready (visible, unleased, unfinished), and the
//! transitions the checker infers when the header does not declare the records that show them
//! (a visible time coming, a lease ending), due at their times.
//! Owns also the reducer's depth steps ([`Facts::catch_up`], and moving a job between places
//! with the ready count kept): part of [`Facts::apply`]'s writing, kept beside the counts.
//! Does not: keep each job's place (its track does) or judge a sample (`rules/depth.rs`).

use super::{Facts, Place};
use crate::base::ids::{Fence, JobId, SimTime};
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

/// The reducer's depth steps, and what the rules read of the depth.
impl Facts {
    /// Jobs ready (visible, unleased, unfinished) now.
    pub fn ready(&self) -> u64 {
        self.depth.ready
    }

    /// The inferred transitions due at exactly `at` that are still valid.
    pub fn due_at(&self, at: SimTime) -> u64 {
        self.depth
            .due_at(at)
            .filter(|d| self.depth_valid(d))
            .count() as u64
    }
    /// Applies the transitions inferred before `at` (docs/checker-rules.md, "The depth"): run
    /// before the rules judge a record at `at`.
    #[inline(always)]
    pub fn catch_up(&mut self, at: SimTime) {
        if !self.depth.nothing_due() {
            self.catch_up_due(at);
        }
    }

    /// [`Facts::catch_up`] with transitions due (out of line: the simulator's histories record
    /// them, and never get here).
    #[inline(never)]
    fn catch_up_due(&mut self, at: SimTime) {
        while let Some(d) = self.depth.next_before(at) {
            if self.depth_valid(&d) {
                self.move_to(JobId(d.job), Place::Ready);
            }
        }
    }

    /// Whether an inferred transition still applies (nothing overtook it).
    pub(super) fn depth_valid(&self, d: &Due) -> bool {
        let Some(t) = self.tracks.get(JobId(d.job)) else {
            return false;
        };
        match d.fence {
            None => t.place == Place::Waiting && t.visible_from == d.at,
            Some(f) => {
                t.place == Place::Leased
                    && t.fence() == Some(Fence(f))
                    && t.lease_end(&self.config).map(|e| e.saturating_add(1)) == Some(d.at)
            }
        }
    }

    /// Moves `job` to `place`, keeping the count of ready jobs.
    pub(super) fn move_to(&mut self, job: JobId, place: Place) {
        let was = self
            .tracks
            .place(job)
            .unwrap_or_else(|| panic!("history names {job} before it was enqueued"));
        self.tracks.set_place(job, place);
        if was == Place::Ready {
            self.depth.ready -= 1;
        }
        if place == Place::Ready {
            self.depth.ready += 1;
        }
    }

    /// The job waits for `visible_at`.
    pub(super) fn wait(&mut self, job: JobId, visible_at: SimTime) {
        self.move_to(job, Place::Waiting);
        if !self.config.emits.visible {
            self.depth.push(Due {
                at: visible_at,
                job: job.0,
                fence: None,
            });
        }
    }

    /// A lease or an accepted renewal at `at` of lease `fence`: with no `lease_expired` records,
    /// the job is visible again the moment after its lease ends.
    #[inline]
    pub(super) fn renewed(&mut self, job: JobId, fence: Fence, at: SimTime) {
        if !self.config.emits.lease_expired {
            let end = at.saturating_add(self.config.lease);
            self.depth.push(Due {
                at: end.saturating_add(1),
                job: job.0,
                fence: Some(fence.0),
            });
        }
    }
}

//! Who runs first when two or more events are due at the same virtual time.
//!
//! Owns: the [`TieBreak`] seam the kernel asks at each *tie* (two or more events due at the
//! earliest pending time), and [`Ties`], the tie-break a scenario's `[run] ties` writes down
//! (the ties of a run are numbered from 0 in the order they come; `[point, pick]` runs the
//! `pick`-th of that tie's events, counted from 0 in the default order, first; every other tie
//! runs in the default order).
//! Does not: decide anything without being asked. A run with no tie-break (every run but
//! `durasim explore`'s and a scenario with `[run] ties`) never calls this: its loop is the one it
//! always had, first in, first out among equal times (`event_queue.rs`), and is compiled apart.

use crate::base::ids::SimTime;

/// A chooser of the order of simultaneous events.
pub trait TieBreak {
    /// `due` (at least 2) events are due at `now`, the tie's number (from 0) is `point`; which
    /// runs first (0: the default order's first; below `due`), or `Err(why)` to stop the run
    /// here. `state` is the run's state hash (`sim::state`) when the run was asked to compute
    /// it, else `None`.
    fn choose(
        &mut self,
        point: u64,
        now: SimTime,
        due: usize,
        state: Option<u128>,
    ) -> Result<usize, Stop>;

    /// The run is over (settled, stopped or out of time): its state hash, as for `choose`.
    fn ended(&mut self, _state: Option<u128>) {}
}

/// Why a tie-break stopped a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The search has been here before (`durasim explore` prunes the branch).
    Seen,
    /// The tie-break cannot go on: the run ends with this message as its fault (exit 2).
    Refused(String),
}

/// The tie-break of a scenario's `[run] ties`: the listed ties pick the listed event, the
/// others the default.
#[derive(Clone, Debug)]
pub struct Ties {
    /// `(point, pick)`, points strictly increasing, picks at least 1 (validated).
    picks: Vec<(u64, u64)>,
    next: usize,
    /// Ties the run has had.
    seen: u64,
}

impl Ties {
    pub fn new(picks: &[[u64; 2]]) -> Ties {
        Ties {
            picks: picks.iter().map(|p| (p[0], p[1])).collect(),
            next: 0,
            seen: 0,
        }
    }

    /// Why the run did not follow the list: a listed tie it never reached (it settled first).
    pub fn unreached(&self) -> Option<String> {
        let &(point, _) = self.picks.get(self.next)?;
        Some(format!(
            "run.ties[{}]: the run had {} ties (numbered from 0), none numbered {point}",
            self.next, self.seen
        ))
    }
}

impl TieBreak for Ties {
    fn choose(
        &mut self,
        point: u64,
        now: SimTime,
        due: usize,
        _state: Option<u128>,
    ) -> Result<usize, Stop> {
        self.seen = point + 1;
        match self.picks.get(self.next) {
            Some(&(p, pick)) if p == point => {
                self.next += 1;
                if pick >= due as u64 {
                    return Err(Stop::Refused(format!(
                        "run.ties[{}]: tie {point} (at {now} ms) has {due} events due, so its \
                         pick is 0 to {}; got {pick}",
                        self.next - 1,
                        due - 1
                    )));
                }
                Ok(pick as usize)
            }
            _ => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_ties_pick_their_event_and_the_rest_the_default() {
        let mut t = Ties::new(&[[1, 2], [4, 3]]);
        assert_eq!(t.choose(0, 10, 3, None), Ok(0));
        assert_eq!(t.choose(1, 10, 3, None), Ok(2));
        assert_eq!(t.choose(2, 20, 2, None), Ok(0));
        let m = t.unreached().expect("tie 4 not reached");
        assert!(m.contains("run.ties[1]") && m.contains("had 3 ties"), "{m}");
        match t.choose(4, 30, 2, None) {
            Err(Stop::Refused(m)) => assert!(m.contains("run.ties[1]") && m.contains("0 to 1")),
            other => panic!("{other:?}"),
        }
        assert_eq!(t.unreached(), None);
    }
}

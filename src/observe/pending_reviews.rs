//! The applied time of each outbox event whose review is still to come: a window of event ids
//! from the oldest event with a review pending to the newest event applied, so reviewWaitMs
//! follows live work instead of keeping 8 bytes for every event ever applied.
//!
//! Owns: each event's last `effect_applied` time while a review of it is pending (reviewWaitMs is
//! the `review_done` time minus it), and how many of its reviews are pending (one a recorded
//! apply). Event ids are dense in the order the outbox assigns them (the kernel numbers them so,
//! the history reader interns them so), and an event is applied and reviewed soon after it is
//! committed, so the window holds the few events of the last review time; an event applied
//! again after the window has passed it (a republish the consumer did not dedupe) waits in a
//! small side table until its reviews are done.
//! Does not: know histograms or records (`metrics.rs` does).
//!
//! What it forgets: an event's time once every review of it recorded so far has come. The
//! simulator records one review for each apply, after it, so a review always finds its apply
//! here; a history recorded elsewhere with a `review_done` and no unreviewed `effect_applied`
//! of its event before it gets a wait of 0 (the figure `durasim verify` reports no
//! reviewWaitMs).

use crate::base::ids::{EventId, SimTime};
use std::collections::BTreeMap;

/// An event's last applied time and its reviews still to come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Entry {
    applied_at: SimTime,
    pending: u32,
}

/// An id in the window no `effect_applied` named (yet).
const NONE: Entry = Entry {
    applied_at: 0,
    pending: 0,
};

/// A window with fewer dead entries than this in front of it is not compacted yet.
const COMPACT_MIN: usize = 1024;

#[derive(Clone, Debug, Default, Hash)]
pub struct PendingReviews {
    /// `entries[head..]` are the events `start`, `start + 1`, ...: the first has a review
    /// pending (the window is empty otherwise). `entries[..head]` are dead, dropped in one
    /// move once they are as many as the live ones (a ring's index arithmetic on every access
    /// cost more than the moves).
    entries: Vec<Entry>,
    head: usize,
    start: u64,
    /// Events below `start` applied again, until their reviews are done (`start` only moves
    /// forward, so every key here stays below it).
    behind: BTreeMap<u64, Entry>,
}

impl PendingReviews {
    /// `event`'s effect was applied at `at`: a review of it is to come.
    #[inline]
    pub fn applied(&mut self, event: EventId, at: SimTime) {
        if self.head == self.entries.len() && event.0 > self.start {
            // Nothing pending in the window: it starts again at this event. (Never back: the
            // side table holds only events below `start`.)
            self.start = event.0;
        }
        let entry = match event.0.checked_sub(self.start) {
            Some(i) => {
                let at = self.head + i as usize;
                if at >= self.entries.len() {
                    self.entries.resize(at + 1, NONE);
                }
                &mut self.entries[at]
            }
            None => self.behind.entry(event.0).or_insert(NONE),
        };
        entry.applied_at = at;
        entry.pending = entry.pending.saturating_add(1);
    }

    /// A review of `event` is done: its wait from the last apply, if one is pending.
    #[inline]
    pub fn reviewed(&mut self, event: EventId, at: SimTime) -> Option<u64> {
        debug_assert!(
            self.entries.get(self.head).is_none_or(|e| e.pending > 0),
            "the window starts at an event with a review pending"
        );
        let i = event.0.checked_sub(self.start);
        let entry = match i {
            Some(i) => self.entries.get_mut(self.head + i as usize),
            None => self.behind.get_mut(&event.0),
        }
        .filter(|e| e.pending > 0)?;
        entry.pending -= 1;
        let wait = at.saturating_sub(entry.applied_at);
        if entry.pending == 0 {
            match i {
                Some(0) => self.advance(),
                Some(_) => {}
                None => {
                    self.behind.remove(&event.0);
                }
            }
        }
        Some(wait)
    }

    /// The window's first event has no review pending: the window starts at the next that has.
    fn advance(&mut self) {
        while self.entries.get(self.head).is_some_and(|e| e.pending == 0) {
            self.head += 1;
            self.start += 1;
        }
        if self.head == self.entries.len() {
            self.entries.clear();
            self.head = 0;
        } else if self.head >= COMPACT_MIN && self.head * 2 >= self.entries.len() {
            self.entries.drain(..self.head);
            self.head = 0;
        }
    }

    /// Entries live: the window and the side table.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.window_len() + self.behind.len()
    }

    #[cfg(test)]
    fn window_len(&self) -> usize {
        self.entries.len() - self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_the_oldest_pending_review() {
        let mut p = PendingReviews::default();
        p.applied(EventId(0), 10);
        p.applied(EventId(1), 11);
        p.applied(EventId(3), 13);
        assert_eq!(p.held(), 4, "event 2 is a gap until it is applied");
        assert_eq!(p.reviewed(EventId(1), 100), Some(89));
        assert_eq!(p.held(), 4, "event 0 is still pending");
        assert_eq!(p.reviewed(EventId(0), 100), Some(90));
        assert_eq!(p.held(), 1, "0 and 1 done; the gap at 2 goes with them");
        assert_eq!(p.reviewed(EventId(3), 103), Some(90));
        assert_eq!(p.held(), 0);
        assert_eq!(
            p.reviewed(EventId(3), 104),
            None,
            "a second review finds no apply"
        );
        assert_eq!(p.reviewed(EventId(9), 104), None, "never applied");
    }

    #[test]
    fn an_event_applied_twice_is_reviewed_twice_from_its_last_apply() {
        let mut p = PendingReviews::default();
        p.applied(EventId(5), 10);
        p.applied(EventId(5), 20);
        assert_eq!(p.reviewed(EventId(5), 50), Some(30));
        assert_eq!(p.reviewed(EventId(5), 60), Some(40));
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn an_event_applied_again_after_the_window_passed_it_waits_behind() {
        let mut p = PendingReviews::default();
        for e in 0..4 {
            p.applied(EventId(e), e * 10);
        }
        for e in 0..3 {
            p.reviewed(EventId(e), 100);
        }
        assert_eq!(p.held(), 1, "the window starts at event 3");
        // A republish of event 1 applied again (no consumer dedupe), then reviewed.
        p.applied(EventId(1), 200);
        assert_eq!(p.held(), 2);
        assert_eq!(p.reviewed(EventId(1), 290), Some(90));
        assert_eq!(p.reviewed(EventId(3), 300), Some(270));
        assert_eq!(p.held(), 0);
        // A new window starts at the next apply beyond it; an older event waits behind.
        p.applied(EventId(2), 400);
        p.applied(EventId(7), 410);
        assert_eq!(p.window_len(), 1);
        assert_eq!(p.reviewed(EventId(2), 490), Some(90));
        assert_eq!(p.reviewed(EventId(7), 500), Some(90));
        assert_eq!(p.held(), 0);
    }

    /// A window that never empties (reviews ten events behind the applies) drops its dead
    /// entries as it goes.
    #[test]
    fn a_window_that_never_empties_stays_small() {
        let mut p = PendingReviews::default();
        let mut most = 0;
        for e in 0..10_000u64 {
            p.applied(EventId(e), e * 2);
            if e >= 10 {
                assert_eq!(p.reviewed(EventId(e - 10), e * 2 + 5), Some(25));
            }
            most = most.max(p.entries.len());
        }
        assert_eq!(p.held(), 10);
        assert!(most <= 2 * 11 + COMPACT_MIN, "{most} entries");
    }

    /// Against the vector it replaces (`applied_at[event]`, the last apply's time), on any
    /// sequence where every review follows an unreviewed apply of its event, as the simulator
    /// records them.
    #[test]
    fn matches_the_whole_run_vector_when_every_review_follows_its_apply() {
        use crate::base::rng::{Purpose, Stream};
        let mut s = Stream::new(3, Purpose::Review, 0);
        let mut p = PendingReviews::default();
        let mut last_applied: Vec<SimTime> = Vec::new();
        let mut to_review: Vec<u64> = Vec::new();
        let (mut next_event, mut at, mut most_held) = (0u64, 0u64, 0usize);
        for _ in 0..50_000 {
            at += s.range(0, 3);
            match s.range(0, 9) {
                // A new event applied.
                0..=2 => {
                    last_applied.push(at);
                    p.applied(EventId(next_event), at);
                    to_review.push(next_event);
                    next_event += 1;
                }
                // An old one applied again.
                3 if next_event > 0 => {
                    let e = s.range(0, next_event - 1);
                    last_applied[e as usize] = at;
                    p.applied(EventId(e), at);
                    to_review.push(e);
                }
                _ if !to_review.is_empty() => {
                    // Reviews come mostly in order, sometimes out of it.
                    let k = s.range(0, (to_review.len() - 1).min(3) as u64) as usize;
                    let e = to_review.remove(k);
                    let want = at - last_applied[e as usize];
                    assert_eq!(p.reviewed(EventId(e), at), Some(want), "event {e}");
                }
                _ => {}
            }
            most_held = most_held.max(p.held());
            assert!(
                p.entries.len() <= 2 * p.window_len() + COMPACT_MIN,
                "dead entries are dropped once they are as many as the live ones"
            );
        }
        assert!(
            most_held < 200,
            "the window follows pending reviews: {most_held} entries at most for {next_event} events"
        );
    }
}

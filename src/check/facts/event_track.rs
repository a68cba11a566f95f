//! What the checker remembers per outbox event: four bits (written by a commit, published,
//! applied, reviewed), exact counts when an event is applied or reviewed more than once, the
//! last applied time of each event with a review still to come, the outbox's unmarked events,
//! and the run's publish counts.
//! Does not: judge (the rules do) or keep anything per key (`key_track.rs`): a record naming an
//! event carries its key and job, and an event's origin is found through its key.

use crate::base::ids::{EventId, SimTime};
use std::collections::{BTreeMap, VecDeque};

const WRITTEN: u64 = 1;
const PUBLISHED: u64 = 2;
const APPLIED: u64 = 4;
const REVIEWED: u64 = 8;

#[derive(Clone, Debug, Default, Hash)]
pub(in crate::check) struct EventTracks {
    /// Four bits an event, 16 events a word.
    bits: Vec<u64>,
    /// Exact applies and reviews of the events applied or reviewed more than once (the bits say
    /// "at least once").
    counts: BTreeMap<u64, (u32, u32)>,
    /// The last applied time of each event with more applies than reviews.
    reviews: PendingReviews,
    /// The outbox's events not yet marked published, oldest first.
    pending: VecDeque<EventId>,
    /// Every `published` record, a republish included.
    publishes: u64,
    /// Events published at least once.
    published: u64,
}

impl EventTracks {
    pub fn reserve(&mut self, events: usize) {
        self.bits.reserve(events.div_ceil(16));
    }

    fn get(&self, e: EventId) -> u64 {
        self.bits
            .get((e.0 / 16) as usize)
            .map_or(0, |w| (w >> (4 * (e.0 % 16))) & 15)
    }

    /// Sets bit `bit` of `e`; whether it was set before.
    fn set(&mut self, e: EventId, bit: u64) -> bool {
        let word = (e.0 / 16) as usize;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        let w = &mut self.bits[word];
        let shift = 4 * (e.0 % 16);
        let before = *w & (bit << shift) != 0;
        *w |= bit << shift;
        before
    }

    /// Whether a `result_committed` wrote the event.
    pub fn written(&self, e: EventId) -> bool {
        self.get(e) & WRITTEN != 0
    }

    pub fn published(&self, e: EventId) -> bool {
        self.get(e) & PUBLISHED != 0
    }

    /// `effect_applied` records of the event so far.
    pub fn applies(&self, e: EventId) -> u32 {
        match self.get(e) & APPLIED {
            0 => 0,
            _ => self.counts.get(&e.0).map_or(1, |c| c.0.max(1)),
        }
    }

    /// `review_done` records of the event so far.
    pub fn reviews(&self, e: EventId) -> u32 {
        match self.get(e) & REVIEWED {
            0 => 0,
            _ => self.counts.get(&e.0).map_or(1, |c| c.1.max(1)),
        }
    }

    /// The latest apply's time, while the event has more applies than reviews.
    pub fn last_applied(&self, e: EventId) -> Option<SimTime> {
        self.reviews.get(e)
    }

    /// The outbox's unmarked events, oldest first.
    pub fn pending(&self) -> &VecDeque<EventId> {
        &self.pending
    }

    /// `published` records in all, and events published at least once.
    pub fn publish_counts(&self) -> (u64, u64) {
        (self.publishes, self.published)
    }

    // The reducer's writers.

    /// A `result_committed` wrote `e` into the outbox.
    pub(super) fn write(&mut self, e: EventId) {
        self.set(e, WRITTEN);
        self.pending.push_back(e);
    }

    /// A `published` record of `e`: whether it is its first.
    pub(super) fn publish(&mut self, e: EventId) -> bool {
        let first = !self.set(e, PUBLISHED);
        self.publishes += 1;
        self.published += first as u64;
        first
    }

    /// `marked_published` with count `c`: the first `c` unmarked events (all, if fewer).
    pub(super) fn mark(&mut self, c: u32) {
        let n = (c as usize).min(self.pending.len());
        self.pending.drain(..n);
    }

    /// The relay marked exactly these events (version 2's `marked_published` with `events`):
    /// each leaves the pending list wherever it is in it.
    pub(super) fn mark_events(&mut self, events: &[EventId]) {
        for e in events {
            if let Some(i) = self.pending.iter().position(|p| p == e) {
                self.pending.remove(i);
            }
        }
    }

    pub(super) fn apply(&mut self, e: EventId, at: SimTime) {
        if self.set(e, APPLIED) {
            let (n, reviews) = (self.applies(e), self.reviews(e));
            self.counts.entry(e.0).or_insert((0, reviews)).0 = n + 1;
        }
        self.reviews.set(e, Some(at));
    }

    pub(super) fn review(&mut self, e: EventId) {
        if self.set(e, REVIEWED) {
            let (n, applies) = (self.reviews(e), self.applies(e));
            self.counts.entry(e.0).or_insert((applies, 0)).1 = n + 1;
        }
        if self.applies(e) <= self.reviews(e) {
            self.reviews.set(e, None);
        }
    }
}

/// The last applied time of each event with a review to come: a window of event ids from the
/// oldest such event (ids are dense in the order the outbox assigns them, and an event is
/// reviewed soon after it is applied), and a map for an event below the window.
#[derive(Clone, Debug, Default, Hash)]
struct PendingReviews {
    window: VecDeque<Option<SimTime>>,
    start: u64,
    behind: BTreeMap<u64, SimTime>,
}

impl PendingReviews {
    fn get(&self, e: EventId) -> Option<SimTime> {
        match e.0.checked_sub(self.start) {
            Some(i) => self.window.get(i as usize).copied().flatten(),
            None => self.behind.get(&e.0).copied(),
        }
    }

    fn set(&mut self, e: EventId, v: Option<SimTime>) {
        if self.window.is_empty() {
            if v.is_none() {
                self.behind.remove(&e.0);
                return;
            }
            // Only forward: every event behind stays below the window.
            self.start = e.0.max(self.start);
        }
        match e.0.checked_sub(self.start) {
            Some(i) => {
                let i = i as usize;
                if i >= self.window.len() {
                    if v.is_none() {
                        return;
                    }
                    self.window.resize(i + 1, None);
                }
                self.window[i] = v;
                while self.window.front().is_some_and(|x| x.is_none()) {
                    self.window.pop_front();
                    self.start += 1;
                }
            }
            None => match v {
                Some(at) => {
                    self.behind.insert(e.0, at);
                }
                None => {
                    self.behind.remove(&e.0);
                }
            },
        }
        debug_assert_eq!(self.get(e), v, "an applied time reads back");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_four_bits_and_exact_counts() {
        let mut e = EventTracks::default();
        let x = EventId(70);
        assert!(!e.published(x) && !e.written(x));
        e.write(x);
        assert!(e.written(x) && e.pending().len() == 1);
        assert!(e.publish(x));
        assert!(!e.publish(x), "a republish is not a first publish");
        assert!(e.publish(EventId(3)));
        assert_eq!(e.publish_counts(), (3, 2));
        assert_eq!((e.applies(x), e.reviews(x)), (0, 0));
        e.apply(x, 10);
        assert_eq!(e.last_applied(x), Some(10));
        e.apply(x, 20);
        assert_eq!((e.applies(x), e.last_applied(x)), (2, Some(20)));
        e.review(x);
        assert_eq!((e.reviews(x), e.last_applied(x)), (1, Some(20)));
        e.review(x);
        assert_eq!((e.reviews(x), e.last_applied(x)), (2, None));
        e.review(x);
        assert_eq!(e.reviews(x), 3);
        e.mark(5);
        assert!(e.pending().is_empty());
    }

    #[test]
    fn applied_times_are_kept_in_and_behind_the_window() {
        let mut p = PendingReviews::default();
        p.set(EventId(5), Some(1));
        p.set(EventId(7), Some(2));
        p.set(EventId(2), Some(3));
        assert_eq!(p.get(EventId(2)), Some(3));
        p.set(EventId(5), None);
        assert_eq!((p.get(EventId(5)), p.get(EventId(7))), (None, Some(2)));
        p.set(EventId(7), None);
        p.set(EventId(2), None);
        assert!(p.window.is_empty() && p.behind.is_empty());
    }
}

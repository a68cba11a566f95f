//! The consumer: applies each business effect once, deduplicating by event id.
//!
//! Owns: the set of event ids already applied, independent of the outbox's state, so a relay
//! republish (not only a queue redelivery) is absorbed at the right place.
//! Beyond the chapter: a bounded memory (`dedupe_window_ms`), as SQS FIFO remembers a
//! deduplication id for five minutes. An id is remembered for the window from its first
//! sighting; a republish that arrives later is not recognised and is applied again.
//! Does not: run the human review it hands the document to (the kernel times it).

use crate::base::ids::{EventId, SimTime};
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::probes::{Probe, Probes};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandleOutcome {
    /// First sight of this event: the effect is applied and the document goes to review.
    Applied,
    /// `{ applied: false, reason: 'duplicate_event' }`.
    DuplicateEvent,
}

#[derive(Clone, Debug, Default, Hash)]
pub struct Consumer {
    /// Seen event ids as a bitset: event ids are dense, so one bit each.
    seen: Vec<u64>,
    /// With a dedupe window: when each event id was first seen, plus one (0: never, or
    /// forgotten). Only used when `window_ms` is set, so the chapter's consumer keeps its bitset.
    seen_at: Vec<SimTime>,
    window_ms: Option<u64>,
    applied: u64,
    /// The bug switches on; the consumer reads `no_consumer_dedupe`.
    bugs: BugSet,
    /// The consumer's decisions taken so far (`vocab::probes`).
    pub probes: Probes,
}

impl Consumer {
    pub fn new(bugs: BugSet) -> Consumer {
        Consumer {
            bugs,
            ..Consumer::default()
        }
    }

    /// A consumer that remembers each event id for `window_ms` after first seeing it.
    pub fn with_window(bugs: BugSet, window_ms: Option<u64>) -> Consumer {
        Consumer {
            window_ms,
            ..Consumer::new(bugs)
        }
    }

    pub fn handle(&mut self, now: SimTime, event: EventId) -> HandleOutcome {
        if let Some(window) = self.window_ms {
            return self.handle_windowed(now, event, window);
        }
        let (word, bit) = ((event.0 / 64) as usize, event.0 % 64);
        if word >= self.seen.len() {
            self.seen.resize((word + 1).next_power_of_two(), 0);
        }
        let seen = self.seen[word] & (1 << bit) != 0;
        if seen && !self.bugs.contains(Bug::NoConsumerDedupe) {
            self.probes.hit(Probe::ConsumerDuplicate);
            return HandleOutcome::DuplicateEvent;
        }
        if !seen {
            self.probes.hit(Probe::ConsumerApplied);
        }
        self.seen[word] |= 1 << bit;
        self.applied += 1;
        HandleOutcome::Applied
    }

    fn handle_windowed(&mut self, now: SimTime, event: EventId, window: u64) -> HandleOutcome {
        let i = event.0 as usize;
        if i >= self.seen_at.len() {
            self.seen_at.resize((i + 1).next_power_of_two(), 0);
        }
        let first = self.seen_at[i];
        // Remembered on [first seen, first seen + window): the window counts from the first
        // sighting and a duplicate does not extend it.
        let remembered = first != 0 && now < first - 1 + window;
        if remembered && !self.bugs.contains(Bug::NoConsumerDedupe) {
            self.probes.hit(Probe::ConsumerWindowDuplicate);
            return HandleOutcome::DuplicateEvent;
        }
        if !remembered {
            self.probes.hit(match first {
                0 => Probe::ConsumerWindowFirst,
                _ => Probe::ConsumerWindowForgotten,
            });
            self.seen_at[i] = now + 1;
        }
        self.applied += 1;
        HandleOutcome::Applied
    }

    pub fn applied_count(&self) -> u64 {
        self.applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The chapter's basic exercise: a second handle of the same eventId is not applied.
    #[test]
    fn a_redelivered_event_is_a_duplicate_and_applied_stays_one() {
        let mut c = Consumer::default();
        assert_eq!(c.handle(0, EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.handle(1, EventId(1)), HandleOutcome::DuplicateEvent);
        assert_eq!(c.applied_count(), 1);
        assert_eq!(c.handle(2, EventId(1000)), HandleOutcome::Applied);
        assert_eq!(c.applied_count(), 2);
        assert_eq!(
            c.handle(u64::MAX / 2, EventId(1)),
            HandleOutcome::DuplicateEvent,
            "the chapter's consumer never forgets"
        );
    }

    // SQS FIFO's five-minute deduplication window, scaled down: inside the window a republish
    // is absorbed; at the window's end the id is forgotten and the duplicate slips through.
    #[test]
    fn a_bounded_window_forgets_an_event_id_at_its_end() {
        let mut c = Consumer::with_window(BugSet::EMPTY, Some(1000));
        assert_eq!(c.handle(500, EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.handle(900, EventId(1)), HandleOutcome::DuplicateEvent);
        assert_eq!(
            c.handle(1499, EventId(1)),
            HandleOutcome::DuplicateEvent,
            "a duplicate does not extend the window"
        );
        assert_eq!(c.handle(1500, EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.handle(2000, EventId(1)), HandleOutcome::DuplicateEvent);
        assert_eq!(c.handle(0, EventId(7)), HandleOutcome::Applied);
        assert_eq!(c.applied_count(), 3);
    }

    #[test]
    fn without_dedupe_the_effect_is_applied_twice() {
        let mut c = Consumer::new(Bug::NoConsumerDedupe.into());
        c.handle(0, EventId(1));
        assert_eq!(c.handle(0, EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.applied_count(), 2);
    }
}

//! The consumer: applies each business effect once, deduplicating by event id.
//!
//! Owns: the set of event ids already applied, independent of the outbox's state, so a relay
//! republish (not only a queue redelivery) is absorbed at the right place.
//! Does not: run the human review it hands the document to (the kernel times it).

use crate::ids::EventId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleOutcome {
    /// First sight of this event: the effect is applied and the document goes to review.
    Applied,
    /// `{ applied: false, reason: 'duplicate_event' }`.
    DuplicateEvent,
}

#[derive(Clone, Debug, Default)]
pub struct Consumer {
    /// Seen event ids as a bitset: event ids are dense, so one bit each.
    seen: Vec<u64>,
    applied: u64,
    /// Bug switch `no_consumer_dedupe`.
    bug_no_dedupe: bool,
}

impl Consumer {
    pub fn new(bug_no_dedupe: bool) -> Consumer {
        Consumer {
            bug_no_dedupe,
            ..Consumer::default()
        }
    }

    pub fn handle(&mut self, event: EventId) -> HandleOutcome {
        let (word, bit) = ((event.0 / 64) as usize, event.0 % 64);
        if word >= self.seen.len() {
            self.seen.resize((word + 1).next_power_of_two(), 0);
        }
        if self.seen[word] & (1 << bit) != 0 && !self.bug_no_dedupe {
            return HandleOutcome::DuplicateEvent;
        }
        self.seen[word] |= 1 << bit;
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
        assert_eq!(c.handle(EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.handle(EventId(1)), HandleOutcome::DuplicateEvent);
        assert_eq!(c.applied_count(), 1);
        assert_eq!(c.handle(EventId(1000)), HandleOutcome::Applied);
        assert_eq!(c.applied_count(), 2);
    }

    #[test]
    fn without_dedupe_the_effect_is_applied_twice() {
        let mut c = Consumer::new(true);
        c.handle(EventId(1));
        assert_eq!(c.handle(EventId(1)), HandleOutcome::Applied);
        assert_eq!(c.applied_count(), 2);
    }
}

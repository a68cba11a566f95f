//! What the checker remembers per outbox event: two bits (published, applied) and the run's
//! publish counts.
//! Does not: judge (the effects family does) or keep anything per key (`key_track.rs`).

use crate::base::ids::EventId;

/// What the checker remembers per outbox event: two bits, published and applied, for the whole
/// run (a republish or a second apply can come until the end), and the run's publish counts.
/// A record naming an event carries its key and job, so nothing else is kept (24 bytes an event
/// before, of which the key and the job were never read back).
#[derive(Clone, Debug, Default)]
pub(super) struct EventTracks {
    /// Two bits an event, 32 events a word: bit `2 * (e % 32)` published, the next applied.
    bits: Vec<u64>,
    /// Every `published` record, a republish included.
    publishes: u64,
    /// Events published at least once.
    published: u64,
}

const EVENT_PUBLISHED: u64 = 1;
const EVENT_APPLIED: u64 = 2;

impl EventTracks {
    pub fn reserve(&mut self, events: usize) {
        self.bits.reserve(events.div_ceil(32));
    }

    /// The word and the shift of an event's two bits, growing the table to hold it.
    fn slot(&mut self, event: EventId) -> (&mut u64, u32) {
        let word = (event.0 / 32) as usize;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        (&mut self.bits[word], 2 * (event.0 % 32) as u32)
    }

    fn get(&self, event: EventId) -> u64 {
        self.bits
            .get((event.0 / 32) as usize)
            .map_or(0, |w| (w >> (2 * (event.0 % 32))) & 3)
    }

    /// A `published` record for the event: whether it is its first.
    pub fn publish(&mut self, event: EventId) -> bool {
        let (word, shift) = self.slot(event);
        let first = *word & (EVENT_PUBLISHED << shift) == 0;
        *word |= EVENT_PUBLISHED << shift;
        self.publishes += 1;
        self.published += first as u64;
        first
    }

    /// An `effect_applied` record for the event: whether it had been applied already.
    pub fn apply(&mut self, event: EventId) -> bool {
        let (word, shift) = self.slot(event);
        let twice = *word & (EVENT_APPLIED << shift) != 0;
        *word |= EVENT_APPLIED << shift;
        twice
    }

    /// Whether the event was ever published.
    pub fn published(&self, event: EventId) -> bool {
        self.get(event) & EVENT_PUBLISHED != 0
    }

    /// `published` records in all, and events published at least once.
    pub fn publish_counts(&self) -> (u64, u64) {
        (self.publishes, self.published)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_two_bits_and_the_counts_are_exact() {
        let mut e = EventTracks::default();
        assert!(!e.published(EventId(70)));
        assert!(e.publish(EventId(70)));
        assert!(
            !e.publish(EventId(70)),
            "a republish is not a first publish"
        );
        assert!(e.publish(EventId(3)));
        assert!(e.published(EventId(70)) && e.published(EventId(3)));
        assert!(!e.published(EventId(71)) && !e.published(EventId(2)));
        assert!(!e.apply(EventId(70)));
        assert!(e.apply(EventId(70)), "a second apply is seen");
        assert!(!e.apply(EventId(71)));
        assert!(e.published(EventId(70)) && !e.published(EventId(71)));
        assert_eq!(e.publish_counts(), (3, 2));
        assert_eq!(e.bits.len(), 3);
    }
}

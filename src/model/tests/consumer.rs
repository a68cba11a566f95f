//! The consumer's memory of event ids across the words of its bitset, pinned.
//! Owns: tests only.

use crate::base::ids::EventId;
use crate::model::consumer::{Consumer, HandleOutcome};

/// Ids that share a bit position in different words (1, 65, 129, ...) are different events.
#[test]
fn every_event_id_is_remembered_apart_from_the_others() {
    let mut c = Consumer::new(crate::vocab::bugs::BugSet::EMPTY);
    for id in [1u64, 65, 129, 2, 64, 128, 200] {
        assert_eq!(
            c.handle(0, EventId(id)),
            HandleOutcome::Applied,
            "event {id}"
        );
    }
    for id in [1u64, 65, 129, 2, 64, 128, 200] {
        assert_eq!(
            c.handle(1, EventId(id)),
            HandleOutcome::DuplicateEvent,
            "event {id} again"
        );
    }
    assert_eq!(c.applied_count(), 7);
}

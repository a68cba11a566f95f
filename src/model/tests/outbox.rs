//! How many results the naive dual write leaves in the results table, the event ids of its
//! direct publishes, and an outbox made with room for its keys keeping its configuration,
//! pinned.
//! Owns: tests only.

use crate::base::ids::{DocumentId, EventId, JobId, TenantId};
use crate::model::outbox::{CommitOutcome, Outbox, OutboxConfig};
use crate::vocab::bugs::Bug;
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

fn key(doc: u32) -> IdempotencyKey {
    IdempotencyKey::new(TenantId(0), DocumentId(doc), 1).unwrap()
}

/// Each new key the naive write stores counts as one result in `results_count`, as a commit's
/// does; a retry of the same key dedupes and counts nothing.
#[test]
fn the_naive_write_counts_each_new_result_once() {
    let mut o = Outbox::default();
    o.naive_write_result(0, key(0), PayloadHash(5));
    assert_eq!(o.results_count(), 1);
    o.naive_write_result(1, key(1), PayloadHash(6));
    assert_eq!(o.results_count(), 2);
    assert!(matches!(
        o.naive_write_result(1, key(1), PayloadHash(6)),
        CommitOutcome::Deduped { .. }
    ));
    assert_eq!(o.results_count(), 2);
}

/// The naive write's direct publish takes a fresh event id, never one the outbox handed out.
#[test]
fn a_direct_publish_takes_a_fresh_event_id() {
    let key = IdempotencyKey::new(TenantId(0), DocumentId(1), 1).unwrap();
    let mut o = Outbox::default();
    assert_eq!(
        o.commit(0, key, JobId(0), PayloadHash(5), 1),
        CommitOutcome::Committed {
            event: Some(EventId(1))
        }
    );
    assert_eq!(o.naive_publish_id(), EventId(2));
    assert_eq!(o.naive_publish_id(), EventId(3));
}

/// An outbox made with room for its keys (what the kernel builds) runs with the configuration
/// it was given: with `no_idempotency`, a second commit of a key writes a new row and event
/// instead of returning the first. (Mutant killed: `Outbox::with_capacity` answering
/// `Outbox::default()`, which dropped the configuration: the bug switches and the retention.)
#[test]
fn an_outbox_made_with_capacity_keeps_its_configuration() {
    let key = IdempotencyKey::new(TenantId(0), DocumentId(1), 1).unwrap();
    let config = OutboxConfig {
        bugs: Bug::NoIdempotency.into(),
        ..OutboxConfig::default()
    };
    let mut o = Outbox::with_capacity(config, 4);
    for event in [1, 2] {
        assert_eq!(
            o.commit(0, key, JobId(0), PayloadHash(5), 1),
            CommitOutcome::Committed {
                event: Some(EventId(event))
            }
        );
    }
}

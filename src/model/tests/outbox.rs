//! How many results the naive dual write leaves in the results table, pinned.
//! Owns: tests only.

use crate::ids::{DocumentId, JobId, TenantId};
use crate::model::outbox::{CommitOutcome, Outbox};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;

/// Each new key the naive write stores counts as one result in `results_count`, as a commit's
/// does; a retry of the same key dedupes and counts nothing.
#[test]
fn the_naive_write_counts_each_new_result_once() {
    let key = |doc| IdempotencyKey::new(TenantId(0), DocumentId(doc), 1).unwrap();
    let mut o = Outbox::default();
    o.naive_write_result(key(1), JobId(0), PayloadHash(5), 1);
    assert_eq!(o.results_count(), 1);
    o.naive_write_result(key(2), JobId(1), PayloadHash(6), 1);
    assert_eq!(o.results_count(), 2);
    assert!(matches!(
        o.naive_write_result(key(2), JobId(1), PayloadHash(6), 2),
        CommitOutcome::Deduped { .. }
    ));
    assert_eq!(o.results_count(), 2);
}

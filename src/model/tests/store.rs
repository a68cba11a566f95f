//! The external programs' store: transactions, unique constraints and what a commit reports.
//! Owns: tests only.

use crate::model::store::{Committed, OutboxRow, Pk, ResultRow, Row, Store, StoreError, Table};

fn result(key: &str, payload: u64, event: Option<u64>) -> Row {
    Row::Result(ResultRow {
        key: key.into(),
        job: 0,
        payload,
        output: 7,
        event,
    })
}

fn outbox(event: u64, key: &str) -> Row {
    Row::Outbox(OutboxRow {
        event,
        key: key.into(),
        job: 0,
        output: 7,
        published: false,
    })
}

/// The chapter's commit: result and event in one transaction, both or neither.
fn commit_result(s: &mut Store, owner: u32, key: &str) -> Result<Committed, StoreError> {
    let tx = s.begin(owner);
    if s.get(tx, Table::Results, Pk::Text(key.into()))?.is_some() {
        return s.commit(tx);
    }
    let event = s.next_id(Table::Outbox);
    s.insert(tx, outbox(event, key), false)?;
    s.insert(tx, result(key, 1, Some(event)), false)?;
    s.commit(tx)
}

#[test]
fn a_transaction_commits_whole_and_a_second_finds_the_row() {
    let mut s = Store::new();
    let first = commit_result(&mut s, 0, "acme:doc-0:v1").unwrap();
    assert_eq!(first.inserted.len(), 2);
    assert!(first.found.is_empty());
    assert_eq!(s.unpublished(), 1);
    let second = commit_result(&mut s, 1, "acme:doc-0:v1").unwrap();
    assert!(second.inserted.is_empty());
    assert_eq!(second.found, vec![result("acme:doc-0:v1", 1, Some(1))]);
    assert!(second.touched(Table::Results));
}

#[test]
fn an_uncommitted_transaction_leaves_nothing_and_is_invisible_to_others() {
    let mut s = Store::new();
    let tx = s.begin(0);
    s.insert(tx, result("acme:doc-0:v1", 1, None), false)
        .unwrap();
    let other = s.begin(1);
    assert_eq!(
        s.get(other, Table::Results, Pk::Text("acme:doc-0:v1".into())),
        Ok(None)
    );
    // Its own write it sees.
    assert!(s
        .get(tx, Table::Results, Pk::Text("acme:doc-0:v1".into()))
        .unwrap()
        .is_some());
    s.abort_owner(0);
    assert_eq!(s.commit(tx), Err(StoreError::NoTransaction(tx)));
    assert_eq!(s.rows(Table::Results).count(), 0);
}

#[test]
fn two_inserts_of_one_key_race_and_the_second_commit_is_a_unique_violation() {
    let mut s = Store::new();
    let (a, b) = (s.begin(0), s.begin(1));
    s.insert(a, result("acme:doc-0:v1", 1, None), false)
        .unwrap();
    s.insert(b, result("acme:doc-0:v1", 1, None), false)
        .unwrap();
    assert!(s.commit(a).is_ok());
    assert!(matches!(
        s.commit(b),
        Err(StoreError::UniqueViolation {
            table: Table::Results,
            ..
        })
    ));
    // An insert over a committed key fails at once, and rolls the transaction back.
    let c = s.begin(2);
    assert_eq!(
        s.insert(c, result("acme:doc-0:v1", 2, None), false)
            .unwrap_err()
            .code(),
        "unique_violation"
    );
    assert_eq!(s.commit(c), Err(StoreError::NoTransaction(c)));
    // ON CONFLICT DO NOTHING returns the row instead, as a read.
    let d = s.begin(3);
    let (inserted, row) = s.insert(d, result("acme:doc-0:v1", 2, None), true).unwrap();
    assert!(!inserted);
    assert_eq!(row, result("acme:doc-0:v1", 1, None));
    assert_eq!(s.commit(d).unwrap().found, vec![row]);
}

#[test]
fn a_write_after_a_read_that_changed_fails_to_commit() {
    let mut s = Store::new();
    let e = s.next_id(Table::Outbox);
    let setup = s.begin(0);
    s.insert(setup, outbox(e, "acme:doc-0:v1"), false).unwrap();
    s.commit(setup).unwrap();
    let (a, b) = (s.begin(0), s.begin(1));
    assert_eq!(s.mark_published(a, e), Ok(true));
    assert_eq!(s.mark_published(b, e), Ok(true));
    assert_eq!(s.commit(a).unwrap().published, vec![e]);
    assert!(matches!(
        s.commit(b),
        Err(StoreError::SerializationFailure { .. })
    ));
    assert_eq!(s.unpublished(), 0);
    // Marking a published row changes nothing.
    let c = s.begin(0);
    assert_eq!(s.mark_published(c, e), Ok(false));
    assert!(s.commit(c).unwrap().published.is_empty());
}

#[test]
fn scans_see_own_inserts_and_skip_published_rows_when_asked() {
    let mut s = Store::new();
    for k in 0..3 {
        let e = s.next_id(Table::Outbox);
        let tx = s.begin(0);
        s.insert(tx, outbox(e, &format!("acme:doc-{k}:v1")), false)
            .unwrap();
        s.commit(tx).unwrap();
    }
    let tx = s.begin(1);
    s.mark_published(tx, 2).unwrap();
    let e = s.next_id(Table::Outbox);
    s.insert(tx, outbox(e, "acme:doc-9:v1"), false).unwrap();
    let ids: Vec<Pk> = s
        .scan(tx, Table::Outbox, true, 10)
        .unwrap()
        .iter()
        .map(Row::pk)
        .collect();
    assert_eq!(ids, vec![Pk::Id(1), Pk::Id(3), Pk::Id(4)]);
    assert_eq!(s.scan(tx, Table::Outbox, false, 2).unwrap().len(), 2);
}

#[test]
fn only_outbox_rows_are_deleted() {
    let mut s = Store::new();
    let e = s.next_id(Table::Outbox);
    let tx = s.begin(0);
    s.insert(tx, outbox(e, "acme:doc-0:v1"), false).unwrap();
    s.commit(tx).unwrap();
    let tx = s.begin(0);
    assert_eq!(s.delete(tx, Table::Outbox, Pk::Id(e)), Ok(true));
    let done = s.commit(tx).unwrap();
    assert_eq!(done.deleted.len(), 1);
    assert_eq!(s.unpublished(), 0);
    let tx = s.begin(0);
    assert_eq!(
        s.delete(tx, Table::ConsumerSeen, Pk::Id(1))
            .unwrap_err()
            .code(),
        "not_allowed"
    );
}

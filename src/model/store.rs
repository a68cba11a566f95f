//! The store an external program writes through (docs/worker-protocol.md): the results table,
//! the outbox, the consumer's dedupe table and the effects table, in transactions that commit
//! whole or not at all, with the unique constraints a real database enforces.
//!
//! Owns: the four tables and their primary keys (`results.key`, `outbox.event` and
//! `effects.id` from sequences, `consumer_seen.event`), which writes each table takes (results,
//! consumer_seen and effects are insert-only; an outbox row can be marked published or
//! deleted), transactions (a program's reads see the committed rows and its own writes; a write
//! that would break a unique constraint aborts the transaction; a writing transaction whose
//! rows read were changed by another transaction since fails to commit, so a read-then-write is
//! serializable), and what a commit changed, for the kernel to record.
//! Does not: know which program owns a transaction or what a commit means in the history
//! (`sim::program` records it), or check that a job or key a row names exists.

use std::collections::BTreeMap;

/// The tables, in the order their rows are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Results,
    Outbox,
    ConsumerSeen,
    Effects,
}

impl Table {
    pub const ALL: [Table; 4] = [
        Table::Results,
        Table::Outbox,
        Table::ConsumerSeen,
        Table::Effects,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Results => "results",
            Table::Outbox => "outbox",
            Table::ConsumerSeen => "consumer_seen",
            Table::Effects => "effects",
        }
    }

    pub fn parse(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether the primary key is text (`results.key`) rather than a number.
    pub fn text_key(self) -> bool {
        self == Table::Results
    }
}

/// A primary key: `results` by its idempotency key, the others by a number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pk {
    Text(String),
    Id(u64),
}

/// A result row: the idempotency key, the job that committed it, the payload it was committed
/// with, the model's output, and the outbox event written with it (if the program wrote one).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResultRow {
    pub key: String,
    pub job: u32,
    pub payload: u64,
    pub output: u64,
    pub event: Option<u64>,
}

/// An outbox row: an event to publish (its id from the outbox's sequence).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OutboxRow {
    pub event: u64,
    pub key: String,
    pub job: u32,
    pub output: u64,
    pub published: bool,
}

/// An effect the consumer applied (a review requested), its id from the effects' sequence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EffectRow {
    pub id: u64,
    pub event: u64,
    pub key: String,
    pub job: u32,
    pub output: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Row {
    Result(ResultRow),
    Outbox(OutboxRow),
    /// `consumer_seen`: an event id the consumer has handled.
    Seen(u64),
    Effect(EffectRow),
}

impl Row {
    pub fn table(&self) -> Table {
        match self {
            Row::Result(_) => Table::Results,
            Row::Outbox(_) => Table::Outbox,
            Row::Seen(_) => Table::ConsumerSeen,
            Row::Effect(_) => Table::Effects,
        }
    }

    pub fn pk(&self) -> Pk {
        match self {
            Row::Result(r) => Pk::Text(r.key.clone()),
            Row::Outbox(r) => Pk::Id(r.event),
            Row::Seen(e) => Pk::Id(*e),
            Row::Effect(r) => Pk::Id(r.id),
        }
    }
}

/// Why a store call failed. The transaction is gone after every error but `NoSuchRow`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreError {
    /// An insert under a primary key that exists: the transaction is rolled back.
    UniqueViolation { table: Table, key: Pk },
    /// A writing transaction read a row another transaction has changed since: rolled back.
    SerializationFailure { table: Table, key: Pk },
    /// No open transaction with that number.
    NoTransaction(u32),
    /// The write is not one this table takes (results, consumer_seen and effects are
    /// insert-only): the transaction is rolled back.
    NotAllowed { table: Table, what: &'static str },
}

impl StoreError {
    /// The error code a program sees.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::UniqueViolation { .. } => "unique_violation",
            StoreError::SerializationFailure { .. } => "serialization_failure",
            StoreError::NoTransaction(_) => "no_transaction",
            StoreError::NotAllowed { .. } => "not_allowed",
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = |k: &Pk| match k {
            Pk::Text(s) => format!("{s:?}"),
            Pk::Id(n) => n.to_string(),
        };
        match self {
            StoreError::UniqueViolation { table, key: k } => write!(
                f,
                "duplicate key {} violates the primary key of {}; the transaction is rolled back",
                key(k),
                table.name()
            ),
            StoreError::SerializationFailure { table, key: k } => write!(
                f,
                "{} row {} changed since this transaction read it; the transaction is rolled back",
                table.name(),
                key(k)
            ),
            StoreError::NoTransaction(tx) => write!(f, "no open transaction {tx}"),
            StoreError::NotAllowed { table, what } => write!(
                f,
                "{} takes no {what}; the transaction is rolled back",
                table.name()
            ),
        }
    }
}

/// A write of a transaction, applied at commit in the order it was made.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Write {
    Insert(Row),
    /// Outbox row `event` marked published.
    Publish(u64),
    /// Outbox row `event` deleted.
    Delete(u64),
}

impl Write {
    fn touches(&self, table: Table, pk: &Pk) -> bool {
        match self {
            Write::Insert(r) => r.table() == table && &r.pk() == pk,
            Write::Publish(e) | Write::Delete(e) => table == Table::Outbox && *pk == Pk::Id(*e),
        }
    }
}

/// A row a transaction read: its version then (0: absent), and the row.
#[derive(Clone, Debug, Hash)]
struct Read {
    table: Table,
    pk: Pk,
    version: u64,
    row: Option<Row>,
}

#[derive(Clone, Debug, Hash)]
struct Tx {
    owner: u32,
    reads: Vec<Read>,
    writes: Vec<Write>,
}

/// What a commit changed and what the transaction had found, in the order it happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Committed {
    pub inserted: Vec<Row>,
    /// Outbox rows marked published by this commit (they were not before).
    pub published: Vec<u64>,
    /// Outbox rows deleted, as they were.
    pub deleted: Vec<OutboxRow>,
    /// Committed rows the transaction read (by a read, or an insert that did nothing), first
    /// read first, each once.
    pub found: Vec<Row>,
}

impl Committed {
    /// Whether the transaction read or wrote `table`.
    pub fn touched(&self, table: Table) -> bool {
        self.inserted.iter().any(|r| r.table() == table)
            || self.found.iter().any(|r| r.table() == table)
            || (table == Table::Outbox && !(self.published.is_empty() && self.deleted.is_empty()))
    }
}

/// A committed row and its version (the commit that last wrote it).
#[derive(Clone, Debug, Hash)]
struct Stored {
    row: Row,
    version: u64,
}

#[derive(Clone, Debug, Default, Hash)]
pub struct Store {
    tables: [BTreeMap<Pk, Stored>; 4],
    /// The last value each sequence handed out: outbox events, effects.
    last_event: u64,
    last_effect: u64,
    /// Commits so far: a row's version is the commit that wrote it.
    commits: u64,
    open: BTreeMap<u32, Tx>,
    last_tx: u32,
    unpublished: u64,
}

impl Store {
    pub fn new() -> Store {
        Store::default()
    }

    fn table(&self, t: Table) -> &BTreeMap<Pk, Stored> {
        &self.tables[t as usize]
    }

    /// Outbox rows not yet marked published.
    pub fn unpublished(&self) -> u64 {
        self.unpublished
    }

    /// The committed row, if any.
    pub fn row(&self, table: Table, pk: &Pk) -> Option<&Row> {
        self.table(table).get(pk).map(|s| &s.row)
    }

    /// Committed rows of a table, in key order.
    pub fn rows(&self, table: Table) -> impl Iterator<Item = &Row> {
        self.table(table).values().map(|s| &s.row)
    }

    /// The last outbox event id the sequence handed out.
    pub fn last_event(&self) -> u64 {
        self.last_event
    }

    /// Outbox rows open transaction `tx` marks published (0 for no such transaction).
    pub fn marks(&self, tx: u32) -> usize {
        self.open.get(&tx).map_or(0, |t| {
            t.writes
                .iter()
                .filter(|w| matches!(w, Write::Publish(_)))
                .count()
        })
    }

    /// Starts a transaction for `owner` and returns its number.
    pub fn begin(&mut self, owner: u32) -> u32 {
        self.last_tx += 1;
        self.open.insert(
            self.last_tx,
            Tx {
                owner,
                reads: Vec::new(),
                writes: Vec::new(),
            },
        );
        self.last_tx
    }

    /// The owner of open transaction `tx`.
    pub fn owner(&self, tx: u32) -> Option<u32> {
        self.open.get(&tx).map(|t| t.owner)
    }

    /// Rolls back every open transaction of `owner` (its process died).
    pub fn abort_owner(&mut self, owner: u32) {
        self.open.retain(|_, t| t.owner != owner);
    }

    pub fn rollback(&mut self, tx: u32) -> Result<(), StoreError> {
        self.open
            .remove(&tx)
            .map(|_| ())
            .ok_or(StoreError::NoTransaction(tx))
    }

    fn tx(&mut self, tx: u32) -> Result<&mut Tx, StoreError> {
        self.open.get_mut(&tx).ok_or(StoreError::NoTransaction(tx))
    }

    /// The row as transaction `tx` sees it: committed, then its own writes applied.
    fn view(&self, t: &Tx, table: Table, pk: &Pk) -> (u64, Option<Row>) {
        let stored = self.table(table).get(pk);
        let version = stored.map_or(0, |s| s.version);
        let mut row = stored.map(|s| s.row.clone());
        for w in t.writes.iter().filter(|w| w.touches(table, pk)) {
            match w {
                Write::Insert(r) => row = Some(r.clone()),
                Write::Publish(_) => {
                    if let Some(Row::Outbox(o)) = row.as_mut() {
                        o.published = true;
                    }
                }
                Write::Delete(_) => row = None,
            }
        }
        (version, row)
    }

    fn note_read(&mut self, tx: u32, table: Table, pk: Pk) -> Result<Option<Row>, StoreError> {
        let t = self.open.get(&tx).ok_or(StoreError::NoTransaction(tx))?;
        let (version, row) = self.view(t, table, &pk);
        // What the transaction found committed (not its own writes).
        let committed = self.row(table, &pk).cloned();
        let t = self.tx(tx)?;
        if !t.reads.iter().any(|r| r.table == table && r.pk == pk) {
            t.reads.push(Read {
                table,
                pk,
                version,
                row: committed,
            });
        }
        Ok(row)
    }

    /// `SELECT ... WHERE pk = $1`.
    pub fn get(&mut self, tx: u32, table: Table, pk: Pk) -> Result<Option<Row>, StoreError> {
        self.note_read(tx, table, pk)
    }

    /// Every row of `table` the transaction sees (only unpublished ones of the outbox when
    /// `unpublished`), in key order, at most `limit`.
    pub fn scan(
        &mut self,
        tx: u32,
        table: Table,
        unpublished: bool,
        limit: usize,
    ) -> Result<Vec<Row>, StoreError> {
        let t = self.open.get(&tx).ok_or(StoreError::NoTransaction(tx))?;
        let mut keys: Vec<Pk> = self.table(table).keys().cloned().collect();
        for w in &t.writes {
            if let Write::Insert(r) = w {
                if r.table() == table {
                    keys.push(r.pk());
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut out = Vec::new();
        for pk in keys {
            if out.len() >= limit {
                break;
            }
            let (_, row) = self.view(t, table, &pk);
            match row {
                Some(Row::Outbox(o)) if unpublished && o.published => {}
                Some(r) => out.push(r),
                None => {}
            }
        }
        Ok(out)
    }

    /// Hands out the next value of the outbox's event sequence or the effects' id sequence (a
    /// sequence is not transactional: a rolled-back insert leaves a gap).
    pub fn next_id(&mut self, table: Table) -> u64 {
        match table {
            Table::Outbox => {
                self.last_event += 1;
                self.last_event
            }
            _ => {
                self.last_effect += 1;
                self.last_effect
            }
        }
    }

    /// `INSERT`. With `skip_existing` (`ON CONFLICT DO NOTHING`), an existing row is returned
    /// instead (as a read); otherwise the insert fails with `UniqueViolation` and the
    /// transaction is rolled back. Returns `(inserted, the row now under the key)`.
    pub fn insert(
        &mut self,
        tx: u32,
        row: Row,
        skip_existing: bool,
    ) -> Result<(bool, Row), StoreError> {
        let (table, pk) = (row.table(), row.pk());
        let t = self.open.get(&tx).ok_or(StoreError::NoTransaction(tx))?;
        let (_, existing) = self.view(t, table, &pk);
        if let Some(existing) = existing {
            if skip_existing {
                self.note_read(tx, table, pk)?;
                return Ok((false, existing));
            }
            self.open.remove(&tx);
            return Err(StoreError::UniqueViolation { table, key: pk });
        }
        self.tx(tx)?.writes.push(Write::Insert(row.clone()));
        Ok((true, row))
    }

    /// `UPDATE outbox SET published = true WHERE event = $1`: whether a row was changed.
    pub fn mark_published(&mut self, tx: u32, event: u64) -> Result<bool, StoreError> {
        match self.note_read(tx, Table::Outbox, Pk::Id(event))? {
            Some(Row::Outbox(o)) if !o.published => {
                self.tx(tx)?.writes.push(Write::Publish(event));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// `DELETE FROM outbox WHERE event = $1`: whether a row was deleted. Other tables take no
    /// delete.
    pub fn delete(&mut self, tx: u32, table: Table, pk: Pk) -> Result<bool, StoreError> {
        let Pk::Id(event) = pk else {
            return self.refuse(tx, table, "delete");
        };
        if table != Table::Outbox {
            return self.refuse(tx, table, "delete");
        }
        if self.note_read(tx, table, Pk::Id(event))?.is_none() {
            return Ok(false);
        }
        self.tx(tx)?.writes.push(Write::Delete(event));
        Ok(true)
    }

    fn refuse<T>(&mut self, tx: u32, table: Table, what: &'static str) -> Result<T, StoreError> {
        self.open.remove(&tx);
        Err(StoreError::NotAllowed { table, what })
    }

    /// `COMMIT`: every write, or none. A writing transaction fails if a row it read changed
    /// since, or if a key it inserted was inserted by another transaction meanwhile.
    pub fn commit(&mut self, tx: u32) -> Result<Committed, StoreError> {
        let t = self.open.remove(&tx).ok_or(StoreError::NoTransaction(tx))?;
        // As a database reports it: a key inserted meanwhile is a unique violation first.
        for w in &t.writes {
            if let Write::Insert(r) = w {
                if self.table(r.table()).contains_key(&r.pk()) {
                    return Err(StoreError::UniqueViolation {
                        table: r.table(),
                        key: r.pk(),
                    });
                }
            }
        }
        if !t.writes.is_empty() {
            for r in &t.reads {
                let now = self.table(r.table).get(&r.pk).map_or(0, |s| s.version);
                if now != r.version {
                    return Err(StoreError::SerializationFailure {
                        table: r.table,
                        key: r.pk.clone(),
                    });
                }
            }
        }
        let mut done = Committed {
            found: t.reads.iter().filter_map(|r| r.row.clone()).collect(),
            ..Committed::default()
        };
        self.commits += 1;
        for w in t.writes {
            self.apply(w, &mut done);
        }
        Ok(done)
    }

    fn apply(&mut self, w: Write, done: &mut Committed) {
        let version = self.commits;
        match w {
            Write::Insert(row) => {
                if let Row::Outbox(o) = &row {
                    self.unpublished += (!o.published) as u64;
                }
                let (table, pk) = (row.table(), row.pk());
                done.inserted.push(row.clone());
                self.tables[table as usize].insert(pk, Stored { row, version });
            }
            Write::Publish(event) => {
                let slot = self.tables[Table::Outbox as usize].get_mut(&Pk::Id(event));
                if let Some(Stored {
                    row: Row::Outbox(o),
                    version: v,
                }) = slot
                {
                    if !o.published {
                        o.published = true;
                        *v = version;
                        self.unpublished -= 1;
                        done.published.push(event);
                    }
                }
            }
            Write::Delete(event) => {
                let gone = self.tables[Table::Outbox as usize].remove(&Pk::Id(event));
                if let Some(Stored {
                    row: Row::Outbox(o),
                    ..
                }) = gone
                {
                    self.unpublished -= (!o.published) as u64;
                    done.deleted.push(o);
                }
            }
        }
    }
}

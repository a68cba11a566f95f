//! A unique index on idempotency keys: each distinct key gets a dense slot number.
//!
//! Owns: key → slot lookups for whoever keeps per-key state in a flat `Vec` (the queue's unique
//! index on keys, the outbox's results table, the checker's per-key tracks). Slots are handed
//! out 0, 1, 2, ... in insertion order, so iterating them is deterministic.
//! Does not: know what a slot means to its owner.
//!
//! Why not a hash map: at a million keys a `HashMap<u64, _>` costs two cache misses and ~40 bytes
//! a key, and it was the top of the profile. Keys are (tenant, document, version) and documents
//! are numbered densely (`doc-N` is document N), so the index is a vector of chain heads by
//! document plus one 16-byte entry a key; a document's chain holds its tenants and versions,
//! usually one. Documents numbered far beyond the keys seen so far (a scenario that names
//! `doc-2000000000`) go to a small ordered map instead of growing the vector.

use crate::vocab::key::IdempotencyKey;
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: IdempotencyKey,
    next: u32,
}

#[derive(Clone, Debug, Default)]
pub struct KeyIndex {
    /// Chain head by document number, for documents below `heads.len()`.
    heads: Vec<u32>,
    /// Chain heads of documents at or above `heads.len()`.
    far: BTreeMap<u32, u32>,
    entries: Vec<Entry>,
}

impl KeyIndex {
    pub fn with_capacity(keys: usize) -> KeyIndex {
        KeyIndex {
            heads: Vec::with_capacity(keys),
            far: BTreeMap::new(),
            entries: Vec::with_capacity(keys),
        }
    }

    /// Number of distinct keys (= the next slot).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key of a slot.
    #[inline]
    pub fn key(&self, slot: u32) -> IdempotencyKey {
        self.entries[slot as usize].key
    }

    #[inline]
    fn head(&self, document: u32) -> u32 {
        match self.heads.get(document as usize) {
            Some(&h) => h,
            None => self.far.get(&document).copied().unwrap_or(NONE),
        }
    }

    /// The slot of `key`, if it was inserted.
    #[inline]
    pub fn get(&self, key: &IdempotencyKey) -> Option<u32> {
        let mut at = self.head(key.document.0);
        while at != NONE {
            let e = &self.entries[at as usize];
            if e.key == *key {
                return Some(at);
            }
            at = e.next;
        }
        None
    }

    /// The slot of `key`, inserting it if new: `(slot, true)` when it was new.
    #[inline]
    pub fn insert(&mut self, key: IdempotencyKey) -> (u32, bool) {
        if let Some(slot) = self.get(&key) {
            return (slot, false);
        }
        let slot = self.entries.len() as u32;
        assert!(slot != NONE, "more than 2^32 - 1 distinct keys");
        let d = key.document.0;
        self.grow_for(d);
        let head = match self.heads.get_mut(d as usize) {
            Some(h) => std::mem::replace(h, slot),
            None => self.far.insert(d, slot).unwrap_or(NONE),
        };
        self.entries.push(Entry { key, next: head });
        (slot, true)
    }

    /// Grows the dense part to cover `document` if that keeps it proportionate to the keys
    /// held (at most four heads a key, plus 4096), moving far documents it now covers.
    fn grow_for(&mut self, document: u32) {
        let d = document as usize;
        if d < self.heads.len() || d >= 4 * (self.entries.len() + 1) + 4096 {
            return;
        }
        // Grow by half, but not past the capacity reserved for the run's keys unless the
        // document needs it: the heads up to `new_len` are written, so they are resident.
        let mut grown = self.heads.len() * 3 / 2;
        if d < self.heads.capacity() {
            grown = grown.min(self.heads.capacity());
        }
        let new_len = (d + 1).max(grown);
        self.heads.reserve_exact(new_len - self.heads.len());
        self.heads.resize(new_len, NONE);
        let keep = self.far.split_off(&(new_len as u32));
        for (doc, head) in std::mem::replace(&mut self.far, keep) {
            self.heads[doc as usize] = head;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{DocumentId, TenantId};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn key(t: Option<u16>, d: u32, v: u32) -> IdempotencyKey {
        IdempotencyKey {
            tenant: t.map(TenantId),
            document: DocumentId(d),
            version: v,
        }
    }

    #[test]
    fn slots_are_dense_in_insertion_order_and_tenants_and_versions_differ() {
        let mut ix = KeyIndex::default();
        assert_eq!(ix.insert(key(Some(0), 5, 1)), (0, true));
        assert_eq!(ix.insert(key(Some(1), 5, 1)), (1, true));
        assert_eq!(ix.insert(key(None, 5, 1)), (2, true));
        assert_eq!(ix.insert(key(Some(0), 5, 2)), (3, true));
        assert_eq!(ix.insert(key(Some(1), 5, 1)), (1, false));
        assert_eq!(ix.get(&key(Some(0), 6, 1)), None);
        assert_eq!(ix.key(3), key(Some(0), 5, 2));
        assert_eq!(ix.len(), 4);
    }

    #[test]
    fn far_documents_do_not_grow_the_vector_and_move_when_it_catches_up() {
        let mut ix = KeyIndex::default();
        let far = key(Some(0), 2_000_000_000, 1);
        assert_eq!(ix.insert(far), (0, true));
        assert!(ix.heads.len() < 10_000);
        let near = key(Some(0), 9_000, 1);
        ix.insert(near);
        for d in 0..20_000 {
            ix.insert(key(Some(1), d, 1));
        }
        assert_eq!(ix.get(&far), Some(0));
        assert_eq!(ix.get(&near), Some(1));
        assert_eq!(ix.insert(near), (1, false));
    }

    proptest! {
        /// The index agrees with a hash map on any sequence of inserts and lookups.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(
            (0u16..3, prop_oneof![0u32..50, 1_000_000u32..1_000_010, 3_000_000_000u32..3_000_000_003], 1u32..3, any::<bool>()),
            0..400,
        )) {
            let mut ix = KeyIndex::default();
            let mut map: HashMap<IdempotencyKey, u32> = HashMap::new();
            for (t, d, v, insert) in ops {
                let k = key(if t == 2 { None } else { Some(t) }, d, v);
                if insert {
                    let n = map.len() as u32;
                    let want = match map.get(&k) { Some(s) => (*s, false), None => { map.insert(k, n); (n, true) } };
                    prop_assert_eq!(ix.insert(k), want);
                } else {
                    prop_assert_eq!(ix.get(&k), map.get(&k).copied());
                }
            }
        }
    }
}

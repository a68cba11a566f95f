//! A unique index on idempotency keys: each distinct key gets a dense slot number.
//!
//! Owns: key → slot lookups for whoever keeps per-key state in a flat `Vec` (the queue's unique
//! index on keys, whose slots the outbox's results table shares, and the checker's per-key
//! tracks). Slots are handed out 0, 1, 2, ... in insertion order, so iterating them is
//! deterministic.
//! Does not: know what a slot means to its owner.
//!
//! Why not a hash map: at a million keys a `HashMap<u64, _>` costs two cache misses and ~40 bytes
//! a key, and it was the top of the profile. Keys are (tenant, document, version) and documents
//! are numbered densely (`doc-N` is document N), so the index is each slot's key in 4 bytes, plus
//! a vector of heads by document naming the first key of each document, each a 16-bit offset
//! from the slot of the first key of its block of 64 documents (a key's slot comes after those of
//! the keys before it, so the offsets are small: one that is not goes to a side map by
//! document): about 6 bytes a key (4-byte heads, 8 bytes a key, before). A
//! slot's 4 bytes are its document as an offset from the slot (24 bits: a generated arrival's
//! document is its arrival's number, and its slot that less the arrivals that made no new key)
//! and a code for its (tenant, version) pair (8 bits, the pairs numbered as first seen: a run's
//! tenants times its versions, a handful); a key whose offset or pair does not fit keeps its
//! whole packed key (`IdempotencyKey::packed`, 64 bits, exact) in a side map by slot. A
//! document's other keys (its other tenants and versions: a reprocess, a tenant reusing a
//! document name) go to a hash map by packed key. Documents numbered far beyond the keys seen so
//! far (a scenario that names `doc-2000000000`) go to a small ordered map instead of growing the
//! vector.

use crate::base::state_hash::StateMap;
use crate::vocab::key::IdempotencyKey;
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;

/// A slot's key as stored: the pair code in the high 8 bits, the document's offset from the
/// slot (wrapping, read as a signed 24-bit number) in the low 24.
const OFFSET_BITS: u32 = 24;
const OFFSET_MASK: u32 = (1 << OFFSET_BITS) - 1;
/// The pair code of a key kept whole in `whole`.
const WHOLE: u32 = 0xFF;

/// Documents a head base is kept for.
const HEAD_BLOCK: usize = 64;
/// A document without a key, in `heads`.
const NO_HEAD: u16 = u16::MAX;
/// A head in `apart_heads`.
const APART_HEAD: u16 = u16::MAX - 1;

#[derive(Clone, Debug, Default, Hash)]
pub struct KeyIndex {
    /// The first key's slot by document number, for documents below `heads.len()`: its offset
    /// from its block's base (`NO_HEAD`: no key; `APART_HEAD`: see `apart_heads`).
    heads: Vec<u16>,
    /// By block of `HEAD_BLOCK` documents: the slot of the first of its documents' first keys
    /// to be inserted (`NONE` while none is).
    bases: Vec<u32>,
    /// First keys' slots of documents below `heads.len()` whose offset does not fit 16 bits.
    apart_heads: StateMap<u32, u32>,
    /// First keys' slots of documents at or above `heads.len()`.
    far: BTreeMap<u32, u32>,
    /// The key of each slot, 4 bytes (see `WHOLE`, `OFFSET_BITS`).
    keys: Vec<u32>,
    /// The (tenant, version) pairs by code: the packed key's tenant and version bits.
    pairs: Vec<u64>,
    /// Codes of the pairs, by the packed key's tenant and version bits.
    codes: StateMap<u64, u32>,
    /// The packed keys of slots whose key did not fit 4 bytes, by slot.
    whole: StateMap<u32, u64>,
    /// Slots of keys that are not their document's first, by packed key.
    others: StateMap<u64, u32>,
}

/// The tenant and version bits of a packed key (`IdempotencyKey::packed`).
const PAIR_BITS: u64 = 0xFFFF_0000_0000_FFFF;

impl KeyIndex {
    pub fn with_capacity(keys: usize) -> KeyIndex {
        KeyIndex {
            heads: Vec::with_capacity(keys),
            bases: Vec::with_capacity(keys.div_ceil(HEAD_BLOCK)),
            keys: Vec::with_capacity(keys),
            ..KeyIndex::default()
        }
    }

    /// Number of distinct keys (= the next slot).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key of a slot.
    #[inline]
    pub fn key(&self, slot: u32) -> IdempotencyKey {
        IdempotencyKey::unpack(self.packed(slot))
    }

    /// The packed key of a slot.
    #[inline]
    fn packed(&self, slot: u32) -> u64 {
        let k = self.keys[slot as usize];
        match k >> OFFSET_BITS {
            WHOLE => self.whole[&slot],
            code => {
                // The offset, sign-extended from 24 bits.
                let offset = (((k & OFFSET_MASK) << 8) as i32 >> 8) as u32;
                let document = slot.wrapping_add(offset) as u64;
                self.pairs[code as usize] | document << 16
            }
        }
    }

    /// The first key's slot of `document` (`NONE` if it has no key).
    #[inline]
    fn head(&self, document: u32) -> u32 {
        match self.heads.get(document as usize) {
            Some(&NO_HEAD) => NONE,
            Some(&APART_HEAD) => self.apart_heads[&document],
            Some(&offset) => self.bases[document as usize / HEAD_BLOCK] + offset as u32,
            None => self.head_far(document),
        }
    }

    /// Names `slot` as the first key of `document`, below `heads.len()`.
    #[inline]
    fn set_head(&mut self, document: u32, slot: u32) {
        let base = &mut self.bases[document as usize / HEAD_BLOCK];
        if *base == NONE {
            *base = slot;
        }
        self.heads[document as usize] = match slot.checked_sub(*base) {
            Some(offset) if offset < APART_HEAD as u32 => offset as u16,
            _ => {
                self.apart_heads.insert(document, slot);
                APART_HEAD
            }
        };
    }

    #[cold]
    fn head_far(&self, document: u32) -> u32 {
        self.far.get(&document).copied().unwrap_or(NONE)
    }

    /// The slot of `key`, if it was inserted.
    #[inline]
    pub fn get(&self, key: &IdempotencyKey) -> Option<u32> {
        let packed = key.packed();
        match self.head(key.document.0) {
            NONE => None,
            h if self.packed(h) == packed => Some(h),
            _ => self.others.get(&packed).copied(),
        }
    }

    /// The slot of `key`, inserting it if new: `(slot, true)` when it was new.
    #[inline]
    pub fn insert(&mut self, key: IdempotencyKey) -> (u32, bool) {
        let packed = key.packed();
        let d = key.document.0;
        let head = self.head(d);
        if head != NONE && self.packed(head) == packed {
            return (head, false);
        }
        if head != NONE {
            return self.insert_other(key, packed);
        }
        let slot = self.push(key, packed);
        if d as usize >= self.heads.len() {
            self.grow_for(d);
        }
        if (d as usize) < self.heads.len() {
            self.set_head(d, slot);
        } else {
            self.far.insert(d, slot);
        }
        (slot, true)
    }

    /// A key whose document already has a first key.
    #[cold]
    fn insert_other(&mut self, key: IdempotencyKey, packed: u64) -> (u32, bool) {
        if let Some(&slot) = self.others.get(&packed) {
            return (slot, false);
        }
        let slot = self.push(key, packed);
        self.others.insert(packed, slot);
        (slot, true)
    }

    /// The next slot, for `key`.
    #[inline]
    fn push(&mut self, key: IdempotencyKey, packed: u64) -> u32 {
        let slot = self.keys.len() as u32;
        assert!(slot != NONE, "more than 2^32 - 1 distinct keys");
        assert!(
            key.version <= 0xFFFF && key.tenant.is_none_or(|t| t.0 != 0xFFFF),
            "key {key:?} does not pack into 64 bits"
        );
        let offset = key.document.0.wrapping_sub(slot);
        // The offset fits 24 bits signed when its top 9 bits are all equal.
        let top = (offset as i32) >> (OFFSET_BITS - 1);
        let fits = top == 0 || top == -1;
        let code = match fits {
            true => self.code(packed & PAIR_BITS),
            false => WHOLE,
        };
        if code == WHOLE {
            self.whole.insert(slot, packed);
        }
        self.keys
            .push((code << OFFSET_BITS) | (offset & OFFSET_MASK));
        slot
    }

    /// The code of a (tenant, version) pair, numbering it if new; `WHOLE` once 255 are taken.
    #[inline]
    fn code(&mut self, pair: u64) -> u32 {
        // A run's first few pairs (its tenants under version 1) are found by looking.
        const LOOK: usize = 8;
        if let Some(code) = self.pairs[..self.pairs.len().min(LOOK)]
            .iter()
            .position(|&p| p == pair)
        {
            return code as u32;
        }
        if self.pairs.len() > LOOK {
            if let Some(&code) = self.codes.get(&pair) {
                return code;
            }
        }
        if self.pairs.len() as u32 == WHOLE {
            return WHOLE;
        }
        let code = self.pairs.len() as u32;
        self.pairs.push(pair);
        self.codes.insert(pair, code);
        code
    }

    /// Grows the dense part to cover `document` if that keeps it proportionate to the keys
    /// held (at most four heads a key, plus 4096), moving far documents it now covers.
    #[cold]
    fn grow_for(&mut self, document: u32) {
        let d = document as usize;
        if d < self.heads.len() || d >= 4 * (self.keys.len() + 1) + 4096 {
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
        self.heads.resize(new_len, NO_HEAD);
        let blocks = new_len.div_ceil(HEAD_BLOCK);
        self.bases.reserve_exact(blocks - self.bases.len());
        self.bases.resize(blocks, NONE);
        let keep = self.far.split_off(&(new_len as u32));
        for (doc, head) in std::mem::replace(&mut self.far, keep) {
            self.set_head(doc, head);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::{DocumentId, TenantId};
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

    #[test]
    fn a_documents_other_tenants_and_versions_are_found_beside_its_first_key() {
        let mut ix = KeyIndex::with_capacity(8);
        let first = key(Some(2), 7, 1);
        assert_eq!(ix.insert(first), (0, true));
        let others = [key(Some(3), 7, 1), key(Some(2), 7, 2), key(None, 7, 1)];
        for (i, k) in others.iter().enumerate() {
            assert_eq!(ix.get(k), None);
            assert_eq!(ix.insert(*k), (i as u32 + 1, true));
        }
        assert_eq!(ix.others.len(), 3);
        for (i, k) in [first].iter().chain(&others).enumerate() {
            assert_eq!(ix.insert(*k), (i as u32, false));
            assert_eq!(ix.get(k), Some(i as u32));
            assert_eq!(ix.key(i as u32), *k);
        }
        assert_eq!(ix.get(&key(Some(2), 8, 1)), None);
    }

    #[test]
    fn keys_at_the_edges_of_their_fields_come_back_exactly() {
        let mut ix = KeyIndex::default();
        let edges = [
            key(Some(0xFFFE), u32::MAX, 0xFFFF),
            key(None, u32::MAX, 0xFFFF),
            key(Some(0), 0, 1),
            key(None, 0, 1),
        ];
        for (i, k) in edges.iter().enumerate() {
            assert_eq!(ix.insert(*k), (i as u32, true));
        }
        for (i, k) in edges.iter().enumerate() {
            assert_eq!(ix.key(i as u32), *k);
            assert_eq!(ix.get(k), Some(i as u32));
        }
    }

    /// A slot's key is 4 bytes while its document is within 2^23 of its slot and its (tenant,
    /// version) pair among the first 255; past either it is kept whole, and every key reads
    /// back exactly.
    #[test]
    fn keys_beyond_the_4_byte_form_are_kept_whole_and_read_back_exactly() {
        assert_eq!(std::mem::size_of_val(&KeyIndex::default().keys[..]), 0);
        let mut ix = KeyIndex::default();
        let mut all = Vec::new();
        // Offsets at and past the edges of 24 signed bits (the slot is all.len()).
        for offset in [
            0i64,
            1,
            -1,
            (1 << 23) - 1,
            1 << 23,
            -(1 << 23),
            -(1 << 23) - 1,
        ] {
            let slot = all.len() as i64;
            let d = (slot + offset).rem_euclid(1 << 32) as u32;
            all.push(key(Some(0), d, slot as u32 + 1));
        }
        // More pairs than codes: 300 tenants, then versions.
        for t in 0..300u16 {
            all.push(key(Some(t), 10_000 + t as u32, 1));
        }
        for v in 2..5 {
            all.push(key(None, 20_000, v));
        }
        for (i, k) in all.iter().enumerate() {
            assert_eq!(ix.insert(*k), (i as u32, true), "{k:?}");
        }
        for (i, k) in all.iter().enumerate() {
            assert_eq!(ix.key(i as u32), *k);
            assert_eq!(ix.get(k), Some(i as u32));
            assert_eq!(ix.insert(*k), (i as u32, false));
        }
        assert_eq!(ix.pairs.len(), 255);
        // Two offsets past the edges (their pairs not coded), the tenants past the 255 codes
        // (five taken by the offsets' versions of tenant 0, whose version 1 is the first
        // tenant's), and the 3 versions after them.
        assert_eq!(ix.whole.len(), 2 + (299 - 250) + 3);
    }

    /// A head is a 16-bit offset from its block's first-inserted slot; a document whose first key
    /// came 65,534 or more slots later (or, moved in from the far map, before the base) is
    /// found through the side map, exactly.
    #[test]
    fn heads_far_from_their_blocks_base_are_kept_apart_and_found() {
        let mut ix = KeyIndex::with_capacity(16);
        let mut all = vec![key(Some(0), 1, 1)];
        all.extend((0..70_000).map(|d| key(Some(0), 1_000 + d, 1)));
        all.push(key(Some(0), 2, 1)); // block 0, 70,001 slots after its base
        all.push(key(Some(0), 3, 1));
        all.push(key(Some(1), 2, 1)); // another tenant: not a head
        for (i, k) in all.iter().enumerate() {
            assert_eq!(ix.insert(*k), (i as u32, true));
        }
        for (i, k) in all.iter().enumerate() {
            assert_eq!(ix.get(k), Some(i as u32), "{k:?}");
            assert_eq!(ix.key(i as u32), *k);
        }
        assert_eq!(ix.apart_heads.len(), 2, "documents 2 and 3");
        assert_eq!(ix.get(&key(Some(0), 4, 1)), None);
        // Far documents moved in when the vector grows, in document order, not slot order.
        let mut ix = KeyIndex::default();
        let far = [key(Some(0), 900_001, 1), key(Some(0), 900_000, 1)];
        for k in far {
            ix.insert(k);
        }
        let mut d = 0;
        while ix.heads.len() <= 900_001 {
            assert!(d < 900_000, "the vector grows with the documents");
            ix.insert(key(Some(1), d, 1));
            d += 1;
        }
        assert!(ix.far.is_empty(), "the far documents moved into the vector");
        assert_eq!(
            ix.apart_heads.len(),
            1,
            "900,001: moved in after 900,000, its slot is before the base"
        );
        assert_eq!(ix.get(&far[0]), Some(0));
        assert_eq!(ix.get(&far[1]), Some(1));
        assert_eq!(ix.get(&key(Some(1), d - 1, 1)), Some(d + 1));
    }

    #[test]
    #[should_panic(expected = "does not pack")]
    fn a_key_that_does_not_pack_is_refused_rather_than_confused() {
        let mut ix = KeyIndex::default();
        ix.insert(key(Some(1), 5, 0x1_0001));
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

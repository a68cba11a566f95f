//! FNV-1a over a fixed byte string, from any state, in one multiply and one table read.
//!
//! Owns: [`Suffix`], built at compile time for a byte string `s` of length `k`, with which
//! `fnv1a_from(h, s)` (the byte-by-byte definition, also here) is `h · Pᵏ + C[h mod 256]`
//! (wrapping), `P` being FNV's prime.
//! Does not: define the payload hash (see `payload.rs`, which uses it for the bytes that follow a
//! document's name in nearly every payload).
//!
//! Why it is exact: a step is `h' = (h ^ b) · P` mod 2⁶⁴. The xor changes only the low byte, and
//! the low byte of a product depends only on the low bytes of its factors, so the low byte of
//! every state along `s` depends only on the starting state's low byte `x`. And `h ^ b = h + d`
//! with `d = (x ^ b) - x`, so each step adds a term that depends on `x` alone:
//! `fnv1a_from(h, s) = h · Pᵏ + C[x]`, and `C[x] = fnv1a_from(x, s) - x · Pᵏ`.

use super::payload::FNV_PRIME;

/// FNV-1a's bytes `s` fed into the state `h`, one at a time: the definition.
pub const fn fnv1a_from(mut h: u64, s: &[u8]) -> u64 {
    let mut i = 0;
    while i < s.len() {
        h = (h ^ s[i] as u64).wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// A fixed byte string, ready to be fed into any FNV-1a state at once.
pub struct Suffix {
    /// `Pᵏ`.
    mul: u64,
    /// `C[x]` for each low byte `x` of the starting state.
    add: [u64; 256],
}

impl Suffix {
    pub const fn new(s: &[u8]) -> Suffix {
        let mut mul = 1u64;
        let mut i = 0;
        while i < s.len() {
            mul = mul.wrapping_mul(FNV_PRIME);
            i += 1;
        }
        let mut add = [0u64; 256];
        let mut x = 0;
        while x < 256 {
            add[x] = fnv1a_from(x as u64, s).wrapping_sub((x as u64).wrapping_mul(mul));
            x += 1;
        }
        Suffix { mul, add }
    }

    /// `fnv1a_from(h, s)`.
    #[inline]
    pub fn feed(&self, h: u64) -> u64 {
        h.wrapping_mul(self.mul)
            .wrapping_add(self.add[(h & 0xFF) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any string (empty, short, long, every byte value) from any state: the table's answer
        /// is the byte-by-byte one.
        #[test]
        fn a_suffix_feeds_what_the_bytes_feed(
            s in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            states in proptest::collection::vec(proptest::num::u64::ANY, 1..32),
        ) {
            let suffix = Suffix::new(&s);
            for h in states.into_iter().chain([0, u64::MAX, 0xcbf2_9ce4_8422_2325]) {
                proptest::prop_assert_eq!(suffix.feed(h), fnv1a_from(h, &s));
            }
        }
    }

    #[test]
    fn every_low_byte_is_covered() {
        const S: Suffix = Suffix::new(b"\nextract\n0000000000000000");
        for x in 0..=255u64 {
            for high in [0u64, 1 << 8, 0xdead_beef_0000_0000, !0xFF] {
                let h = high | x;
                assert_eq!(S.feed(h), fnv1a_from(h, b"\nextract\n0000000000000000"));
            }
        }
    }
}

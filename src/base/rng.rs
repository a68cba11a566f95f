//! Seeded random streams.
//!
//! Owns: every random draw of a run. One ChaCha8 stream per purpose (arrivals, each worker's
//! attempt plans, the relay, backoff jitter, review times, swarm settings), all derived from the
//! scenario seed, so adding a worker does not reshuffle the arrivals and two configurations can
//! be compared on common random numbers.
//! Does not: decide what a draw means; callers turn draws into durations and faults.
//!
//! The conversions from raw `u64`s to floats and ranges are written here rather than taken from
//! `rand`'s distributions, whose values are only stable within a minor version.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// What a stream is for. The discriminant is part of the stream id, so it must never change.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Purpose {
    Arrivals = 1,
    Worker = 2,
    Relay = 3,
    Jitter = 4,
    Review = 5,
    Swarm = 6,
    Output = 7,
    /// Pauses after a heartbeat (`[faults] pause`), one stream per worker.
    Pause = 8,
    /// The spare draws each attempt owns for fault kinds to come, one stream per worker, read
    /// by position (see `sim::faults::SpareDraws`).
    AttemptSpare = 9,
    /// The coin of a write that may or may not take effect (SQS's stale delete).
    StaleWrite = 10,
    /// The spare draws each step of a delivery-side site owns for its faults, one stream per
    /// site, read by position (see `sim::faults::SpareDraws::of_site`).
    SiteSpare = 11,
}

/// One independent stream of random numbers.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: ChaCha8Rng,
}

/// A stream's position: its seed, its stream id and how many words it has given (two streams
/// equal on these give the same draws from here on).
impl std::hash::Hash for Stream {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.rng.get_seed().hash(state);
        self.rng.get_stream().hash(state);
        self.rng.get_word_pos().hash(state);
    }
}

impl Stream {
    /// The stream for `purpose` (and `index`, e.g. the worker number) of the run seeded `seed`.
    pub fn new(seed: u64, purpose: Purpose, index: u64) -> Stream {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(((purpose as u64) << 48) ^ index);
        Stream { rng }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        unit_of(self.next_u64())
    }

    /// True with probability `p`. A probability of 0 never draws, so a disabled fault does not
    /// consume randomness and leaves every other draw where it was.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform integer in the closed range [lo, hi] (multiply-shift, no modulo bias worth noting).
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        range_of(self.next_u64(), lo, hi)
    }

    /// Exponential with the given mean.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// `N` raw draws at once: a caller that always takes the same block consumes the stream the
    /// same way whatever it then decides, so changing a probability moves no other draw.
    #[inline]
    pub fn block<const N: usize>(&mut self) -> [u64; N] {
        std::array::from_fn(|_| self.next_u64())
    }

    /// The draw at position `index` (counted in `u64` draws from the stream's start), read by
    /// seeking: ChaCha is a counter-mode cipher, so a block addressed by an ordinal costs one
    /// block computation and reading it moves no other position's value.
    pub fn draw_at(&mut self, index: u64) -> u64 {
        self.rng.set_word_pos(u128::from(index) * 2);
        self.rng.next_u64()
    }

    /// Standard normal from one draw (see [`normal_of`]).
    pub fn normal(&mut self) -> f64 {
        normal_of(self.next_u64())
    }
}

/// A raw draw as a uniform in [0, 1) with 53 bits of precision.
#[inline]
pub fn unit_of(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A raw draw as a uniform integer in the closed range [lo, hi] (multiply-shift).
#[inline]
pub fn range_of(bits: u64, lo: u64, hi: u64) -> u64 {
    debug_assert!(lo <= hi);
    let span = (hi - lo) as u128 + 1;
    lo + ((bits as u128 * span) >> 64) as u64
}

/// A raw draw as a standard normal (Box-Muller; the second uniform comes from a SplitMix64
/// finaliser of the same draw, so one draw makes one sample and callers can take fixed blocks).
pub fn normal_of(bits: u64) -> f64 {
    let u1 = 1.0 - unit_of(bits);
    let u2 = unit_of(splitmix(bits));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_and_streams_are_independent() {
        let mut a = Stream::new(7, Purpose::Worker, 3);
        let mut b = Stream::new(7, Purpose::Worker, 3);
        let mut c = Stream::new(7, Purpose::Worker, 4);
        let xa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn range_is_inclusive_and_bounded() {
        let mut s = Stream::new(1, Purpose::Arrivals, 0);
        let mut seen = [false; 3];
        for _ in 0..1000 {
            let v = s.range(5, 7);
            assert!((5..=7).contains(&v));
            seen[(v - 5) as usize] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn a_draw_at_a_position_is_the_sequential_draw_there() {
        let mut seq = Stream::new(9, Purpose::AttemptSpare, 1);
        let drawn: Vec<u64> = (0..20).map(|_| seq.next_u64()).collect();
        let mut by_position = Stream::new(9, Purpose::AttemptSpare, 1);
        for i in [17u64, 3, 0, 19, 3] {
            assert_eq!(by_position.draw_at(i), drawn[i as usize]);
        }
    }

    #[test]
    fn zero_probability_draws_nothing() {
        let mut a = Stream::new(1, Purpose::Relay, 0);
        let mut b = a.clone();
        assert!(!a.chance(0.0));
        assert_eq!(a.next_u64(), b.next_u64());
    }
}

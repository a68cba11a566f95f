//! A latency distribution and its summary figures.
//!
//! Owns: [`Latency`] (an hdrhistogram with 3 significant figures, exact below 2,048 ms, with the
//! exact minimum and maximum beside it; buffered, then the values below 2,048 ms counted one
//! per millisecond and the histogram assembled when the figures are asked for) and
//! [`Stats`] (count, min, p50, p95, p99, max, mean, as `summary.json` shows them). Percentiles
//! are the histogram's, kept within the exact extremes: no sketch, no sampling.
//! Does not: decide what is measured (`observe/metrics.rs` measures; the checker recomputes the
//! same figures from the history, `check/rules/summary.rs`).

use hdrhistogram::Histogram;
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Stats {
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
}

/// A latency distribution: 3 significant figures, exact below 2,048 ms.
///
/// The first values are buffered (a short run, or a tenant with few jobs, keeps just them).
/// When the buffer fills, the values below 2,048 ms — nearly all of them — go to a dense count
/// per millisecond (`exact`: one add per value, where an hdrhistogram record costs some 70
/// instructions), and the rest to an hdrhistogram sized for their maximum. The histogram the
/// figures are read from is assembled when they are asked for: the same counts in the same
/// buckets as a histogram fed every value (below 2,048 ms each value is a bucket of its own),
/// so the same percentiles, mean and shares. A histogram that starts small grows one bucket at a
/// time, each time reallocating and zeroing its counts; in a short run (a sweep's seed) that
/// growth was a quarter of all instructions, hence sizing it for its maximum in one allocation.
///
/// The minimum and maximum are exact (the histogram reports a bucket's highest equivalent value:
/// 5,999 for a real 5,998), and percentiles are kept within them: `min` and `max` track the
/// buffered and large values, the dense counts give their own extremes.
#[derive(Clone, Debug)]
pub struct Latency {
    buffered: Vec<u64>,
    /// Counts of the values below [`EXACT`], once the buffer has filled (`EXACT` long).
    exact: Option<Box<[u64]>>,
    /// The values from [`EXACT`] up, once the buffer has filled and one arrived.
    histogram: Option<Histogram<u64>>,
    min: u64,
    max: u64,
}

/// A run's state (`durasim explore`): the values recorded, bucket by bucket.
impl std::hash::Hash for Latency {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let Latency {
            buffered,
            exact,
            histogram,
            min,
            max,
        } = self;
        buffered.hash(state);
        exact.hash(state);
        match histogram {
            None => state.write_u8(0),
            Some(h) => {
                state.write_u8(1);
                for v in h.iter_recorded() {
                    state.write_u64(v.value_iterated_to());
                    state.write_u64(v.count_at_value());
                }
            }
        }
        min.hash(state);
        max.hash(state);
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            buffered: Vec::new(),
            exact: None,
            histogram: None,
            min: u64::MAX,
            max: 0,
        }
    }
}

const BUFFERED: usize = 1024;

/// Values below this have a bucket of their own in a 3-significant-figure hdrhistogram (its
/// sub-bucket count), so counting them one per millisecond loses nothing.
const EXACT: u64 = 2048;

impl Latency {
    /// Records `v` (any value: the histogram grows past its range rather than clamping).
    #[inline]
    pub fn record(&mut self, v: u64) {
        match self.exact.as_mut() {
            Some(exact) if v < EXACT => exact[v as usize] += 1,
            Some(_) => self.record_large(v),
            None => {
                self.min = self.min.min(v);
                self.max = self.max.max(v);
                self.buffered.push(v);
                if self.buffered.len() == BUFFERED {
                    self.spill();
                }
            }
        }
    }

    /// A value from [`EXACT`] up, once the buffer has been spilled.
    #[cold]
    fn record_large(&mut self, v: u64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match self.histogram.as_mut() {
            Some(h) => Self::record_in(h, v),
            None => self.histogram = Some(Self::build(&[v])),
        }
    }

    /// Ends the buffering: the dense counts, and the histogram of the large buffered values.
    fn spill(&mut self) {
        debug_assert!(self.exact.is_none(), "spilled twice");
        let mut exact = vec![0u64; EXACT as usize].into_boxed_slice();
        let mut large = Vec::new();
        for v in std::mem::take(&mut self.buffered) {
            if v < EXACT {
                exact[v as usize] += 1;
            } else {
                large.push(v);
            }
        }
        self.exact = Some(exact);
        if !large.is_empty() {
            self.histogram = Some(Self::build(&large));
        }
    }

    #[inline]
    fn record_in(h: &mut Histogram<u64>, v: u64) {
        // In range (nearly always): the fast path; past it, grow. (`saturating_record` never
        // grows, so values above the range used to be clamped.)
        if v <= h.high() || h.record(v).is_err() {
            h.saturating_record(v);
        }
    }

    fn build(values: &[u64]) -> Histogram<u64> {
        let max = values.iter().copied().max().unwrap_or(0);
        let mut h = Self::sized(max);
        for &v in values {
            Self::record_in(&mut h, v);
        }
        h
    }

    /// An empty auto-resizing histogram whose range reaches `max`.
    fn sized(max: u64) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, max.max(2), 3).expect("valid bounds");
        h.auto(true);
        h
    }

    /// The exact minimum and maximum of every recorded value (`u64::MAX` and 0 when none).
    fn extremes(&self) -> (u64, u64) {
        let (mut min, mut max) = (self.min, self.max);
        if let Some(exact) = &self.exact {
            if let Some(lo) = exact.iter().position(|&c| c > 0) {
                let hi = exact.iter().rposition(|&c| c > 0).expect("a count exists");
                min = min.min(lo as u64);
                max = max.max(hi as u64);
            }
        }
        (min, max)
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &Latency) {
        for &v in &other.buffered {
            self.record(v);
        }
        if let Some(o) = &other.exact {
            if self.exact.is_none() {
                self.spill();
            }
            let exact = self.exact.as_mut().expect("spilled");
            for (mine, theirs) in exact.iter_mut().zip(o.iter()) {
                *mine += theirs;
            }
        }
        if let Some(o) = &other.histogram {
            if self.exact.is_none() {
                self.spill();
            }
            match self.histogram.as_mut() {
                Some(h) => h
                    .add(o)
                    .expect("an auto-resizing histogram takes any other's values"),
                None => self.histogram = Some(o.clone()),
            }
        }
        // `other`'s extremes of its buffered and large values (its dense counts carry their own).
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The distribution as an hdrhistogram.
    pub fn histogram(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        let Some(exact) = &self.exact else {
            return std::borrow::Cow::Owned(Self::build(&self.buffered));
        };
        let mut h = Self::sized(self.extremes().1);
        if let Some(large) = &self.histogram {
            h.add(large)
                .expect("an auto-resizing histogram takes any other's values");
        }
        for (v, &count) in exact.iter().enumerate() {
            if count > 0 {
                h.record_n(v as u64, count)
                    .expect("the histogram's range covers the exact values");
            }
        }
        std::borrow::Cow::Owned(h)
    }

    /// The share of the recorded values above `t`: with `t = 0`, the share of attempts that
    /// waited at all (queueing theory's probability of waiting). Exact for `t` below 2,048 ms,
    /// where every value has its own bucket; past it, `t`'s whole bucket (3 significant
    /// figures) counts as "not above". 0 when nothing was recorded.
    pub fn share_above(&self, t: u64) -> f64 {
        let h = self.histogram();
        if h.is_empty() {
            return 0.0;
        }
        let at_most = h.count_between(0, t);
        (h.len() - at_most) as f64 / h.len() as f64
    }

    pub fn stats(&self) -> Stats {
        let h = self.histogram();
        if h.is_empty() {
            return Stats::default();
        }
        let (min, max) = self.extremes();
        let mean = (h.mean() * 1000.0).round() / 1000.0;
        let q = |p: f64| h.value_at_quantile(p).clamp(min, max);
        Stats {
            count: h.len(),
            min,
            p50: q(0.50),
            p95: q(0.95),
            p99: q(0.99),
            max,
            mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Buffering then building a histogram sized for the maximum reports exactly what one
        /// histogram grown value by value reports, below and past the buffer's size.
        #[test]
        fn buffered_latency_reports_what_a_growing_histogram_reports(
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..3000, 0u64..200_000, 0u64..5_000_000],
                0..2500,
            ),
            split in 0usize..2500,
        ) {
            let mut reference = Histogram::<u64>::new(3).unwrap();
            let (mut a, mut b) = (Latency::default(), Latency::default());
            for (i, &v) in values.iter().enumerate() {
                reference.record(v).unwrap();
                if i < split { a.record(v) } else { b.record(v) }
            }
            a.add(&b);
            let s = a.stats();
            if values.is_empty() {
                proptest::prop_assert_eq!(s.count, 0);
            } else {
                // Exact extremes; percentiles as the histogram says, kept within them.
                let (lo, hi) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
                let q = |x| reference.value_at_quantile(x).clamp(lo, hi);
                proptest::prop_assert_eq!(
                    (s.count, s.min, s.p50, s.p95, s.p99, s.max),
                    (reference.len(), lo, q(0.5), q(0.95), q(0.99), hi)
                );
                proptest::prop_assert_eq!(s.mean, (reference.mean() * 1000.0).round() / 1000.0);
            }
        }
    }

    /// Values on and around the dense counts' edge (2,047 / 2,048), zero, and far past it.
    fn edgy() -> impl proptest::strategy::Strategy<Value = u64> {
        proptest::prop_oneof![
            4 => 0u64..2048,
            2 => proptest::sample::select(vec![0u64, 1, 2046, 2047, 2048, 2049, 4095, 4096]),
            1 => 2048u64..10_000,
            1 => 0u64..u64::MAX / 4,
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// The dense counts below 2,048 ms and the histogram of the rest, assembled, are the
        /// histogram of every value: the same buckets and counts, so the same quantiles (all of
        /// them, not only the three `Stats` shows), mean and shares; however the values were
        /// split between latencies that are then added, and in either order.
        #[test]
        fn dense_counts_report_what_one_histogram_of_every_value_reports(
            values in proptest::collection::vec(edgy(), 0..5000),
            cuts in (0usize..5000, 0usize..5000),
        ) {
            let mut reference = Histogram::<u64>::new(3).unwrap();
            for &v in &values {
                reference.record(v).unwrap();
            }
            let (c1, c2) = (cuts.0.min(cuts.1).min(values.len()), cuts.0.max(cuts.1).min(values.len()));
            let part = |vs: &[u64]| {
                let mut l = Latency::default();
                vs.iter().for_each(|&v| l.record(v));
                l
            };
            let parts = [part(&values[..c1]), part(&values[c1..c2]), part(&values[c2..])];
            let mut forward = Latency::default();
            parts.iter().for_each(|p| forward.add(p));
            let mut backward = parts[2].clone();
            backward.add(&parts[1]);
            backward.add(&parts[0]);
            let whole = part(&values);
            let buckets = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
                h.iter_recorded().map(|x| (x.value_iterated_to(), x.count_at_value())).collect()
            };
            for l in [&forward, &backward, &whole] {
                let h = l.histogram();
                proptest::prop_assert_eq!(buckets(&h), buckets(&reference));
                proptest::prop_assert_eq!(h.len(), reference.len());
                for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
                    proptest::prop_assert_eq!(h.value_at_quantile(q), reference.value_at_quantile(q));
                }
                proptest::prop_assert_eq!(h.mean().to_bits(), reference.mean().to_bits());
                for t in [0, 1, 2046, 2047, 2048, 5000] {
                    let want = if values.is_empty() {
                        0.0
                    } else {
                        (reference.len() - reference.count_between(0, t)) as f64 / reference.len() as f64
                    };
                    proptest::prop_assert_eq!(l.share_above(t).to_bits(), want.to_bits());
                }
                let s = l.stats();
                if values.is_empty() {
                    proptest::prop_assert_eq!(s, Stats::default());
                } else {
                    let (lo, hi) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
                    proptest::prop_assert_eq!((s.count, s.min, s.max), (values.len() as u64, lo, hi));
                    let q = |x| reference.value_at_quantile(x).clamp(lo, hi);
                    proptest::prop_assert_eq!((s.p50, s.p95, s.p99), (q(0.5), q(0.95), q(0.99)));
                }
            }
        }
    }

    // summary.json said 5999 for a real maximum of 5998: hdrhistogram's max is the highest value
    // equivalent to the largest recorded one.
    #[test]
    fn summary_min_and_max_are_exact() {
        let mut l = Latency::default();
        for v in [2_049, 5_998, 3_000] {
            l.record(v);
        }
        let s = l.stats();
        assert_eq!((s.min, s.max), (2_049, 5_998), "{s:?}");
        assert!(s.p99 <= 5_998 && s.p50 >= 2_049, "{s:?}");
        let mut big = Latency::default();
        for v in 0..5_000u64 {
            big.record(v * 7 + 1);
        }
        big.add(&l);
        let s = big.stats();
        assert_eq!((s.min, s.max), (1, 34_994), "{s:?}");
    }

    // A queue wait of 17 s is reported as 17 s, not clamped to the histogram's first range.
    #[test]
    fn latencies_past_two_seconds_are_not_clamped() {
        let mut l = Latency::default();
        for v in [5, 16_870, 120_000] {
            l.record(v);
        }
        let s = l.stats();
        assert_eq!(s.min, 5);
        assert_eq!(s.max, 120_000, "exact, not the bucket's top");
        assert!((16_850..=16_890).contains(&s.p50), "{s:?}");
    }
}

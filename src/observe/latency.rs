//! A latency distribution and its summary figures.
//!
//! Owns: [`Latency`] (an hdrhistogram with 3 significant figures, exact below 2,048 ms, with the
//! exact minimum and maximum beside it; buffered until it can be sized in one allocation) and
//! [`Stats`] (count, min, p50, p95, p99, max, mean, as `summary.json` shows them). Percentiles
//! are the histogram's, kept within the exact extremes: no sketch, no sampling.
//! Does not: decide what is measured (see `metrics`).

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
/// The first values are buffered and turned into an hdrhistogram sized for their maximum in one
/// allocation (when the buffer fills, or when stats are asked for). A histogram that starts small
/// grows one bucket at a time, each time reallocating and zeroing its counts; in a short run
/// (a sweep's seed) that growth was a quarter of all instructions. The figures are the same
/// either way: a value's bucket does not depend on the histogram's range.
///
/// The minimum and maximum are tracked exactly beside it (the histogram reports a bucket's
/// highest equivalent value: 5,999 for a real 5,998), and percentiles are kept within them.
#[derive(Clone, Debug)]
pub struct Latency {
    buffered: Vec<u64>,
    histogram: Option<Histogram<u64>>,
    min: u64,
    max: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            buffered: Vec::new(),
            histogram: None,
            min: u64::MAX,
            max: 0,
        }
    }
}

const BUFFERED: usize = 1024;

impl Latency {
    /// Records `v` (any value: the histogram grows past its range rather than clamping).
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match self.histogram.as_mut() {
            Some(h) => Self::record_in(h, v),
            None => {
                self.buffered.push(v);
                if self.buffered.len() == BUFFERED {
                    self.histogram = Some(Self::build(&self.buffered));
                    self.buffered = Vec::new();
                }
            }
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
        let max = values.iter().copied().max().unwrap_or(0).max(2);
        let mut h = Histogram::new_with_bounds(1, max, 3).expect("valid bounds");
        h.auto(true);
        for &v in values {
            Self::record_in(&mut h, v);
        }
        h
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &Latency) {
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        for &v in &other.buffered {
            self.record(v);
        }
        if let Some(o) = &other.histogram {
            let h = self
                .histogram
                .get_or_insert_with(|| Self::build(&self.buffered));
            self.buffered.clear();
            h.add(o)
                .expect("an auto-resizing histogram takes any other's values");
        }
    }

    /// The distribution as an hdrhistogram.
    pub fn histogram(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        match &self.histogram {
            Some(h) => std::borrow::Cow::Borrowed(h),
            None => std::borrow::Cow::Owned(Self::build(&self.buffered)),
        }
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
        let mean = (h.mean() * 1000.0).round() / 1000.0;
        let q = |p: f64| h.value_at_quantile(p).clamp(self.min, self.max);
        Stats {
            count: h.len(),
            min: self.min,
            p50: q(0.50),
            p95: q(0.95),
            p99: q(0.99),
            max: self.max,
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

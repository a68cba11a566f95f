//! Retry delays (docs/queues.md M8): the backoff formulas and jitter modes of the profiles.
//!
//! Owns: the delay after failed attempt n (1-based), in integer ms, from one jitter draw in
//! [0, 1), and the range of delays a formula and jitter mode allow (what a history's judge would
//! restate). Formulas: `exp2` min(base × 2ⁿ⁻¹, cap) (durasim, Temporal), `exp2_offset`
//! offset + unit × 2ⁿ (Oban), `pow4` unit × m⁴ + offset with m = n − index_from (River n⁴,
//! Sidekiq c⁴ + 15), `exp_e` unit × e^min(n, 10) (graphile-worker, from a fixed table so no
//! platform's `exp` moves a trace), `immediate`, `visibility` (the rest of the lease). Jitter:
//! none, full [0, d], equal [d/2, d], symmetric d(1 ± p), up d(1 + [0, p]), additive
//! d + [0, step × (c + 1)).
//! Does not: draw (the caller passes the draw, and draws only when the mode jitters) or decide
//! whether to retry (see `model::retry`).

use super::params::{Backoff, BackoffFormula, JitterMode};

/// e^k × 1,000, rounded, for k = 0..=10: graphile-worker's `exp(least(attempts, 10))` seconds.
const E_POW_MS: [u64; 11] = [
    1_000, 2_718, 7_389, 20_086, 54_598, 148_413, 403_429, 1_096_633, 2_980_958, 8_103_084,
    22_026_466,
];

/// The delay before jitter. `lease_left_ms` is what remains of the failed attempt's lease
/// (`visibility` only).
pub fn base_delay(b: &Backoff, n: u32, lease_left_ms: u64) -> u64 {
    let n = n.max(1);
    match b.formula {
        BackoffFormula::Exp2 => b
            .base_ms
            .saturating_mul(1u64 << (n - 1).min(62))
            .min(b.cap_ms),
        BackoffFormula::Exp2Offset => b
            .offset_ms
            .saturating_add(b.base_ms.saturating_mul(1u64 << n.min(62))),
        BackoffFormula::Pow4 => {
            let m = n.saturating_sub(b.index_from) as u64;
            b.base_ms
                .saturating_mul(m.saturating_pow(4))
                .saturating_add(b.offset_ms)
        }
        BackoffFormula::ExpE => {
            let k = n.min(10) as usize;
            // E_POW_MS is in thousandths of the unit.
            b.base_ms.saturating_mul(E_POW_MS[k]) / 1_000
        }
        BackoffFormula::Immediate => 0,
        BackoffFormula::Visibility => lease_left_ms,
    }
}

/// Whether this backoff needs a jitter draw.
pub fn draws(b: &Backoff) -> bool {
    b.jitter != JitterMode::None
}

/// The delay after failed attempt `n`, with `draw` uniform in [0, 1).
pub fn delay_ms(b: &Backoff, n: u32, lease_left_ms: u64, draw: f64) -> u64 {
    let d = base_delay(b, n, lease_left_ms);
    let (lo, hi) = bounds_of(b, n, d);
    let span = hi - lo;
    lo + ((draw * (span as f64 + 1.0)) as u64).min(span)
}

/// The least and most delay the backoff allows after failed attempt `n`.
pub fn bounds(b: &Backoff, n: u32, lease_left_ms: u64) -> (u64, u64) {
    bounds_of(b, n, base_delay(b, n, lease_left_ms))
}

fn bounds_of(b: &Backoff, n: u32, d: u64) -> (u64, u64) {
    let pct = |d: u64| d.saturating_mul(b.jitter_pct as u64) / 100;
    match b.jitter {
        JitterMode::None => (d, d),
        JitterMode::Full => (0, d),
        JitterMode::Equal => (d / 2, d),
        JitterMode::Symmetric => (d - pct(d), d.saturating_add(pct(d))),
        JitterMode::Up => (d, d.saturating_add(pct(d))),
        JitterMode::Additive => {
            let c = n.max(1) as u64; // c + 1, c the retry index from 0
            let width = b.jitter_step_ms.saturating_mul(c);
            (d, d.saturating_add(width.saturating_sub(1)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Profile, Word};

    fn of(p: Profile) -> Backoff {
        p.defaults().backoff
    }

    #[test]
    fn durasim_keeps_its_capped_exponential_with_full_jitter() {
        let b = of(Profile::Durasim);
        assert_eq!(base_delay(&b, 1, 0), 100);
        assert_eq!(base_delay(&b, 5, 0), 1_600);
        assert_eq!(base_delay(&b, 6, 0), 2_000);
        assert_eq!(bounds(&b, 6, 0), (0, 2_000));
        // The same arithmetic as model::retry's full jitter.
        assert_eq!(delay_ms(&b, 1, 0, 0.999_999), 100);
        assert_eq!(delay_ms(&b, 1, 0, 0.0), 0);
    }

    #[test]
    fn each_system_spaces_its_retries_as_its_code_does() {
        // River: n⁴ s ± 10 %.
        let river = of(Profile::River);
        assert_eq!(base_delay(&river, 1, 0), 1_000);
        assert_eq!(base_delay(&river, 3, 0), 81_000);
        assert_eq!(bounds(&river, 1, 0), (900, 1_100));
        // Oban: 15 s + 2ⁿ s, + [0, 10 %].
        let oban = of(Profile::Oban);
        assert_eq!(base_delay(&oban, 1, 0), 17_000);
        assert_eq!(bounds(&oban, 1, 0), (17_000, 18_700));
        // Sidekiq: c⁴ + 15 s + U[0, 10 (c + 1)) s, c = 0 on the first retry.
        let sidekiq = of(Profile::Sidekiq);
        assert_eq!(bounds(&sidekiq, 1, 0), (15_000, 24_999));
        assert_eq!(bounds(&sidekiq, 3, 0), (31_000, 60_999));
        // graphile-worker: e^min(n, 10) s, no jitter.
        let graphile = of(Profile::GraphileWorker);
        assert_eq!(base_delay(&graphile, 1, 0), 2_718);
        assert_eq!(base_delay(&graphile, 12, 0), 22_026_466);
        assert!(!draws(&graphile));
        // Temporal: 1 s × 2ⁿ⁻¹ up to 100 s, no jitter.
        let temporal = of(Profile::Temporal);
        assert_eq!(base_delay(&temporal, 8, 0), 100_000);
        assert_eq!(delay_ms(&temporal, 2, 0, 0.7), 2_000);
        // BullMQ, pg-boss: immediate; SQS, pgmq: the rest of the visibility timeout.
        assert_eq!(base_delay(&of(Profile::Bullmq), 1, 0), 0);
        assert_eq!(base_delay(&of(Profile::Sqs), 1, 12_345), 12_345);
    }

    #[test]
    fn every_draw_lands_inside_the_bounds() {
        for p in Profile::ALL {
            let b = of(*p);
            for n in 1..30 {
                let (lo, hi) = bounds(&b, n, 5_000);
                for draw in [0.0, 0.25, 0.5, 0.999_999_9] {
                    let d = delay_ms(&b, n, 5_000, draw);
                    assert!(
                        lo <= d && d <= hi,
                        "{} n={n} {d} not in [{lo}, {hi}]",
                        p.name()
                    );
                }
            }
        }
    }
}

//! The retry delays the checker allows, restated from the header's configuration alone.
//!
//! Owns: the least and most delay after failed attempt n under the header's formula: the capped
//! exponential `min(base × 2ⁿ⁻¹, cap)` with none, full or equal jitter (every header), or a
//! profile's `backoff` object: `exp2`, `exp2_offset` (offset + unit × 2ⁿ), `pow4`
//! (unit × (n − index_from)⁴ + offset), `exp_e` (unit × e^min(n, 10), rounded to the ms),
//! `immediate`, `visibility` (what is left of the failed attempt's lease), with jitter none,
//! full [0, d], equal [d/2, d], symmetric d ± pct %, up d + [0, pct %], additive
//! d + [0, step × n). When the header says n counts failures, not leases, the checker (which
//! counts leases) allows the union over every failure count from 1 to the lease count.
//! Does not: judge (see `policy`), or read the model's formulas (`profile::backoff` is the
//! simulator's side; a test ties the two).

use crate::profile::{AttemptsCount, BackoffFormula, JitterMode};
use crate::vocab::config::{Jitter, RunConfig};

/// `(least, most)` delay after attempt `n` (the job's lease count) failed, `lease_left` being
/// what remained of that attempt's lease when it failed.
pub(super) fn bounds(c: &RunConfig, n: u32, lease_left: u64) -> (u64, u64) {
    let Some(f) = &c.retry_formula else {
        let d = c
            .backoff_base
            .saturating_mul(1u64 << n.saturating_sub(1).min(62))
            .min(c.backoff_cap);
        return match c.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (0, d),
            Jitter::Equal => (d / 2, d),
        };
    };
    let one = |n: u32| jittered(f.backoff.jitter, f, n, base(f, n, lease_left));
    match f.attempt {
        AttemptsCount::Leases => one(n),
        // Every formula grows with n: the union over 1..=n is [least at 1, most at n].
        AttemptsCount::Failures => (one(1).0.min(one(n).0), one(n).1.max(one(1).1)),
    }
}

/// The backoff as a message states it: "backoff base 100 ms, cap 2000 ms, jitter full".
pub(super) fn describe(c: &RunConfig, u: &str) -> String {
    use crate::profile::Word;
    match &c.retry_formula {
        None => format!(
            "backoff base {} {u}, cap {} {u}, jitter {}",
            c.backoff_base,
            c.backoff_cap,
            c.jitter.name()
        ),
        Some(f) => {
            let b = &f.backoff;
            format!(
                "backoff {} unit {} {u}, offset {} {u}, index from {}, jitter {} ({} %, step {} {u}), n counting {}",
                b.formula.name(),
                b.base_ms,
                b.offset_ms,
                b.index_from,
                b.jitter.name(),
                b.jitter_pct,
                b.jitter_step_ms,
                f.attempt.name()
            )
        }
    }
}

fn base(f: &crate::vocab::config::RetryFormula, n: u32, lease_left: u64) -> u64 {
    let b = &f.backoff;
    let n = n.max(1);
    match b.formula {
        BackoffFormula::Exp2 => b
            .base_ms
            .saturating_mul(1u64 << (n - 1).min(62))
            .min(b.cap_ms),
        BackoffFormula::Exp2Offset => b
            .offset_ms
            .saturating_add(b.base_ms.saturating_mul(1u64 << n.min(62)))
            .min(b.cap_ms),
        BackoffFormula::Pow4 => b
            .base_ms
            .saturating_mul((n.saturating_sub(b.index_from) as u64).saturating_pow(4))
            .saturating_add(b.offset_ms)
            .min(b.cap_ms),
        BackoffFormula::ExpE => {
            // e^k in thousandths, rounded: the same integers on every platform for k ≤ 10.
            let e_k = (f64::from(n.min(10)).exp() * 1_000.0).round() as u64;
            (b.base_ms.saturating_mul(e_k) / 1_000).min(b.cap_ms)
        }
        BackoffFormula::Immediate => 0,
        BackoffFormula::Visibility => lease_left,
    }
}

fn jittered(
    mode: JitterMode,
    f: &crate::vocab::config::RetryFormula,
    n: u32,
    d: u64,
) -> (u64, u64) {
    let pct = d.saturating_mul(u64::from(f.backoff.jitter_pct)) / 100;
    match mode {
        JitterMode::None => (d, d),
        JitterMode::Full => (0, d),
        JitterMode::Equal => (d / 2, d),
        JitterMode::Symmetric => (d.saturating_sub(pct), d.saturating_add(pct)),
        JitterMode::Up => (d, d.saturating_add(pct)),
        JitterMode::Additive => {
            let width = f.backoff.jitter_step_ms.saturating_mul(u64::from(n.max(1)));
            (d, d.saturating_add(width.saturating_sub(1)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Effective, Profile, Word};

    fn header_of(p: Profile) -> RunConfig {
        let s = p.defaults();
        let (backoff_base, backoff_cap, jitter, retry_formula) =
            Effective::of(&s).header_backoff(&s);
        RunConfig {
            backoff_base,
            backoff_cap,
            jitter,
            retry_formula,
            ..RunConfig::default()
        }
    }

    /// The checker's restatement and the simulator's formulas agree on every profile, every
    /// attempt up to 30 (for attempts counted by leases).
    #[test]
    fn the_restatement_allows_exactly_what_the_simulator_draws_from() {
        for p in Profile::ALL {
            let s = p.defaults();
            if s.attempts_count == AttemptsCount::Failures {
                continue;
            }
            let c = header_of(*p);
            for n in 1..30 {
                assert_eq!(
                    bounds(&c, n, 7_000),
                    crate::profile::backoff::bounds(&s.backoff, n, 7_000),
                    "{} n={n}",
                    p.name()
                );
            }
        }
    }

    #[test]
    fn attempts_counted_by_failures_allow_every_count_up_to_the_leases() {
        let c = header_of(Profile::Sidekiq);
        // c⁴ + 15 s + U[0, 10 s × (c + 1)), c from 0: after 1 failure 15..25 s; after 3, 31..61 s.
        assert_eq!(bounds(&c, 1, 0), (15_000, 24_999));
        assert_eq!(bounds(&c, 3, 0), (15_000, 60_999));
    }
}

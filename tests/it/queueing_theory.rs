//! durasim's queueWaitMs and queue depth against queueing theory. With every fault off, Poisson
//! arrivals and exponential or general service, the pipeline is a textbook queue; the scenarios
//! in `scenarios/validation/` are M/M/1 (ρ 0.5 and 0.8), M/M/4 (ρ 0.7), M/M/16 (ρ 0.9), M/D/1
//! and M/U/1 (ρ 0.8). For each, over seeds 0..16 run exactly as `durasim run` runs them, the
//! figures `summary.json` reports must agree with Erlang C (M/M/c: P(wait), mean wait, the wait
//! quantiles and P(wait > t)), Pollaczek-Khinchine (M/G/1: mean wait, P(wait) = ρ) and Little's
//! law (mean depth = λ × mean wait, against theory and on each run's own sample path).
//! `cargo run --release --example queueing_validation` prints the same figures as the table in
//! docs/validation.md; the mapping from durasim's quantities to the textbook's is in
//! `examples/queueing_validation/textbook.rs`.
//!
//! Tolerance. Seeds are independent replications, so each figure's standard error (SE) is the
//! spread of its 16 per-seed values over 4 (no batch means, no assumption about how long one
//! job's wait depends on the previous ones'). A figure passes when it is within 5 SE of theory,
//! plus what whole milliseconds can move it (below). The SE is estimated from 16 values, so the
//! distance in SEs follows Student's t with 15 degrees of freedom: P(|t| > 5) = 1.6e-4 per
//! figure, about 0.6% that any of the ~40 figures fails by chance for a fresh set of seeds (the
//! seeds are fixed, so a passing run always passes). Each figure's SE must also be small enough
//! for the check to mean something: at most 6% of theory for means, 12% for quantiles (p99 rests
//! on the slowest 1% of the jobs), 0.015 for
//! probabilities (M/M/16 at ρ 0.9 mixes slowly and needs 40,000 jobs a seed for that; the others
//! run 10,000). Run-length effects are below the SE: every run starts empty, and the relaxation
//! time of the slowest case (M/M/1 at ρ 0.8, 1 / (μ (1 - √ρ)^2) ≈ 90 service times) is under 1%
//! of a seed's 10,000 jobs; the run goes on until every job is served, so no wait is cut short.
//!
//! Whole milliseconds: each drawn gap and service time is rounded to the nearest ms (moving the
//! means by under 1/(24 × 100) ms), and a wait under a millisecond becomes 0 or 1 ms, so a
//! probability P(W > t) can move by the mass W has in one millisecond (`mass_in_first_ms`), a
//! mean wait or a quantile by 1 ms (2 ms past 2,048 ms, the histogram's exact range). The depth
//! is sampled every `depth_sample_ms` between the events of the sampled millisecond: a job
//! leased in that millisecond after the sample is still counted, which adds at most 1 ms of depth
//! per job that waited (λ × 1 ms to the mean depth; 0.1-0.3% here).
//!
//! What a broken kernel does to this test (each tried by hand, then reverted): one worker too
//! few (`idle` built from `0..workers - 1`) or too many, a wait longer by one service time, a
//! queue served newest-first (same mean wait and P(wait) for M/M/1, but p95/p99 and P(wait > t)
//! far off), a depth that counts the jobs in service: every one fails here; docs/validation.md
//! lists which figures catch each.

#[path = "../../examples/queueing_validation/textbook.rs"]
mod textbook;

use crate::support::load_file;
use durasim::run::{check_expectations, run_once, RunRequest};
use durasim::scenario::Scenario;
use textbook::{Estimate, Measured, Textbook, QUANTILES};

const SEEDS: u64 = 16;
/// Distance from theory allowed, in standard errors.
const K: f64 = 5.0;

fn load(name: &str) -> Scenario {
    load_file(format!("scenarios/validation/{name}.toml"))
}

/// One figure against theory: within K SE plus `slack` (whole milliseconds), and with an SE
/// no larger than `max_se`. Returns the line for the failure message.
fn compare(lines: &mut Vec<String>, what: &str, e: Estimate, theory: f64, slack: f64, max_se: f64) {
    let line = format!(
        "{what}: durasim {:.4} ± {:.4} (SE), theory {theory:.4}, {:+.1} SE, allowed {K} SE + {slack:.4}",
        e.mean,
        e.se,
        e.z(theory)
    );
    if (e.mean - theory).abs() > K * e.se + slack {
        lines.push(format!("OFF  {line}"));
    } else if e.se > max_se {
        lines.push(format!(
            "WEAK {line}: SE above {max_se:.4}, the check would not catch much"
        ));
    } else {
        lines.push(format!("ok   {line}"));
    }
}

fn validate(name: &str) {
    let s = load(name);
    // The file's own [expect] block (every job served once, nothing expired or violated).
    let report = run_once(&s, &RunRequest::for_scenario(&s), None);
    let unmet = check_expectations(s.expectations(), &report);
    assert!(unmet.is_empty(), "{name}: {unmet:?}");

    let m = Measured::run(&s, SEEDS, None).unwrap_or_else(|e| panic!("{e}"));
    let t: &Textbook = &m.textbook;
    let mut off = Vec::new();
    let p_slack = t.mass_in_first_ms();
    let rel = 0.06;
    compare(
        &mut off,
        "P(wait)",
        m.estimate(|f| f.p_wait),
        t.p_wait(),
        p_slack,
        0.015,
    );
    let w = t.mean_wait();
    compare(
        &mut off,
        "mean wait ms",
        m.estimate(|f| f.mean_wait),
        w,
        1.0,
        rel * w,
    );
    if t.markovian {
        for (i, q) in QUANTILES.into_iter().enumerate() {
            if t.quantile_at_atom(q) {
                continue; // the sample quantile jumps between 0 and a positive wait
            }
            let x = t.quantile(q).unwrap();
            let slack = if x > 2048.0 { 2.0 } else { 1.0 };
            compare(
                &mut off,
                &format!("p{} ms", (q * 100.0).round()),
                m.estimate(|f| f.quantiles[i]),
                x,
                slack,
                (2.0 * rel * x).max(1.0),
            );
            compare(
                &mut off,
                &format!("P(wait > {:.0} ms)", x.round()),
                m.estimate(|f| f.tails[i]),
                t.tail(x.round()).unwrap(),
                p_slack,
                0.015,
            );
        }
    }
    let depth = t.mean_depth();
    compare(
        &mut off,
        "mean depth (theory: λ × mean wait)",
        m.estimate(|f| f.mean_depth),
        depth,
        t.lambda * 1.0,
        rel * depth,
    );
    // Little's law on each run's own path: depth / (λ_run × mean wait) = 1, up to the jobs
    // counted in the millisecond of their lease (at most 1 ms per job that waited).
    compare(
        &mut off,
        "Little on the run: depth / (λ_run × mean wait)",
        m.estimate(|f| f.little_ratio()),
        1.0,
        t.p_wait() / w,
        0.01,
    );
    let head = format!(
        "{name} ({}, ρ {:.2}, {} seeds × {} jobs)",
        t.kind,
        t.rho(),
        m.seeds.len(),
        m.jobs() / m.seeds.len() as u64
    );
    // Shown with `cargo test --test queueing_theory -- --nocapture`.
    println!("{head}\n{}", off.join("\n"));
    assert!(
        off.iter().all(|l| l.starts_with("ok")),
        "{head} disagrees with queueing theory:\n{}",
        off.join("\n")
    );
}

#[test]
fn mm1_at_rho_0_5_matches_erlang_c() {
    validate("mm1-rho50");
}

#[test]
fn mm1_at_rho_0_8_matches_erlang_c() {
    validate("mm1-rho80");
}

#[test]
fn mm4_at_rho_0_7_matches_erlang_c() {
    validate("mm4-rho70");
}

#[test]
fn mm16_at_rho_0_9_matches_erlang_c() {
    validate("mm16-rho90");
}

#[test]
fn md1_at_rho_0_8_matches_pollaczek_khinchine() {
    validate("md1-rho80");
}

#[test]
fn mu1_at_rho_0_8_matches_pollaczek_khinchine() {
    validate("mu1-rho80");
}

/// The theory the test trusts, checked against a second, independent computation: Erlang C
/// from its closed form with factorials, Pollaczek-Khinchine with exponential service against
/// the M/M/1 result, and a textbook value (c = 2, a = 1: C = 1/3).
#[test]
fn the_textbook_formulas_are_right() {
    let mmc = |c: u32, lambda: f64, mean: f64| Textbook {
        kind: format!("M/M/{c}"),
        servers: c,
        lambda,
        service_mean: mean,
        service_m2: 2.0 * mean * mean,
        markovian: true,
    };
    let closed_form = |c: u32, a: f64| {
        let fact = |n: u32| (1..=n).map(f64::from).product::<f64>();
        let top = a.powi(c as i32) / fact(c) * c as f64 / (c as f64 - a);
        let sum: f64 = (0..c).map(|k| a.powi(k as i32) / fact(k)).sum();
        top / (sum + top)
    };
    assert!((mmc(2, 0.01, 100.0).p_wait() - 1.0 / 3.0).abs() < 1e-12);
    for (c, rho) in [(1, 0.5), (1, 0.8), (4, 0.7), (16, 0.9), (30, 0.95)] {
        let mean = 100.0;
        let lambda = rho * c as f64 / mean;
        let t = mmc(c, lambda, mean);
        let expected = closed_form(c, lambda * mean);
        assert!(
            (t.p_wait() - expected).abs() < 1e-9,
            "c {c}: {} vs {expected}",
            t.p_wait()
        );
        // Every quantile sits where the tail says it does.
        for q in QUANTILES {
            let x = t.quantile(q).unwrap();
            if x > 0.0 {
                assert!((t.tail(x).unwrap() - (1.0 - q)).abs() < 1e-12);
            }
        }
        assert!((t.mean_depth() - lambda * t.mean_wait()).abs() < 1e-12);
    }
    // M/M/1 through Pollaczek-Khinchine: E[S^2] = 2 E[S]^2 gives ρ / (μ - λ).
    let mut pk = mmc(1, 0.008, 100.0);
    pk.markovian = false;
    let mm1 = mmc(1, 0.008, 100.0);
    assert!((pk.mean_wait() - mm1.mean_wait()).abs() < 1e-9);
    assert!((pk.mean_wait() - 400.0).abs() < 1e-9);
    assert!((pk.p_wait() - mm1.p_wait()).abs() < 1e-12);
}

/// Whole milliseconds in isolation: the same M/M/1 customers (ρ 0.8, E[S] 100 ms) through
/// Lindley's recursion W' = max(0, W + S - G), once in continuous time and once with every S
/// and G rounded to whole ms exactly as durasim rounds its exponential draws. Rounding moves
/// the mean wait by far less than the 1 ms the comparisons allow, and P(W > 0) down by about
/// half the mass W has in its first millisecond.
#[test]
fn whole_milliseconds_move_the_wait_less_than_the_allowance() {
    use crate::support::{unit_of, Purpose, Stream};
    use durasim::scenario::Dist;
    let (service, gap) = (100.0, 125.0);
    let t = Textbook {
        kind: "M/M/1".into(),
        servers: 1,
        lambda: 1.0 / gap,
        service_mean: service,
        service_m2: 2.0 * service * service,
        markovian: true,
    };
    let mut s = Stream::new(7, Purpose::Arrivals, 0);
    let draw = |s: &mut Stream, mean: f64| {
        let bits = s.next_u64();
        let whole = Dist::Exponential { mean }.sample_from(bits);
        (-mean * (1.0 - unit_of(bits)).ln(), whole as i64)
    };
    let n = 2_000_000u64;
    let (mut w, mut w_ms) = (0.0f64, 0i64);
    let (mut sum, mut sum_ms, mut waited, mut waited_ms) = (0.0, 0.0, 0u64, 0u64);
    for _ in 0..n {
        let (sv, sv_ms) = draw(&mut s, service);
        let (g, g_ms) = draw(&mut s, gap);
        w = (w + sv - g).max(0.0);
        w_ms = (w_ms + sv_ms - g_ms).max(0);
        sum += w;
        sum_ms += w_ms as f64;
        waited += (w > 0.0) as u64;
        waited_ms += (w_ms > 0) as u64;
    }
    let (mean, mean_ms) = (sum / n as f64, sum_ms / n as f64);
    let shift = (waited - waited_ms) as f64 / n as f64;
    println!(
        "Lindley, {n} M/M/1 customers: mean wait {mean:.3} ms continuous, {mean_ms:.3} ms whole; \
         P(W > 0) {:.5} and {:.5} (shift {shift:.5}, mass of W in the first ms {:.5})",
        waited as f64 / n as f64,
        waited_ms as f64 / n as f64,
        t.mass_in_first_ms()
    );
    assert!((mean - mean_ms).abs() < 0.1, "{mean} vs {mean_ms}");
    assert!(shift > 0.0 && shift < t.mass_in_first_ms(), "{shift}");
}

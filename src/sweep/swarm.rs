//! Swarm mode: each seed draws its own fault rates, worker count, lease and heartbeat settings
//! and crash-point set inside the ranges of the scenario's `[swarm]` section.
//!
//! Owns: the order of the swarm draws (from the seed's own `swarm` stream, so a seed's settings
//! never depend on the other seeds, the thread count or the shard) and the record of what was
//! drawn, which a seed's result carries so it replays alone.
//! Does not: run anything, or write a draw into the scenario (`Scenario::with_draw`).

use crate::base::rng::{Purpose, Stream};
use crate::model::worker::CrashPoint;
use crate::scenario::Scenario;
use crate::sim::faults::FaultRates;
use crate::vocab::faults::Struck;

pub use crate::scenario::SwarmDraw;

/// Six decimal places: the JSON shows exactly the rate that ran.
fn rate(s: &mut Stream, range: Option<[f64; 2]>, fixed: f64) -> f64 {
    match range {
        Some([lo, hi]) => ((lo + (hi - lo) * s.unit()) * 1e6).round() / 1e6,
        None => fixed,
    }
}

fn int(s: &mut Stream, range: Option<[u64; 2]>, fixed: u64) -> u64 {
    match range {
        Some([lo, hi]) => s.range(lo, hi),
        None => fixed,
    }
}

/// The seed's settings, and the scenario with them applied (faults, workers, lease, heartbeat).
/// Draw order is fixed: crash, stall, transient_error, permanent_error, relay_crash, workers,
/// lease_ms, heartbeat_ms, then one keep-or-drop draw per crash point, then (only when their
/// ranges are given) dedupe_window_ms, relay_restart_ms and consumer_crash.
pub fn draw(base: &Scenario, seed: u64) -> (Scenario, FaultRates, SwarmDraw) {
    let r = base.swarm.clone().unwrap_or_default();
    if r.space.is_some() {
        return super::space::draw(base, seed);
    }
    let f = &base.faults;
    let mut s = Stream::new(seed, Purpose::Swarm, 0);
    let crash = rate(&mut s, r.crash, f.crash);
    let stall = rate(
        &mut s,
        r.stall,
        f.held(crate::vocab::faults::Held::Stall).rate,
    );
    let transient_error = rate(&mut s, r.transient_error, f.transient_error);
    let permanent_error = rate(&mut s, r.permanent_error, f.permanent_error);
    let relay_crash = rate(&mut s, r.relay_crash, f.struck(Struck::RelayCrash));
    let workers = int(
        &mut s,
        r.workers.map(|[a, b]| [a as u64, b as u64]),
        base.workers.count as u64,
    ) as u32;
    let lease_ms = int(&mut s, r.lease_ms, base.queue.lease_ms);
    let heartbeat_ms = match r.heartbeat_ms {
        Some([lo, hi]) => {
            let hi = hi.min(lease_ms.saturating_sub(1)).max(1);
            s.range(lo.min(hi), hi)
        }
        None => base.queue.heartbeat_ms,
    };
    let pool: Vec<String> = r
        .crash_points
        .clone()
        .unwrap_or_else(|| f.crash_points.clone());
    let mut crash_points: Vec<String> = Vec::new();
    if r.crash_points.is_some() {
        for p in &pool {
            if s.chance(0.5) {
                crash_points.push(p.clone());
            }
        }
        if crash_points.is_empty() && !pool.is_empty() {
            crash_points.push(pool[s.range(0, pool.len() as u64 - 1) as usize].clone());
        }
    } else {
        crash_points = pool;
    }
    crash_points.sort_by_key(|p| CrashPoint::parse(p));
    let dedupe_window_ms = r.dedupe_window_ms.map(|[lo, hi]| s.range(lo, hi));
    let relay_restart_ms = r.relay_restart_ms.map(|[lo, hi]| s.range(lo, hi));
    let consumer_crash = r.consumer_crash.map(|range| rate(&mut s, Some(range), 0.0));
    let d = SwarmDraw {
        crash,
        stall,
        transient_error,
        permanent_error,
        relay_crash,
        workers,
        lease_ms,
        heartbeat_ms,
        crash_points,
        dedupe_window_ms,
        relay_restart_ms,
        consumer_crash,
        space: None,
        tolerates: Vec::new(),
    };
    let scenario = base.with_draw(&d);
    let rates = FaultRates::from_scenario(&scenario);
    (scenario, rates, d)
}

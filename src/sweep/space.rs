//! The configuration space: a swarm whose seeds each draw a whole scenario (`[swarm] space =
//! "everything"`), every setting a user can write, within ranges that keep each draw valid and
//! its run finite.
//!
//! Owns: the draws, in a fixed order from the seed's own stream (`Purpose::Swarm`, index 1, so a
//! seed's configuration depends on nothing but the seed): the queue's profile and its keys, the
//! uniqueness mode, the retry policy and its formula, the stages' distributions, tenants and
//! arrivals from simultaneous to minutes apart, explicit enqueues and bursts, every fault kind
//! with lengths that land before and after a lease's end, scripted faults, the relay, the
//! outbox's retention, the consumer's window, the DLQ's capacity, retention and rate limit, and
//! operators and their targets; the repair of a draw a profile refuses (the offending key is
//! left out, as a user would); and the hazards a draw runs into (`hazards.rs`), which name the
//! invariants its seed tolerates.
//! Does not: run anything (`seed::run_seed`), or validate (the scenario does: a draw that does
//! not validate after its repairs is a bug of this file, and panics, which the sweep reports as
//! a crashed seed).

mod draws;
mod hazards;

use crate::base::rng::{Purpose, Stream};
use crate::scenario::{Scenario, ScenarioFile, SwarmDraw};
use crate::sim::faults::FaultRates;
use crate::vocab::faults::{Held, Struck};

pub use hazards::Hazard;

/// The only value `[swarm] space` takes.
pub const EVERYTHING: &str = "everything";

/// A draw's random numbers, and what it noted of itself (the seed's one-line summary).
pub(crate) struct Gen {
    s: Stream,
    notes: Vec<String>,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            s: Stream::new(seed, Purpose::Swarm, 1),
            notes: Vec::new(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.s.unit() < p
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.s.range(lo, hi)
    }

    /// Log-uniform in [lo, hi]: as many draws near lo as near hi, in proportion.
    fn span(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(1) as f64).ln());
        ((a + (b - a) * self.s.unit()).exp().round() as u64).clamp(lo, hi)
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.range(0, xs.len() as u64 - 1) as usize]
    }

    /// A probability: 0 half the time, else in (0, max], rounded to 4 decimals.
    fn rate(&mut self, max: f64) -> f64 {
        if self.chance(0.5) {
            return 0.0;
        }
        ((self.s.unit() * max * 1e4).round() / 1e4).max(1e-4)
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// The seed's scenario (named after `base`), its fault rates, and what it drew.
pub fn draw(base: &Scenario, seed: u64) -> (Scenario, FaultRates, SwarmDraw) {
    let mut g = Gen::new(seed);
    let mut file = draws::file(&mut g, base.file());
    let mut scenario = draws::validated(&mut file);
    while draws::settle(&mut g, &mut file, &scenario) {
        scenario = draws::validated(&mut file);
    }
    let hazards = hazards::of(&scenario);
    let tolerates = tolerated(&scenario);
    for h in &hazards {
        g.note(format!("hazard {}", h.name()));
    }
    let f = &scenario.faults;
    let d = SwarmDraw {
        crash: f.crash,
        stall: f.held(Held::Stall).rate,
        transient_error: f.transient_error,
        permanent_error: f.permanent_error,
        relay_crash: f.struck(Struck::RelayCrash),
        workers: scenario.workers.count,
        lease_ms: scenario.queue.lease_ms,
        heartbeat_ms: scenario.queue.heartbeat_ms,
        crash_points: f.crash_points.clone(),
        dedupe_window_ms: scenario.consumer.dedupe_window_ms,
        relay_restart_ms: scenario.relay.restart_ms,
        consumer_crash: Some(f.struck(Struck::ConsumerCrash)),
        space: Some(g.notes.join(", ")),
        tolerates,
    };
    let rates = FaultRates::from_scenario(&scenario);
    (scenario, rates, d)
}

/// The invariants a correct run of `scenario` may break, by the hazards its settings run into
/// (sorted by the checker's order): a draw's, and a guided mutant's, whose settings moved.
pub fn tolerated(scenario: &Scenario) -> Vec<String> {
    let mut tolerates: Vec<String> = hazards::of(scenario)
        .iter()
        .flat_map(|h| h.tolerates())
        .map(|i| i.name().to_string())
        .collect();
    tolerates.sort_by_key(|n| crate::check::Invariant::parse(n).map(|i| i as usize));
    tolerates.dedup();
    tolerates
}

/// A guided mutant of a draw (`sweep::guided`), repaired as a draw is (no crash on a queue that
/// never rescues, a small `max_attempts` where retries would not end, ...): its scenario, or
/// None when it does not validate.
pub fn repaired(mut file: ScenarioFile, name: &str, seed: u64) -> Option<Scenario> {
    let mut g = Gen::new(seed);
    let mut scenario = Scenario::from_file(file.clone(), name).ok()?;
    for _ in 0..16 {
        if !draws::settle(&mut g, &mut file, &scenario) {
            return Some(scenario);
        }
        scenario = Scenario::from_file(file.clone(), name).ok()?;
    }
    None
}

/// The file a space draw writes for `seed`, validated: what `--freeze` and the shrinker start
/// from (the same as [`draw`]'s scenario).
pub fn drawn_file(base: &Scenario, seed: u64) -> ScenarioFile {
    draw(base, seed).0.file().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Scenario {
        Scenario::parse(
            "space.toml",
            "name = \"space\"\n[swarm]\nspace = \"everything\"\n",
        )
        .unwrap()
    }

    #[test]
    fn every_draw_validates_and_depends_only_on_its_seed() {
        let b = base();
        for seed in 0..300 {
            let (s, _, d) = draw(&b, seed);
            let (again, _, d2) = draw(&b, seed);
            assert_eq!(d, d2, "seed {seed}");
            assert_eq!(
                toml::to_string(s.file()).unwrap(),
                toml::to_string(again.file()).unwrap()
            );
            // What is written parses back to the same scenario (freeze and shrink rely on it).
            let text = toml::to_string(s.file()).unwrap();
            let back = Scenario::parse("back.toml", &text)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            assert_eq!(back.semantics(), s.semantics(), "seed {seed}");
        }
    }
}

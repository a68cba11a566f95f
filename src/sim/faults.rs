//! The fault injector: turns seeded draws and `[[script]]` entries into attempt plans.
//!
//! Owns: how each attempt's fate is decided (stall, extraction length, crash and crash point,
//! transient and permanent errors, the model's output), in a fixed order of draws from the
//! worker's own stream, and the held faults drawn elsewhere (`draw_held`: from the pause stream
//! or the attempt's spare draws, as `vocab::faults::HELD` says); whether a fault of the delivery
//! side strikes a step of its site (`strikes`: drawn as `vocab::faults::STRUCK` says, or
//! scripted); which scripted faults are still armed.
//! Does not: apply anything; the kernel does, through the model.

use crate::base::ids::{JobId, SimTime};
use crate::base::rng::{range_of, unit_of, Stream};
use crate::model::retry::ErrorKind;
use crate::model::worker::{AttemptPlan, CrashPoint};
use crate::scenario::{Aim, FaultKind, Scenario};
use crate::vocab::faults::{
    Draw, Held, Lengths, Site, Struck, StruckDraw, HELD_KINDS, STRUCK_KINDS,
};
use std::collections::BTreeMap;

/// The random fault settings of a run (after swarm draws, if any).
#[derive(Clone, Debug)]
pub struct FaultRates {
    pub crash: f64,
    pub crash_points: Vec<CrashPoint>,
    pub transient_error: f64,
    pub permanent_error: f64,
    /// Each struck fault's rate (`vocab::faults::STRUCK`), indexed by `Struck`.
    pub struck: [f64; STRUCK_KINDS],
    /// Each held fault's rate (`vocab::faults::HELD`), indexed by `Held`.
    pub held: [f64; HELD_KINDS],
}

impl FaultRates {
    pub fn from_scenario(s: &Scenario) -> FaultRates {
        FaultRates {
            crash: s.faults.crash,
            crash_points: s
                .faults
                .crash_points
                .iter()
                .filter_map(|p| CrashPoint::parse(p))
                .collect(),
            transient_error: s.faults.transient_error,
            permanent_error: s.faults.permanent_error,
            struck: s.faults.struck,
            held: Held::ALL.map(|h| s.faults.held(h).rate),
        }
    }
}

/// A worker fault from the script, waiting for its attempt.
#[derive(Clone, Debug, Hash)]
struct Armed {
    at_ms: SimTime,
    attempt: Option<u32>,
    fault: FaultKind,
    point: Option<CrashPoint>,
    length: Option<(Held, u64)>,
}

/// Scripted worker faults by job, and each struck fault's scripted strikes in time order.
#[derive(Clone, Debug, Default, Hash)]
pub struct Script {
    by_job: BTreeMap<JobId, Vec<Armed>>,
    /// Per struck fault: (at, the job its site's step must be of, if it takes one), earliest
    /// first.
    struck: [Vec<(SimTime, Option<JobId>)>; STRUCK_KINDS],
}

impl Script {
    pub fn from_scenario(s: &Scenario) -> Script {
        let mut script = Script::default();
        for (e, aim) in s.script.iter().zip(s.aims()) {
            match *aim {
                Aim::Site { fault, job } => script.struck[fault as usize].push((e.at_ms, job)),
                Aim::Payload { .. } => {}
                Aim::Attempt { job, point } => script.by_job.entry(job).or_default().push(Armed {
                    at_ms: e.at_ms,
                    attempt: e.attempt,
                    fault: e.fault,
                    point,
                    length: e.length,
                }),
            }
        }
        for entries in &mut script.struck {
            entries.sort_by_key(|(at, _)| *at); // stable: entries at one time keep file order
        }
        script
    }

    /// Scripted faults for this attempt (each fires once), applied over the drawn plan. True
    /// when one fired.
    pub fn apply(
        &mut self,
        now: SimTime,
        job: JobId,
        attempt: u32,
        plan: &mut AttemptPlan,
    ) -> bool {
        let Some(armed) = self.by_job.get_mut(&job) else {
            return false;
        };
        let before = armed.len();
        armed.retain(|a| {
            let due = now >= a.at_ms && a.attempt.is_none_or(|n| n == attempt);
            if !due {
                return true;
            }
            match a.fault {
                FaultKind::Crash => plan.crash = a.point,
                FaultKind::TransientError => plan.error = Some(ErrorKind::ProviderUnavailable),
                FaultKind::PermanentError => plan.error = Some(ErrorKind::SchemaInvalid),
                FaultKind::MutatePayload => unreachable!("not a worker fault"),
                k if k.struck().is_some() => unreachable!("not a worker fault"),
                held => {
                    let h = held.held().expect("every other fault kind is a held one");
                    plan.lengths.set(h, a.length.map(|(_, ms)| ms));
                }
            }
            false
        });
        armed.len() < before
    }

    /// True (once per entry) when a scripted strike of `fault` is due at this step of its site
    /// (of `job`, when the site takes one): the earliest entry at or before `now` that names
    /// no job or this one.
    pub fn struck_due(&mut self, fault: Struck, now: SimTime, job: Option<JobId>) -> bool {
        let entries = &mut self.struck[fault as usize];
        let due = entries
            .iter()
            .take_while(|(at, _)| *at <= now)
            .position(|(_, j)| j.is_none() || *j == job);
        match due {
            Some(i) => {
                entries.remove(i);
                true
            }
            None => false,
        }
    }
}

/// Whether a fault of `site` can strike in this run: one drawn from the relay's stream (drawn
/// every tick whatever the rate), or one whose rate is not 0 or that is scripted. When none can,
/// the site's steps need not ask [`strikes`] (nor count their spare-draw blocks: no one reads
/// them), which is what a run without delivery-side faults costs.
pub fn site_armed(site: Site, rates: &FaultRates, script: &Script) -> bool {
    Struck::at(site).any(|s| {
        s.spec().draw == StruckDraw::RelayStream
            || rates.struck[s as usize] > 0.0
            || !script.struck[s as usize].is_empty()
    })
}

/// Whether struck fault `fault` strikes this step of its site: drawn (as its row's
/// [`StruckDraw`] says: the relay's stream, drawn whatever the rate; or slot `n` of the step's
/// spare draws, read only when the rate is not 0) or scripted. Both are always asked, so a
/// scripted strike that coincides with a drawn one is used up. Returns (strikes, scripted).
#[allow(clippy::too_many_arguments)]
pub fn strikes(
    fault: Struck,
    rates: &FaultRates,
    relay: &mut Stream,
    spare: &mut SpareDraws,
    step: u64,
    script: &mut Script,
    now: SimTime,
    job: Option<JobId>,
) -> (bool, bool) {
    let rate = rates.struck[fault as usize];
    let drawn = match fault.spec().draw {
        StruckDraw::RelayStream => relay.unit() < rate,
        StruckDraw::Spare(n) => rate > 0.0 && unit_of(spare.slot(step, n)) < rate,
    };
    let scripted = script.struck_due(fault, now, job);
    (scripted | drawn, scripted)
}

/// A provider outage: an extraction started inside it fails at once (the provider answers 503
/// without doing any work) with a provider error, a transient one, whatever was drawn. Applied
/// after the draws, so the streams stay where they were.
pub fn apply_outage(outage: &crate::scenario::Outage, now: SimTime, plan: &mut AttemptPlan) {
    if outage.covers(now) {
        plan.extract_ms = 0;
        plan.error = Some(ErrorKind::ProviderUnavailable);
    }
}

/// Draws one attempt's plan from the worker's stream as one fixed block of nine draws (a new
/// fault kind does not widen it: it takes a slot of [`SpareDraws`]): stall?,
/// stall length, extraction length, crash?, crash point, transient?, permanent?, validation
/// time, output. Every attempt takes the whole block whatever the rates are, so a frozen
/// scenario (rates 0, the fired faults scripted) consumes the stream exactly as the seeded run
/// did and replays with the same trace hash.
pub fn draw_plan(
    s: &mut Stream,
    rates: &FaultRates,
    scenario: &Scenario,
    document_invalid: bool,
) -> AttemptPlan {
    let [stall_hit, stall_len, extract_len, crash, point, transient, permanent, validate, output] =
        s.block::<9>();
    let hit = |bits: u64, p: f64| p > 0.0 && unit_of(bits) < p;
    // The stall is the one held fault drawn in the block (`Draw::AttemptBlock`).
    let stall = Held::Stall;
    let stall_ms = hit(stall_hit, rates.held[stall as usize])
        .then(|| scenario.faults.held(stall).ms.sample_from(stall_len));
    let mut lengths = Lengths::default();
    lengths.set(stall, stall_ms);
    let crash = (hit(crash, rates.crash) && !rates.crash_points.is_empty()).then(|| {
        rates.crash_points[range_of(point, 0, rates.crash_points.len() as u64 - 1) as usize]
    });
    let error = if hit(permanent, rates.permanent_error) || document_invalid {
        Some(ErrorKind::SchemaInvalid)
    } else if hit(transient, rates.transient_error) {
        Some(ErrorKind::ProviderUnavailable)
    } else {
        None
    };
    AttemptPlan {
        extract_ms: scenario.stages.inference_ms.sample_from(extract_len),
        lengths,
        validate_ms: scenario.stages.validate_ms.sample_from(validate),
        crash,
        error,
        output,
    }
}

/// Draws reserved for fault kinds to come. Every attempt of worker `w` owns [`SPARE_DRAWS`]
/// draws of `w`'s spare stream, at positions `n * SPARE_DRAWS ..` for the worker's `n`-th
/// attempt (counted by [`SpareDraws::next_step`], which the kernel calls once per attempt
/// whatever the rates are); so does every step of a site of the delivery side
/// (`vocab::faults::Site`), in the site's own spare stream ([`SpareDraws::of_site`]). A new fault kind takes the next free slot and reads it with
/// [`SpareDraws::slot`]: no other draw moves, so adding it changes no golden hash of a run
/// that leaves it off, and a frozen run (rates 0, faults scripted) still reads every other
/// stream where the seeded run did. Nothing is drawn until a slot is read.
///
/// Slots in use: those `vocab::faults::HELD` gives as `Draw::Spare(n)` (two each: `n`, `n + 1`;
/// the table's test checks that no two faults share a slot and none is past the block), and, in
/// a site's stream, those `vocab::faults::STRUCK` gives as `StruckDraw::Spare(n)` (one each).
pub const SPARE_DRAWS: u64 = 8;

/// One worker's, or one site's, spare draws (see [`SPARE_DRAWS`]).
#[derive(Clone, Debug, Hash)]
pub struct SpareDraws {
    stream: Stream,
    attempts: u64,
}

impl SpareDraws {
    pub fn new(seed: u64, worker: u32) -> SpareDraws {
        SpareDraws {
            stream: Stream::new(
                seed,
                crate::base::rng::Purpose::AttemptSpare,
                u64::from(worker),
            ),
            attempts: 0,
        }
    }

    /// The spare draws of the steps of `site` (each relay tick that sends something, ...).
    pub fn of_site(seed: u64, site: Site) -> SpareDraws {
        SpareDraws {
            stream: Stream::new(seed, crate::base::rng::Purpose::SiteSpare, site as u64),
            attempts: 0,
        }
    }

    /// The ordinal of the worker's next attempt (or the site's next step), which owns the next
    /// block of spare draws.
    #[inline]
    pub fn next_step(&mut self) -> u64 {
        let n = self.attempts;
        self.attempts += 1;
        n
    }

    /// Slot `slot` (< [`SPARE_DRAWS`]) of attempt `ordinal`'s block.
    pub fn slot(&mut self, ordinal: u64, slot: u64) -> u64 {
        assert!(slot < SPARE_DRAWS, "spare slot {slot} out of {SPARE_DRAWS}");
        self.stream.draw_at(ordinal * SPARE_DRAWS + slot)
    }
}

/// The held faults not drawn in the attempt block (`Draw::OwnStream`, `Draw::Spare`): for each
/// whose rate is not 0, two draws (hit?, length). A rate of 0 draws nothing, so a scenario that
/// leaves them off (or a frozen one, whose faults are scripted) moves no stream. `own` is the
/// worker's stream for the one `OwnStream` fault (the pause's); `spare` and `ordinal` the
/// attempt's spare draws.
pub fn draw_held(
    plan: &mut AttemptPlan,
    own: &mut Stream,
    spare: &mut SpareDraws,
    ordinal: u64,
    rates: &FaultRates,
    scenario: &Scenario,
) {
    for h in Held::ALL {
        let rate = rates.held[h as usize];
        if rate <= 0.0 {
            continue;
        }
        let [hit, length] = match h.spec().draw {
            Draw::AttemptBlock => continue,
            Draw::OwnStream => own.block::<2>(),
            Draw::Spare(n) => [spare.slot(ordinal, n), spare.slot(ordinal, n + 1)],
        };
        if unit_of(hit) < rate {
            plan.lengths
                .set(h, Some(scenario.faults.held(h).ms.sample_from(length)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_slots_are_per_attempt_and_move_nothing() {
        let mut a = SpareDraws::new(5, 2);
        let mut b = SpareDraws::new(5, 2);
        let (a0, a1) = (a.next_step(), a.next_step());
        assert_eq!((a0, a1), (0, 1));
        // Reading slots in any order, or not at all, gives every slot the same value.
        let late = a.slot(a1, 3);
        let early = a.slot(a0, 0);
        assert_eq!(b.slot(1, 3), late);
        assert_eq!(b.slot(0, 0), early);
        assert_ne!(
            a.slot(0, 1),
            a.slot(1, 1),
            "each attempt has a block of its own"
        );
        let mut other_worker = SpareDraws::new(5, 3);
        assert_ne!(other_worker.slot(0, 0), early);
    }
}

//! The orders of simultaneous events of one schedule of `durasim explore`: a search over the
//! choices at each tie (two or more events due at one virtual time), with the visited set keyed
//! by the run's state hash (`sim::state`).
//!
//! Owns: [`search`], one schedule's runs level by level (0 non-default choices, then 1, ... up
//! to the `--reorders` bound), each run a replay of its *branch* (the non-default picks it makes,
//! by tie number) then the default order; the visited set (state hash and the reorders still
//! allowed from there) and its pruning; the fewest-reorders counterexample.
//! Does not: place faults or pick the schedules (`explore.rs`), nor print.
//!
//! Why it is sound. A run hashes the state at each tie past its branch's last pick. A state seen
//! before with at least as many reorders left has had (or will have) every continuation this one
//! could have: the default order by the run that saw it, each other pick by a branch one level
//! down from there. So a run reaching it stops, its end unjudged: the state hash covers the
//! judges' state too (the checker's facts and verdicts, the metrics it cross-checks), so the continuation that is run is judged exactly as this
//! one would be. The levels go in order of reorders, so the first state seen had the most left.
//! Runs are sequential within a schedule (the answer does not depend on `--threads`).

use crate::check::Checker;
use crate::observe::metrics::Metrics;
use crate::run::{Judges, RunRequest};
use crate::scenario::Scenario;
use crate::sim::tie_break::{Stop, TieBreak};
use crate::vocab::bugs::BugSet;
use std::collections::BTreeMap;

/// A violation: its invariant, its message, the `[run] ties` of the run that broke it.
pub type Violation = (String, String, Vec<[u64; 2]>);

/// What one schedule's search found.
#[derive(Clone, Debug, Default)]
pub struct Searched {
    /// Runs made (whole, or stopped at a state seen before).
    pub runs: u64,
    /// Of them, stopped at a state seen before.
    pub pruned: u64,
    /// Kernel events of all runs.
    pub events: u64,
    /// The states hashed: at each tie explored, and at each run's end, distinct within the
    /// schedule.
    pub states: Vec<u128>,
    /// The first violation at the fewest reorders: invariant, message, `[run] ties`.
    pub violation: Option<Violation>,
}

/// The tie-break of one run of the search.
struct Branch<'v> {
    /// `(tie, pick)`, ties increasing: this run's non-default picks.
    picks: &'v [(u64, u64)],
    /// The reorders the search may still make past the last pick.
    left: u32,
    visited: &'v mut BTreeMap<u128, u32>,
    ends: &'v mut BTreeMap<u128, ()>,
    /// Ties past the last pick, taken in the default order: (tie, events due).
    open: Vec<(u64, usize)>,
    pruned: bool,
}

impl TieBreak for Branch<'_> {
    fn choose(
        &mut self,
        point: u64,
        _: u64,
        due: usize,
        state: Option<u128>,
    ) -> Result<usize, Stop> {
        if let Some(&(last, _)) = self.picks.last() {
            if point <= last {
                // Replaying the branch: its states were hashed by the runs it came from.
                let pick = self.picks.iter().find(|p| p.0 == point).map_or(0, |p| p.1);
                return Ok(pick as usize);
            }
        }
        let state = state.expect("the search's runs hash their state");
        match self.visited.get(&state) {
            Some(&left) if left >= self.left => {
                self.pruned = true;
                Err(Stop::Seen)
            }
            _ => {
                self.visited.insert(state, self.left);
                self.open.push((point, due));
                Ok(0)
            }
        }
    }

    fn ended(&mut self, state: Option<u128>) {
        if !self.pruned {
            self.ends.insert(state.expect("hashed"), ());
        }
    }
}

/// Searches the orders of `scenario`'s simultaneous events with at most `reorders` non-default
/// picks a run, level by level; stops at the first level with a violation (its first in order).
pub fn search(scenario: &Scenario, bugs: BugSet, reorders: u32) -> Searched {
    let request = RunRequest {
        bugs,
        ..RunRequest::for_scenario(scenario)
    };
    let capacity = scenario.capacity(request.jobs);
    // The judges of `run::run_streaming`: the same verdicts `durasim run` gives.
    let judges = || {
        let mut metrics = Metrics::new(scenario.workers.count, capacity, None);
        if let Some(outage) = scenario.faults.outage {
            metrics.watch_outage(outage.from_ms, outage.to_ms);
        }
        if scenario.semantics().rescue_races() {
            metrics.measure_waits_from_history();
        }
        metrics.bugs = bugs;
        Judges {
            checker: Checker::with_capacity(capacity).with_names(scenario.names().clone()),
            metrics,
        }
    };
    let mut visited: BTreeMap<u128, u32> = BTreeMap::new();
    let mut ends: BTreeMap<u128, ()> = BTreeMap::new();
    let mut out = Searched::default();
    let mut level: Vec<Vec<(u64, u64)>> = vec![Vec::new()];
    for depth in 0..=reorders {
        let mut next = Vec::new();
        for picks in &level {
            let mut branch = Branch {
                picks,
                left: reorders - depth,
                visited: &mut visited,
                ends: &mut ends,
                open: Vec::new(),
                pruned: false,
            };
            let (outcome, judges) =
                crate::sim::run_scenario_tied(scenario, &request, judges(), &mut branch);
            out.runs += 1;
            out.events += outcome.heap_events;
            let (open, pruned) = (std::mem::take(&mut branch.open), branch.pruned);
            if pruned {
                out.pruned += 1;
            } else {
                let (report, _) = judges.verdicts();
                if let Some((i, v)) = report.verdicts.iter().find(|(_, v)| v.count > 0) {
                    let m = v.first.as_ref().map(|f| f.message.clone());
                    let ties = picks.iter().map(|&(t, p)| [t, p]).collect();
                    out.violation = Some((i.name().to_string(), m.unwrap_or_default(), ties));
                    break;
                }
            }
            if depth < reorders {
                for (tie, due) in open {
                    for pick in 1..due as u64 {
                        let mut p = picks.clone();
                        p.push((tie, pick));
                        next.push(p);
                    }
                }
            }
        }
        if out.violation.is_some() {
            break;
        }
        level = next;
    }
    out.states = visited.keys().chain(ends.keys()).copied().collect();
    out.states.sort_unstable();
    out.states.dedup();
    out
}

//! Bounded-exhaustive search (`durasim explore`): every placement of up to K scripted faults on
//! a quantised time grid over a tiny scenario's run, and for each such schedule every order of
//! its simultaneous events with up to R non-default choices (`orders.rs`), each run through the
//! normal simulator and checker, in order of fewest faults, then earliest, then fewest reorders.
//!
//! Owns: the fault atoms (a fault kind, its crash point or length, its job, a grid time), the
//! bound and its cap, the enumeration (every combination of up to K distinct atoms, level by
//! level, each level in lexicographic order of the atoms, which are sorted by time), the count
//! of distinct model states over the whole search, and the shortest counterexample written as a
//! scenario file `durasim run` reproduces (its order of simultaneous events as `[run] ties`).
//! Does not: search the orders of one schedule (`orders.rs`), write files, print or read the
//! clock (`cli::explore`).
//!
//! Deduplication is by the run's state hash (`sim::state`: the model, the kernel's pending events
//! and random streams, the checker), taken at every tie: within a schedule a state seen before is
//! not explored again (the run stops there). Across schedules nothing is pruned (schedules run in
//! parallel, and pruning across them would make the counts depend on the thread count); their
//! states are counted once each over the whole search.

use super::orders::{Searched, Violation};
use super::SweepError;
use crate::base::fastmap::MixHasher;
use crate::model::worker::CrashPoint;
use crate::run::{run_once, RunRequest};
use crate::scenario::{FaultKind, Scenario, Script};
use crate::vocab::bugs::BugSet;
use crate::vocab::faults::Held;
use rayon::prelude::*;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

/// At most this many faults a schedule.
pub const MAX_FAULTS: u32 = 4;
/// At most this many non-default choices of simultaneous events a run (`--reorders`).
pub const MAX_REORDERS: u32 = 8;
/// `--reorders`'s default.
pub const DEFAULT_REORDERS: u32 = 1;
/// At most this many schedules a search (the count of every combination of up to K atoms).
pub const MAX_SCHEDULES: u64 = 250_000;
/// The grid's step, at least this many ms.
pub const MIN_GRID_MS: u64 = 10;
/// At most this many grid times.
pub const MAX_GRID_POINTS: u64 = 1_000;
/// Schedules run together (the verdict of a level is the first failing one in order).
const CHUNK: usize = 1024;

/// The kinds of fault a search places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AtomKind {
    /// A worker crash of the job's attempt at a crash point.
    Crash(CrashPoint),
    /// The attempt stalls (no heartbeat) across its lease's end.
    Stall,
    /// The holder pauses after its first heartbeat, across its lease's end.
    Pause,
    /// The relay dies after publishing, before marking the row published.
    RelayCrash,
    /// The consumer dies after applying the job's event, before it is marked handled.
    ConsumerCrash,
}

/// The names `--kinds` takes, in the order atoms at one time are sorted.
pub const KIND_NAMES: [&str; 5] = ["crash", "stall", "pause", "relay_crash", "consumer_crash"];

/// One fault of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Atom {
    pub at_ms: u64,
    pub kind: AtomKind,
    /// The job it aims at (none for a relay crash).
    pub job: Option<u32>,
}

impl Atom {
    fn script(&self, held_ms: u64) -> Script {
        let fault = match self.kind {
            AtomKind::Crash(_) => FaultKind::Crash,
            AtomKind::Stall => FaultKind::Stall,
            AtomKind::Pause => FaultKind::Pause,
            AtomKind::RelayCrash => FaultKind::RelayCrash,
            AtomKind::ConsumerCrash => FaultKind::ConsumerCrash,
        };
        let mut s = Script::new(self.at_ms, fault, self.job);
        match self.kind {
            AtomKind::Crash(p) => s.point = Some(p.name().to_string()),
            AtomKind::Stall => s.length = Some((Held::Stall, held_ms)),
            AtomKind::Pause => s.length = Some((Held::Pause, held_ms)),
            _ => {}
        }
        s
    }

    /// `crash after_lease job 0 at 500 ms`.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            AtomKind::Crash(p) => format!("crash {}", p.name()),
            AtomKind::Stall => "stall".into(),
            AtomKind::Pause => "pause".into(),
            AtomKind::RelayCrash => "relay_crash".into(),
            AtomKind::ConsumerCrash => "consumer_crash".into(),
        };
        match self.job {
            Some(j) => format!("{what} job {j} at {} ms", self.at_ms),
            None => format!("{what} at {} ms", self.at_ms),
        }
    }
}

/// What to search.
#[derive(Clone, Debug)]
pub struct Bound {
    pub faults: u32,
    /// None: the horizon / 8, rounded up to 10 ms. The horizon is the run's length without
    /// added faults, plus twice the lease a fault.
    pub grid_ms: Option<u64>,
    /// Indexes into [`KIND_NAMES`]; empty: every kind.
    pub kinds: Vec<usize>,
    pub bugs: BugSet,
    /// 0 = all cores.
    pub threads: usize,
    /// At most this many non-default choices at ties a run.
    pub reorders: u32,
}

/// Why a search was refused (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Pool(#[from] SweepError),
}

/// The space a bound spans over a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    pub horizon_ms: u64,
    pub grid_ms: u64,
    pub grid_points: u64,
    pub held_ms: u64,
    pub atoms: Vec<Atom>,
    /// Every combination of 0 to K atoms.
    pub schedules: u64,
}

/// The shortest counterexample.
#[derive(Clone, Debug, PartialEq)]
pub struct Counterexample {
    pub faults: Vec<Atom>,
    pub invariant: String,
    pub message: String,
    /// The non-default choices at ties it needs (`[tie, pick]`, `[run] ties`); empty: the
    /// default order.
    pub ties: Vec<[u64; 2]>,
    /// The scenario file `durasim run` reproduces it with.
    pub file: String,
}

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Explored {
    pub space: Space,
    /// Schedules searched: all of them when there is no counterexample; else up to the end of
    /// the chunk of [`CHUNK`] that holds the first failure of its level.
    pub schedules_run: u64,
    /// Runs made (a schedule has one a order of its simultaneous events searched).
    pub runs: u64,
    /// Of them, stopped at a state their schedule's search had seen.
    pub pruned: u64,
    /// States hashed, summed over the schedules (each schedule's distinct ones).
    pub states: u64,
    /// Distinct model states over the whole search (at ties and at runs' ends).
    pub distinct_states: u64,
    pub events: u64,
    pub counterexample: Option<Counterexample>,
}

fn choose(n: u64, k: u64) -> u64 {
    let mut c: u128 = 1;
    for i in 0..k {
        c = c * (n - i) as u128 / (i + 1) as u128;
        if c > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    c as u64
}

/// The space `bound` spans over `scenario` (one run without added faults gives the horizon);
/// refused above the caps.
pub fn space(scenario: &Scenario, bound: &Bound) -> Result<Space, ExploreError> {
    let refuse = |m: String| Err(ExploreError::Refused(m));
    if bound.reorders > MAX_REORDERS {
        return refuse(format!(
            "--reorders {}: at most {MAX_REORDERS} non-default choices a run",
            bound.reorders
        ));
    }
    if !scenario.run.ties.is_empty() {
        return refuse(
            "[run] ties: explore chooses the order of simultaneous events itself; remove it".into(),
        );
    }
    if bound.faults > MAX_FAULTS {
        return refuse(format!(
            "--faults {}: at most {MAX_FAULTS} faults a schedule",
            bound.faults
        ));
    }
    let request = RunRequest {
        bugs: bound.bugs,
        ..RunRequest::for_scenario(scenario)
    };
    let base = run_once(scenario, &request, None);
    let lease = scenario.file().queue.lease_ms;
    // Each fault can put off the run's end by a lease's expiry (and a held fault's length):
    // twice the lease a fault past the run without them.
    let horizon_ms = (base.outcome.virtual_time_ms + bound.faults as u64 * 2 * lease).max(1);
    let grid_ms = bound
        .grid_ms
        .unwrap_or_else(|| horizon_ms.div_ceil(8).div_ceil(MIN_GRID_MS) * MIN_GRID_MS);
    if grid_ms < MIN_GRID_MS {
        return refuse(format!(
            "--grid {grid_ms}: the grid's step is at least {MIN_GRID_MS} ms"
        ));
    }
    let grid_points = horizon_ms.div_ceil(grid_ms);
    if grid_points > MAX_GRID_POINTS {
        return refuse(format!(
            "--grid {grid_ms}: the run lasts {horizon_ms} ms, {grid_points} grid times; at most {MAX_GRID_POINTS} (a coarser grid)"
        ));
    }
    let f = scenario.file();
    let held_ms = lease + lease / 10;
    let jobs = f.arrivals.jobs.min(64) as u32;
    let on = |i: usize| bound.kinds.is_empty() || bound.kinds.contains(&i);
    let mut atoms = Vec::new();
    for g in 0..grid_points {
        let at_ms = g * grid_ms;
        for job in 0..jobs {
            if on(0) {
                for p in CrashPoint::ALL {
                    atoms.push(Atom {
                        at_ms,
                        kind: AtomKind::Crash(p),
                        job: Some(job),
                    });
                }
            }
            // A held fault across the lease's end needs a lease.
            if on(1) && lease > 0 {
                atoms.push(Atom {
                    at_ms,
                    kind: AtomKind::Stall,
                    job: Some(job),
                });
            }
            if on(2) && lease > 0 {
                atoms.push(Atom {
                    at_ms,
                    kind: AtomKind::Pause,
                    job: Some(job),
                });
            }
            if on(4) {
                atoms.push(Atom {
                    at_ms,
                    kind: AtomKind::ConsumerCrash,
                    job: Some(job),
                });
            }
        }
        if on(3) {
            atoms.push(Atom {
                at_ms,
                kind: AtomKind::RelayCrash,
                job: None,
            });
        }
    }
    atoms.sort();
    let n = atoms.len() as u64;
    let schedules = (0..=bound.faults as u64)
        .map(|k| if k > n { 0 } else { choose(n, k) })
        .fold(0u64, u64::saturating_add);
    if schedules > MAX_SCHEDULES {
        return refuse(format!(
            "--faults {} --grid {grid_ms}: {} fault placements on {grid_points} grid times make {schedules} schedules; at most {MAX_SCHEDULES} (fewer faults, a coarser grid or fewer --kinds)",
            bound.faults,
            atoms.len()
        ));
    }
    Ok(Space {
        horizon_ms,
        grid_ms,
        grid_points,
        held_ms,
        atoms,
        schedules,
    })
}

/// The scenario of one schedule: the scenario's own scripts, then the schedule's.
fn scheduled(scenario: &Scenario, space: &Space, pick: &[usize]) -> Option<Scenario> {
    scenario
        .edited(|f| {
            for &i in pick {
                f.script.push(space.atoms[i].script(space.held_ms));
            }
        })
        .ok()
}

/// One schedule's search: None when the schedule does not validate (e.g. a fault on a job the
/// scenario never plans), and is skipped. A panic is a violation named `panic`.
fn judge(
    scenario: &Scenario,
    space: &Space,
    pick: &[usize],
    bugs: BugSet,
    reorders: u32,
) -> Option<Searched> {
    let s = scheduled(scenario, space, pick)?;
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        super::orders::search(&s, bugs, reorders)
    }));
    Some(run.unwrap_or_else(|p| {
        let m = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic with a non-string payload".into());
        Searched {
            runs: 1,
            violation: Some(("panic".into(), m, Vec::new())),
            ..Searched::default()
        }
    }))
}

/// The k-combinations of 0..n in lexicographic order, from `first` on, at most `max`.
fn combinations(
    n: usize,
    k: usize,
    cursor: &mut Option<Vec<usize>>,
    max: usize,
) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    while out.len() < max {
        let next = match cursor.take() {
            None => return out,
            Some(c) => c,
        };
        out.push(next.clone());
        // Advance.
        let mut c = next;
        let mut i = k;
        let advanced = loop {
            if i == 0 {
                break false;
            }
            i -= 1;
            if c[i] < n - k + i {
                c[i] += 1;
                for j in i + 1..k {
                    c[j] = c[j - 1] + 1;
                }
                break true;
            }
        };
        *cursor = advanced.then_some(c);
    }
    out
}

/// The scenario file that reproduces `pick` with the non-default choices `ties` under `bugs`
/// with `durasim run`.
fn reproducer(
    scenario: &Scenario,
    space: &Space,
    pick: &[usize],
    ties: &[[u64; 2]],
    bugs: BugSet,
) -> String {
    let s = scheduled(scenario, space, pick).expect("a judged schedule validates");
    let mut f = s.file().clone();
    f.bugs = bugs;
    f.swarm = None;
    f.run.ties = ties.to_vec();
    // The scenario's [expect] describes its run without these faults.
    f.expect = Default::default();
    let mut faults: Vec<String> = pick.iter().map(|&i| space.atoms[i].describe()).collect();
    if faults.is_empty() {
        faults.push("no added fault".into());
    }
    let order = match ties.len() {
        0 => "the default order of simultaneous events".to_string(),
        n => format!("{n} non-default choices of simultaneous events ([run] ties)"),
    };
    let head = format!(
        "# Shortest counterexample of durasim explore ({} faults, grid {} ms; {order}): {}\n# Reproduce: durasim run THIS_FILE\n",
        pick.len(),
        space.grid_ms,
        faults.join("; ")
    );
    head + &toml::to_string(&f).expect("a scenario file serialises")
}

/// Runs the search: level 0 (the scenario alone), then every placement of 1 fault, ... up to
/// `bound.faults`; stops at the end of the first level with a failing schedule and answers its
/// first failing schedule in order (the result does not depend on the thread count).
pub fn explore(scenario: &Scenario, bound: &Bound) -> Result<Explored, ExploreError> {
    let space = space(scenario, bound)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(bound.threads)
        .build()
        .map_err(SweepError::ThreadPool)?;
    let n = space.atoms.len();
    // Fixed hasher, never iterated: only its size is read.
    let mut seen: HashSet<u128, BuildHasherDefault<MixHasher>> = HashSet::default();
    let mut out = Explored {
        space: space.clone(),
        schedules_run: 0,
        runs: 0,
        pruned: 0,
        states: 0,
        distinct_states: 0,
        events: 0,
        counterexample: None,
    };
    for k in 0..=bound.faults as usize {
        if k > n {
            break;
        }
        let mut cursor = Some((0..k).collect::<Vec<usize>>());
        let mut first_fail: Option<(Vec<usize>, Violation)> = None;
        loop {
            let chunk = combinations(n, k, &mut cursor, CHUNK);
            if chunk.is_empty() {
                break;
            }
            let judged: Vec<Option<Searched>> = pool.install(|| {
                chunk
                    .par_iter()
                    .map(|pick| judge(scenario, &space, pick, bound.bugs, bound.reorders))
                    .collect()
            });
            for (pick, j) in chunk.into_iter().zip(judged) {
                let Some(j) = j else { continue };
                out.schedules_run += 1;
                out.runs += j.runs;
                out.pruned += j.pruned;
                out.events += j.events;
                out.states += j.states.len() as u64;
                seen.extend(j.states);
                if let (None, Some(v)) = (&first_fail, j.violation) {
                    first_fail = Some((pick, v));
                }
            }
            // The level is finished only for the count; its first failure is already known.
            if first_fail.is_some() {
                break;
            }
        }
        if let Some((pick, (invariant, message, ties))) = first_fail {
            out.counterexample = Some(Counterexample {
                faults: pick.iter().map(|&i| space.atoms[i]).collect(),
                file: reproducer(scenario, &space, &pick, &ties, bound.bugs),
                invariant,
                message,
                ties,
            });
            break;
        }
    }
    out.distinct_states = seen.len() as u64;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_are_every_k_subset_in_lexicographic_order() {
        let mut cursor = Some(vec![0, 1]);
        let all = combinations(4, 2, &mut cursor, 100);
        assert_eq!(
            all,
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
        assert_eq!(all.len() as u64, choose(4, 2));
        let mut cursor = Some(vec![]);
        assert_eq!(
            combinations(4, 0, &mut cursor, 100),
            vec![Vec::<usize>::new()]
        );
        let mut cursor = Some(vec![0, 1, 2]);
        let mut n = 0;
        loop {
            let c = combinations(7, 3, &mut cursor, 4);
            if c.is_empty() {
                break;
            }
            n += c.len() as u64;
        }
        assert_eq!(n, choose(7, 3));
    }
}

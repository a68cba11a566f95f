//! Guided exploration (`durasim sweep --guided`): keep the runs that reached a coverage probe or
//! a `sometimes` property no run had reached, or one few runs reach, and mutate them (move a
//! scripted fault, add or drop a scripted crash, change the crash point, raise or lower a fault
//! rate, move an arrival, draw the run's random numbers again), AFL-style, the rarest paths'
//! runs most often; half the runs are fresh seeds of the range, as a uniform sweep runs them.
//! A search may start from a corpus an earlier one kept (`--corpus DIR`): its runs go first,
//! and are parents from the start, as AFL's and libFuzzer's corpus directories are.
//!
//! Owns: what the corpus keeps (new or rare features) and its parents, the mutations, the schedule (in
//! batches of [`BATCH`], each built from the corpus as the batch starts and folded back in run
//! order, so the result depends only on the plan and its starting seed, not on the thread
//! count), and a failing run written as the scenario file `durasim run` reproduces.
//! Does not: write files or print (`cli::sweep`), or shrink (a failing run's file is already a
//! whole scenario; `durasim sweep FILE --seeds S..S+1` shrinks it).

use super::corpus::{corpus_file, in_space, Corpus};
use super::seed::seed_setup;
use super::{space, Plan, SweepError, REPLAY_EVERY};
use crate::base::rng::{Purpose, Stream};
use crate::model::worker::CrashPoint;
use crate::run::{run_once, RunRequest};
use crate::scenario::{FaultKind, Scenario, Script};
use crate::sim::faults::FaultRates;
use crate::vocab::bugs::BugSet;
use crate::vocab::faults::{Held, Struck};
use crate::vocab::probes::PROBE_COUNT;
use rayon::prelude::*;

/// Runs built and judged together (the corpus changes only between batches).
pub const BATCH: usize = 64;
/// The share of runs that are fresh seeds of the range (the rest are mutants).
const FRESH_SHARE: f64 = 0.5;
/// A feature reached by at most this share of the runs so far is rare (per mille), once
/// [`RARE_AFTER`] runs have been folded.
const RARE_PER_MILLE: u64 = 5;
const RARE_AFTER: u64 = 200;

/// One run to make: a validated scenario (its fault rates written in it), the run's seed, and
/// the invariants its settings' hazards tolerate.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub scenario: Scenario,
    pub run_seed: u64,
    pub tolerates: Vec<String>,
    /// Where it came from: `seed N`, or its parent's origin and the mutations.
    pub origin: String,
}

/// The first failing run of a guided search.
#[derive(Clone, Debug, PartialEq)]
pub struct GuidedFailure {
    /// 1-based: how many runs the search made up to and including this one.
    pub run: u64,
    pub invariant: String,
    pub message: String,
    pub origin: String,
    /// The scenario file that reproduces it (`durasim run FILE`): its seed and bug switches
    /// written in.
    pub file: String,
}

/// What a guided (or uniform) search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Guided {
    pub runs: u64,
    /// Runs of the corpus the search started from.
    pub replayed: u64,
    pub fresh: u64,
    pub mutants: u64,
    pub failed_runs: u64,
    pub corpus: usize,
    pub probes_reached: usize,
    pub sometimes_reached: usize,
    pub sometimes_total: usize,
    pub first_failure: Option<GuidedFailure>,
    /// The corpus at the end as corpus files ([`corpus_file`]), in admission order: what
    /// `--corpus` reads back.
    pub kept: Vec<String>,
}

/// A feature is a probe or a sometimes property with how often the run reached it, in one of
/// these buckets (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128 or more), as AFL counts a branch: a
/// run that takes a rare branch more often than any run before is kept too.
const BUCKETS: usize = 8;
/// A feature's index is below this (a probe's or a sometimes property's bucket). The same
/// feature reached by a run whose hazards tolerate k < [`CLASSES`] invariants counts again as
/// `(1 + k) * FEATURES` above it: most draws tolerate some invariant (a real queue's profile
/// takes stale writes, a bounded DLQ drops entries), and a rare path reached only under such
/// hazards is a path some invariants never judged. Measured: with these classes a bug-free
/// corpus holds the five rarest bug switches' paths 2.5 to 24 times as often as uniform
/// seeds do (docs/sweeps.md).
const FEATURES: usize = (PROBE_COUNT + crate::check::Sometimes::ALL.len()) * BUCKETS;
const CLASSES: usize = 2;

fn bucket(n: u64) -> usize {
    match n {
        0..=3 => n.saturating_sub(1) as usize,
        4..=7 => 3,
        8..=15 => 4,
        16..=31 => 5,
        32..=127 => 6,
        _ => 7,
    }
}

/// One run's verdict and what it reached.
struct Outcome {
    /// (invariant, first message); `panic` for a crash.
    failures: Vec<(String, String)>,
    /// `i * BUCKETS + bucket(count)` for the i-th probe reached, then for the sometimes
    /// properties (numbered on from `PROBE_COUNT`).
    features: Vec<usize>,
    sometimes_total: usize,
}

/// The fresh candidate of `seed`: the plan's scenario (or the seed's swarm draw), its rates
/// written into the file so a mutant and a reproducer carry them.
pub fn fresh(plan: &Plan, seed: u64) -> Candidate {
    let (scenario, request, draw) = seed_setup(plan, seed);
    let scenario = match &request.rates {
        Some(r) => scenario
            .edited(|f| rates_into(&mut f.faults, r))
            .expect("a seed's own rates validate"),
        None => scenario,
    };
    Candidate {
        scenario,
        run_seed: seed,
        tolerates: draw.map(|d| d.tolerates).unwrap_or_default(),
        origin: format!("seed {seed}"),
    }
}

fn rates_into(f: &mut crate::scenario::Faults, r: &FaultRates) {
    f.crash = r.crash;
    f.crash_points = r
        .crash_points
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    f.transient_error = r.transient_error;
    f.permanent_error = r.permanent_error;
    f.struck = r.struck;
    for h in Held::ALL {
        f.held_mut(h).rate = r.held[h as usize];
    }
}

/// Runs `c`; `replay` runs it a second time, as a sweep does every [`REPLAY_EVERY`]-th seed,
/// and a different trace hash is a `replay` failure.
fn judge(c: &Candidate, bugs: BugSet, replay: bool) -> Outcome {
    let request = RunRequest {
        seed: c.run_seed,
        bugs,
        ..RunRequest::for_scenario(&c.scenario)
    };
    let report = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let report = run_once(&c.scenario, &request, None);
        let again = replay.then(|| run_once(&c.scenario, &request, None).outcome.trace_hash);
        (report, again)
    })) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic with a non-string payload".into());
            return Outcome {
                failures: vec![("panic".into(), message)],
                features: Vec::new(),
                sometimes_total: 0,
            };
        }
    };
    let (report, again) = report;
    let mut failures: Vec<(String, String)> = report
        .check
        .verdicts
        .iter()
        .filter(|(i, v)| v.count > 0 && !c.tolerates.iter().any(|t| t == i.name()))
        .map(|(i, v)| {
            let message = v.first.as_ref().map(|f| f.message.clone());
            (i.name().to_string(), message.unwrap_or_default())
        })
        .collect();
    if again.is_some_and(|h| h != report.outcome.trace_hash) {
        failures.push((
            "replay".into(),
            "the same run gave a different history on a second run".into(),
        ));
    }
    let probes = report.outcome.probes.clone().unwrap_or_default();
    let counts = probes.counts();
    let sometimes = &report.check.sometimes;
    let mut features: Vec<usize> = counts
        .iter()
        .copied()
        .chain(sometimes.iter().map(|(_, n)| *n))
        .enumerate()
        .filter(|(_, n)| *n > 0)
        .map(|(i, n)| i * BUCKETS + bucket(n))
        .collect();
    // Again in its class when the run tolerates no invariant, or one: a path reached where
    // (nearly) every invariant still judges it is worth a parent of its own.
    if c.tolerates.len() < CLASSES {
        let class = 1 + c.tolerates.len();
        let n = features.len();
        for k in 0..n {
            features.push(features[k] + class * FEATURES);
        }
    }
    Outcome {
        failures,
        features,
        sometimes_total: sometimes.len(),
    }
}

/// A mutant of `parent`: one to three mutations, validated; None when none applied or the
/// result does not validate (the slot then runs a fresh seed).
fn mutate(g: &mut Stream, plan: &Plan, parent: &Candidate) -> Option<Candidate> {
    let mut file = parent.scenario.file().clone();
    let mut run_seed = parent.run_seed;
    let mut notes: Vec<String> = Vec::new();
    let lease = file.queue.lease_ms.max(1);
    for _ in 0..1 + g.range(0, 2) {
        match g.range(0, 6) {
            0 => {
                run_seed = g.range(0, 1 << 48);
                notes.push("reseeded".into());
            }
            1 if !file.script.is_empty() => {
                let i = g.range(0, file.script.len() as u64 - 1) as usize;
                let shift = g.range(0, 2 * lease) as i64 - lease as i64;
                let at = &mut file.script[i].at_ms;
                *at = at.saturating_add_signed(shift);
                notes.push(format!("script {i} moved {shift} ms"));
            }
            1 | 2 => {
                let jobs = file.arrivals.jobs.clamp(1, 64);
                let point = CrashPoint::ALL[g.range(0, 2) as usize];
                let mut s = Script::new(
                    g.range(0, 8 * lease),
                    FaultKind::Crash,
                    Some(g.range(0, jobs - 1) as u32),
                );
                s.point = Some(point.name().to_string());
                notes.push(format!("crash added at {} ms ({})", s.at_ms, point.name()));
                file.script.push(s);
            }
            3 if !file.script.is_empty() => {
                let i = g.range(0, file.script.len() as u64 - 1) as usize;
                file.script.remove(i);
                notes.push(format!("script {i} dropped"));
            }
            3 | 4 => {
                let point = CrashPoint::ALL[g.range(0, 2) as usize];
                file.faults.crash_points = vec![point.name().to_string()];
                if file.faults.crash == 0.0 {
                    file.faults.crash = 0.05;
                }
                notes.push(format!("crash point {}", point.name()));
            }
            5 => {
                let f = &mut file.faults;
                let which = g.range(0, 3 + (Held::ALL.len() + Struck::ALL.len()) as u64 - 1);
                let rate: &mut f64 = match which {
                    0 => &mut f.crash,
                    1 => &mut f.transient_error,
                    2 => &mut f.permanent_error,
                    w if (w as usize) < 3 + Held::ALL.len() => {
                        &mut f.held_mut(Held::ALL[w as usize - 3]).rate
                    }
                    w => f.struck_mut(Struck::ALL[w as usize - 3 - Held::ALL.len()]),
                };
                *rate = match *rate {
                    0.0 => 0.05,
                    r if g.chance(0.5) => (r * 2.0).min(0.5),
                    r => (r / 2.0 * 1e4).round() / 1e4,
                };
                notes.push(format!("rate {which} to {rate}"));
            }
            _ => {
                let shift = g.range(0, 2 * lease) as i64 - lease as i64;
                let (n, b) = (file.enqueue.len(), file.burst.len());
                if n + b == 0 {
                    run_seed = g.range(0, 1 << 48);
                    notes.push("reseeded".into());
                    continue;
                }
                let i = g.range(0, (n + b) as u64 - 1) as usize;
                let at = match i < n {
                    true => &mut file.enqueue[i].at_ms,
                    false => &mut file.burst[i - n].at_ms,
                };
                *at = at.saturating_add_signed(shift);
                notes.push(format!("arrival {i} moved {shift} ms"));
            }
        }
    }
    let (scenario, tolerates) = match in_space(plan) {
        true => {
            let s = space::repaired(file, &plan.scenario_file, run_seed)?;
            let t = space::tolerated(&s);
            (s, t)
        }
        false => (
            Scenario::from_file(file, &plan.scenario_file).ok()?,
            parent.tolerates.clone(),
        ),
    };
    Some(Candidate {
        scenario,
        run_seed,
        tolerates,
        origin: format!("{}; {}", parent.origin, notes.join(", ")),
    })
}

/// The scenario file that reproduces `c` under `bugs` with `durasim run`.
pub fn reproducer(c: &Candidate, bugs: BugSet) -> String {
    let mut f = c.scenario.file().clone();
    f.seed = c.run_seed;
    f.bugs = bugs;
    f.swarm = None;
    let head = format!(
        "# Found by a guided sweep: {}\n# Reproduce: durasim run THIS_FILE\n",
        c.origin
    );
    head + &toml::to_string(&f).expect("a scenario file serialises")
}

/// Runs the plan's guided search: `plan.seeds.1 - plan.seeds.0` runs, first the `start`
/// corpus's runs in its order (each one kept), then fresh seeds taken from the range's start
/// upward and mutants. `mutate` false makes it a uniform sweep of the same fresh seeds (the
/// baseline of [`seeds_to_detect`]); `stop_at_first` ends it at the first failing run.
pub fn explore(
    plan: &Plan,
    start: &[Candidate],
    mutate_on: bool,
    stop_at_first: bool,
) -> Result<Guided, SweepError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(plan.threads)
        .build()
        .map_err(SweepError::ThreadPool)?;
    let budget = plan.seeds.1 - plan.seeds.0;
    let mut g = Stream::new(plan.seeds.0, Purpose::Swarm, 2);
    let features = (1 + CLASSES) * FEATURES;
    let mut corpus = Corpus::new(features);
    let mut seen: Vec<u64> = vec![0; features];
    let mut out = Guided {
        runs: 0,
        replayed: 0,
        fresh: 0,
        mutants: 0,
        failed_runs: 0,
        corpus: 0,
        probes_reached: 0,
        sometimes_reached: 0,
        sometimes_total: 0,
        first_failure: None,
        kept: Vec::new(),
    };
    let mut replay = start.iter();
    let mut next_fresh = plan.seeds.0;
    while out.runs < budget {
        let n = (budget - out.runs).min(BATCH as u64) as usize;
        let mut batch: Vec<Candidate> = Vec::with_capacity(n);
        for _ in 0..n {
            if let Some(c) = replay.next() {
                out.replayed += 1;
                batch.push(c.clone());
                continue;
            }
            let mutant = (mutate_on && !corpus.is_empty() && !g.chance(FRESH_SHARE))
                .then(|| {
                    let parent = corpus.get(pick_parent(&mut g, &seen, corpus.holders()));
                    mutate(&mut g, plan, parent)
                })
                .flatten();
            batch.push(match mutant {
                Some(m) => {
                    out.mutants += 1;
                    m
                }
                None => {
                    out.fresh += 1;
                    next_fresh += 1;
                    fresh(plan, next_fresh - 1)
                }
            });
        }
        let first = out.runs;
        let outcomes: Vec<Outcome> = pool.install(|| {
            batch
                .par_iter()
                .enumerate()
                .map(|(i, c)| {
                    judge(
                        c,
                        plan.bugs,
                        (first + i as u64).is_multiple_of(REPLAY_EVERY),
                    )
                })
                .collect()
        });
        for (i, (c, o)) in batch.into_iter().zip(outcomes).enumerate() {
            out.runs += 1;
            out.sometimes_total = out.sometimes_total.max(o.sometimes_total);
            if let Some((invariant, message)) = o.failures.first() {
                out.failed_runs += 1;
                if out.first_failure.is_none() {
                    out.first_failure = Some(GuidedFailure {
                        run: out.runs,
                        invariant: invariant.clone(),
                        message: message.clone(),
                        origin: c.origin.clone(),
                        file: reproducer(&c, plan.bugs),
                    });
                }
                if stop_at_first {
                    break;
                }
            }
            let rare =
                |n: u64| n == 0 || (out.runs > RARE_AFTER && n * 1000 <= RARE_PER_MILLE * out.runs);
            // A corpus run is kept whatever it reached: it was kept before.
            let replayed = first + (i as u64) < out.replayed;
            let keep = replayed || o.features.iter().any(|&f| rare(seen[f]));
            for &f in &o.features {
                seen[f] += 1;
            }
            // A run whose hazards tolerate some invariants is kept too: it cannot show their
            // violations, but its mutants' hazards are named again, and the others it can.
            if keep && mutate_on {
                corpus.admit(c, &o.features);
            }
        }
        if stop_at_first && out.first_failure.is_some() {
            break;
        }
    }
    out.corpus = corpus.len();
    out.kept = corpus.in_order().into_iter().map(corpus_file).collect();
    let reached = |c: &[u64]| c.iter().any(|&n| n > 0);
    let by_name: Vec<bool> = seen[..FEATURES].chunks(BUCKETS).map(reached).collect();
    out.probes_reached = by_name[..PROBE_COUNT].iter().filter(|&&r| r).count();
    out.sometimes_reached = by_name[PROBE_COUNT..].iter().filter(|&&r| r).count();
    Ok(out)
}

/// A parent for the next mutant: a feature drawn with weight 1/runs-that-reached-it among
/// the sometimes properties a corpus entry holds (the rarest get the most mutants), and the
/// latest entry that reached it.
fn pick_parent(g: &mut Stream, seen: &[u64], holder: &[Option<usize>]) -> usize {
    let weight = |f: usize| 1.0 / seen[f].max(1) as f64;
    // The sometimes properties when some entry holds one (what a run did, not how the model
    // decided it), else the probes.
    let some = |f: &usize| f % FEATURES >= PROBE_COUNT * BUCKETS;
    let held = |f: &usize| holder[*f].is_some();
    let only_some = (0..seen.len()).any(|f| held(&f) && some(&f));
    let eligible = |f: &usize| held(f) && (!only_some || some(f));
    let total: f64 = (0..seen.len()).filter(eligible).map(weight).sum();
    let mut x = g.unit() * total;
    let mut last = 0;
    for f in (0..seen.len()).filter(eligible) {
        last = holder[f].expect("held");
        x -= weight(f);
        if x < 0.0 {
            break;
        }
    }
    last
}

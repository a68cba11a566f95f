//! Shrinking: from a failing seed to a small explicit scenario that fails the same way.
//!
//! Owns: the search. It freezes the failing run (see `freeze`), checks the frozen file still
//! fails, tries the violating job alone (with 1 or 2 workers, drawn or constant inference, the
//! deadline as it was or shorter), then greedily tries smaller variants (fewer jobs, the jobs
//! as explicit `[[enqueue]]` entries and any subset of them, fewer workers, fewer faults,
//! earlier faults, shorter stalls and pauses, a shorter deadline, a smaller DLQ, simpler
//! arrivals and constant stage durations) and keeps each one that still breaks the target.
//! Jobs are dropped by delta debugging over the explicit entries (`explicit_jobs`): halves,
//! quarters, ... down to one entry at a time, each subset also tried alone, so a failure that
//! needs job 3 and job 140 of a run ends with those two jobs, not the first 141. Every candidate is judged by running it exactly as `durasim run`
//! would run the written file, so the result reproduces by construction.
//! Does not: write files (the sweep does).

use super::explicit_jobs::{created_jobs, explicit, without};
use super::freeze::{freeze, to_toml};
use crate::check::Invariant;
use crate::run::{run_once, RunRequest};
use crate::scenario::{Dist, ReplayExpectation, Scenario, ScenarioFile};
use serde::{Deserialize, Serialize};

/// What the shrunk scenario must still show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Invariant(Invariant),
    /// Two runs of the same seed differ (`nondeterministic_step`).
    Nondeterminism,
}

/// Sizes before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Size {
    pub jobs: u64,
    pub workers: u32,
    pub faults: usize,
}

fn size(s: &ScenarioFile) -> Size {
    Size {
        jobs: s.jobs_planned(),
        workers: s.workers.count,
        faults: s.script.len(),
    }
}

pub struct Shrunk {
    pub scenario: ScenarioFile,
    pub from: Size,
    pub to: Size,
    /// Candidate runs tried.
    pub runs: u32,
    /// The frozen file failed with the original seed (otherwise a nearby seed was needed).
    pub seed_kept: bool,
    pub violated: Vec<Invariant>,
}

const BUDGET: u32 = 1500;

struct Search<'a> {
    target: Target,
    runs: u32,
    header: &'a str,
    /// The roles' programs of the failing run: every candidate runs with them.
    programs: Option<&'a crate::sim::program::ProgramSpec>,
}

impl Search<'_> {
    /// Runs the candidate as its written file would run; `Some(violated)` when it hits the target.
    fn fails(&mut self, s: &ScenarioFile) -> Option<Vec<Invariant>> {
        if self.runs >= BUDGET {
            return None;
        }
        self.runs += 1;
        // Only files that parse back are candidates.
        let text = to_toml(s, self.header).ok()?;
        let s = Scenario::parse("<candidate>", &text).ok()?;
        let mut request = RunRequest::for_scenario(&s);
        request.programs = self.programs.cloned();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let r = run_once(&s, &request, None);
            let again = matches!(self.target, Target::Nondeterminism)
                .then(|| run_once(&s, &request, None).outcome.trace_hash);
            (
                r.check.violated(),
                r.outcome.trace_hash,
                again,
                r.outcome.program_fault,
            )
        }))
        .ok()?;
        let (violated, hash, again, fault) = result;
        if fault.is_some() {
            // A program that failed is no evidence either way.
            return None;
        }
        let hit = match self.target {
            Target::Invariant(i) => violated.contains(&i),
            Target::Nondeterminism => again != Some(hash),
        };
        hit.then_some(violated)
    }

    /// `s` as its written file runs, with the history.
    fn traced(&mut self, s: &ScenarioFile) -> Option<crate::run::RunReport> {
        if self.runs >= BUDGET {
            return None;
        }
        self.runs += 1;
        let text = to_toml(s, self.header).ok()?;
        let s = Scenario::parse("<candidate>", &text).ok()?;
        let mut request = RunRequest::for_scenario(&s);
        request.keep_trace = true;
        request.programs = self.programs.cloned();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_once(&s, &request, None)
        }))
        .ok()
    }

    /// The generated arrivals of `current` as explicit entries, kept if that still fails.
    fn make_explicit(&mut self, current: &mut ScenarioFile) -> bool {
        if current.arrivals.jobs + current.burst_jobs() <= 1 {
            return false;
        }
        let Some(report) = self.traced(current) else {
            return false;
        };
        let Some(c) = explicit(
            current,
            report.trace.as_deref().unwrap_or(&[]),
            &report.outcome.names,
        ) else {
            return false;
        };
        self.first(current, vec![c])
    }

    /// Delta debugging over the explicit entries: drops the largest subsets it can (each chunk
    /// tried alone, then without it), refining the chunks until single entries.
    fn fewer_entries(&mut self, current: &mut ScenarioFile) -> bool {
        let mut changed = false;
        let mut n = 2usize;
        while current.enqueue.len() >= 2 && self.runs < BUDGET {
            self.runs += 1;
            let Some(created) = created_jobs(current, self.programs) else {
                break;
            };
            let len = current.enqueue.len();
            let n_now = n.min(len);
            let chunk = len.div_ceil(n_now);
            let chunks: Vec<(usize, usize)> = (0..len)
                .step_by(chunk)
                .map(|a| (a, (a + chunk).min(len)))
                .collect();
            let keep_only = |(a, b): (usize, usize)| -> Vec<bool> {
                (0..len).map(|i| !(a..b).contains(&i)).collect()
            };
            let drop_chunk = |(a, b): (usize, usize)| -> Vec<bool> {
                (0..len).map(|i| (a..b).contains(&i)).collect()
            };
            let mut next = None;
            if chunks.len() > 2 {
                next = chunks.iter().find_map(|&c| {
                    let cand = without(current, &created, &keep_only(c));
                    self.fails(&cand).is_some().then_some((cand, 2))
                });
            }
            if next.is_none() {
                next = chunks.iter().find_map(|&c| {
                    let cand = without(current, &created, &drop_chunk(c));
                    self.fails(&cand)
                        .is_some()
                        .then_some((cand, (n_now - 1).max(2)))
                });
            }
            match next {
                Some((cand, n_next)) => {
                    *current = cand;
                    n = n_next;
                    changed = true;
                }
                None if n_now >= len => break,
                None => n = (n_now * 2).min(len),
            }
        }
        changed
    }

    /// Tries each candidate in turn; keeps the first that still fails.
    fn first(&mut self, current: &mut ScenarioFile, candidates: Vec<ScenarioFile>) -> bool {
        for c in candidates {
            if self.fails(&c).is_some() {
                *current = c;
                return true;
            }
        }
        false
    }
}

/// Drops the script and operator entries that name jobs the scenario no longer creates.
fn with_jobs(s: &ScenarioFile, jobs: u64) -> ScenarioFile {
    let mut c = s.clone();
    c.arrivals.jobs = jobs;
    let planned = c.jobs_planned();
    c.script
        .retain(|e| e.job.is_none_or(|j| (j as u64) < planned));
    c.operator
        .retain(|o| o.job.is_none_or(|j| (j as u64) < planned));
    c
}

/// The jobs named by script and operator entries mapped, in order, onto 0, 1, 2, ...; `None`
/// when they already are.
fn renumbered(s: &ScenarioFile) -> Option<ScenarioFile> {
    let mut named: Vec<u32> = s
        .script
        .iter()
        .filter_map(|e| e.job)
        .chain(s.operator.iter().filter_map(|o| o.job))
        .collect();
    named.sort_unstable();
    named.dedup();
    if named.iter().enumerate().all(|(i, j)| i as u32 == *j) {
        return None;
    }
    let map = |j: u32| named.iter().position(|x| *x == j).expect("named") as u32;
    let mut c = s.clone();
    for e in &mut c.script {
        e.job = e.job.map(map);
    }
    for o in &mut c.operator {
        o.job = o.job.map(map);
    }
    Some(c)
}

/// Constant stand-ins for a drawn duration: its mean, then longer ones (a failure may need a
/// long extraction: heartbeats, a lease running out).
fn constants_of(d: &Dist) -> Vec<Dist> {
    match d {
        Dist::Constant { .. } => Vec::new(),
        d => {
            let mean = d.mean().round().max(1.0) as u64;
            [mean, mean * 2, mean * 4, mean * 8]
                .into_iter()
                .map(|value| Dist::Constant { value })
                .collect()
        }
    }
}

/// The drawn durations a shrink may make constant: inference, validation, review, arrivals.
fn drawn(c: &mut ScenarioFile, which: usize) -> &mut Dist {
    match which {
        0 => &mut c.stages.inference_ms,
        1 => &mut c.stages.validate_ms,
        2 => &mut c.stages.review_ms,
        _ => &mut c.arrivals.interarrival_ms,
    }
}

/// Only the faults of `job` (and the relay's), that job renumbered to 0, and nothing else: the
/// failure is often one job's story.
fn focused(s: &ScenarioFile, job: u32) -> ScenarioFile {
    let mut c = s.clone();
    c.script.retain(|e| e.job.is_none_or(|j| j == job));
    for e in &mut c.script {
        if e.job.is_some() {
            e.job = Some(0);
        }
    }
    c.operator.retain(|o| o.job.is_none());
    c.arrivals.jobs = 1;
    c.enqueue.clear();
    c.burst.clear();
    c
}

/// Searches for a smaller scenario that still hits `target`, starting from the failing run of
/// `base` (the scenario as that seed ran it, swarm settings applied) under `request`.
pub fn shrink(
    base: &Scenario,
    request: &RunRequest,
    target: Target,
    header: &str,
) -> Option<Shrunk> {
    let mut traced = request.clone();
    traced.keep_trace = true;
    let plain = base.without_expectations();
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_once(&plain, &traced, None)
    }))
    .ok()?;
    let culprit = match target {
        Target::Invariant(i) => report.check.verdict(i).first.as_ref().and_then(|v| v.job),
        Target::Nondeterminism => None,
    };
    // An inconsistent history (a defect of the model) cannot be frozen: the failure is
    // reported unshrunk.
    let frozen = freeze(
        &plain,
        &traced,
        report.trace.as_deref().unwrap_or(&[]),
        &report.outcome.names,
    )
    .ok()?;
    let from = Size {
        jobs: request.jobs.unwrap_or(base.arrivals.jobs) + base.enqueue.len() as u64,
        workers: base.workers.count,
        faults: frozen.script.len(),
    };
    let mut search = Search {
        target,
        runs: 0,
        header,
        programs: request.programs.as_ref(),
    };
    let (mut s, seed_kept) = search.failing_seed(&frozen, request.seed)?;
    if let Some(job) = culprit.filter(|j| (j.0 as u64) < s.jobs_planned()) {
        search.alone(&mut s, job.0);
    }
    loop {
        let before = search.runs;
        let changed = search.fewer_jobs(&mut s)
            | search.fewer_faults(&mut s)
            | search.simpler_settings(&mut s);
        if !changed || search.runs == before || search.runs >= BUDGET {
            break;
        }
    }
    // The final verdicts become the file's expectations.
    let mut final_search = Search {
        target,
        runs: 0,
        header,
        programs: request.programs.as_ref(),
    };
    let violated = final_search.fails(&s)?;
    s.expect = Default::default();
    s.expect.violations = Some(violated.iter().map(|i| i.name().to_string()).collect());
    if target == Target::Nondeterminism {
        s.expect.replay = Some(ReplayExpectation::Diverges);
    }
    let to = size(&s);
    Some(Shrunk {
        scenario: s,
        from,
        to,
        runs: search.runs + 1,
        seed_kept,
        violated,
    })
}

impl Search<'_> {
    /// The frozen run with its own seed, or one of the next 15 if that one no longer fails; and
    /// whether the seed was kept. The frozen file replays the original seed exactly, so its
    /// own seed fails whenever the run did; the next seeds are a fallback for failures of an
    /// unseeded step (`nondeterministic_step`).
    fn failing_seed(&mut self, frozen: &ScenarioFile, seed: u64) -> Option<(ScenarioFile, bool)> {
        for k in 0..16u64 {
            let mut c = frozen.clone();
            c.seed = seed.wrapping_add(k);
            if self.fails(&c).is_some() {
                return Some((c, k == 0));
            }
        }
        None
    }

    /// The violating job alone with its faults: 1 or 2 workers, its drawn durations or
    /// constant ones, the deadline as it was or shorter (one job is never late otherwise).
    fn alone(&mut self, s: &mut ScenarioFile, job: u32) {
        let alone = focused(s, job);
        let mut candidates = Vec::new();
        for workers in [1, 2.min(s.workers.count)] {
            let mut inference = vec![alone.stages.inference_ms];
            inference.extend(constants_of(&alone.stages.inference_ms));
            for d in inference {
                let deadlines =
                    std::iter::successors(Some(alone.queue.deadline_ms), |d| Some(d / 2))
                        .take_while(|d| *d > 0);
                for deadline_ms in deadlines {
                    let mut c = alone.clone();
                    c.workers.count = workers;
                    c.stages.inference_ms = d;
                    c.queue.deadline_ms = deadline_ms;
                    candidates.push(c);
                }
            }
        }
        self.first(s, candidates);
    }

    /// Fewer jobs (renumbered onto the first ids, the smallest count from a ladder, as
    /// explicit entries and as few of those as still fail), then fewer workers.
    fn fewer_jobs(&mut self, s: &mut ScenarioFile) -> bool {
        let mut changed = false;
        // The faulted jobs renumbered to the first job ids, so that fewer generated jobs can
        // keep them.
        if s.arrivals.jobs > 1 {
            if let Some(c) = renumbered(s) {
                changed |= self.first(s, vec![c]);
            }
        }
        // Fewer jobs: the smallest count that still fails, from a rising ladder.
        let jobs = s.arrivals.jobs;
        let mut ladder: Vec<u64> = [
            1u64, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
        ]
        .into_iter()
        .chain(
            std::iter::successors(Some(jobs / 2), |n| Some(n * 3 / 2 + 1))
                .take_while(|n| *n < jobs),
        )
        .filter(|n| *n < jobs)
        .collect();
        ladder.sort_unstable();
        ladder.dedup();
        let candidates = ladder.into_iter().map(|n| with_jobs(s, n)).collect();
        changed |= self.first(s, candidates);
        // The jobs that are left as explicit entries, and as few of them as still fail.
        changed |= self.make_explicit(s);
        changed |= self.fewer_entries(s);
        // Fewer workers.
        let candidates = (1..s.workers.count)
            .map(|w| {
                let mut c = s.clone();
                c.workers.count = w;
                c
            })
            .collect();
        changed |= self.first(s, candidates);
        changed
    }

    /// Fewer faults (halves, then quarters, ..., then one at a time), fewer operator actions,
    /// earlier faults, shorter held faults.
    fn fewer_faults(&mut self, s: &mut ScenarioFile) -> bool {
        let mut changed = false;
        let mut chunk = s.script.len().div_ceil(2);
        while chunk >= 1 && !s.script.is_empty() {
            let mut start = 0;
            while start < s.script.len() {
                let mut c = s.clone();
                let end = (start + chunk).min(c.script.len());
                c.script.drain(start..end);
                if self.fails(&c).is_some() {
                    *s = c;
                    changed = true;
                } else {
                    start += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
        let mut i = 0;
        while i < s.operator.len() {
            let mut c = s.clone();
            c.operator.remove(i);
            if self.fails(&c).is_some() {
                *s = c;
                changed = true;
            } else {
                i += 1;
            }
        }
        // Earlier faults: a pinned attempt needs no time bound.
        for i in 0..s.script.len() {
            if s.script[i].attempt.is_some() && s.script[i].at_ms > 0 {
                let mut c = s.clone();
                c.script[i].at_ms = 0;
                changed |= self.first(s, vec![c]);
            }
        }
        // Shorter held faults (stalls, pauses, ...).
        for i in 0..s.script.len() {
            while let Some((h, ms)) = s.script[i].length.filter(|(_, ms)| *ms > 1) {
                let mut c = s.clone();
                c.script[i].length = Some((h, ms / 2));
                if !self.first(s, vec![c]) {
                    break;
                }
                changed = true;
            }
        }
        changed
    }

    /// A shorter deadline, a smaller DLQ (then none of its limits), simpler arrivals and
    /// constant stage durations.
    fn simpler_settings(&mut self, s: &mut ScenarioFile) -> bool {
        let mut changed = false;
        // A shorter deadline: overload is not the only way past it.
        while s.queue.deadline_ms > 1 {
            let mut c = s.clone();
            c.queue.deadline_ms /= 2;
            if !self.first(s, vec![c]) {
                break;
            }
            changed = true;
        }
        // A smaller DLQ: fewer dead jobs fill it.
        while let Some(capacity) = s.dlq.capacity.filter(|c| *c > 1) {
            let mut c = s.clone();
            c.dlq.capacity = Some(capacity / 2);
            if !self.first(s, vec![c]) {
                break;
            }
            changed = true;
        }
        // No DLQ limits, no operator automation left over.
        if !s.dlq.is_default() {
            let mut c = s.clone();
            c.dlq = Default::default();
            changed |= self.first(s, vec![c]);
        }
        changed |= self.simpler_arrivals(s);
        for which in 0..4 {
            let candidates = constants_of(drawn(&mut s.clone(), which))
                .into_iter()
                .map(|k| {
                    let mut c = s.clone();
                    *drawn(&mut c, which) = k;
                    c
                })
                .collect();
            changed |= self.first(s, candidates);
        }
        changed
    }

    /// One tenant, no collisions, no resubmits, no invalid documents: each kept if it still fails.
    fn simpler_arrivals(&mut self, s: &mut ScenarioFile) -> bool {
        let mut simpler = Vec::new();
        if s.arrivals.tenants.len() > 1 {
            let mut c = s.clone();
            c.arrivals.tenants.truncate(1);
            c.arrivals.document_collision = 0.0;
            simpler.push(c);
        }
        if s.arrivals.document_collision > 0.0 {
            let mut c = s.clone();
            c.arrivals.document_collision = 0.0;
            simpler.push(c);
        }
        if s.arrivals.resubmit > 0.0 {
            let mut c = s.clone();
            c.arrivals.resubmit = 0.0;
            c.arrivals.resubmit_changed = 0.0;
            simpler.push(c);
        }
        if s.arrivals.invalid_documents.is_some() {
            let mut c = s.clone();
            c.arrivals.invalid_documents = None;
            simpler.push(c);
        }
        let mut changed = false;
        for c in simpler {
            changed |= self.first(s, vec![c]);
        }
        changed
    }
}

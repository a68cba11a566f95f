//! Freezing: a seeded run written out as an explicit scenario.
//!
//! Owns: reading the faults that fired out of a run's history (worker crashes with their point,
//! stalls and pauses with their length, transient and permanent errors, relay crashes) and writing them as
//! `[[script]]` entries pinned to their job and attempt, with every random fault rate set to 0,
//! and turning such a scenario into a TOML file that `durasim run` accepts.
//! Does not: decide whether the frozen file still fails (see `shrink`).
//!
//! What replays: everything, with the same trace hash. The fault injector takes a fixed block
//! of draws per attempt and one draw per relay tick whatever the rates are (see
//! `sim::faults::draw_plan`), so with the rates at 0 and the fired faults scripted every stream
//! is consumed as in the seeded run. Only `nondeterministic_step` runs cannot be pinned.

use crate::base::fastmap::FastMap;
use crate::base::ids::JobId;
use crate::history::{Event, Record};
use crate::run::{run_once, RunReport, RunRequest};
use crate::scenario::{Expect, FaultKind, Scenario, ScenarioFile, Script};
use crate::vocab::counters::Counter;
use crate::vocab::faults::{Held, Struck, COVERED, STRUCK_KINDS};
use crate::vocab::key::KeyNames;

/// Whether a job's document fails validation on every attempt (not an injected fault).
pub(super) fn document_invalid(
    base: &ScenarioFile,
    names: &KeyNames,
    document: crate::base::ids::DocumentId,
) -> bool {
    let generated = document.0 < (1 << 31)
        && base
            .arrivals
            .invalid_documents
            .is_some_and(|v| document.0 % v.every < v.first);
    generated
        || base
            .enqueue
            .iter()
            .any(|e| e.invalid && names.documents.name(document) == e.document)
}

/// The records [`fired_faults`] reads: enough of a history to say which faults fired.
pub fn fault_evidence(e: &Event) -> bool {
    matches!(
        e,
        Event::Enqueued { .. }
            | Event::Leased { .. }
            | Event::WorkerCrashed { .. }
            | Event::Held(_)
            | Event::AttemptFailed { .. }
            | Event::Struck(_)
    )
}

/// A history the tools cannot pin a fault of: a record names a lease (a job and a fence) that no
/// `leased` record handed out, or a lease has no attempt number. A defect of the model (or an
/// edited history), reported as a verdict (`history_consistent`), never a panic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent history: the {record} record at {at} ms (#{index}) {problem}")]
pub struct Inconsistent {
    /// The record's position in the history (0: the header).
    pub index: usize,
    pub at: u64,
    pub record: &'static str,
    pub problem: String,
}

/// The name a sweep's failure group gives an [`Inconsistent`] history.
pub const HISTORY_CONSISTENT: &str = "history_consistent";

/// The faults that fired in a run, as script entries, in history order; an [`Inconsistent`]
/// history when a fault's record names a lease the history never handed out.
pub fn fired_faults(
    base: &ScenarioFile,
    trace: &[Record],
    names: &KeyNames,
) -> Result<Vec<Script>, Inconsistent> {
    let mut documents: FastMap<JobId, crate::base::ids::DocumentId> = FastMap::default();
    let mut leases: FastMap<(JobId, u64), (u32, u64)> = FastMap::default();
    let mut out = Vec::new();
    // Worker faults are pinned to their job and attempt number alone (`at_ms = 0`): a time bound
    // would lose the fault whenever drawn durations move the lease a little earlier.
    let entry = |_leased_at: u64, fault: FaultKind, job: JobId, attempt: u32| Script {
        attempt: Some(attempt),
        ..Script::new(0, fault, Some(job.0))
    };
    for (index, r) in trace.iter().enumerate() {
        let inconsistent = |problem: String| Inconsistent {
            index,
            at: r.at,
            record: r.event.type_name(),
            problem,
        };
        let lease = |job: JobId, fence: u64| {
            leases.get(&(job, fence)).copied().ok_or_else(|| {
                inconsistent(format!(
                    "names job-{} with fence-{fence}, which no lease handed out",
                    job.0
                ))
            })
        };
        match &r.event {
            Event::Enqueued { job, key, .. } => {
                documents.insert(*job, key.document);
            }
            Event::Leased {
                job,
                fence,
                attempt,
                ..
            } => {
                let attempt = attempt.ok_or_else(|| {
                    inconsistent(format!("of job-{} has no attempt number", job.0))
                })?;
                leases.insert((*job, fence.0), (attempt, r.at));
            }
            Event::WorkerCrashed {
                job, fence, point, ..
            } => {
                let (attempt, at) = lease(*job, fence.0)?;
                let mut e = entry(at, FaultKind::Crash, *job, attempt);
                e.point = Some(point.to_string());
                out.push(e);
            }
            Event::Held(h) => {
                let (attempt, at) = lease(h.job, h.fence.0)?;
                let mut e = entry(at, h.fault.spec().kind, h.job, attempt);
                e.length = Some((h.fault, h.ms));
                out.push(e);
            }
            Event::AttemptFailed {
                job, fence, error, ..
            } => {
                let (attempt, at) = lease(*job, fence.0)?;
                let fault = match *error {
                    "provider_unavailable" | "deadline_exceeded" => Some(FaultKind::TransientError),
                    "schema_invalid"
                        if !documents
                            .get(job)
                            .is_some_and(|d| document_invalid(base, names, *d)) =>
                    {
                        Some(FaultKind::PermanentError)
                    }
                    _ => None,
                };
                if let Some(fault) = fault {
                    out.push(entry(at, fault, *job, attempt));
                }
            }
            Event::Struck(st) => {
                out.push(Script::new(r.at, st.fault.spec().kind, st.job.map(|j| j.0)))
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Which fault kinds (by name) and crash points fired in a run: the sweep's coverage.
pub fn fired_kinds(
    base: &ScenarioFile,
    trace: &[Record],
    names: &KeyNames,
) -> Result<(Vec<&'static str>, Vec<String>), Inconsistent> {
    let mut kinds = [false; COVERED.len()];
    let mut points: Vec<String> = Vec::new();
    for s in fired_faults(base, trace, names)? {
        if let (FaultKind::Crash, Some(p)) = (s.fault, s.point) {
            if !points.contains(&p) {
                points.push(p);
            }
        }
        if let Some(i) = s.fault.coverage_index() {
            kinds[i] = true;
        }
    }
    Ok((
        COVERED
            .iter()
            .zip(kinds)
            .filter(|(_, on)| *on)
            .map(|(k, _)| k.name())
            .collect(),
        points,
    ))
}

/// The run as an explicit scenario: same seed, jobs, bugs and settings; random fault rates 0;
/// the faults that fired as `[[script]]` entries; scripted payload mutations kept; no `[swarm]`;
/// an empty `[expect]` (the caller fills it in). An [`Inconsistent`] history cannot be frozen.
pub fn freeze(
    base: &ScenarioFile,
    request: &RunRequest,
    trace: &[Record],
    names: &KeyNames,
) -> Result<ScenarioFile, Inconsistent> {
    let mut s = base.clone();
    s.seed = request.seed;
    if let Some(j) = request.jobs {
        s.arrivals.jobs = j;
    }
    s.bugs = request.bugs;
    s.faults.crash = 0.0;
    s.faults.transient_error = 0.0;
    s.faults.permanent_error = 0.0;
    s.faults.struck = [0.0; STRUCK_KINDS];
    for h in Held::ALL {
        s.faults.held_mut(h).rate = 0.0;
    }
    s.swarm = None;
    s.script = base
        .script
        .iter()
        .filter(|e| e.fault == FaultKind::MutatePayload)
        .cloned()
        .collect();
    s.script.extend(fired_faults(base, trace, names)?);
    s.expect = Expect::default();
    Ok(s)
}

/// The scenario as a TOML file, with `header` as leading comment lines. Parsed back and
/// validated before it is returned, so what is written is a scenario `durasim run` accepts.
pub fn to_toml(s: &ScenarioFile, header: &str) -> Result<String, String> {
    let body = toml::to_string(s).map_err(|e| format!("cannot write the scenario as TOML: {e}"))?;
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&body);
    Scenario::parse("<frozen scenario>", &text)
        .map_err(|e| format!("the written scenario does not parse back: {e}"))?;
    Ok(text)
}

/// The first line of every file `--freeze` writes: `--freeze FILE` replaces only a file that
/// starts with it.
pub const FROZEN_MARK: &str = "# Frozen by `durasim run ";

/// A run frozen into an explicit scenario: the file's text and how many faults it scripts.
#[derive(Clone, Debug)]
pub struct Frozen {
    pub text: String,
    pub scripted: usize,
    /// `nondeterministic_step` was on: no trace hash is pinned.
    pub unseeded: bool,
}

/// Why a run could not be frozen.
#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("--freeze needs the run's trace")]
    NoTrace,
    #[error("{0}")]
    Toml(String),
    #[error(transparent)]
    Parse(#[from] crate::scenario::ScenarioError),
    #[error(transparent)]
    Inconsistent(#[from] Inconsistent),
}

/// The counts a frozen run pins: its outcomes, its results and the crashes its faults caused
/// (the worker's, and each struck fault's count: `vocab::faults::STRUCK`).
const FROZEN_COUNTERS: [Counter; 6] = [
    Counter::Enqueued,
    Counter::Acked,
    Counter::DeadLettered,
    Counter::Cancelled,
    Counter::ResultsCommitted,
    Counter::WorkerCrashes,
];

/// `durasim run --freeze FILE`: the run as an explicit scenario, its expectations pinned to what
/// the run did (counts, violations and, unless a step is unseeded, the trace hash). Needs the
/// run's trace. `scenario_file` is named in the file's header; the shell writes the file.
pub fn freeze_run(
    scenario: &Scenario,
    request: &RunRequest,
    report: &RunReport,
    scenario_file: &str,
) -> Result<Frozen, FreezeError> {
    let trace = report.trace.as_deref().ok_or(FreezeError::NoTrace)?;
    let mut frozen = freeze(scenario, request, trace, &report.outcome.names)?;
    let m = &report.metrics;
    let e = &mut frozen.expect;
    e.violations = Some(
        report
            .check
            .violated()
            .iter()
            .map(|i| i.name().to_string())
            .collect(),
    );
    for c in FROZEN_COUNTERS
        .into_iter()
        .chain(Struck::ALL.map(|st| st.spec().count))
    {
        e.counts.set(c, m.figure(c));
    }
    // A run with an unseeded step cannot be pinned: no two runs of it share a trace.
    let unseeded = request
        .bugs
        .contains(crate::vocab::bugs::Bug::NondeterministicStep);
    if !unseeded {
        e.trace_hash = Some(crate::history::TraceHash::hex(report.outcome.trace_hash));
    }
    let header = format!(
        "Frozen by `durasim run {scenario_file} --seed {} --freeze`: the faults that fired are explicit\n[[script]] entries and every random fault rate is 0. Durations still come from the seed, and\nthe run replays with the same trace hash (pinned in [expect]).",
        request.seed
    );
    let text = to_toml(&frozen, &header).map_err(FreezeError::Toml)?;
    debug_assert!(text.starts_with(FROZEN_MARK));
    Ok(Frozen {
        text,
        scripted: frozen.script.len(),
        unseeded,
    })
}

/// Runs a frozen scenario (read back as `file`) and says how closely it replays the run it was
/// frozen from: `identical trace`, or what differs. `programs`: the run's roles' programs.
pub fn replay_frozen(
    frozen: &Frozen,
    file: &str,
    programs: Option<&crate::sim::program::ProgramSpec>,
) -> Result<String, FreezeError> {
    let check = Scenario::parse(file, &frozen.text)?;
    let mut request = RunRequest::for_scenario(&check);
    request.programs = programs.cloned();
    let again = run_once(&check, &request, None);
    let unmet = crate::run::check_expectations(check.expectations(), &again);
    Ok(if frozen.unseeded && unmet.is_empty() {
        "same verdicts and counts (nondeterministic_step is on: no two runs share a trace)"
            .to_string()
    } else if unmet.is_empty() {
        "identical trace".to_string()
    } else {
        format!(
            "DIFFERS: {}",
            unmet
                .iter()
                .map(|u| format!("{} expected {} got {}", u.field, u.expected, u.actual))
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

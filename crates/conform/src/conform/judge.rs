//! Judging one real run: the store's history read back by the library's reader and judged by its
//! checker exactly as `durasim verify` would, the same outputs as `durasim run` (`summary.json`,
//! the CSVs) plus `conform.json` (kills, throughput, and the same scenario simulated, side by
//! side), the printed summary and the verdict's exit code.
//! Does not: judge anything itself (the checker does), or run the store (`conform.rs`).

use super::args::ConformArgs;
use crate::harness::RunFacts;
use crate::store::Kind;
use anyhow::{anyhow, Context, Result};
use durasim::check::{CheckReport, Checker};
use durasim::history::reader::{HistoryReader, Limits};
use durasim::history::TraceHash;
use durasim::observe::metrics::Metrics;
use durasim::run::{
    check_expectations, run_once, Judges, JudgesSide, Observers, RunReport, RunRequest,
};
use durasim::scenario::{Expectations, Scenario};
use durasim::shell::cli::{output_error, Outcome};
use durasim::shell::report::output_dir::OutputDir;
use durasim::shell::report::summary::{summarize, RunIdentity};
use durasim::sim::RunOutcome;
use durasim::vocab::counters::Counter;
use serde_json::json;

pub(super) fn reproduce(args: &ConformArgs, seed: u64) -> String {
    let mut cmd = format!(
        "durasim conform {} --store {} --seed {seed}",
        args.scenario.display(),
        args.store
    );
    for b in &args.bugs {
        cmd.push_str(&format!(" --bug {b}"));
    }
    for k in &args.kills {
        cmd.push_str(&format!(" --kill {k}"));
    }
    if args.kill_mode != crate::kills::KillMode::Cooperative {
        cmd.push_str(&format!(" --kills {}", args.kill_mode.name()));
    }
    if let Some(ms) = args.kill_mean_ms {
        cmd.push_str(&format!(" --kill-mean-ms {ms}"));
    }
    cmd
}

/// The figures the model-against-reality table compares.
pub fn figures(r: &RunReport) -> serde_json::Value {
    let m = &r.metrics;
    let enq = m.counts.get(Counter::Enqueued).max(1) as f64;
    let q = m.queue_wait.stats();
    json!({
        "enqueued": m.counts.get(Counter::Enqueued),
        "ackedFraction": m.counts.get(Counter::Acked) as f64 / enq,
        "deadLetteredFraction": m.counts.get(Counter::DeadLettered) as f64 / enq,
        "cancelledFraction": m.counts.get(Counter::Cancelled) as f64 / enq,
        "attemptsPerJob": m.counts.get(Counter::Attempts) as f64 / enq,
        "extractCallsPerJob": m.counts.get(Counter::ExtractCalls) as f64 / enq,
        "dedupedCommits": m.counts.get(Counter::DedupedCommits),
        "duplicatesAbsorbed": m.counts.get(Counter::ConsumerDuplicates),
        "workerCrashes": m.counts.get(Counter::WorkerCrashes),
        "relayCrashes": m.counts.get(Counter::RelayCrashes),
        "leasesExpired": m.counts.get(Counter::LeasesExpired),
        "staleRejections": m.counts.get(Counter::StaleRejections),
        "queueWaitMs": {"p50": q.p50, "p95": q.p95, "p99": q.p99},
        "jobAgeMs": {"p50": m.job_age.stats().p50, "p95": m.job_age.stats().p95, "p99": m.job_age.stats().p99},
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn judge(
    args: &ConformArgs,
    scenario: &Scenario,
    text: &str,
    seed: u64,
    kind: Kind,
    facts: &RunFacts,
    history: &std::path::Path,
    in_ms: &[u8],
    out: OutputDir,
) -> Result<Outcome> {
    let (check, outcome) = verdict(history, facts)?;
    let metrics = metrics_in_ms(scenario, history, in_ms, &out)?;
    let mut report = RunReport {
        outcome,
        check,
        metrics,
        trace: None,
        wall_s: facts.wall_s,
        replay_hash: None,
        history_written: None,
    };
    report
        .metrics
        .finish_rows()
        .map_err(|e| anyhow!("cannot write attempts.csv: {e}"))?;
    let unmet = check_expectations(&real_expectations(scenario), &report);
    let reproduce = reproduce(args, seed);
    let file = args.scenario.display().to_string();
    let summary = summarize(
        &report,
        &unmet,
        RunIdentity {
            scenario_name: &scenario.name,
            scenario_file: &file,
            scenario_text: text,
            jobs_override: args.jobs,
            bugs: scenario.bugs.names(),
            seed,
            reproduce: reproduce.clone(),
            roles: None,
        },
    );
    // `summary.json` states its first violations in ms (`atMs`), as `run`'s.
    let mut in_ms = summary.clone();
    for f in in_ms
        .invariants
        .iter_mut()
        .filter_map(|i| i.first_violation.as_mut())
    {
        f.at_ms /= 1000;
    }
    durasim::shell::report::run_dir::write_outputs(&out, &report, &in_ms, text, false)?;
    let jobs_per_s = report.metrics.counts.get(Counter::Enqueued) as f64 / facts.wall_s.max(1e-9);
    let simulated = simulated_beside(args, scenario, seed, kind, facts, &report, jobs_per_s, &out)?;
    let written = out.commit().map_err(output_error)?;
    durasim::shell::cli::print_summary_in(&summary, &written, args.quiet, "µs");
    if !args.quiet {
        print_store(kind, facts, jobs_per_s);
        for (label, r) in [("simulated", &simulated), ("measured", &report)] {
            println!("  {label:<10} {}", side_by_side(r));
        }
    }
    let ok = unmet.is_empty();
    if !ok {
        println!("reproduce: {reproduce}");
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// A history the reader refuses: a defect of this harness.
fn refused(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("the store's history does not read back: {e}")
}

/// The verdict: the library's reader reads the file the store's history was written to (µs),
/// exactly as `durasim verify` would, and its checker judges it; and what the history says of
/// the run. A history the reader refuses is a defect of this harness.
fn verdict(history: &std::path::Path, facts: &RunFacts) -> Result<(CheckReport, RunOutcome)> {
    let mut reader =
        durasim::shell::files::open_history(history, Limits::default()).map_err(refused)?;
    let mut verdict = Checker::new();
    let mut hash = TraceHash::default();
    let mut last = 0;
    while let Some(r) = reader.next_record().map_err(refused)? {
        hash.add(&r);
        last = r.at;
        verdict.observe_record(&r);
    }
    let outcome = RunOutcome {
        trace_hash: hash.finish(),
        records: hash.records(),
        heap_events: 0,
        virtual_time_ms: last / 1000,
        quiescent: facts.settled,
        over_budget: false,
        names: reader.names().clone(),
        // A real store's run takes no decision of the model's: no probe is counted.
        probes: Default::default(),
        program_fault: None,
    };
    // The verdicts stay in the history's µs: their messages say µs, and so do the first
    // violations `conform` prints; `summary.json`'s `atMs` is divided in `judge`.
    Ok((verdict.finish(), outcome))
}

/// The figures: the same history in ms (`in_ms`), through the same metrics as `durasim run`,
/// `attempts.csv` written as they come.
fn metrics_in_ms(
    scenario: &Scenario,
    history: &std::path::Path,
    in_ms: &[u8],
    out: &OutputDir,
) -> Result<Metrics> {
    let mut reader = HistoryReader::from_reader(
        "history (ms)",
        std::io::Cursor::new(in_ms),
        Limits::default(),
    );
    let jobs = rows_hint(history);
    let attempt_rows: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(
        std::fs::File::create(out.file("attempts.csv")).context("cannot create attempts.csv")?,
    ));
    let mut observers = Observers {
        judges: JudgesSide::Inline(Judges {
            checker: Checker::with_capacity(jobs),
            metrics: Metrics::new(scenario.workers.count, jobs, Some(attempt_rows)),
        }),
        trace: None,
        trace_filter: None,
        history: None,
        progress: None,
    };
    while let Some(r) = reader.next_record().map_err(refused)? {
        durasim::history::Observer::observe(&mut observers, &r);
    }
    Ok(observers.judges.finish().metrics)
}

/// The same scenario, seed and bug switches, simulated: the model beside reality, both sides'
/// figures written to `conform.json`.
#[allow(clippy::too_many_arguments)]
fn simulated_beside(
    args: &ConformArgs,
    scenario: &Scenario,
    seed: u64,
    kind: Kind,
    facts: &RunFacts,
    report: &RunReport,
    jobs_per_s: f64,
    out: &OutputDir,
) -> Result<RunReport> {
    let mut request = RunRequest::for_scenario(scenario);
    request.seed = seed;
    request.jobs = args.jobs;
    let simulated = run_once(scenario, &request, None);
    let conform = json!({
        "store": kind.name(),
        "facts": facts,
        "jobsPerS": (jobs_per_s * 10.0).round() / 10.0,
        "measured": figures(report),
        "simulated": figures(&simulated),
        "simulatedViolations": simulated.check.violated().iter().map(|i| i.name()).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.file("conform.json"),
        serde_json::to_string_pretty(&conform)? + "\n",
    )?;
    Ok(simulated)
}

/// What a real run must show: a real run is judged on its invariants and the `sometimes` paths
/// it must reach, every job finished; the scenario's exact counts were written for the
/// simulator's timing.
fn real_expectations(scenario: &Scenario) -> Expectations {
    let expected = scenario.expectations();
    let mut judged = Expectations {
        violations: expected.violations.clone(),
        sometimes: expected.sometimes.clone(),
        ..Expectations::default()
    };
    judged.counts.set(Counter::Unfinished, Some(0));
    judged
}

/// The store's line of the printed summary: workers, relays, kills, stalls, throughput.
fn print_store(kind: Kind, facts: &RunFacts, jobs_per_s: f64) {
    let kills: Vec<String> = facts
        .worker_kills
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    // Cooperative kills are counted by their point; random ones by what the worker was doing.
    let mode = match facts.kill_mode {
        "random" => " at random",
        _ => "",
    };
    println!(
        "  store      {}: {} workers, {} relay(s); {} SIGKILLs{mode} ({}; relay {}), {} stalls; {:.1} jobs/s",
        kind.name(),
        facts.workers,
        facts.relays,
        facts.worker_kills.values().sum::<u64>() + facts.relay_kills,
        if kills.is_empty() { "none".to_string() } else { kills.join(", ") },
        facts.relay_kills,
        facts.stalls,
        jobs_per_s
    );
    if !facts.kills_landed.is_empty() {
        let landed: Vec<String> = facts
            .kills_landed
            .iter()
            .map(|(step, n)| format!("{step} {n}"))
            .collect();
        println!(
            "  kills      by the last step the store recorded of the killed attempt: {}",
            landed.join(", ")
        );
    }
}

/// One line of the model-against-reality comparison.
fn side_by_side(r: &RunReport) -> String {
    let m = &r.metrics;
    let enq = m.counts.get(Counter::Enqueued).max(1) as f64;
    let pct = |x: u64| 100.0 * x as f64 / enq;
    let q = m.queue_wait.stats();
    format!(
        "acked {:.1}% dlq {:.1}% cancelled {:.1}% | attempts/job {:.3} | deduped commits {} duplicates absorbed {} | queueWaitMs p50 {} p95 {} p99 {}",
        pct(m.counts.get(Counter::Acked)),
        pct(m.counts.get(Counter::DeadLettered)),
        pct(m.counts.get(Counter::Cancelled)),
        m.counts.get(Counter::Attempts) as f64 / enq,
        m.counts.get(Counter::DedupedCommits),
        m.counts.get(Counter::ConsumerDuplicates),
        q.p50,
        q.p95,
        q.p99
    )
}

/// How many jobs to size the checker for: the history's lines bound it.
fn rows_hint(path: &std::path::Path) -> usize {
    std::fs::metadata(path)
        .map_or(0, |m| (m.len() / 200) as usize)
        .min(1 << 20)
}

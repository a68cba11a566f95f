//! `durasim run`: one scenario, its verdicts and expectations, and its output directory.
//!
//! Owns: the run's flags (seed, jobs, bug switches, what to write), timing the run on the wall
//! clock for `summary.json`, the progress bar, `--freeze FILE` (written only over a file
//! `--freeze` wrote), the line that reproduces a failure, and which history goes where:
//! `trace.jsonl` streamed to its file as the run goes, the in-memory history only for what
//! needs it whole (`--freeze`, `--chart`, `--trace-format chrome`).
//! Does not: simulate or judge (`run::run_once`), or lay out the files (`report`).

use super::args::{RunArgs, TraceFormat};
use super::input::{apply_bug_flags, check_bugs_apply, load_scenario};
use super::print::print_summary;
use super::{bad, default_out, output_error, report_error, Outcome};
use crate::history::Record;
use crate::observe::progress::ProgressSink;
use crate::run::{check_expectations, run_streaming, RunReport, RunRequest, Sinks};
use crate::scenario::Scenario;
use crate::shell::report::chart::data::write_extracts;
use crate::shell::report::chart::Format;
use crate::shell::report::chrome_trace::write_chrome_trace;
use crate::shell::report::output_dir::{check_own_file, write_own_file, Kind, OutputDir};
use crate::shell::report::render::render_dir;
use crate::shell::report::run_dir::{attempt_rows, history_file, write_outputs};
use crate::shell::report::summary::{summarize, RunIdentity, Summary};
use crate::sweep::freeze::{freeze_run, replay_frozen, FreezeError, FROZEN_MARK};
use anyhow::{anyhow, Context};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

fn reproduce_command(file: &Path, request: &RunRequest, flags: &[String]) -> String {
    let mut cmd = format!("durasim run {} --seed {}", file.display(), request.seed);
    if let Some(j) = request.jobs {
        cmd.push_str(&format!(" --jobs {j}"));
    }
    for b in flags {
        cmd.push_str(&format!(" --bug {b}"));
    }
    if let Some(p) = &request.programs {
        cmd.push_str(&p.flags());
    }
    cmd
}

pub fn cmd_run(args: &RunArgs) -> anyhow::Result<Outcome> {
    let (scenario, text) = load_scenario(&args.scenario)?;
    let mut request = RunRequest::for_scenario(&scenario);
    apply_bug_flags(&mut request.bugs, &args.bugs)?;
    check_bugs_apply(
        request.bugs,
        &scenario,
        &args.scenario.display().to_string(),
    )?;
    if let Some(seed) = args.seed {
        request.seed = seed;
    }
    request.programs = super::programs::program_spec(&args.programs, request.bugs)?;
    if let Some(jobs) = args.jobs {
        crate::base::limits::check_jobs("--jobs", jobs).map_err(|e| bad(e.to_string()))?;
        request.jobs = Some(jobs);
    }
    let file = args.scenario.display().to_string();
    super::input::check_cost(&scenario, request.jobs, &file, &text)?;
    request.max_events = super::input::budget().max_events;
    // trace.jsonl is streamed to its file; the history is kept in memory only for what needs
    // it whole.
    let wants_jsonl = args
        .trace_format
        .map_or(args.trace, |f| f == TraceFormat::Jsonl);
    request.keep_trace = args.freeze.is_some() || needs_history(args);
    // The checker and the metrics work on a second core while the run goes on (the same
    // verdicts and figures).
    request.observer_thread = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(jobs_bar);
    request.progress = bar.as_ref().map(|(_, sink)| sink.clone());
    let out_path = match &args.out {
        Some(p) => p.clone(),
        None => default_out(&scenario.name, "")?,
    };
    if let Some(f) = &args.freeze {
        super::input::check_apart("--freeze", f, "--out", &out_path)?;
        check_own_file(f, "frozen scenario", is_frozen).map_err(output_error)?;
    }
    let out = OutputDir::create(&out_path, Kind::Run).map_err(output_error)?;
    let sinks = Sinks {
        attempt_rows: match args.no_rows {
            true => None,
            false => Some(attempt_rows(&out).map_err(report_error)?),
        },
        history: match wants_jsonl {
            true => Some(history_file(&out).map_err(report_error)?),
            false => None,
        },
    };
    let started = Instant::now();
    let mut report = run_streaming(&scenario, &request, sinks);
    report.wall_s = started.elapsed().as_secs_f64();
    if let Some(fault) = report.outcome.program_fault.take() {
        if let Some((bar, _)) = &bar {
            bar.finish_and_clear();
        }
        return Err(bad(fault));
    }
    if report.outcome.over_budget {
        // Nothing is committed: the temporary directory goes with `out`.
        return Err(bad(format!(
            "{file}: the run passed --max-events {} at {} ms of virtual time and was stopped, \
             nothing written: shorten run.time_limit_ms or raise --max-events (docs/limits.md)",
            request.max_events, report.outcome.virtual_time_ms
        )));
    }
    if let Some(written) = report.history_written.take() {
        written.map_err(|e| anyhow!("cannot write trace.jsonl: {e}"))?;
    }
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    let mut frozen = None;
    let mut inconsistent = false;
    if let Some(path) = &args.freeze {
        let line = freeze(&scenario, &request, &report, path, &args.scenario)?;
        inconsistent = line.is_err();
        frozen = Some(line.unwrap_or_else(|e| e));
        if !needs_history(args) {
            report.trace = None;
        }
    }
    report
        .metrics
        .finish_rows()
        .map_err(|e| anyhow!("cannot write attempts.csv: {e}"))?;
    let unmet = check_expectations(scenario.expectations(), &report);
    let reproduce = reproduce_command(&args.scenario, &request, &args.bugs);
    let identity = RunIdentity {
        scenario_name: &scenario.name,
        scenario_file: &file,
        scenario_text: &text,
        jobs_override: request.jobs,
        bugs: request.bugs.names(),
        seed: request.seed,
        reproduce: reproduce.clone(),
        roles: request.programs.as_ref().map(super::programs::roles),
    };
    let summary = summarize(&report, &unmet, identity);
    // The history for charts and the Chrome trace (trace.jsonl is written already).
    let history = report.trace.take();
    write_outputs(&out, &report, &summary, &text, args.no_rows).map_err(report_error)?;
    write_extra_outputs(&out, &report, history.as_deref(), &summary, args)?;
    let written = out.commit().map_err(output_error)?;
    // Nothing is printed on stdout before the outputs are in place: a reader that goes away
    // (`| head`) ends the process by SIGPIPE, and must find no temporary directory behind.
    if let Some(line) = frozen {
        println!("{line}");
    }
    print_summary(&summary, &report, &written, args.quiet);
    if args.chart && !args.quiet {
        println!("  report     {}", written.join("index.html").display());
    }
    // A history that cannot be frozen is a defect of the model: a verdict, like a violation.
    let ok = unmet.is_empty() && !inconsistent;
    if !ok {
        println!("reproduce: {reproduce}");
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Violated })
}

/// `--chart` and `--trace-format chrome` need the run's history in memory.
fn needs_history(args: &RunArgs) -> bool {
    args.chart || args.trace_format == Some(TraceFormat::Chrome)
}

/// Writes what `--trace-format chrome` and `--chart` ask for into the run's directory.
fn write_extra_outputs(
    out: &OutputDir,
    report: &RunReport,
    history: Option<&[Record]>,
    summary: &Summary,
    args: &RunArgs,
) -> anyhow::Result<()> {
    let history = history.or(report.trace.as_deref());
    if args.trace_format == Some(TraceFormat::Chrome) {
        let trace = history.context("no history was kept for the Chrome trace")?;
        write_chrome_trace(
            &out.file("trace.json"),
            trace,
            &report.outcome.names,
            &summary.scenario,
            summary.seed,
            &summary.trace_hash,
        )
        .context("cannot write trace.json")?;
    }
    if args.chart {
        if let Some(trace) = history {
            let summary = serde_json::to_value(summary).context("a summary serializes")?;
            write_extracts(out.path(), trace, &summary)?;
        }
        render_dir(out.path(), out.path(), Format::Png, history)?;
    }
    Ok(())
}

/// A terminal progress bar over the jobs that settled, and the sink that moves it.
fn jobs_bar() -> (indicatif::ProgressBar, ProgressSink) {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30}] {human_pos}/{human_len} jobs settled, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let shown = bar.clone();
    let sink = ProgressSink(Arc::new(move |done, jobs| {
        shown.set_length(jobs);
        shown.set_position(done);
    }));
    (bar, sink)
}

fn is_frozen(text: &str) -> bool {
    text.starts_with(FROZEN_MARK)
}

/// `--freeze FILE`: writes the run as an explicit scenario, checks that it replays, and returns
/// the line that says how closely (printed once the run's outputs are in place); `Err(line)`
/// when the run's history is inconsistent (a defect of the model: nothing is written, and the
/// run fails).
fn freeze(
    scenario: &Scenario,
    request: &RunRequest,
    report: &RunReport,
    path: &Path,
    scenario_file: &Path,
) -> anyhow::Result<Result<String, String>> {
    let frozen = match freeze_run(
        scenario,
        request,
        report,
        &scenario_file.display().to_string(),
    ) {
        Ok(f) => f,
        Err(FreezeError::Inconsistent(e)) => {
            return Ok(Err(format!(
                "  frozen     not written ({}): {e}",
                path.display()
            )))
        }
        Err(e) => return Err(anyhow!("{e}")),
    };
    write_own_file(path, &frozen.text, "frozen scenario", is_frozen).map_err(output_error)?;
    let how = replay_frozen(
        &frozen,
        &path.display().to_string(),
        request.programs.as_ref(),
    )
    .map_err(|e| anyhow!("{e}"))?;
    Ok(Ok(format!(
        "  frozen     {} ({} scripted faults): replay {how}",
        path.display(),
        frozen.scripted
    )))
}

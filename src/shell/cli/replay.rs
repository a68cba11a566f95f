//! `durasim replay DIR`: re-runs what a run's `summary.json` records and compares trace hashes.
//!
//! Owns: reading back `summary.json` as strictly as the flags it stands for, refusing a
//! `scenario.toml` edited since the run, and finding the first diverging event in a recorded
//! `trace.jsonl` (read a line at a time).
//! Does not: run anything but `run::run_once`.

use super::input::{apply_bug_flags, check_bugs_apply, load_scenario};
use super::{bad, Outcome};
use crate::history::{to_json_line, TraceHash};
use crate::run::{run_once, RunRequest};
use crate::scenario::Scenario;
use crate::shell::report::summary::ReplayInfo;
use std::path::{Path, PathBuf};

/// What `replay` reads back from `DIR/summary.json`, checked as strictly as the flags it stands
/// for: the scenario it runs is `DIR/scenario.toml`, and only if its digest is the recorded one.
fn replay_request(dir: &Path) -> anyhow::Result<(PathBuf, Scenario, RunRequest, ReplayInfo)> {
    use crate::base::limits::MAX_SUMMARY_BYTES;
    use crate::shell::files::read_capped;
    let summary_path = dir.join("summary.json");
    let text = read_capped(&summary_path, MAX_SUMMARY_BYTES, "summary.json")
        .map_err(|e| bad(e.to_string()))?;
    let info: ReplayInfo = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "{}: not a durasim summary ({})",
            summary_path.display(),
            crate::base::messages::plain(&e.to_string())
        ))
    })?;
    let field =
        |name: &str, msg: String| bad(format!("{}: field `{name}`: {msg}", summary_path.display()));
    if info.trace_hash.len() != 16 || !info.trace_hash.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(field(
            "traceHash",
            format!(
                "{} is not a trace hash (16 hex digits)",
                crate::scenario::clip(&info.trace_hash)
            ),
        ));
    }
    if let Some(j) = info.jobs_override {
        crate::base::limits::check_jobs("jobsOverride", j)
            .map_err(|e| field("jobsOverride", e.to_string()))?;
    }
    let scenario_path = dir.join("scenario.toml");
    let (scenario, scenario_text) = load_scenario(&scenario_path)?;
    let digest = blake3::hash(scenario_text.as_bytes()).to_hex().to_string();
    if digest != info.scenario_digest {
        return Err(bad(format!(
            "{}: does not match the scenarioDigest recorded in {} (recorded {}, this file {}): \
             the directory was edited after the run, so a replay would not re-run what was recorded",
            scenario_path.display(),
            summary_path.display(),
            crate::scenario::clip(&info.scenario_digest),
            &digest[..16]
        )));
    }
    let mut request = RunRequest::for_scenario(&scenario);
    request.bugs = crate::vocab::bugs::BugSet::EMPTY;
    apply_bug_flags(&mut request.bugs, &info.bugs)?;
    check_bugs_apply(
        request.bugs,
        &scenario,
        &scenario_path.display().to_string(),
    )?;
    request.seed = info.seed;
    request.jobs = info.jobs_override;
    super::input::check_cost(
        &scenario,
        request.jobs,
        &scenario_path.display().to_string(),
        &scenario_text,
    )?;
    request.max_events = super::input::budget().max_events;
    Ok((scenario_path, scenario, request, info))
}

pub fn cmd_replay(dir: &Path) -> anyhow::Result<Outcome> {
    let (scenario_path, scenario, mut request, info) = replay_request(dir)?;
    let recorded_trace = dir.join("trace.jsonl");
    request.keep_trace = recorded_trace.is_file();
    let report = run_once(&scenario, &request, None);
    let hash = TraceHash::hex(report.outcome.trace_hash);
    let shown = scenario_path.display();
    if hash == info.trace_hash {
        println!(
            "identical: {shown} seed {} trace {hash} ({} events)",
            info.seed, report.outcome.records
        );
        return Ok(Outcome::Ok);
    }
    println!(
        "DIVERGED: {shown} seed {}: recorded trace {}, replay {hash}",
        info.seed, info.trace_hash
    );
    let Some(trace) = &report.trace else {
        println!("(the original run has no trace.jsonl; re-run it with --trace to see the first diverging event)");
        return Ok(Outcome::Violated);
    };
    // The recorded trace is read a line at a time: it can be far larger than memory.
    let file = crate::shell::files::open_regular(&recorded_trace, "trace.jsonl")
        .map_err(|e| bad(e.to_string()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut old = String::new();
    let names = &report.outcome.names;
    for (i, r) in trace.iter().enumerate() {
        let now = to_json_line(r, names);
        let more =
            crate::shell::files::read_line_capped(&mut reader, &mut old, &recorded_trace, i + 1)
                .map_err(|e| bad(e.to_string()))?;
        if more && old == now {
            continue;
        }
        println!("first diverging event: #{i}");
        let old = if more {
            crate::base::messages::clip_line(&old)
        } else {
            "<end of recorded trace>".to_string()
        };
        println!("  recorded: {old}");
        println!("  replay:   {now}");
        return Ok(Outcome::Violated);
    }
    if crate::shell::files::read_line_capped(
        &mut reader,
        &mut old,
        &recorded_trace,
        trace.len() + 1,
    )
    .map_err(|e| bad(e.to_string()))?
    {
        println!(
            "first diverging event: #{}\n  recorded: {}\n  replay:   <end of replayed trace>",
            trace.len(),
            crate::base::messages::clip_line(&old)
        );
    }
    Ok(Outcome::Violated)
}

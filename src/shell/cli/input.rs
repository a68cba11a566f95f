//! What a user hands over: scenario files and bug switch names.
//!
//! Owns: reading and validating a scenario file (every failure is bad input, named with its line
//! and field), printing its warnings (bad input under `--deny-warnings`), `--bug NAME`, and
//! `durasim check`.
//! Does not: decide what a scenario means (`scenario/`, `scenario_warnings.rs`).

use super::{bad, Outcome};
use crate::scenario::{Budget, Scenario};
use crate::vocab::bugs::{Bug, BugSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `--deny-warnings`, for every scenario file this process reads.
static DENY_WARNINGS: AtomicBool = AtomicBool::new(false);

/// Sets `--deny-warnings` for the rest of the process.
pub fn deny_warnings(on: bool) {
    DENY_WARNINGS.store(on, Ordering::Relaxed);
}

/// `--max-events` (0: the default), for every run this process starts.
static MAX_EVENTS: AtomicU64 = AtomicU64::new(0);

/// Sets `--max-events` for the rest of the process (at least 1).
pub fn max_events(n: Option<u64>) -> anyhow::Result<()> {
    if n == Some(0) {
        return Err(bad("--max-events 0: allowed: 1 or more"));
    }
    MAX_EVENTS.store(n.unwrap_or(0), Ordering::Relaxed);
    Ok(())
}

/// The budget every run of this process is held to (`--max-events`).
pub fn budget() -> Budget {
    match MAX_EVENTS.load(Ordering::Relaxed) {
        0 => Budget::default(),
        max_events => Budget { max_events },
    }
}

/// A scenario whose cost bound (`Scenario::cost`, with `jobs` from `--jobs`) is over the budget
/// is bad input, naming the fields that multiply, the bound and `--max-events`.
pub fn check_cost(
    scenario: &Scenario,
    jobs: Option<u64>,
    file: &str,
    text: &str,
) -> anyhow::Result<()> {
    match scenario.cost(jobs).refusal(budget()) {
        None => Ok(()),
        Some((field, message)) => Err(bad(crate::scenario::ScenarioError {
            file: file.to_string(),
            // A period left at its default: the line of the time limit that multiplies it.
            line: {
                let mut at = crate::scenario::Locator::new(text);
                at.line(field).or_else(|| at.line("run.time_limit_ms"))
            },
            field: field.to_string(),
            message,
        }
        .to_string())),
    }
}

/// `path` made absolute (against the working directory) with its `.` and `..` resolved by
/// their names alone (the path need not exist).
pub(super) fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let abs = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Refuses, before any work, an output file named inside the output directory a command is
/// about to replace (`--freeze DIR/f.toml --out DIR`) or an output directory that is one of the
/// command's inputs (`merge s0 s1 --out s0`): the one would destroy the other.
pub fn check_apart(flag: &str, path: &Path, out_flag: &str, out: &Path) -> anyhow::Result<()> {
    let (p, o) = (lexical(path), lexical(out));
    if p.starts_with(&o) || o.starts_with(&p) {
        return Err(bad(format!(
            "{flag} {} and {out_flag} {}: one is inside the other, and writing {out_flag} \
             replaces that directory whole; give {flag} a path outside it",
            path.display(),
            out.display()
        )));
    }
    Ok(())
}

/// Reads and validates a scenario file; every failure is bad input.
pub fn load_scenario(path: &Path) -> anyhow::Result<(Scenario, String)> {
    let text = crate::shell::files::read_capped(
        path,
        crate::base::limits::MAX_SCENARIO_BYTES,
        "scenario file",
    )
    .map_err(|e| bad(e.to_string()))?;
    let file = path.display().to_string();
    let scenario = Scenario::parse(&file, &text).map_err(|e| bad(e.to_string()))?;
    check_cost(&scenario, None, &file, &text)?;
    // Printed before any output directory exists (a closed stderr ends the process).
    let warnings = crate::scenario::warnings::warnings(&scenario, &file, &text);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if !warnings.is_empty() && DENY_WARNINGS.load(Ordering::Relaxed) {
        return Err(bad(format!(
            "{file}: {} warning{} and --deny-warnings is set",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        )));
    }
    Ok((scenario, text))
}

/// Applies `--bug` names on top of the scenario's `[bugs]`.
pub fn apply_bug_flags(bugs: &mut BugSet, names: &[String]) -> anyhow::Result<()> {
    for name in names {
        let bug = Bug::parse(name).map_err(|e| bad(format!("--bug {name:?}: {e}")))?;
        bugs.insert(bug);
    }
    Ok(())
}

/// A `--bug` switch that cannot act under `scenario`'s queue (read from `file`) is bad input:
/// the run would pass with it silently off (`scenario::refused_under`).
pub fn check_bugs_apply(bugs: BugSet, scenario: &Scenario, file: &str) -> anyhow::Result<()> {
    let profile = scenario.queue.profile.as_deref().unwrap_or("durasim");
    match crate::scenario::refused_under(bugs, &scenario.semantics(), profile) {
        Some(m) => Err(bad(format!(
            "{file}: --bug {}: {m}",
            Bug::EarlyExpiry.name()
        ))),
        None => Ok(()),
    }
}

pub fn cmd_check(paths: &[PathBuf], verbose: bool) -> anyhow::Result<Outcome> {
    let mut errors = Vec::new();
    for p in paths {
        match load_scenario(p) {
            Ok((s, _)) => {
                println!("ok      {} ({})", p.display(), s.name);
                if verbose {
                    println!(
                        "        cost bound (docs/limits.md; budget --max-events {}):",
                        budget().max_events
                    );
                    for line in s.cost(None).lines() {
                        println!("        {line}");
                    }
                }
            }
            Err(e) => {
                println!("invalid {e}");
                errors.push(e.to_string());
            }
        }
    }
    if errors.is_empty() {
        Ok(Outcome::Ok)
    } else {
        Err(bad(format!(
            "{} of {} scenario files are invalid",
            errors.len(),
            paths.len()
        )))
    }
}

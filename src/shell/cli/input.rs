//! What a user hands over: scenario files and bug switch names.
//!
//! Owns: reading and validating a scenario file (every failure is bad input, named with its line
//! and field), printing its warnings (bad input under `--deny-warnings`), `--bug NAME`, and
//! `durasim check`.
//! Does not: decide what a scenario means (`scenario/`, `scenario_warnings.rs`).

use super::{bad, Outcome};
use crate::scenario::Scenario;
use crate::vocab::bugs::{Bug, BugSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// `--deny-warnings`, for every scenario file this process reads.
static DENY_WARNINGS: AtomicBool = AtomicBool::new(false);

/// Sets `--deny-warnings` for the rest of the process.
pub fn deny_warnings(on: bool) {
    DENY_WARNINGS.store(on, Ordering::Relaxed);
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

pub fn cmd_check(paths: &[PathBuf]) -> anyhow::Result<Outcome> {
    let mut errors = Vec::new();
    for p in paths {
        match load_scenario(p) {
            Ok((s, _)) => println!("ok      {} ({})", p.display(), s.name),
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

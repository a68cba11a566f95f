//! The properties every scenario text must have, whatever its bytes: what the fuzz target
//! (`fuzz/fuzz_targets/scenario.rs`, `cargo fuzz run scenario`) and the in-suite smoke
//! (`tests/it/fuzz/scenario_smoke.rs`) check on each input.
//!
//! Owns: [`check_scenario_bytes`]: parsing and validation never panic; a refusal is a
//! `ScenarioError` naming the file, with a non-empty message of bounded length that shows no raw
//! control or bidirectional character; an accepted scenario has computable warnings, and written
//! back as TOML (as `--freeze` and the shrinker write it) it parses again to the same scenario.
//! Does not: run the scenario, or generate inputs (the fuzzer and the smoke test do).

use durasim::scenario::Scenario;

/// The file name the checks parse under (it must appear in every error).
pub const FILE: &str = "fuzz.toml";

/// The longest error message a scenario can produce: the file, a line, a field path of clipped
/// parts and a sentence with at most a few clipped values and a list of allowed keys.
pub const MAX_MESSAGE: usize = 1200;

/// Checks one input. `Ok(true)`: a valid scenario; `Ok(false)`: refused as a user would see it
/// (exit 2 with a message); `Err`: a property broken (the fuzz target panics on it). A panic
/// inside is a finding too (the fuzzer and the smoke test catch it).
pub fn check_scenario_bytes(data: &[u8]) -> Result<bool, String> {
    // The CLI refuses non-UTF-8 files before parsing (files::read_capped).
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(false);
    };
    if data.len() as u64 > durasim::base::limits::MAX_SCENARIO_BYTES {
        return Ok(false);
    }
    match Scenario::parse(FILE, text) {
        Err(e) => {
            let shown = e.to_string();
            if !shown.starts_with(FILE) {
                return Err(format!("an error that does not name the file: {shown}"));
            }
            if e.message.trim().is_empty() {
                return Err(format!("an error without a message: {shown}"));
            }
            if shown.chars().count() > MAX_MESSAGE {
                return Err(format!(
                    "an error of {} characters (at most {MAX_MESSAGE}): {}",
                    shown.chars().count(),
                    durasim::base::messages::clip_line(&shown)
                ));
            }
            if let Some(c) = shown.chars().find(|&c| {
                (c.is_control() && c != '\n') || durasim::base::messages::is_invisible(c)
            }) {
                return Err(format!(
                    "an error that prints the raw character {:?}: {}",
                    c,
                    durasim::base::messages::clip_line(&shown)
                ));
            }
            Ok(false)
        }
        Ok(s) => {
            let _ = durasim::scenario::warnings::warnings(&s, FILE, text);
            let written = durasim::sweep::freeze::to_toml(&s, "fuzz")
                .map_err(|e| format!("a valid scenario that cannot be written back: {e}"))?;
            let again = Scenario::parse(FILE, &written)
                .map_err(|e| format!("a valid scenario written back does not parse: {e}"))?;
            let (a, b) = (
                serde_json::to_value(&s).expect("serializes"),
                serde_json::to_value(&again).expect("serializes"),
            );
            if a != b {
                return Err(format!(
                    "a valid scenario written back parses to another one:\n{}",
                    durasim::base::messages::clip_line(&written)
                ));
            }
            Ok(true)
        }
    }
}

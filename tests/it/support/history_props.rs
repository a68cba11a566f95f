//! The properties every history file must have, whatever its bytes: what the fuzz target
//! (`fuzz/fuzz_targets/history.rs`, `cargo fuzz run history`) and the in-suite smoke
//! (`tests/it/fuzz/history_smoke.rs`) check on each input.
//!
//! Owns: [`check_history_bytes`]: the reader never panics and never allocates beyond its limits;
//! a refusal is a `HistoryError` naming the file, with a short message showing no raw control or
//! bidirectional character; an accepted history is judged by the checker and the metrics without
//! a panic, read by every tool that reads a history (the sweep's coverage, `--freeze` and the
//! shrinker's explicit jobs, the charts' markers, the Perfetto trace) without a panic (an
//! inconsistent one is a verdict, [`check_tools`]), and written back in the documented format it
//! reads again to the same records (the same trace hash).
//! Does not: generate inputs (the fuzzer and the smoke test do).

use durasim::history::format::write_history;
use durasim::history::reader::{HistoryReader, Limits};
use durasim::history::TraceHash;

/// The name the checks read under (it must appear in every error).
pub const FILE: &str = "fuzz.jsonl";

/// The longest error message a history line can produce: the file, a line number, a field name
/// and a sentence with a clipped value and a list of allowed words.
pub const MAX_MESSAGE: usize = 1200;

/// The limits the checks read with: small, so the fuzzer finds the edges.
pub fn limits() -> Limits {
    Limits {
        max_line_bytes: 4096,
        max_file_bytes: 1 << 20,
        ..Limits::default()
    }
}

/// Checks one input. `Ok(true)`: a history, judged; `Ok(false)`: refused as `durasim verify`
/// would refuse it (exit 2 with a message); `Err`: a property broken (the fuzz target panics on
/// it). A panic inside is a finding too.
pub fn check_history_bytes(data: &[u8]) -> Result<bool, String> {
    let mut reader = HistoryReader::from_reader(FILE, data, limits());
    let judged = match durasim::run::verify::judge(&mut reader) {
        Ok(j) => j,
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
            if let Some(c) = shown
                .chars()
                .find(|&c| c.is_control() || durasim::base::messages::is_invisible(c))
            {
                return Err(format!(
                    "an error that prints the raw character {c:?}: {}",
                    durasim::base::messages::clip_line(&shown)
                ));
            }
            return Ok(false);
        }
    };
    // Written back, the history reads again to the same records.
    let (records, names) = HistoryReader::from_reader(FILE, data, limits())
        .read_all()
        .map_err(|e| format!("a history read once is refused the second time: {e}"))?;
    check_tools(&records, &names)?;
    let mut written = Vec::new();
    write_history(&mut written, &records, &names).map_err(|e| e.to_string())?;
    let again = HistoryReader::from_reader(FILE, written.as_slice(), Limits::default())
        .read_all()
        .map_err(|e| format!("a history written back does not read: {e}"))?
        .0;
    let hash = |rs: &[durasim::history::Record]| {
        let mut h = TraceHash::default();
        rs.iter().for_each(|r| h.add(r));
        h.finish()
    };
    if hash(&again) != judged.trace_hash || hash(&records) != judged.trace_hash {
        return Err(format!(
            "a history written back reads to other records:\n{}",
            durasim::base::messages::clip_line(&String::from_utf8_lossy(&written))
        ));
    }
    Ok(true)
}

/// Every tool that reads a history, on `records` (any history: one the model wrote, one edited,
/// one recorded outside): none panics, and an inconsistent history is an `Inconsistent` verdict
/// where a tool needs consistency (the sweep's coverage and `--freeze` pin faults to leases).
/// `Err`: a property broken.
pub fn check_tools(
    records: &[durasim::history::Record],
    names: &durasim::vocab::key::KeyNames,
) -> Result<(), String> {
    use durasim::sweep::freeze::{fired_faults, fired_kinds, freeze};
    let base = durasim::scenario::Scenario::parse("fuzz.toml", "name = \"fuzz\"\n")
        .map_err(|e| e.to_string())?;
    let request = durasim::run::RunRequest::for_scenario(&base);
    let kinds = fired_kinds(&base, records, names);
    let faults = fired_faults(&base, records, names);
    let frozen = freeze(&base, &request, records, names);
    if kinds.is_ok() != faults.is_ok() || frozen.is_ok() != faults.is_ok() {
        return Err(
            "the sweep's coverage and --freeze disagree on whether a history is consistent".into(),
        );
    }
    if let Err(e) = &faults {
        if !e.to_string().starts_with("inconsistent history: ") {
            return Err(format!(
                "an inconsistent history's verdict says too little: {e}"
            ));
        }
    }
    let _ = durasim::sweep::explicit_jobs::explicit(&base, records, names);
    let _ = durasim::shell::report::chart::data::from_records(records);
    let _ = durasim::shell::report::chrome_trace::chrome_trace(records, names, "fuzz", 0, "0");
    Ok(())
}

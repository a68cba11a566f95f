//! What the history-editing tests share: judge a history given as lines, and the first
//! violation's message of an invariant.
//! Owns: test helpers only.

use durasim::check::{CheckReport, Invariant};
use durasim::history::reader::{HistoryReader, Limits};

/// The checker's report on `lines`, read back as a history file would be.
pub fn judge(lines: &[String]) -> CheckReport {
    let text = lines.join("\n") + "\n";
    let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
    durasim::verify::judge(&mut reader)
        .unwrap_or_else(|e| panic!("{e}"))
        .check
}

/// The message of `i`'s first violation, or "" when it holds.
pub fn first_message(c: &CheckReport, i: Invariant) -> String {
    c.verdict(i)
        .first
        .as_ref()
        .map_or(String::new(), |f| f.message.clone())
}

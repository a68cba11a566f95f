//! Invariants over the recorded history only (always / eventually / sometimes).
//!
//! The checker depends on the history (`crate::history`) and its vocabulary (`crate::vocab`,
//! `crate::base::ids`, `crate::vocab::key_index`), never on the model: it restates each rule (the retry
//! policy, the backoff bounds, the lease arithmetic) from the configuration recorded in the
//! history's header, so a wrong model cannot make it agree. Nor on the metrics: it names the
//! `summary.json` figures it counts again through `vocab::counters`, and counts them itself.
//!
//! Facts, then rules: `facts/` holds what the records established (per job, key, outbox event,
//! DLQ entry, the depth) and the one reducer that writes it; `rules/` holds one type a family of
//! invariants, each judging every record against the facts before it, raising only its own
//! invariants; `checker.rs` runs them in that order. The rules are specified in
//! docs/checker-rules.md.

pub mod checker;
mod facts;
pub mod invariant;
mod rules;
#[cfg(test)]
mod tests;
mod verdict;

pub use checker::{CheckReport, Checker, PayloadId, Verdict, Violation};
pub use invariant::{Invariant, Kind, Sometimes};
pub use rules::summary::DISTRIBUTIONS;

#[cfg(test)]
mod imports {
    /// The independence is visible in the imports: no file of `check/` names the model, the
    /// kernel, a bug switch or the metrics.
    #[test]
    fn the_checker_imports_nothing_from_the_model() {
        fn visit(dir: &std::path::Path, files: &mut u32) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    visit(&path, files);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    *files += 1;
                    let text = std::fs::read_to_string(&path).unwrap();
                    for module in ["model", "sim", "vocab::bugs", "scenario", "run", "observe"] {
                        let forbidden = format!("crate::{module}");
                        assert!(
                            !text.contains(&format!("{forbidden}::"))
                                && !text.contains(&format!("{forbidden};")),
                            "{} uses {forbidden}: the checker must judge the history alone",
                            path.display()
                        );
                    }
                }
            }
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check");
        let mut files = 0;
        visit(&dir, &mut files);
        assert!(files >= 20);
    }
}

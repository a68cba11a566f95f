//! Invariants over the recorded history only (always / eventually / sometimes).
//!
//! The checker depends on the history (`crate::history`) and its vocabulary (`crate::vocab`,
//! `crate::base::ids`, `crate::vocab::key_index`), never on the model: it restates each rule (the retry
//! policy, the backoff bounds, the lease arithmetic) from the configuration recorded in the
//! history's header, so a wrong model cannot make it agree. Nor on the metrics: it names the
//! `summary.json` figures it counts again through `vocab::counters`, and counts them itself.

mod backoff;
pub mod checker;
mod dlq;
mod effects;
mod event_track;
pub mod invariant;
mod job_track;
mod key_track;
mod leases;
mod metrics;
mod policy;
mod record;
mod recorded;
mod tenancy;
#[cfg(test)]
mod tests;
mod tracks;
mod uniqueness;
mod verdict;

pub use checker::{CheckReport, Checker, PayloadId, Verdict, Violation};
pub use invariant::{Invariant, Kind, Sometimes};

#[cfg(test)]
mod imports {
    /// The independence is visible in the imports: no file of `check/` names the model, the
    /// kernel, a bug switch or the metrics.
    #[test]
    fn the_checker_imports_nothing_from_the_model() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                files += 1;
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
        assert!(files >= 2);
    }
}

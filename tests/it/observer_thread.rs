//! The checker and the metrics on a thread of their own (`RunRequest::observer_thread`, what
//! `durasim run` does on a machine with a second core) give exactly what they give inline:
//! the same summary (verdicts, first violations and their evidence, every figure and
//! percentile) and the same trace hash, for runs with and without violations and with more
//! records than one batch.

use crate::support::{enable_bug, load, summarize, RunIdentity};
use durasim::run::{run_once, RunRequest};
use durasim::scenario::Scenario;

/// `summary.json` of one run, as text, and the run's trace hash.
fn summary(s: &Scenario, request: &RunRequest) -> (String, u64) {
    let report = run_once(s, request, None);
    let id = RunIdentity {
        scenario_name: &s.name,
        scenario_file: "f.toml",
        scenario_text: "",
        jobs_override: request.jobs,
        bugs: Vec::new(),
        seed: request.seed,
        reproduce: String::new(),
        roles: None,
    };
    let text = serde_json::to_string_pretty(&summarize(&report, &[], id)).unwrap();
    (text, report.outcome.trace_hash)
}

#[test]
fn a_run_judged_on_a_thread_of_its_own_is_judged_and_counted_the_same() {
    for (name, bug, jobs) in [
        ("bench-pipeline", None, Some(3_000)),
        ("chaos", Some("no_fencing"), None),
        ("chaos", Some("no_idempotency"), None),
        ("dlq-reprocess", None, None),
        ("incident-crash-before-ack", None, None),
    ] {
        let s = load(name);
        let mut request = RunRequest::for_scenario(&s);
        request.jobs = jobs;
        if let Some(b) = bug {
            enable_bug(&mut request.bugs, b);
        }
        let inline = summary(&s, &request);
        request.observer_thread = true;
        let threaded = summary(&s, &request);
        assert_eq!(inline.1, threaded.1, "{name} {bug:?}: trace hash");
        // summary.json's wall-clock fields are 0 here (run_once times nothing).
        assert_eq!(inline.0, threaded.0, "{name} {bug:?}");
        if bug.is_some() {
            assert!(
                inline.0.contains("\"firstViolation\""),
                "{name} {bug:?} finds a violation"
            );
        }
    }
}

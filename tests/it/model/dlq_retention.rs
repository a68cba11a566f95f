//! DLQ retention by age (a profile's `[dlq] retention_ms`: Oban's Pruner, River's and pg-boss's
//! deletion of failed jobs, Sidekiq's dead set age limit, an SQS DLQ's message retention): the
//! simulator deletes an entry when its retention is over and records it as `dlq_evicted` with the
//! retention it followed; the header states the retention, so the checker accepts the deletion
//! as the DLQ's own (not an illegal eviction) only once the entry is older than it, and still
//! reports the job, gone before anyone reprocessed it, under `no_silent_drop`.

use durasim::check::{CheckReport, Invariant};
use durasim::scenario::Scenario;
use serde_json::Value;

use crate::support::history::{first_message, judge, run_with_history};
use crate::support::load;

/// Oban (discarded jobs pruned after 60 s): 5 documents fail validation at once; an operator
/// comes to reprocess the oldest after 30 s, and again after 2 minutes.
fn scenario() -> Scenario {
    let text = "name = \"dlq-retention\"\n[workers]\ncount = 2\n[queue]\nprofile = \"oban\"\n\
        [arrivals]\njobs = 5\ninvalid_documents = { every = 1, first = 1 }\n\
        [[operator]]\nat_ms = 30000\naction = \"reprocess_dlq\"\ntarget = \"oldest_dead_lettered\"\noperator = \"ana\"\n\
        [[operator]]\nat_ms = 120000\naction = \"reprocess_dlq\"\ntarget = \"oldest_dead_lettered\"\noperator = \"ana\"\n\
        [relay]\ninterval_ms = 1000\n[metrics]\ndepth_sample_ms = 60000\n";
    Scenario::parse("dlq-retention.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn history(s: &Scenario) -> (Vec<String>, CheckReport) {
    let (report, lines) = run_with_history(s);
    (lines, report.check)
}

fn with_header(
    lines: &[String],
    edit: impl Fn(&mut serde_json::Map<String, Value>),
) -> Vec<String> {
    let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
    edit(header["config"].as_object_mut().unwrap());
    let mut out = lines.to_vec();
    out[0] = header.to_string();
    out
}

#[test]
fn entries_expire_after_the_stated_retention_and_the_checker_tells_it_from_an_illegal_eviction() {
    let s = scenario();
    let (lines, live) = history(&s);
    let header: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(
        header["config"]["dlq_retention"],
        serde_json::json!({"after": 60000, "from": "dead_lettered"}),
        "{}",
        lines[0]
    );
    let expiries: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"dlq_evicted\"") && l.contains("\"retention\":60000"))
        .collect();
    // The first operator (at 30 s) reprocessed the oldest, whose successor fails again. Every
    // entry expires 60 s after its dead-lettering, the reprocessed one too, before the second
    // operator comes: it finds nothing to reprocess.
    assert_eq!(expiries.len(), 6, "{expiries:?}");
    assert!(
        lines.iter().any(|l| l.contains("\"reprocess_refused\"")),
        "the second operator finds the DLQ empty"
    );
    // The DLQ followed its retention: only the lost jobs are reported, not an illegal eviction.
    let judged = judge(&lines);
    assert_eq!(judged.violated(), vec![Invariant::NoSilentDrop]);
    assert_eq!(live.violated(), judged.violated());
    assert!(
        first_message(&judged, Invariant::NoSilentDrop).contains("after its retention of 60000 ms")
    );
    // Lost: the four never reprocessed and the successor; not the reprocessed one.
    assert_eq!(judged.verdict(Invariant::NoSilentDrop).count, 5);
    // The same deletions under a longer retention (header and records agreeing), or none:
    // illegal.
    let longer: Vec<String> = with_header(&lines, |c| {
        c["dlq_retention"]["after"] = Value::from(120_000);
    })
    .into_iter()
    .map(|l| l.replace("\"retention\":60000", "\"retention\":120000"))
    .collect();
    let judged = judge(&longer);
    assert!(
        first_message(&judged, Invariant::DlqBounded)
            .contains("not older than the retention of 120000 ms"),
        "{:?}",
        judged.violated()
    );
    let none = with_header(&lines, |c| {
        c.remove("dlq_retention");
    });
    assert!(first_message(&judge(&none), Invariant::DlqBounded).contains("states no dlq_retention"));
}

/// Without a retention nothing expires: the `durasim` profile's DLQ keeps its entries, and its
/// header has no `dlq_retention`.
#[test]
fn a_dlq_without_retention_keeps_everything() {
    let s = load("dlq-capacity-safe");
    let (lines, live) = history(&s);
    assert!(!lines[0].contains("dlq_retention"));
    assert!(!lines.iter().any(|l| l.contains("\"dlq_evicted\"")));
    assert!(live.violated().is_empty());
}

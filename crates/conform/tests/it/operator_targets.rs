//! Operator actions whose job is picked when they run (`target`, `follow`), resolved against the
//! real store as the simulator resolves them (`sim::operator`): on SQLite, in every `cargo test`.

use crate::support::*;
use serde_json::Value;

/// One worker. Job 0 fails permanently (DLQ at about 600 ms); job 1 is acked at about 1,200 ms;
/// job 2's 1,100 ms deadline has passed when the worker asks for it (at 1,200 ms at the
/// earliest: cancelled). Then: the oldest DLQ entry not yet reprocessed (job 0, at 1,500 ms; none
/// left at 2,000 ms), the first cancelled job (job 2), and job 0's reprocess chain followed to
/// its newest job (the new one, acked by then).
const TARGETS: &str = r#"
name = "operator-targets"
seed = 1
[workers]
count = 1
[queue]
lease_ms = 1000
heartbeat_ms = 300
deadline_ms = 1100
max_attempts = 3
[stages]
inference_ms = { dist = "constant", value = 600 }
validate_ms = { dist = "constant", value = 0 }
review_ms = { dist = "constant", value = 5 }
[arrivals]
tenants = ["acme"]
jobs = 3
interarrival_ms = { dist = "constant", value = 0 }
[[script]]
at_ms = 0
fault = "permanent_error"
job = 0
[[operator]]
at_ms = 1500
action = "reprocess_dlq"
operator = "ana"
target = "oldest_dead_lettered"
repeat = 1
every_ms = 500
[[operator]]
at_ms = 2600
action = "reprocess_dlq"
operator = "ana"
target = "cancelled"
[[operator]]
at_ms = 3200
action = "reprocess_dlq"
operator = "ana"
job = 0
follow = true
[expect]
violations = []
"#;

fn operator_records(h: &[Value]) -> Vec<String> {
    h.iter()
        .filter(|r| r["type"] == "reprocessed" || r["type"] == "reprocess_refused")
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            o.remove("at");
            Value::Object(o.clone()).to_string()
        })
        .collect()
}

#[test]
fn sqlite_resolves_operator_targets_from_the_store() {
    let t = TempDir::new("targets");
    let file = t.path("targets.toml");
    std::fs::write(&file, TARGETS).unwrap();
    let db = format!("sqlite:{}", t.path("t.db").display());
    let run = conform(
        &[&file.display().to_string(), "--store", &db],
        &t.path("out"),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(of_type(&run.history, "dead_lettered")[0]["job"], 0);
    assert_eq!(of_type(&run.history, "cancelled")[0]["job"], 2);
    assert_eq!(
        operator_records(&run.history),
        [
            // oldest_dead_lettered: job 0, reprocessed as job 3.
            r#"{"new_job":3,"old_job":0,"operator":"ana","type":"reprocessed"}"#,
            // 500 ms later, every DLQ entry is reprocessed: nothing to pick.
            r#"{"operator":"ana","reason":"no_such_job","type":"reprocess_refused"}"#,
            // cancelled: job 2, and a cancellation is terminal.
            r#"{"job":2,"operator":"ana","reason":"cancelled_is_terminal","type":"reprocess_refused"}"#,
            // job 0, followed: its newest job is 3, acked, not in the DLQ.
            r#"{"job":3,"operator":"ana","reason":"not_dead_lettered","type":"reprocess_refused"}"#,
        ]
    );
    // The simulator picks the same jobs and answers the same.
    let real: Vec<String> = run
        .history
        .iter()
        .filter_map(|r| match r["type"].as_str() {
            Some("reprocessed") => {
                Some(format!("reprocessed {} -> {}", r["old_job"], r["new_job"]))
            }
            Some("reprocess_refused") => Some(format!(
                "refused {} {}",
                r["job"],
                r["reason"].as_str().unwrap()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(real, simulated(TARGETS));
}

/// The same projection of the simulator's own run of `text` (the `durasim run` of it).
fn simulated(text: &str) -> Vec<String> {
    use durasim::history::Event;
    let s = durasim::scenario::Scenario::parse("targets.toml", text).unwrap();
    let mut request = durasim::run::RunRequest::for_scenario(&s);
    request.keep_trace = true;
    let report = durasim::run::run_once(&s, &request, None);
    report
        .trace
        .unwrap()
        .iter()
        .filter_map(|r| match &r.event {
            Event::Reprocessed {
                old_job, new_job, ..
            } => Some(format!("reprocessed {} -> {}", old_job.0, new_job.0)),
            Event::ReprocessRefused { job, reason, .. } => Some(format!(
                "refused {} {reason}",
                job.map_or("null".to_string(), |j| j.0.to_string())
            )),
            _ => None,
        })
        .collect()
}

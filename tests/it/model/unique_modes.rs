//! Enqueue uniqueness modes (`[queue] unique`, a profile's default): what a submit of a known
//! key does at run time, what the history's header says about it, and the checker recomputing
//! each decision from the header's mode and the key's newest job, not from the record's verdict.
//! The application's commit-time dedupe keeps the effect once whatever the queue let in.

use durasim::check::{CheckReport, Invariant};
use durasim::run::RunReport;
use durasim::scenario::Scenario;
use serde_json::Value;

use crate::support::history::{first_message, judge, judge_file, run_with_history};
use crate::support::Counter;

/// One worker; document `a` submitted at 0, again at 100 (the first job still extracting), and
/// again at 60 s (the first job long acked), all with the same content; `extra` adds keys.
fn scenario(unique: &str, extra: &str) -> Scenario {
    let plain = [(0, "A"), (100, "A"), (60_000, "A")];
    scenario_of(unique, &plain, extra)
}

/// One worker; document `a` submitted at each (time, content).
fn scenario_of(unique: &str, submits: &[(u64, &str)], extra: &str) -> Scenario {
    let unique = match unique {
        "" => String::new(),
        u => format!("unique = \"{u}\"\n"),
    };
    let submits: String = submits
        .iter()
        .map(|(at, text)| {
            format!("[[enqueue]]\nat_ms = {at}\ntenant = \"acme\"\ndocument = \"a\"\npayload = \"{text}\"\n")
        })
        .collect();
    let text = format!(
        "name = \"unique\"\n[workers]\ncount = 1\n[queue]\n{unique}\
         [stages]\ninference_ms = {{ dist = \"constant\", value = 1000 }}\n\
         [arrivals]\ntenants = [\"acme\"]\njobs = 0\n{submits}{extra}"
    );
    Scenario::parse("unique.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

fn run(s: &Scenario) -> (Vec<String>, RunReport) {
    let (report, lines) = run_with_history(s);
    (lines, report)
}

fn with_unique(lines: &[String], unique: Option<&str>) -> Vec<String> {
    let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
    let config = header["config"].as_object_mut().unwrap();
    match unique {
        Some(u) => config.insert("unique".into(), Value::from(u)),
        None => config.remove("unique"),
    };
    let mut out = lines.to_vec();
    out[0] = header.to_string();
    out
}

fn types(lines: &[String]) -> Vec<String> {
    lines[1..]
        .iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let t = v["type"].as_str().unwrap().to_string();
            t.starts_with("enqueue").then_some(t)
        })
        .collect()
}

fn assert_holds(c: &CheckReport) {
    assert!(c.holds(), "{:?}", c.violated());
}

/// (jobs, deduped, refused, extract calls) of a run; every run commits one result and applies
/// one effect.
fn counts(r: &RunReport) -> (u64, u64, u64, u64) {
    let n = |c| r.metrics.counts.get(c);
    assert_eq!(
        (n(Counter::ResultsCommitted), n(Counter::ConsumerApplied)),
        (1, 1)
    );
    (
        n(Counter::Enqueued),
        n(Counter::EnqueueDeduped),
        n(Counter::EnqueueConflicts),
        n(Counter::ExtractCalls),
    )
}

#[test]
fn each_mode_resolves_the_resubmits_as_its_system_does_and_the_effect_stays_once() {
    for (mode, want, header) in [
        // durasim's key: both resubmits deduplicated onto the first job.
        ("", (1, 2, 0, 1), None),
        // none (SQS, pgmq, Sidekiq OSS...): three jobs, three extractions, one effect.
        ("none", (3, 0, 0, 3), Some("none")),
        // while_active: deduplicated while the first job runs, a new job after it was acked.
        ("while_active", (2, 1, 0, 2), Some("while_active")),
        // conflict_while_running (Temporal's workflow ids): refused while it runs, new after.
        (
            "conflict_while_running",
            (2, 0, 1, 2),
            Some("conflict_while_running"),
        ),
    ] {
        let (lines, report) = run(&scenario(mode, ""));
        assert_eq!(counts(&report), want, "unique = {mode:?}");
        assert_holds(&report.check);
        let h: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(h["config"].get("unique").and_then(Value::as_str), header);
        // The history read back is judged the same.
        assert_holds(&judge(&lines));
    }
}

#[test]
fn the_default_header_has_no_unique_member() {
    let (lines, _) = run(&scenario("forever", ""));
    assert!(!lines[0].contains("unique"), "{}", lines[0]);
    let (plain, _) = run(&scenario("", ""));
    assert_eq!(lines, plain, "`forever` is the default: the same history");
}

/// A second job the mode forbids: `none`'s history (three jobs under one key) judged as if the
/// header said `forever`, or `while_active`.
#[test]
fn a_second_job_the_mode_forbids_is_caught() {
    let (lines, _) = run(&scenario("none", ""));
    assert_eq!(types(&lines), ["enqueued", "enqueued", "enqueued"]);
    assert_holds(&judge(&lines));
    for (mode, calls) in [
        (None, "a dedupe or a refusal"),
        (Some("while_active"), "a dedupe onto it"),
    ] {
        let c = judge(&with_unique(&lines, mode));
        assert_eq!(
            c.violated(),
            [Invariant::PayloadConflictRejected],
            "{mode:?}"
        );
        let m = first_message(&c, Invariant::PayloadConflictRejected);
        assert!(m.contains("got a new job") && m.contains(calls), "{m}");
    }
}

/// A dedupe the mode forbids: durasim's history (two dedupes) judged under `none`; and a dedupe
/// after the job ended, under `while_active`.
#[test]
fn a_dedupe_the_mode_forbids_is_caught() {
    let (lines, _) = run(&scenario("", ""));
    assert_eq!(
        types(&lines),
        ["enqueued", "enqueue_deduped", "enqueue_deduped"]
    );
    let c = judge(&with_unique(&lines, Some("none")));
    assert_eq!(c.violated(), [Invariant::PayloadConflictRejected]);
    assert_eq!(c.verdict(Invariant::PayloadConflictRejected).count, 2);
    let c = judge(&with_unique(&lines, Some("while_active")));
    let m = first_message(&c, Invariant::PayloadConflictRejected);
    assert_eq!(
        c.verdict(Invariant::PayloadConflictRejected).count,
        1,
        "{m}"
    );
    assert!(
        m.contains("was deduplicated") && m.contains("terminal the mode calls for a new job"),
        "{m}"
    );
}

/// `conflict_while_running` refuses the same payload while the job runs: not a conflict wrongly
/// raised under that mode, one under `forever`.
#[test]
fn a_refusal_of_the_same_payload_is_right_only_where_the_mode_refuses_any() {
    let (lines, _) = run(&scenario("conflict_while_running", ""));
    assert_eq!(types(&lines), ["enqueued", "enqueue_conflict", "enqueued"]);
    assert_holds(&judge(&lines));
    let c = judge(&with_unique(&lines, None));
    // The refusal of the same payload, and the second job.
    assert_eq!(c.verdict(Invariant::PayloadConflictRejected).count, 2);
}

/// The edited record, not just the header: a dedupe naming a job that is not the key's newest.
#[test]
fn a_dedupe_onto_an_older_job_is_caught() {
    let again =
        "[[enqueue]]\nat_ms = 60100\ntenant = \"acme\"\ndocument = \"a\"\npayload = \"A\"\n";
    let (lines, _) = run(&scenario("while_active", again));
    assert_eq!(
        types(&lines),
        ["enqueued", "enqueue_deduped", "enqueued", "enqueue_deduped"]
    );
    assert_holds(&judge(&lines));
    let mut edited = lines.clone();
    let last = edited
        .iter()
        .rposition(|l| l.contains("\"enqueue_deduped\""))
        .unwrap();
    let mut v: Value = serde_json::from_str(&edited[last]).unwrap();
    assert_eq!(v["existing"], 1);
    v["existing"] = Value::from(0);
    edited[last] = v.to_string();
    let c = judge(&edited);
    let m = first_message(&c, Invariant::PayloadConflictRejected);
    assert!(m.contains("the key's newest job is job-1"), "{m}");
}

/// `while_active` compares keys, not payloads: a changed document submitted while the first job
/// runs is deduplicated onto it, and its content is lost (the business rule says refuse it).
#[test]
fn while_active_drops_a_changed_payload_and_the_checker_says_so() {
    let changed = "[[enqueue]]\nat_ms = 200\ntenant = \"acme\"\ndocument = \"a\"\npayload = \"A, corrected\"\n";
    let (_, report) = run(&scenario("while_active", changed));
    let m = first_message(&report.check, Invariant::PayloadConflictRejected);
    assert!(
        m.contains("was deduplicated onto job-0, whose payload is"),
        "{m}"
    );
    // durasim's key refuses it.
    let (_, report) = run(&scenario("", changed));
    assert_holds(&report.check);
    assert_eq!(report.metrics.counts.get(Counter::EnqueueConflicts), 1);
}

/// Under `none` the application's commit-time dedupe is what keeps the effect once: with it
/// switched off, the second job's result is committed too.
#[test]
fn without_the_applications_idempotency_none_commits_twice() {
    let s = scenario("none", "[bugs]\nno_idempotency = true\n");
    let (_, report) = run(&s);
    assert!(
        report
            .check
            .violated()
            .contains(&Invariant::SingleResultPerKey),
        "{:?}",
        report.check.violated()
    );
}

#[test]
fn a_bad_mode_is_refused_in_the_scenario_and_in_the_header() {
    let text = "name = \"u\"\n[queue]\nprofile = \"sqs\"\nunique = \"sometimes\"\n";
    let e = Scenario::parse("u.toml", text).unwrap_err().to_string();
    assert!(
        e.contains("u.toml:4") && e.contains("queue.unique") && e.contains("\"while_active\""),
        "{e}"
    );
    let (lines, _) = run(&scenario("none", ""));
    let bad = with_unique(&lines, Some("sometimes"));
    let text = bad.join("\n") + "\n";
    let e = judge_file("h.jsonl", text.as_bytes()).err().unwrap();
    assert!(
        e.contains("h.jsonl:1") && e.contains("config.unique") && e.contains("\"none\""),
        "{e}"
    );
}

/// `replace` (graphile-worker's `job_key`): a submit while the key's newest job waits (the one
/// worker busy) overwrites its payload, recorded with what it replaced; the same payload keeps
/// every invariant, another is a different payload taken under the key.
#[test]
fn replace_overwrites_a_waiting_job_and_records_what_it_replaced() {
    let submits = |second: &'static str| [(0, "A"), (100, "A"), (200, second), (60_000, "A")];
    let (lines, report) = run(&scenario_of("replace", &submits("A"), ""));
    assert_eq!(
        types(&lines),
        ["enqueued", "enqueued", "enqueue_replaced", "enqueued"]
    );
    assert_eq!(counts(&report), (3, 0, 0, 3));
    assert_holds(&report.check);
    assert_holds(&judge(&lines));
    // Judged as if the header said `none` or `forever`: a replace neither mode makes (and
    // under `forever` the two other jobs are forbidden too).
    let c = judge(&with_unique(&lines, Some("none")));
    let m = first_message(&c, Invariant::PayloadConflictRejected);
    assert!(m.contains("replaced the payload"), "{m}");
    let c = judge(&with_unique(&lines, None));
    assert_eq!(c.verdict(Invariant::PayloadConflictRejected).count, 3);
    // The record must say what the job had.
    let at = lines
        .iter()
        .position(|l| l.contains("enqueue_replaced"))
        .unwrap();
    let mut edited = lines.clone();
    let mut v: Value = serde_json::from_str(&edited[at]).unwrap();
    v["replaced_content"] = Value::from("00000000000000ab");
    v.as_object_mut().unwrap().remove("replaced_payload");
    edited[at] = v.to_string();
    let c = judge(&edited);
    let m = first_message(&c, Invariant::RecordedValuesMatch);
    assert!(m.contains("a replace says job-1 had"), "{m}");

    let (lines, report) = run(&scenario_of("replace", &submits("A, corrected"), ""));
    let m = first_message(&report.check, Invariant::PayloadConflictRejected);
    assert!(m.contains("replaced the payload of job-1"), "{m}");
    assert_eq!(
        report.check.violated(),
        [Invariant::PayloadConflictRejected]
    );
    // The job runs the replacing payload: its commit is refused against job 0's result.
    assert!(lines.iter().any(|l| l.contains("\"commit_conflict\"")));
}

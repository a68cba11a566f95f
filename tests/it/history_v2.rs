//! History format version 2 (issue 28), through `durasim verify` as a recorder's user runs it:
//! a real queue's settings stated as they are (liveness per process, an exact retry delay with
//! a clock tolerance, no deadline, no review step, no fencing tokens, opaque keys, lines from
//! two writers out of order within a declared window, an idle worker's kill, marks by event id)
//! pass; each thing such a queue really gets wrong still fails, named with the file's own ids.

use crate::support::{durasim, temp_dir, text, write};

/// `tests/data/v2-history.jsonl`: a procrastinate-like run, every v2 statement used.
fn base() -> String {
    std::fs::read_to_string(crate::support::root().join("tests/data/v2-history.jsonl")).unwrap()
}

/// `durasim verify` of `body`: (exit code, stdout + stderr).
fn verify(name: &str, body: &str) -> (i32, String) {
    let dir = temp_dir!(name);
    let path = write(&dir, "h.jsonl", body);
    let o = durasim(&["verify", &path]);
    (o.status.code().unwrap_or(-1), text(&o))
}

#[test]
fn a_real_queue_stated_as_it_is_passes() {
    let (code, out) = verify("passes", &base());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PASS"), "{out}");
}

#[test]
fn a_zombie_write_is_named_with_the_file_s_ids_and_the_reader_s_lease_numbers() {
    let body = base().replace(
        r#"{"at":1061,"type":"acked","job":1,"worker":"w-b"}"#,
        r#"{"at":1061,"type":"acked","job":1,"worker":"w-a"}"#,
    );
    let (code, out) = verify("zombie", &body);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED fenced_writes"), "{out}");
    // The file's job 1 (the reader's job 0), its worker "w-a", its first and second leases.
    assert!(
        out.contains("ack of job-1 accepted with lease #1, but the current lease holds lease #2"),
        "{out}"
    );
    assert!(out.contains(r#"by worker "w-a""#), "{out}");
    // Evidence as the file wrote it: no token the file did not carry.
    assert!(
        out.contains(r#"evidence: {"at":1061,"job":1,"type":"acked","worker":"w-a"}"#),
        "{out}"
    );
    assert!(!out.contains("job-0"), "{out}");
}

#[test]
fn the_clock_tolerance_is_what_lets_an_early_retry_time_pass() {
    let early = base().replace(r#""visible_at":1015"#, r#""visible_at":1010"#);
    assert_eq!(verify("tolerated", &early).0, 0);
    let strict = early.replace(r#""clock_tolerance":20"#, r#""clock_tolerance":0"#);
    let (code, out) = verify("strict", &strict);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED backoff_respected"), "{out}");
}

#[test]
fn liveness_per_process_reads_a_lease_from_the_worker_s_last_heartbeat() {
    // w-a's last heartbeat is at 1 ms: with a 2 s threshold its lease of job 1 is live through
    // 2001 ms, so a second lease at 1030 ms (no retry in between) is a double lease ...
    let body = base()
        .replace(r#"{"at":21,"type":"attempt_failed","job":1,"worker":"w-a","error":"provider_unavailable"}"#, "")
        .replace(r#"{"at":22,"type":"retry_scheduled","job":1,"worker":"w-a","visible_at":1015}"#, "")
        .replace("\n\n\n", "\n");
    let (code, out) = verify("double", &body);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED single_live_lease"), "{out}");
    // ... and after the threshold, with the queue's rescue recorded, a new lease is the queue's
    // due: the same run a second later.
    let mut later = body.clone();
    for (from, to) in [
        ("103", "203"),
        ("104", "204"),
        ("105", "205"),
        ("106", "206"),
        ("107", "207"),
        ("1100", "2100"),
        ("1200", "2200"),
    ] {
        later = later.replace(&format!("{{\"at\":{from}"), &format!("{{\"at\":{to}"));
    }
    let rescued = later.replace(
        r#"{"at":2030,"type":"leased""#,
        "{\"at\":2030,\"type\":\"rescued\",\"job\":1,\"worker\":\"w-a\"}\n{\"at\":2030,\"type\":\"leased\"",
    );
    let (code, out) = verify("rescued", &rescued);
    assert_eq!(code, 0, "{out}");
    // A recorder that cannot see the rescue may leave it out: the lease ended by the threshold.
    let (code, out) = verify("unrescued", &later);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_version_1_file_may_not_use_what_version_2_adds() {
    let v1 = base().replacen(r#""version":2"#, r#""version":1"#, 1);
    let (code, out) = verify("v1", &v1);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("version 2 adds: liveness"), "{out}");
}

#[test]
fn a_version_2_header_says_what_a_version_1_header_left_implicit() {
    for (field, want) in [
        (r#""deadline":null,"#, "field `config.deadline`: missing"),
        (
            r#""attempts_max":null,"failures_max":3,"rescues_max":null,"#,
            "field `config.attempts_max`: missing",
        ),
    ] {
        let (code, out) = verify("implicit", &base().replacen(field, "", 1));
        assert_eq!(code, 2, "{out}");
        assert!(out.contains(want), "want {want:?} in {out}");
    }
}

#[test]
fn a_line_further_out_of_order_than_the_window_is_refused() {
    let body = base().replace(
        r#"{"at":1100,"type":"worker_crashed""#,
        r#"{"at":1000,"type":"worker_crashed""#,
    );
    let (code, out) = verify("window", &body);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("more than the reorder window (50)"), "{out}");
}

/// `durasim verify --expect` of `body` against the expectations `expect`: (exit code, stdout +
/// stderr).
fn verify_expect(name: &str, body: &str, expect: &str) -> (i32, String) {
    let dir = temp_dir!(name);
    let path = write(&dir, "h.jsonl", body);
    let e = write(&dir, "e.toml", expect);
    let o = durasim(&["verify", &path, "--expect", &e]);
    (o.status.code().unwrap_or(-1), text(&o))
}

/// The zombie's late ack of `a_zombie_write_is_named_...`: fenced_writes and acked_with_result.
fn zombie() -> String {
    base().replace(
        r#"{"at":1061,"type":"acked","job":1,"worker":"w-b"}"#,
        r#"{"at":1061,"type":"acked","job":1,"worker":"w-a"}"#,
    )
}

/// Friction 13: a recorder's user sees whether crashes, retries, dedupes happened at all.
#[test]
fn verify_prints_the_counts_and_the_sometimes_properties_reached() {
    let (code, out) = verify("counts", &base());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  jobs       enqueued 1  acked 1 "), "{out}");
    assert!(out.contains("extract calls 2  results 1 "), "{out}");
    assert!(
        out.contains("crashes 1/0/0 (worker/relay/consumer)"),
        "{out}"
    );
    assert!(
        out.contains("  sometimes  reached: retry_scheduled 1, worker_crashed 1\n"),
        "{out}"
    );
    assert!(out.contains("never: stale_fence_rejected, "), "{out}");
    // Without --expect there is no expectation line.
    assert!(!out.contains("expect "), "{out}");
}

/// Friction 13: a violation a naive variant is known to show is expected, as in a scenario's
/// `[expect]`: exit 0 when the history shows exactly it, 1 when it shows another (or none).
#[test]
fn verify_expect_passes_an_expected_violation_and_fails_an_unexpected_one() {
    let expected = "violations = [\"fenced_writes\", \"acked_with_result\"]\n\
                    acked = 1\nworker_crashes = 1\nsometimes = [\"worker_crashed\"]\n";
    let (code, out) = verify_expect("expected", &zombie(), expected);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("PASS"), "{out}");
    assert!(out.contains("VIOLATED fenced_writes"), "{out}");
    assert!(out.contains("  expect     met"), "{out}");
    // The same expectations of the correct history: its violations are not the expected ones.
    let (code, out) = verify_expect("missing", &base(), expected);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("expect     violations: expected [fenced_writes, acked_with_result], got []"),
        "{out}"
    );
    // An unexpected violation, a wrong count and a property never reached.
    let wrong =
        "violations = [\"single_result_per_key\"]\nacked = 2\nsometimes = [\"relay_crashed\"]\n";
    let (code, out) = verify_expect("unexpected", &zombie(), wrong);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("FAIL"), "{out}");
    assert!(out.contains("expect     acked: expected 2, got 1"), "{out}");
    assert!(
        out.contains(
            "expect     violations: expected [single_result_per_key], got [fenced_writes, acked_with_result]"
        ),
        "{out}"
    );
    assert!(
        out.contains("expect     sometimes.relay_crashed: expected reached, got never"),
        "{out}"
    );
    // `violations = []` is what verify without --expect checks.
    assert_eq!(verify_expect("none", &base(), "violations = []\n").0, 0);
    assert_eq!(verify_expect("none-z", &zombie(), "violations = []\n").0, 1);
}

/// A bad expectations file is bad input: exit 2, at its file, line and field.
#[test]
fn verify_expect_refuses_a_bad_file_at_its_line_and_field() {
    let cases = [
        ("acked = 1\nbogus = 1\n", "e.toml:2: field `bogus`: unknown key `bogus`, allowed keys are `enqueued`"),
        ("acked = 1\nviolations = [\"nope\"]\n", "e.toml:2: field `violations`: unknown invariant \"nope\"; allowed: single_result_per_key"),
        ("sometimes = [\"nope\"]\n", "e.toml:1: field `sometimes`: unknown property \"nope\""),
        ("trace_hash = \"xyz\"\n", "e.toml:1: field `trace_hash`: \"xyz\" is not a trace hash"),
        ("acked = 1\nreplay = \"identical\"\n", "e.toml:2: field `replay`: a recorded history is judged once"),
        ("sweep_sometimes = [\"stalled\"]\n", "e.toml:1: field `sweep_sometimes`: a recorded history is judged once"),
        ("acked = \"one\"\n", "e.toml:1: field `acked`"),
    ];
    for (i, (expect, want)) in cases.iter().enumerate() {
        let (code, out) = verify_expect(&format!("bad{i}"), &base(), expect);
        assert_eq!(code, 2, "{expect}: {out}");
        assert!(out.contains(want), "{expect}: {out}");
    }
}

/// The trace hash pins a recorded history as it pins a run's.
#[test]
fn verify_expect_pins_the_history_s_trace_hash() {
    let (_, out) = verify("hash", &base());
    let hash = out.split("trace ").nth(1).unwrap()[..16].to_string();
    let (code, out) = verify_expect("pinned", &base(), &format!("trace_hash = \"{hash}\"\n"));
    assert_eq!(code, 0, "{out}");
    let (code, out) = verify_expect("other", &base(), "trace_hash = \"0000000000000000\"\n");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("expect     trace_hash: expected 0000000000000000"),
        "{out}"
    );
}

/// The enqueue of `tests/data/v2-history.jsonl`'s key, deduplicated onto job 1 at `at` ms.
fn deduped_at(at: u64) -> String {
    format!(
        "{{\"at\":{at},\"type\":\"enqueue_deduped\",\"tenant\":\"Acme_Corp\",\"key\":\"{KEY}\",\"operation\":\"extract\",\"content\":\"ab\",\"existing\":1}}\n"
    )
}

/// The base history's key: an underscore and uppercase tenant, a URI with `:` inside the
/// document id, a date version.
const KEY: &str = "Acme_Corp:https://x.example/doc:1:2024-01-01";

/// `body` with `line` inserted after the first line that starts with `after`.
fn insert_after(body: &str, after: &str, line: &str) -> String {
    let at = body.find(after).expect("a line to insert after");
    let end = at + body[at..].find('\n').unwrap() + 1;
    format!("{}{line}{}", &body[..end], &body[end..])
}

/// Friction 4: no deadline is a statement (`"deadline": null`), and a deadline that is stated
/// is judged.
#[test]
fn friction_4_no_deadline_passes_and_a_stated_one_is_judged() {
    assert_eq!(verify("no-deadline", &base()).0, 0);
    let (code, out) = verify(
        "deadline",
        &base().replacen(r#""deadline":null"#, r#""deadline":500"#, 1),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED deadline_respected"), "{out}");
}

/// Friction 5: a queue that caps failures (not leases, not rescues) says so; the cap is judged
/// by failures.
#[test]
fn friction_5_a_failure_cap_counts_failures() {
    // One failure, then a second lease: allowed under failures_max 2 (and 3), not under 1.
    let two = base().replacen(r#""failures_max":3"#, r#""failures_max":2"#, 1);
    assert_eq!(verify("failures-2", &two).0, 0);
    let one = base().replacen(r#""failures_max":3"#, r#""failures_max":1"#, 1);
    let (code, out) = verify("failures-1", &one);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("job-1 leased for attempt 2 after 1 failed attempts (failures_max = 1)"),
        "{out}"
    );
}

/// Friction 6: a pipeline without a review step says `"review": false`, and its results are
/// delivered without one; with `"review": true` the same history misses its review.
#[test]
fn friction_6_the_review_step_is_optional() {
    assert_eq!(verify("no-review", &base()).0, 0);
    let (code, out) = verify(
        "review",
        &base().replacen(r#""review":false"#, r#""review":true"#, 1),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED every_result_delivered"), "{out}");
    assert!(out.contains("its review never finished"), "{out}");
}

/// Friction 7: a kill of an idle worker is a `worker_crashed` with only the worker, counted as
/// a worker crash.
#[test]
fn friction_7_an_idle_worker_s_kill_is_recorded_and_counted() {
    assert!(base().contains(r#"{"at":1100,"type":"worker_crashed","worker":"w-a"}"#));
    let (code, out) = verify("idle-crash", &base());
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("crashes 1/0/0 (worker/relay/consumer)"),
        "{out}"
    );
    assert!(out.contains("worker_crashed 1"), "{out}");
}

/// Friction 8: a relay marks the events it sent by id, and its crash needs no count; a mark of
/// an event no line named is refused at its line.
#[test]
fn friction_8_marks_by_event_id_and_a_relay_crash_without_a_count() {
    assert!(base().contains(r#""type":"marked_published","events":["ev-9"]"#));
    let crash = base().replace(
        r#"{"at":1100,"type":"worker_crashed","worker":"w-a"}"#,
        r#"{"at":1100,"type":"relay_crashed"}"#,
    );
    let (code, out) = verify("relay-crash", &crash);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("crashes 0/1/0 (worker/relay/consumer)"),
        "{out}"
    );
    let unknown = base().replace(r#""events":["ev-9"]"#, r#""events":["ev-404"]"#);
    let (code, out) = verify("unknown-mark", &unknown);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(r#"field `events`: event "ev-404" was never named by an earlier line"#),
        "{out}"
    );
}

/// Friction 11: a real key (an uppercase, underscored tenant, `:` inside a URI, a date
/// version) is read and named as written.
#[test]
fn friction_11_a_real_key_is_read_and_named_as_written() {
    let (code, out) = verify("real-key", &zombie());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("job-1, key {KEY}: ")), "{out}");
}

/// Friction 12: a `leased` logged before the `enqueued` it follows (another writer, within the
/// reorder window) is read in time order.
#[test]
fn friction_12_a_lease_logged_before_its_enqueue_is_read_within_the_window() {
    let b = base();
    assert!(b.find(r#""type":"leased","job":1"#) < b.find(r#""type":"enqueued""#));
    assert_eq!(verify("reordered", &b).0, 0);
    let (code, out) = verify(
        "no-window",
        &b.replacen(r#""reorder_window":50"#, r#""reorder_window":0"#, 1),
    );
    assert_eq!(code, 2, "{out}");
}

/// Friction 14: `unique = "while_waiting"` deduplicates a submit while the key's job waits, and
/// calls for a new job once it is leased; `forever` deduplicates both.
#[test]
fn friction_14_unique_while_waiting() {
    let waiting = insert_after(&base(), r#"{"at":0,"type":"enqueued""#, &deduped_at(3));
    assert_eq!(verify("while-waiting", &waiting).0, 0);
    let leased = insert_after(
        &base(),
        r#"{"at":10,"type":"extract_started""#,
        &deduped_at(11),
    );
    let (code, out) = verify("while-leased", &leased);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(r#"under unique = "while_waiting" with the key's newest job job-1 leased the mode calls for a new job"#),
        "{out}"
    );
    let forever = leased.replacen(r#""unique":"while_waiting""#, r#""unique":"forever""#, 1);
    assert_eq!(verify("forever", &forever).0, 0);
}

/// `body` with `expect` (a JSON object's text) added to its header.
fn with_header_expect(body: &str, expect: &str) -> String {
    let (header, rest) = body.split_once('\n').unwrap();
    let header = header.trim_end().strip_suffix('}').unwrap();
    format!("{header},\"expect\":{expect}}}\n{rest}")
}

/// The recorder may state in the header what the history shows (a naive variant's known
/// violation): `verify` then holds it to that, as to `--expect FILE`, which wins when given.
#[test]
fn the_header_s_expect_is_what_verify_checks_without_expect_file() {
    let known = r#"{"violations":["fenced_writes","acked_with_result"],"acked":1,"sometimes":["worker_crashed"]}"#;
    let (code, out) = verify("header-met", &with_header_expect(&zombie(), known));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  expect     met"), "{out}");
    // The same header over the correct history: its violations are not the expected ones.
    let (code, out) = verify("header-unmet", &with_header_expect(&base(), known));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("expect     violations: expected [fenced_writes, acked_with_result], got []"),
        "{out}"
    );
    // `--expect FILE` wins over the header.
    let (code, out) = verify_expect(
        "file-wins",
        &with_header_expect(&base(), known),
        "violations = []\n",
    );
    assert_eq!(code, 0, "{out}");
    // With --out, summary.json's expectationsMet follows the expectations, not "all held".
    let dir = temp_dir!("header-out");
    let path = write(&dir, "h.jsonl", &with_header_expect(&zombie(), known));
    let out_dir = dir.join("out");
    let o = durasim(&["verify", &path, "--out", out_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let summary = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    assert!(summary.contains("\"expectationsMet\": true"), "{summary}");
}

/// A bad header `expect` is bad input: exit 2, at line 1 and the field `expect.<key>`.
#[test]
fn a_bad_header_expect_is_refused_at_its_field() {
    let cases = [
        (
            r#"{"bogus":1}"#,
            "h.jsonl:1: field `expect.bogus`: unknown field `bogus`",
        ),
        (
            r#"{"violations":["nope"]}"#,
            "h.jsonl:1: field `expect.violations`: unknown invariant \"nope\"",
        ),
        (r#"{"acked":"one"}"#, "h.jsonl:1: field `expect.acked`"),
        (
            r#"{"replay":"identical"}"#,
            "h.jsonl:1: field `expect.replay`: a recorded history is judged once",
        ),
        (r#"["fenced_writes"]"#, "field `expect`"),
    ];
    for (i, (expect, want)) in cases.iter().enumerate() {
        let (code, out) = verify(
            &format!("bad-header{i}"),
            &with_header_expect(&base(), expect),
        );
        assert_eq!(code, 2, "{expect}: {out}");
        assert!(out.contains(want), "{expect}: {out}");
    }
}

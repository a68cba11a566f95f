//! The history format round trip: what `--trace` writes, `verify` reads back to the same records
//! (the same trace hash) and the same verdicts, invariant by invariant; and a history written by
//! hand, as an external recorder would, is judged the same way.

use crate::support::history::{
    history_file, judge_file, judge_file_with_names, run_request_with_history,
};
use crate::support::temp_dir;
use crate::support::{bug_switches, durasim, enable_bug, load, load_file, root, scenario_files};
use durasim::check::{CheckReport, Invariant};
use durasim::run::{run_once, run_streaming, RunRequest, Sinks};
use durasim::scenario::Scenario;
use durasim::vocab::bugs::{BugRow, BugSite};

/// Every first violation as `run` reports it: count, time, job, key, message, evidence.
fn verdicts(check: &CheckReport) -> Vec<String> {
    Invariant::ALL
        .iter()
        .map(|i| {
            let v = check.verdict(*i);
            format!(
                "{} count {} first {:?}",
                i.name(),
                v.count,
                v.first
                    .as_ref()
                    .map(|f| (f.at, f.job, f.key, &f.message, &f.evidence))
            )
        })
        .collect()
}

/// A writer whose bytes the test reads after the run has dropped its end.
#[derive(Clone, Default)]
struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs in process, writes the history (streamed as the run goes, and from the records kept in
/// memory: the same bytes), reads it back, judges it again: same hash, same verdicts, same
/// `sometimes` counts.
fn round_trip(s: &Scenario, request: &RunRequest, what: &str) {
    let mut request = request.clone();
    request.keep_trace = true;
    let streamed = Shared::default();
    let sinks = Sinks {
        attempt_rows: None,
        history: Some(Box::new(streamed.clone())),
    };
    let report = run_streaming(s, &request, sinks);
    report.history_written.as_ref().unwrap().as_ref().unwrap();
    let file = history_file(&report);
    assert!(
        *streamed.0.borrow() == file,
        "{what}: the streamed history differs from the one written after the run"
    );
    let judged = judge_file(what, &file).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        judged.trace_hash, report.outcome.trace_hash,
        "{what}: the history read back is not the history written"
    );
    let from_file = judged.check;
    assert_eq!(
        verdicts(&from_file),
        verdicts(&report.check),
        "{what}: verdicts differ"
    );
    assert_eq!(
        from_file.sometimes, report.check.sometimes,
        "{what}: sometimes"
    );
}

#[test]
fn every_shipped_scenario_reads_back_to_the_same_verdicts() {
    for path in scenario_files() {
        let s = load_file(&path);
        let mut r = RunRequest::for_scenario(&s);
        if s.arrivals.jobs > 2_000 {
            r.jobs = Some(2_000);
        }
        round_trip(&s, &r, &path.display().to_string());
    }
}

/// The bug switches whose defect shows in the history file: all but the determinism check's
/// (`replay`) and the defects of the run's metrics (`republish_miscount`), which `verify`
/// recomputes from the history (there the figures are right, and only the run's summary is
/// caught).
fn caught_from_the_history() -> Vec<&'static BugRow> {
    bug_switches()
        .iter()
        .filter(|b| b.caught_by != "replay" && !b.sites.contains(&BugSite::Metrics))
        .collect()
}

#[test]
fn chaos_seeds_with_and_without_bug_switches_read_back_to_the_same_verdicts() {
    let s = load("chaos");
    for seed in 0..40 {
        let mut r = RunRequest::for_scenario(&s);
        r.seed = seed;
        round_trip(&s, &r, &format!("chaos seed {seed}"));
    }
    for b in caught_from_the_history() {
        for seed in 0..5 {
            let mut r = RunRequest::for_scenario(&s);
            r.seed = seed;
            enable_bug(&mut r.bugs, b.name);
            round_trip(&s, &r, &format!("chaos seed {seed} --bug {}", b.name));
        }
    }
}

/// A history as a recorder outside the simulator writes it: UUIDs and strings for ids, times in
/// microseconds, no optional records, no model-computed fields.
#[test]
fn an_external_history_is_judged_from_its_raw_facts() {
    let path = root().join("tests/data/external-history.jsonl");
    let (judged, names) =
        judge_file_with_names("external-history.jsonl", &std::fs::read(path).unwrap()).unwrap();
    let report = judged.check;
    assert_eq!(report.violated(), vec![Invariant::FencedWrites]);
    let v = report
        .verdict(Invariant::FencedWrites)
        .first
        .clone()
        .unwrap();
    assert_eq!(
        names.key(&v.key.unwrap()),
        "globex:invoice-2024-17:v1",
        "{v:?}"
    );
}

/// Fields of a record that hold a time or a duration (docs/history-format.md).
const TIME_FIELDS: [&str; 7] = [
    "at",
    "visible_at",
    "deadline_at",
    "lease_until",
    "inference",
    "stall",
    "pause",
];
/// Durations of the header's `config`.
const CONFIG_DURATIONS: [&str; 7] = [
    "lease",
    "heartbeat",
    "deadline",
    "backoff_base",
    "backoff_cap",
    "dedupe_window",
    "outbox_retention",
];

/// A history file written in ms, rewritten in µs as a recorder around a real store writes it
/// (`durasim conform`): every time and duration times 1000, `time_unit` "us".
fn in_micros(ms_file: &[u8]) -> Vec<u8> {
    use serde_json::Value;
    let scale = |m: &mut serde_json::Map<String, Value>, k: &str| {
        if let Some(n) = m.get(k).and_then(Value::as_u64) {
            m.insert(k.to_string(), Value::from(n * 1000));
        }
    };
    let mut out = Vec::new();
    for (i, line) in std::str::from_utf8(ms_file).unwrap().lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let m = v.as_object_mut().unwrap();
        if i == 0 {
            assert_eq!(m["time_unit"], "ms");
            m.insert("time_unit".into(), Value::from("us"));
            let c = m.get_mut("config").unwrap().as_object_mut().unwrap();
            CONFIG_DURATIONS.iter().for_each(|k| scale(c, k));
            if let Some(Value::Object(limit)) = c.get_mut("reprocess_limit") {
                scale(limit, "window");
            }
            if let Some(Value::Object(detection)) = c.get_mut("lease_detection") {
                scale(detection, "every");
                scale(detection, "slack");
            }
        } else {
            TIME_FIELDS.iter().for_each(|k| scale(m, k));
        }
        out.extend(serde_json::to_vec(&v).unwrap());
        out.push(b'\n');
    }
    out
}

/// A history in µs is judged as the same history in ms, and its violations speak in µs: no
/// message, evidence or printed verdict of a µs file says "ms". For every bug switch the checker
/// catches from the history, on the first chaos seed it fails.
#[test]
fn a_history_in_microseconds_is_judged_the_same_and_its_messages_say_microseconds() {
    let s = load("chaos");
    let says_ms = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "ms")
    };
    let mut switches = 0;
    let mut ms_messages = 0;
    let mut first_us_file = None;
    for b in caught_from_the_history() {
        let mut found = false;
        for seed in 0..40 {
            let mut r = RunRequest::for_scenario(&s);
            r.seed = seed;
            r.keep_trace = true;
            enable_bug(&mut r.bugs, b.name);
            let report = run_once(&s, &r, None);
            if report.check.violated().is_empty() {
                continue;
            }
            let ms_file = history_file(&report);
            let what = format!("chaos seed {seed} --bug {} in µs", b.name);
            let us_file = in_micros(&ms_file);
            let judged = judge_file(&what, &us_file).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                judged.check.violated(),
                report.check.violated(),
                "{what}: the same history in other units is judged otherwise"
            );
            for i in judged.check.violated() {
                let (ms, us) = (
                    report.check.verdict(i).first.as_ref().unwrap(),
                    judged.check.verdict(i).first.as_ref().unwrap(),
                );
                ms_messages += usize::from(says_ms(&ms.message));
                assert!(
                    !says_ms(&us.message),
                    "{what}: {} says ms: {}",
                    i.name(),
                    us.message
                );
                assert_eq!(us.at, ms.at * 1000, "{what}: {} first at", i.name());
            }
            first_us_file.get_or_insert(us_file);
            found = true;
            switches += 1;
            break;
        }
        assert!(found, "--bug {} never failed on chaos seeds 0..40", b.name);
    }
    // The test can fail: in ms, the same messages do name their unit.
    assert!(
        ms_messages > 5,
        "only {ms_messages} ms messages in {switches} switches"
    );
    // And what `durasim verify` prints of a µs file.
    let dir = temp_dir!("us");
    let file = dir.join("us.jsonl");
    std::fs::write(&file, first_us_file.unwrap()).unwrap();
    let o = durasim(&["verify", &file.display().to_string()]);
    let printed = String::from_utf8_lossy(&o.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1), "{printed}");
    assert!(printed.contains(" µs"), "{printed}");
    assert!(!says_ms(&printed), "{printed}");
}

/// A history recorded outside the simulator may name its jobs with any integers: job
/// 4,000,000,000 (and u64::MAX) is judged like job 0, from ids mapped densely in order of first
/// appearance, never as an index into a table of four billion entries (which would abort the
/// process, not answer).
#[test]
fn a_history_naming_job_four_billion_is_judged_without_a_table_that_large() {
    use serde_json::Value;
    let s = load("bench-pipeline");
    let mut request = RunRequest::for_scenario(&s);
    request.jobs = Some(50);
    let (report, lines) = run_request_with_history(&s, request);
    let mut lines = lines.iter();
    let mut huge = format!("{}\n", lines.next().unwrap());
    let mut renamed = 0;
    for line in lines {
        let mut record: Value = serde_json::from_str(line).unwrap();
        for field in ["job", "existing", "old_job", "new_job"] {
            if let Some(n) = record.get(field).and_then(Value::as_u64) {
                // Job 0 is u64::MAX, every other job n is 4,000,000,000 + n.
                let id = if n == 0 { u64::MAX } else { 4_000_000_000 + n };
                record[field] = Value::from(id);
                renamed += 1;
            }
        }
        huge.push_str(&serde_json::to_string(&record).unwrap());
        huge.push('\n');
    }
    assert!(renamed > 100, "{renamed}");
    let judged = judge_file("huge", huge.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(verdicts(&judged.check), verdicts(&report.check));
    assert_eq!(judged.check.sometimes, report.check.sometimes);
}

/// A history recorded outside the simulator may name documents far apart and tokens past 32
/// bits: documents 2,000,000,000 and down (and names that are not `doc-N`), fences above 2^40.
/// The checker's index on keys keeps a chain head by document only for documents near the keys
/// it holds (the others in a small map), and a token too wide for its packed field goes to a
/// side table: judged as before, with no table sized by a document number or a token.
#[test]
fn a_history_with_documents_and_tokens_far_apart_is_judged_the_same() {
    use serde_json::Value;
    let s = load("bench-pipeline");
    let mut request = RunRequest::for_scenario(&s);
    request.jobs = Some(200);
    let (report, lines) = run_request_with_history(&s, request);
    let mut lines = lines.iter();
    let mut far = format!("{}\n", lines.next().unwrap());
    let (mut keys, mut fences) = (0, 0);
    for line in lines {
        let mut record: Value = serde_json::from_str(line).unwrap();
        let map = record.as_object_mut().unwrap();
        // The payload hashes name the document: a renamed one would not match them.
        for field in ["payload", "existing_payload", "replaced_payload"] {
            map.remove(field);
        }
        if let Some(key) = map.get("key").and_then(Value::as_str) {
            let parts: Vec<&str> = key.split(':').collect();
            let n: u64 = parts[1].strip_prefix("doc-").unwrap().parse().unwrap();
            let document = match n % 3 {
                0 => format!("doc-{}", 2_000_000_000 - n * 7),
                1 => format!("doc-{}", n * 1_000_003),
                _ => format!("report-{n}"),
            };
            map["key"] = Value::from(format!("{}:{document}:{}", parts[0], parts[2]));
            keys += 1;
        }
        for field in ["fence", "presented", "held"] {
            if let Some(n) = map.get(field).and_then(Value::as_u64) {
                map[field] = Value::from(n + (1 << 40));
                fences += 1;
            }
        }
        far.push_str(&serde_json::to_string(&record).unwrap());
        far.push('\n');
    }
    assert!(keys > 400 && fences > 400, "{keys} {fences}");
    let judged = judge_file("far", far.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.check.holds(), "{:?}", report.check.violated());
    assert_eq!(verdicts(&judged.check), verdicts(&report.check));
    assert_eq!(judged.check.sometimes, report.check.sometimes);
}

/// A job dead-lettered again while its entry is held (a stale write taken, a rescue race; swarm
/// seeds 123161, 313797) is filed once in a capacity-1 DLQ, its old entry leaving first, as the
/// queue files it: `verify`'s `dlq.size_max` is the checker's 1, not the 4 filings less 1
/// eviction = 3, and `summary_matches_history` and `dlq_bounded` hold.
#[test]
fn a_job_filed_again_while_held_gives_the_summary_the_history_gives() {
    let header = |capacity: &str| {
        format!(
            r#"{{"format":"durasim-history","version":1,"time_unit":"ms","emits":["visible","lease_expired"],"config":{{"seed":1,"workers":2,"lease":117,"heartbeat":4503599627370496,"deadline":4503599627370496,"attempts_max":8,"backoff_base":0,"backoff_cap":0,"jitter":"none","dlq_capacity":{capacity},"reprocess_limit":null,"dedupe_window":null,"outbox_retention":null,"unique":"none"}}}}"#
        )
    };
    let enqueued = |at: u64, job: u32, doc: u32| {
        format!(
            r#"{{"at":{at},"type":"enqueued","content":"0000000000000000","job":{job},"key":"acme:doc-{doc}:v1","operation":"extract","tenant":"acme","visible_at":{at}}}"#
        )
    };
    let judged = |lines: Vec<String>| {
        let text = lines.join("\n") + "\n";
        judge_file("h.jsonl", text.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    };
    let refiled = judged(vec![
        header("1"),
        enqueued(0, 0, 1),
        r#"{"at":0,"type":"leased","attempt":1,"fence":1,"job":0,"lease_until":117,"visible_at":0,"worker":0}"#.into(),
        r#"{"at":10,"type":"dead_lettered","attempts":1,"fence":1,"job":0,"reason":"permanent_error","worker":0}"#.into(),
        r#"{"at":20,"type":"dead_lettered","attempts":1,"job":0,"reason":"permanent_error"}"#.into(),
        enqueued(30, 1, 2),
        r#"{"at":30,"type":"leased","attempt":1,"fence":2,"job":1,"lease_until":147,"visible_at":30,"worker":1}"#.into(),
        r#"{"at":40,"type":"dlq_evicted","capacity":1,"job":0}"#.into(),
        r#"{"at":40,"type":"dead_lettered","attempts":1,"fence":2,"job":1,"reason":"permanent_error","worker":1}"#.into(),
        r#"{"at":50,"type":"dead_lettered","attempts":1,"job":1,"reason":"permanent_error"}"#.into(),
        r#"{"at":50,"type":"run_ended","quiescent":true}"#.into(),
    ]);
    assert_eq!(
        refiled.check.verdict(Invariant::DlqBounded).count,
        0,
        "one entry of job 0"
    );
    assert_eq!(
        refiled
            .check
            .verdict(Invariant::SummaryMatchesHistory)
            .count,
        0
    );
    let size_max = durasim::vocab::counters::Counter::DlqSizeMax;
    assert_eq!(refiled.metrics.counts.get(size_max), 1);
}

//! The reader's unit tests: ids, names, malformed lines, bounds.

use super::*;

const HEADER: &str = r#"{"format":"durasim-history","version":1,"time_unit":"ms","emits":[],"config":{"lease":500,"heartbeat":150,"deadline":6000,"attempts_max":3,"backoff_base":100,"backoff_cap":2000,"jitter":"full"}}"#;

fn read(text: &str) -> Result<Vec<Record>, HistoryError> {
    HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default())
        .read_all()
        .map(|(r, _)| r)
}

fn err(text: &str) -> String {
    read(text).unwrap_err().to_string()
}

#[test]
fn external_ids_map_to_dense_ids_and_names_are_interned() {
    let text = format!(
        "{HEADER}\n\
         {{\"at\":1,\"type\":\"enqueued\",\"job\":\"9b2f-uuid\",\"tenant\":\"acme\",\"key\":\"acme:invoice-7:v1\",\"operation\":\"extract\",\"content\":\"00ff\"}}\n\
         {{\"at\":2,\"type\":\"enqueued\",\"job\":77,\"tenant\":\"acme\",\"key\":\"acme:doc-3:v2\",\"operation\":\"extract\",\"content\":\"0\"}}\n\
         {{\"at\":3,\"type\":\"leased\",\"job\":77,\"worker\":\"w-a\",\"fence\":4}}\n\
         {{\"at\":4,\"type\":\"run_ended\",\"quiescent\":false}}\n"
    );
    let mut r = HistoryReader::from_reader("h", text.as_bytes(), Limits::default());
    let mut records = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        records.push(rec);
    }
    assert_eq!(records.len(), 5);
    match &records[2].event {
        Event::Enqueued { job, key, .. } => {
            assert_eq!(*job, JobId(1));
            assert_eq!(r.names().key(key), "acme:doc-3:v2");
        }
        e => panic!("{e:?}"),
    }
    match &records[3].event {
        Event::Leased { job, worker, .. } => {
            assert_eq!((*job, *worker), (JobId(1), WorkerId(0)));
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(r.job_label(JobId(0)).as_deref(), Some("\"9b2f-uuid\""));
    assert_eq!(r.job_label(JobId(1)).as_deref(), Some("77"));
}

#[test]
fn malformed_lines_name_the_line_the_field_and_what_is_allowed() {
    let enq = r#"{"at":1,"type":"enqueued","job":1,"tenant":"acme","key":"acme:d:v1","operation":"extract","content":"0"}"#;
    let end = r#"{"at":9,"type":"run_ended","quiescent":true}"#;
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "empty: a history starts with a header"),
        ("{\"format\":\"x\"}".into(), "field `format`"),
        (format!("{HEADER}\n{enq}"), "ends without a `run_ended`"),
        (
            format!("{HEADER}\n{end}\n{enq}"),
            ":3: a line after `run_ended`",
        ),
        (
            format!("{HEADER}\n{{\"at\":1,\"type\":\"acked\",\"job\":5,\"worker\":0,\"fence\":1}}"),
            ":2: field `job`: job 5 has no earlier `enqueued` line",
        ),
        (
            format!(
                "{HEADER}\n{enq}\n{}",
                enq.replace("\"at\":1", "\"at\":0")
                    .replace("\"job\":1", "\"job\":2")
            ),
            ":3: field `at`: 0 is before the previous line's 1",
        ),
        (
            format!(
                "{HEADER}\n{}",
                enq.replace("\"content\"", "\"colour\":1,\"content\"")
            ),
            ":2: field `colour`: unknown field for a `enqueued` record; allowed: at, type, job,",
        ),
        (
            format!("{HEADER}\n{}", enq.replace("acme:d:v1", "acme:d:v0")),
            "field `key`: \"acme:d:v0\": an idempotency key tenant:document:vN",
        ),
        (
            format!(
                "{HEADER}\n{}",
                enq.replace("\"tenant\":\"acme\"", "\"tenant\":\"Acme\"")
            ),
            "field `tenant`: invalid tenant id \"Acme\"",
        ),
        (
            format!("{HEADER}\n{{\"at\":1,\"type\":\"depth_sampled\",\"depth\":3}}"),
            "add \"depth_sampled\" to the header's \"emits\" list",
        ),
        (
            format!("{HEADER}\n{{\"at\":1,\"type\":\"teleported\"}}"),
            "field `type`: \"teleported\": unknown record type; allowed: enqueued,",
        ),
        (
            format!(
                "{HEADER}\n{}",
                enq.replace("\"content\":\"0\"", "\"content\":\"xyz\"")
            ),
            "field `content`: \"xyz\": a 64-bit fingerprint",
        ),
        (format!("{HEADER}\nnot json"), ":2: not JSON"),
        (
            HEADER.replace("\"jitter\":\"full\"", "\"jitter\":\"some\""),
            "field `config.jitter`: \"some\": allowed: none, full, equal",
        ),
        (
            HEADER.replace("\"lease\":500,", ""),
            "field `config.lease`: missing",
        ),
        (
            HEADER.replace("\"version\":1", "\"version\":3"),
            "field `version`: 3; this reader reads versions 1 and 2",
        ),
        (
            format!("{HEADER}\n{enq}\n{enq}"),
            ":3: field `job`: job 1 was already enqueued",
        ),
    ];
    for (text, want) in cases {
        let got = err(&text);
        assert!(got.starts_with("h.jsonl"), "{got}");
        assert!(got.contains(want), "want {want:?} in {got:?}");
    }
    // Found by tests/it/fuzz/history_smoke.rs: a value is shown escaped, never raw.
    let got = err(&HEADER.replace("\"version\":1", "\"version\":\"evil\u{202e}gnp\""));
    assert!(
        !got.contains('\u{202e}') && got.contains("\\u{202e}"),
        "{got}"
    );
}

#[test]
fn lines_and_files_are_bounded() {
    let long = format!("{HEADER}\n{{\"at\":1,\"type\":\"{}\"}}\n", "x".repeat(100));
    let limits = Limits {
        max_line_bytes: 64,
        max_file_bytes: 1 << 20,
        ..Limits::default()
    };
    let e = HistoryReader::from_reader("h", HEADER.as_bytes(), limits)
        .read_all()
        .unwrap_err();
    assert!(e.message.contains("longer than 64 bytes"), "{e}");
    let limits = Limits {
        max_line_bytes: 1 << 16,
        max_file_bytes: 300,
        ..Limits::default()
    };
    let e = HistoryReader::from_reader("h", long.as_bytes(), limits)
        .read_all()
        .unwrap_err();
    assert!(e.message.contains("grew past 300 bytes"), "{e}");
}

#[test]
fn jobs_and_ids_are_capped_and_the_refusal_names_the_cap() {
    let enq = |i: u32| {
        format!("{{\"at\":1,\"type\":\"enqueued\",\"job\":{i},\"tenant\":\"acme\",\"key\":\"acme:d{i}:v1\",\"operation\":\"extract\",\"content\":\"0\"}}")
    };
    let text = format!("{HEADER}\n{}\n{}\n{}\n", enq(1), enq(2), enq(3));
    let limits = Limits {
        max_jobs: 2,
        ..Limits::default()
    };
    let e = HistoryReader::from_reader("h", text.as_bytes(), limits)
        .read_all()
        .unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("more than 2 jobs"), "{e}");
    assert!(e.message.contains("MAX_HISTORY_JOBS"), "{e}");
    let ack = |w: &str| format!("{{\"at\":2,\"type\":\"worker_restarted\",\"worker\":\"{w}\"}}");
    let text = format!("{HEADER}\n{}\n{}\n{}\n", enq(1), ack("a"), ack("b"));
    let limits = Limits {
        max_ids: 1,
        ..Limits::default()
    };
    let e = HistoryReader::from_reader("h", text.as_bytes(), limits)
        .read_all()
        .unwrap_err();
    assert!(e.message.contains("more than 1 workers"), "{e}");
    assert!(e.message.contains("MAX_HISTORY_IDS"), "{e}");
}

/// Version 1's relaxation for kills from outside a process (`durasim conform --kills random`):
/// a `worker_crashed` may leave out its point (with `job`) or its job (then no fence or point),
/// a `relay_crashed` its `unmarked`; a record naming them all reads as before.
#[test]
fn version_1_reads_a_crash_without_its_point_or_job_and_keeps_the_full_record() {
    let enq = r#"{"at":1,"type":"enqueued","job":1,"tenant":"acme","key":"acme:d:v1","operation":"extract","content":"0"}"#;
    let lease = r#"{"at":2,"type":"leased","job":1,"worker":"w","fence":4,"lease_until":502}"#;
    let end = r#"{"at":9,"type":"run_ended","quiescent":false}"#;
    let events = |crash: &str| -> Vec<Event> {
        read(&format!("{HEADER}\n{enq}\n{lease}\n{crash}\n{end}\n"))
            .unwrap_or_else(|e| panic!("{crash}: {e}"))
            .into_iter()
            .map(|r| r.event)
            .collect()
    };
    let full = events(
        r#"{"at":3,"type":"worker_crashed","worker":"w","job":1,"fence":4,"point":"mid_commit"}"#,
    );
    assert!(
        matches!(
            &full[3],
            Event::WorkerCrashed {
                job: JobId(0),
                fence: Fence(4),
                point: "mid_commit",
                ..
            }
        ),
        "{full:?}"
    );
    let pointless = events(r#"{"at":3,"type":"worker_crashed","worker":"w","job":1,"fence":4}"#);
    assert!(
        matches!(
            &pointless[3],
            Event::WorkerCrashed {
                job: JobId(0),
                fence: Fence(4),
                point: "unknown",
                ..
            }
        ),
        "{pointless:?}"
    );
    let idle = events(r#"{"at":3,"type":"worker_crashed","worker":"w"}"#);
    assert!(
        matches!(
            &idle[3],
            Event::WorkerLost {
                worker: WorkerId(0)
            }
        ),
        "{idle:?}"
    );
    let relay = events(r#"{"at":3,"type":"relay_crashed"}"#);
    assert!(matches!(&relay[3], Event::RelayLost {}), "{relay:?}");
    let counted = events(r#"{"at":3,"type":"relay_crashed","unmarked":2}"#);
    assert!(
        matches!(&counted[3], Event::Struck(s) if s.value == 2),
        "{counted:?}"
    );
    // Still refused: a fence or point with no job, a job with no fence, an unknown point.
    for (crash, field) in [
        (
            r#"{"at":3,"type":"worker_crashed","worker":"w","fence":4}"#,
            "`fence`",
        ),
        (
            r#"{"at":3,"type":"worker_crashed","worker":"w","point":"mid_commit"}"#,
            "`point`",
        ),
        (
            r#"{"at":3,"type":"worker_crashed","worker":"w","job":1}"#,
            "`fence`",
        ),
        (
            r#"{"at":3,"type":"worker_crashed","worker":"w","job":1,"fence":4,"point":"sideways"}"#,
            "`point`",
        ),
    ] {
        let e = err(&format!("{HEADER}\n{enq}\n{lease}\n{crash}\n{end}\n"));
        assert!(e.contains(":4:") && e.contains(field), "{crash}: {e}");
    }
}

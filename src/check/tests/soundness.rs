//! The histories issue 27 found passing every invariant, each now failing with the right one:
//! written as a recorder outside the simulator writes them (read by the history reader, judged
//! with its names, so payload hashes are recomputed), each a clean history with one thing wrong.

use super::{CheckReport, Checker, Invariant};
use crate::history::reader::{HistoryReader, Limits};

const HEADER: &str = r#"{"format":"durasim-history","version":1,"time_unit":"ms","emits":["lease_expired"],"config":{"lease":100,"heartbeat":40,"deadline":10000,"attempts_max":3,"backoff_base":10,"backoff_cap":40,"jitter":"none","lease_detection":{"kind":"timer"}}}"#;

const ENQUEUED: &str = r#"{"at":0,"type":"enqueued","job":"j1","tenant":"acme","key":"acme:doc-1:v1","operation":"extract","content":"7"}"#;
const LEASED: &str = r#"{"at":10,"type":"leased","job":"j1","worker":"w1","fence":1}"#;
const STARTED: &str = r#"{"at":10,"type":"extract_started","job":"j1","worker":"w1","fence":1}"#;
const DONE: &str = r#"{"at":30,"type":"extract_done","job":"j1","worker":"w1","fence":1,"inference":20,"output":"5"}"#;
const COMMITTED: &str = r#"{"at":40,"type":"result_committed","job":"j1","worker":"w1","key":"acme:doc-1:v1","output":"5","event":"e1"}"#;
const ACKED: &str = r#"{"at":41,"type":"acked","job":"j1","worker":"w1","fence":1}"#;
const PUBLISHED: &str =
    r#"{"at":50,"type":"published","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#;
const MARKED: &str = r#"{"at":50,"type":"marked_published","count":1}"#;
const APPLIED: &str = r#"{"at":60,"type":"effect_applied","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#;
const REVIEWED: &str =
    r#"{"at":90,"type":"review_done","event":"e1","key":"acme:doc-1:v1","job":"j1"}"#;
const ENDED: &str = r#"{"at":200,"type":"run_ended","quiescent":true}"#;

/// The clean history: one job, committed, acked, published, applied, reviewed.
fn clean() -> Vec<String> {
    [
        ENQUEUED, LEASED, STARTED, DONE, COMMITTED, ACKED, PUBLISHED, MARKED, APPLIED, REVIEWED,
        ENDED,
    ]
    .map(str::to_string)
    .to_vec()
}

/// Judges the header and `lines` as a file, with the reader's names.
fn judge(lines: &[String]) -> CheckReport {
    let text = format!("{HEADER}\n{}\n", lines.join("\n"));
    let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
    let mut checker = Checker::new();
    while let Some(r) = reader.next_record().unwrap_or_else(|e| panic!("{e}")) {
        checker.observe_named(&r, Some(reader.names()));
    }
    checker.finish()
}

/// The only invariant violated, its first violation's record and message.
fn only(r: &CheckReport) -> (Invariant, u64, String) {
    let violated = r.violated();
    assert_eq!(violated.len(), 1, "{violated:?}: {:?}", r.first_violation());
    let v = r.verdict(violated[0]).first.clone().unwrap();
    (violated[0], v.record, v.message)
}

/// `clean()` with the line `i` (0: the first record) replaced by `with`.
fn edit(i: usize, with: &str) -> Vec<String> {
    let mut h = clean();
    h[i] = with.to_string();
    h
}

/// `clean()` with `line` inserted before line `i`.
fn insert(i: usize, line: &str) -> Vec<String> {
    let mut h = clean();
    h.insert(i, line.to_string());
    h
}

/// FNV-1a-64 of `document\noperation\ncontent as 16 hex digits` (docs/history-format.md).
fn hash(document: &str, content: u64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{document}\nextract\n{content:016x}").bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

#[test]
fn the_clean_history_holds() {
    let r = judge(&clean());
    assert!(r.holds(), "{:?}", r.first_violation());
}

#[test]
fn an_effect_and_a_review_for_a_key_never_enqueued_break_the_chain() {
    let mut h = clean();
    h.insert(
        10,
        r#"{"at":95,"type":"effect_applied","event":"e9","key":"acme:ghost:v1","job":"j1","output":"5"}"#.into(),
    );
    h.insert(
        11,
        r#"{"at":96,"type":"review_done","event":"e9","key":"acme:ghost:v1","job":"j1"}"#.into(),
    );
    let r = judge(&h);
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 11));
    assert!(m.contains("was never published"), "{m}");
    assert_eq!(r.verdict(i).count, 2, "the apply and the review");
}

#[test]
fn a_second_review_of_one_apply_breaks_the_chain() {
    let r = judge(&insert(10, REVIEWED));
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 11));
    assert!(
        m.contains("for the 2 time, but its effect was applied 1 times"),
        "{m}"
    );
}

#[test]
fn an_event_published_and_applied_before_its_commit_breaks_the_chain() {
    // The outbox pattern inverted: sent and applied, then the result and its row written.
    let h: Vec<String> = [
        ENQUEUED,
        LEASED,
        STARTED,
        DONE,
        r#"{"at":35,"type":"published","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#,
        r#"{"at":36,"type":"effect_applied","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#,
        COMMITTED,
        ACKED,
        REVIEWED,
        ENDED,
    ]
    .map(str::to_string)
    .to_vec();
    let r = judge(&h);
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 5));
    assert!(m.contains("no earlier result_committed"), "{m}");
}

#[test]
fn an_event_no_result_wrote_breaks_the_chain_when_published() {
    let r = judge(&insert(
        7,
        r#"{"at":50,"type":"published","event":"e7","key":"acme:doc-1:v1","job":"j1","output":"5"}"#,
    ));
    let (i, record, _) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 8));
}

#[test]
fn a_published_output_other_than_the_committed_one_breaks_the_chain() {
    let r = judge(&edit(
        6,
        r#"{"at":50,"type":"published","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"6"}"#,
    ));
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 7));
    assert!(m.contains("with output 6"), "{m}");
}

#[test]
fn a_relay_that_marks_more_than_it_sent_breaks_the_chain() {
    let r = judge(&edit(7, r#"{"at":50,"type":"marked_published","count":2}"#));
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::DeliveryChain, 8));
    assert!(m.contains("only 1 were unmarked"), "{m}");
    // Marked before it was sent: it would never be sent.
    let mut h = clean();
    h.swap(6, 7);
    let (i, record, m) = only(&judge(&h));
    assert_eq!((i, record), (Invariant::DeliveryChain, 7));
    assert!(m.contains("never published"), "{m}");
}

#[test]
fn a_relay_crash_with_rows_it_never_sent_is_a_wrong_recorded_value() {
    let crash = r#"{"at":50,"type":"relay_crashed","unmarked":2}"#;
    let mut h = edit(7, crash);
    h.insert(8, PUBLISHED.into());
    h.insert(9, MARKED.into());
    let (i, record, m) = only(&judge(&h));
    assert_eq!((i, record), (Invariant::RecordedValuesMatch, 8));
    assert!(m.contains("the outbox had 1 unmarked"), "{m}");
    let mut h = edit(7, &crash.replace('2', "1"));
    h.insert(8, PUBLISHED.into());
    h.insert(9, MARKED.into());
    let r = judge(&h);
    assert!(r.holds(), "{:?}", r.first_violation());
}

// Two relays claim disjoint batches (and commits finish out of event-id order), so a crashed
// relay's rows need not be the first pending: the second job's event was sent, the first's not
// yet, and the relay that sent it crashed before marking. That is no wrong value.
#[test]
fn a_relay_crash_with_rows_that_are_not_the_first_pending_holds() {
    let second = |line: &str| {
        line.replace("j1", "j2")
            .replace("doc-1", "doc-2")
            .replace("e1", "e2")
            .replace("\"7\"", "\"9\"")
    };
    // Job 2 runs on a second worker just after job 1; its event is sent by a relay that then
    // crashes; another relay sends and marks both by id.
    let job2 = [
        r#"{"at":42,"type":"leased","job":"j2","worker":"w2","fence":1}"#,
        r#"{"at":42,"type":"extract_started","job":"j2","worker":"w2","fence":1}"#,
        r#"{"at":45,"type":"extract_done","job":"j2","worker":"w2","fence":1,"inference":3,"output":"5"}"#,
        r#"{"at":46,"type":"result_committed","job":"j2","worker":"w2","key":"acme:doc-2:v1","output":"5","event":"e2"}"#,
        r#"{"at":47,"type":"acked","job":"j2","worker":"w2","fence":1}"#,
    ];
    let mut h = clean();
    h.insert(1, second(ENQUEUED));
    h.splice(7..9, job2.iter().map(|l| l.to_string()));
    h.splice(
        12..12,
        [
            second(PUBLISHED),
            r#"{"at":50,"type":"relay_crashed","unmarked":1}"#.to_string(),
            PUBLISHED.to_string(),
            second(PUBLISHED),
            r#"{"at":50,"type":"marked_published","events":["e1","e2"]}"#.to_string(),
        ],
    );
    let applied = h.iter().position(|l| l == APPLIED).unwrap();
    h.insert(applied + 1, second(APPLIED));
    let reviewed = h.iter().position(|l| l == REVIEWED).unwrap();
    h.insert(reviewed + 1, second(REVIEWED));
    let r = judge(&h);
    assert!(r.holds(), "{:?}", r.first_violation());
    // Two rows said sent and unmarked when one was: a wrong value.
    let i = h.iter().position(|l| l.contains("relay_crashed")).unwrap();
    h[i] = h[i].replace("\"unmarked\":1", "\"unmarked\":2");
    let (inv, record, m) = only(&judge(&h));
    assert_eq!(
        (inv, record),
        (Invariant::RecordedValuesMatch, i as u64 + 1)
    );
    assert!(
        m.contains("the outbox had 2 unmarked, 1 of them sent"),
        "{m}"
    );
}

#[test]
fn existing_payloads_are_recomputed() {
    let conflict = |existing: &str| {
        format!(
            r#"{{"at":5,"type":"enqueue_conflict","tenant":"acme","key":"acme:doc-1:v1","operation":"extract","content":"8","existing":"j1","existing_payload":"{existing}"}}"#
        )
    };
    let right = hash("doc-1", 7);
    let r = judge(&insert(1, &conflict(&right)));
    assert!(r.holds(), "{:?}", r.first_violation());
    let (i, record, m) = only(&judge(&insert(1, &conflict(&hash("doc-1", 8)))));
    assert_eq!((i, record), (Invariant::RecordedValuesMatch, 2));
    assert!(m.contains(&format!("hash to {right}")), "{m}");
    // A second job's commit deduplicated onto the first's result, and one refused.
    let second = r#"{"at":1,"type":"enqueued","job":"j2","tenant":"acme","key":"acme:doc-1:v1","operation":"extract","content":"7"}"#;
    let deduped = |existing: &str| {
        format!(
            r#"{{"at":45,"type":"commit_deduped","job":"j2","worker":"w2","key":"acme:doc-1:v1","output":"5","existing_payload":"{existing}","existing_event":"e1"}}"#
        )
    };
    let with_second = |line: &str| {
        let mut h = clean();
        h.insert(1, second.into());
        h.insert(
            7,
            r#"{"at":42,"type":"leased","job":"j2","worker":"w2","fence":1}"#.into(),
        );
        h.insert(8, line.into());
        h
    };
    // (`unique` absent is `forever`, so the second job is itself a conflict: only the recorded
    // existing payload is looked at here.)
    let r = judge(&with_second(&deduped(&right)));
    assert!(
        !r.violated().contains(&Invariant::RecordedValuesMatch),
        "{:?}",
        r.first_violation()
    );
    let r = judge(&with_second(&deduped(&hash("doc-1", 9))));
    let v = r.verdict(Invariant::RecordedValuesMatch).first.clone();
    assert_eq!(v.map(|v| v.record), Some(9));
    let r = judge(&with_second(&deduped(&right).replace("\"e1\"", "\"e5\"")));
    let m = r.verdict(Invariant::RecordedValuesMatch).first.clone();
    assert!(m.is_some_and(|v| v.message.contains("written with event")));
}

#[test]
fn a_stale_fence_refusal_of_the_latest_token_is_unjustified() {
    let refusal = |presented: u64, held: u64| {
        format!(
            r#"{{"at":41,"type":"rejected","job":"j1","worker":"w1","op":"heartbeat","presented":{presented},"held":{held},"reason":"stale_fence"}}"#
        )
    };
    let (i, record, m) = only(&judge(&insert(5, &refusal(1, 1))));
    assert_eq!((i, record), (Invariant::RejectionJustified, 6));
    assert!(m.contains("is the job's latest token"), "{m}");
    // A held token that is not the job's latest.
    let (i, _, m) = only(&judge(&insert(5, &refusal(1, 3))));
    assert_eq!(i, Invariant::RejectionJustified);
    assert!(m.contains("records the held token fence-3"), "{m}");
}

#[test]
fn a_refusal_as_a_terminal_state_the_job_is_not_in_is_unjustified() {
    let r = judge(&insert(
        5,
        r#"{"at":40,"type":"rejected","job":"j1","worker":"w1","op":"heartbeat","presented":1,"reason":"acked"}"#,
    ));
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::RejectionJustified, 6));
    assert!(
        m.contains("refused as acked, but the job is not terminal"),
        "{m}"
    );
}

/// A job revived after its ack (a retry a guard took by id) that ended again is refused for what
/// it became since: the shape of swarm seed 65488 (acked, revived by a stale retry, then
/// dead-lettered, a call refused as dead-lettered). A terminal record with no revival between
/// changes nothing (seed 37262: cancelled, a stale ack taken, a call refused as cancelled).
#[test]
fn a_refusal_as_what_a_revived_job_became_is_justified() {
    let history = |revived: bool, refused_as: &str| {
        let mut h = clean();
        let end = h.pop().unwrap();
        if revived {
            h.push(r#"{"at":10000,"type":"retry_scheduled","job":"j1","worker":"w1","fence":1,"visible_at":10010}"#.into());
        }
        h.push(r#"{"at":10001,"type":"cancelled","job":"j1"}"#.into());
        h.push(format!(
            r#"{{"at":10002,"type":"rejected","job":"j1","worker":"w1","op":"ack","presented":1,"held":1,"reason":"{refused_as}"}}"#
        ));
        h.push(end.replace("\"at\":200", "\"at\":10003"));
        h
    };
    let refusal = |r: &CheckReport| r.verdict(Invariant::RejectionJustified).first.clone();
    // Revived, then cancelled: refused as cancelled holds, as acked does not.
    let r = judge(&history(true, "cancelled"));
    assert!(r.violated().contains(&Invariant::TerminalOnce));
    assert!(refusal(&r).is_none(), "{:?}", refusal(&r));
    let r = judge(&history(true, "acked"));
    let v = refusal(&r).expect("refused as acked, but cancelled since");
    assert_eq!(v.record, 13);
    assert!(
        v.message
            .contains("refused as acked, but the job is Cancelled"),
        "{}",
        v.message
    );
    // No revival: the later cancel changes nothing; the job is still acked.
    let r = judge(&history(false, "acked"));
    assert!(r.violated().contains(&Invariant::TerminalOnce));
    assert!(refusal(&r).is_none(), "{:?}", refusal(&r));
    let v = refusal(&judge(&history(false, "cancelled"))).expect("acked, never revived");
    assert!(
        v.message
            .contains("refused as cancelled, but the job is Acked"),
        "{}",
        v.message
    );
}

#[test]
fn a_fence_a_job_never_had_on_a_worker_step_is_caught() {
    let r = judge(&edit(
        2,
        r#"{"at":10,"type":"extract_started","job":"j1","worker":"w1","fence":9}"#,
    ));
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::FencesIssued, 3));
    assert!(
        m.contains("no lease of job-0 gave fence-9 to worker"),
        "{m}"
    );
    // A crash naming a fence issued to another worker.
    let r = judge(&insert(
        5,
        r#"{"at":40,"type":"worker_crashed","worker":"w2","job":"j1","fence":1,"point":"after_commit_before_ack"}"#,
    ));
    let (i, record, _) = only(&r);
    assert_eq!((i, record), (Invariant::FencesIssued, 6));
}

#[test]
fn an_inference_longer_than_the_extraction_took_is_a_wrong_recorded_value() {
    let r = judge(&edit(
        3,
        r#"{"at":30,"type":"extract_done","job":"j1","worker":"w1","fence":1,"inference":21,"output":"5"}"#,
    ));
    let (i, record, _) = only(&r);
    assert_eq!((i, record), (Invariant::RecordedValuesMatch, 4));
}

#[test]
fn an_ack_after_a_refused_commit_has_no_result_of_its_own() {
    // Job 2 under another key whose first job committed; job 2's commit is refused as a
    // conflict, and it acks all the same.
    let mut h = clean();
    let tail = h.split_off(10);
    h.extend(
        [
            r#"{"at":100,"type":"enqueued","job":"j2","tenant":"acme","key":"acme:doc-2:v1","operation":"extract","content":"7"}"#,
            r#"{"at":101,"type":"leased","job":"j2","worker":"w1","fence":2}"#,
            r#"{"at":102,"type":"result_committed","job":"j2","worker":"w1","key":"acme:doc-2:v1","output":"6","event":"e2"}"#,
            r#"{"at":103,"type":"acked","job":"j2","worker":"w1","fence":2}"#,
            r#"{"at":104,"type":"published","event":"e2","key":"acme:doc-2:v1","job":"j2","output":"6"}"#,
            r#"{"at":104,"type":"marked_published","count":1}"#,
            r#"{"at":105,"type":"effect_applied","event":"e2","key":"acme:doc-2:v1","job":"j2","output":"6"}"#,
            r#"{"at":106,"type":"review_done","event":"e2","key":"acme:doc-2:v1","job":"j2"}"#,
        ]
        .map(str::to_string),
    );
    h.extend(tail);
    let r = judge(&h);
    assert!(r.holds(), "{:?}", r.first_violation());
    // The same with job 2's commit refused: its ack rests on nothing of its own.
    let refused =
        r#"{"at":102,"type":"commit_conflict","job":"j2","worker":"w1","key":"acme:doc-2:v1"}"#;
    let mut bad = h.clone();
    bad[12] = refused.to_string();
    let r = judge(&bad);
    let v = r.verdict(Invariant::AckedWithResult).first.clone().unwrap();
    assert_eq!(v.record, 14);
}

#[test]
fn an_ack_resting_on_an_earlier_jobs_result_under_the_key_is_caught() {
    // unique = "none": a second job under the key; its commit is refused, and it acks on the
    // strength of the first job's result, which the old rule took for its own.
    let mut h = clean();
    let tail = h.split_off(10);
    h.extend(
        [
            r#"{"at":100,"type":"enqueued","job":"j2","tenant":"acme","key":"acme:doc-1:v1","operation":"extract","content":"8"}"#,
            r#"{"at":101,"type":"leased","job":"j2","worker":"w2","fence":1}"#,
            r#"{"at":102,"type":"commit_conflict","job":"j2","worker":"w2","key":"acme:doc-1:v1"}"#,
            r#"{"at":103,"type":"acked","job":"j2","worker":"w2","fence":1}"#,
        ]
        .map(str::to_string),
    );
    h.extend(tail);
    let text = h.join("\n");
    let header = HEADER.replace(
        "\"jitter\":\"none\"",
        "\"jitter\":\"none\",\"unique\":\"none\"",
    );
    let text = format!("{header}\n{text}\n");
    let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
    let mut checker = Checker::new();
    while let Some(r) = reader.next_record().unwrap() {
        checker.observe_named(&r, Some(reader.names()));
    }
    let r = checker.finish();
    let (i, record, m) = only(&r);
    assert_eq!((i, record), (Invariant::AckedWithResult, 14));
    assert!(m.contains("rests on another attempt's result"), "{m}");
}

#[test]
fn a_lease_that_ends_is_recorded_as_expired_by_its_timer() {
    // The holder pauses past its lease and never comes back; the timer must expire the lease
    // the moment after its end (110), not at some later record.
    let h: Vec<String> = [
        ENQUEUED,
        LEASED,
        STARTED,
        r#"{"at":150,"type":"lease_expired","job":"j1","fence":1}"#,
        r#"{"at":151,"type":"leased","job":"j1","worker":"w2","fence":2}"#,
        r#"{"at":152,"type":"result_committed","job":"j1","worker":"w2","key":"acme:doc-1:v1","output":"5","event":"e1"}"#,
        r#"{"at":153,"type":"acked","job":"j1","worker":"w2","fence":2}"#,
        r#"{"at":154,"type":"published","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#,
        r#"{"at":154,"type":"marked_published","count":1}"#,
        r#"{"at":155,"type":"effect_applied","event":"e1","key":"acme:doc-1:v1","job":"j1","output":"5"}"#,
        r#"{"at":156,"type":"review_done","event":"e1","key":"acme:doc-1:v1","job":"j1"}"#,
        ENDED,
    ]
    .map(str::to_string)
    .to_vec();
    let (i, record, m) = only(&judge(&h));
    assert_eq!((i, record), (Invariant::LeaseEndDetected, 4));
    assert!(m.contains("had to be recorded as expired by 111 ms"), "{m}");
    // On time: holds.
    let mut on_time = h.clone();
    on_time[3] = on_time[3].replace("\"at\":150", "\"at\":111");
    let r = judge(&on_time);
    assert!(r.holds(), "{:?}", r.first_violation());
    // No lease_detection in the header: not judged.
    let text = format!(
        "{}\n{}\n",
        HEADER.replace(",\"lease_detection\":{\"kind\":\"timer\"}", ""),
        h.join("\n")
    );
    let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
    let mut checker = Checker::new();
    while let Some(r) = reader.next_record().unwrap() {
        checker.observe_named(&r, Some(reader.names()));
    }
    assert!(checker.finish().holds());
}

#[test]
fn a_sweeper_detects_at_its_first_tick_after_the_end() {
    let h: Vec<String> = [
        ENQUEUED,
        LEASED,
        r#"{"at":300,"type":"lease_expired","job":"j1","fence":1}"#,
        r#"{"at":301,"type":"run_ended","quiescent":false}"#,
    ]
    .map(str::to_string)
    .to_vec();
    let judge_with = |detection: &str, h: &[String]| {
        let header = HEADER.replace("{\"kind\":\"timer\"}", detection);
        let text = format!("{header}\n{}\n", h.join("\n"));
        let mut reader = HistoryReader::from_reader("h.jsonl", text.as_bytes(), Limits::default());
        let mut checker = Checker::new();
        while let Some(r) = reader.next_record().unwrap() {
            checker.observe_named(&r, Some(reader.names()));
        }
        checker.finish()
    };
    // The lease ends at 110; a sweeper every 200 takes it at 200; every 100, at 200 too.
    let sweep = |every: u64| format!("{{\"kind\":\"sweep\",\"every\":{every}}}");
    let late = judge_with(&sweep(100), &h);
    assert!(late.violated().contains(&Invariant::LeaseEndDetected));
    let mut at_tick = h.clone();
    at_tick[2] = at_tick[2].replace("\"at\":300", "\"at\":200");
    assert!(!judge_with(&sweep(100), &at_tick)
        .violated()
        .contains(&Invariant::LeaseEndDetected));
    assert!(!judge_with(&sweep(300), &h)
        .violated()
        .contains(&Invariant::LeaseEndDetected));
}

/// A `lease_expired` of the live lease (a sweeper's write by id after the holder renewed it, a
/// rescue race: the shape of swarm seed 318304) leaves the job ready, and the queue refuses its
/// holder's call as ready: the early record is `recorded_values_match`'s, the refusal follows
/// from it. With no such record, a refusal of the live lease as ready is unjustified.
#[test]
fn a_refusal_as_ready_after_a_recorded_expiry_is_justified() {
    let expired = r#"{"at":20,"type":"lease_expired","job":"j1","fence":1}"#;
    let refused = r#"{"at":25,"type":"rejected","job":"j1","worker":"w1","op":"heartbeat","presented":1,"held":1,"reason":"ready"}"#;
    let mut h = clean();
    h.insert(3, refused.to_string());
    h.insert(3, expired.to_string());
    let (i, record, m) = only(&judge(&h));
    assert_eq!((i, record), (Invariant::RecordedValuesMatch, 4));
    assert!(m.contains("is live until"), "{m}");
    // The same refusal with the lease live and no record of its end.
    let (i, record, m) = only(&judge(&insert(3, refused)));
    assert_eq!((i, record), (Invariant::RejectionJustified, 4));
    assert!(
        m.contains("refused as ready at 25 ms, but that lease is held and live until 110 ms"),
        "{m}"
    );
}

/// A job revived after its ack (a retry a guard took by id) is waiting again: a call refused as
/// waiting is justified (clause 4 judges by `last_terminal(j)`), as it is not for a job acked and
/// never revived.
#[test]
fn a_refusal_as_waiting_of_a_revived_job_is_justified() {
    let history = |revived: bool| {
        let mut h = clean();
        let end = h.pop().unwrap();
        if revived {
            h.push(r#"{"at":10000,"type":"retry_scheduled","job":"j1","worker":"w1","fence":1,"visible_at":10010}"#.into());
        }
        h.push(r#"{"at":10002,"type":"rejected","job":"j1","worker":"w1","op":"ack","presented":1,"held":1,"reason":"waiting"}"#.into());
        h.push(end.replace("\"at\":200", "\"at\":10003"));
        h
    };
    let refusal = |r: &CheckReport| r.verdict(Invariant::RejectionJustified).first.clone();
    let r = judge(&history(true));
    assert!(r.violated().contains(&Invariant::TerminalOnce));
    assert!(refusal(&r).is_none(), "{:?}", refusal(&r));
    let (i, _, m) = only(&judge(&history(false)));
    assert_eq!(i, Invariant::RejectionJustified);
    assert!(
        m.contains("refused as waiting, but the job is Acked"),
        "{m}"
    );
}

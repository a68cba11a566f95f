//! Agreement on a job dead-lettered again while its DLQ entry is held, then reprocessed:
//! `tests/data/refiled-dead-letter-history.jsonl`, durasim's own run of the swarm's seed 313797
//! (River, whose rescuer writes by id after a gap: a rescue race), shrunk. job-1 is
//! dead-lettered at 913 ms, rescued by id and leased again, dead-lettered again at 1312 ms (the
//! DLQ, capacity 2, files it once: its old entry leaves first) and reprocessed at 1389 ms.
//!
//! Owns: that history, judged by the real checker and the reference, which must agree and find
//! exactly the invariants named: the rescue race's own (`terminal_once`,
//! `recorded_values_match`, `dlq_bounded` for an eviction of a job first acked, `no_silent_drop`
//! for job-0 expired unreprocessed), and nothing of the reprocess: counted twice, job-1's entry
//! filled the DLQ and its new entry was taken for evicted (`audited_reprocess`).
//! Does not: judge (the reference does).

use super::v2::agree;

#[test]
fn a_reprocess_of_a_job_dead_lettered_again_while_held_agrees_with_the_reference() {
    let body = std::fs::read_to_string(
        crate::support::root().join("tests/data/refiled-dead-letter-history.jsonl"),
    )
    .unwrap();
    assert!(body.contains(r#"{"at":1312,"type":"dead_lettered""#));
    assert!(body.contains(r#"{"at":1389,"type":"reprocessed""#));
    agree(
        "dead-lettered, rescued, dead-lettered again, reprocessed",
        &body,
        &[
            "terminal_once",
            "recorded_values_match",
            "dlq_bounded",
            "no_silent_drop",
        ],
    );
}

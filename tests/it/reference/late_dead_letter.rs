//! Agreement on a job dead-lettered after it was acked, then reprocessed from the DLQ:
//! `tests/data/late-dead-letter-history.jsonl`, durasim's own run of the swarm's seed 14359
//! (Oban, whose guard takes a stale holder's writes by id), shrunk. The holder of job-0's first
//! lease acks it at 321 ms after that lease ended; the current holder fails it for good at
//! 550 ms and the queue files it in the DLQ; an operator reprocesses it at 578 ms.
//!
//! Owns: that history and its variants, judged by the real checker and the reference, which
//! must agree and find exactly the invariants named: the stale ack breaks `fenced_writes`, the
//! second terminal records `terminal_once` (job-0's, and job-1's two acks), and the reprocess,
//! of a job the DLQ holds, nothing. Without the dead-lettering the reprocess is of a job the DLQ
//! never held (`audited_reprocess`).
//! Does not: judge (the reference does).

use super::v2::agree;

fn base() -> String {
    std::fs::read_to_string(
        crate::support::root().join("tests/data/late-dead-letter-history.jsonl"),
    )
    .unwrap()
}

#[test]
fn a_reprocess_of_a_job_dead_lettered_after_its_ack_agrees_with_the_reference() {
    agree(
        "acked, then dead-lettered, then reprocessed",
        &base(),
        &["fenced_writes", "terminal_once"],
    );
    let never: String = base()
        .lines()
        .filter(|l| !l.starts_with(r#"{"at":550,"#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(never.lines().count() + 2, base().lines().count());
    agree(
        "acked, never dead-lettered, then reprocessed",
        &never,
        // job-1's second ack (1122 ms) is a second terminal record of its own.
        &["fenced_writes", "terminal_once", "audited_reprocess"],
    );
}

//! `[queue] attempts_count = "failures"` is honoured under every profile, the chapter's fenced
//! writes and exact timer included: a lease that expires does not count against
//! `max_attempts`, only failed attempts do, as the history's header states; and the checker,
//! which recomputes the policy from that header, judges the run by the same count (while
//! `attempts_bounded` keeps the chapter's bound on leases).

use durasim::check::Invariant;
use durasim::scenario::Scenario;

use crate::support::history::{first_message, judge, run_with_history};

/// One job under durasim's own queue (fenced writes, the exact timer, `exp2` backoff) but with
/// failures counted: its first lease expires under a stall, its next three attempts fail.
fn scenario(count: &str) -> Scenario {
    let text = format!(
        "name = \"attempts-count\"\nseed = 1\n[workers]\ncount = 2\n\
         [queue]\nlease_ms = 1000\nheartbeat_ms = 300\nmax_attempts = 3\nattempts_count = \"{count}\"\n\
         [stages]\ninference_ms = {{ dist = \"constant\", value = 400 }}\n\
         validate_ms = {{ dist = \"constant\", value = 5 }}\n\
         [arrivals]\ntenants = [\"acme\"]\njobs = 1\n\
         [[script]]\nat_ms = 0\nfault = \"stall\"\nstall_ms = 1100\njob = 0\nattempt = 1\n\
         [[script]]\nat_ms = 0\nfault = \"transient_error\"\njob = 0\nattempt = 2\n\
         [[script]]\nat_ms = 0\nfault = \"transient_error\"\njob = 0\nattempt = 3\n\
         [[script]]\nat_ms = 0\nfault = \"transient_error\"\njob = 0\nattempt = 4\n"
    );
    Scenario::parse("attempts-count.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The run's history as lines, and the checker's report on the run.
fn run(s: &Scenario) -> (Vec<String>, durasim::check::CheckReport) {
    let (report, lines) = run_with_history(s);
    (lines, report.check)
}

fn count(lines: &[String], ty: &str) -> usize {
    let needle = format!("\"type\":\"{ty}\"");
    lines.iter().filter(|l| l.contains(&needle)).count()
}

#[test]
fn failures_counting_under_the_chapters_queue_ignores_an_expired_lease() {
    let (lines, check) = run(&scenario("failures"));
    assert!(
        lines[0].contains("\"attempt\":\"failures\""),
        "the header states failures counting: {}",
        lines[0]
    );
    assert_eq!(count(&lines, "lease_expired"), 1, "{lines:#?}");
    // Three failures, not three leases, exhaust the job: the expired lease does not count.
    assert_eq!(count(&lines, "attempt_failed"), 3, "{lines:#?}");
    assert_eq!(count(&lines, "leased"), 4, "{lines:#?}");
    assert_eq!(count(&lines, "dead_lettered"), 1, "{lines:#?}");
    // The policy is followed as the header states it; the chapter's own bound on leases
    // (`attempts_bounded`, what bullmq-631 shows) is what a failures-counting queue gives up.
    assert_eq!(check.violated(), [Invariant::AttemptsBounded]);
    // `durasim verify` reads the same history the same way.
    assert_eq!(judge(&lines).violated(), [Invariant::AttemptsBounded]);

    // Counted by leases, the same faults exhaust the job at its third lease, after two
    // failures: both sides agree on that too.
    let (lines, check) = run(&scenario("leases"));
    assert_eq!(count(&lines, "attempt_failed"), 2, "{lines:#?}");
    assert_eq!(count(&lines, "dead_lettered"), 1, "{lines:#?}");
    assert!(check.violated().is_empty(), "{:?}", check.violated());
}

/// A history whose header counts failures but whose job went to the DLQ after two failures
/// (what the run did when it still counted leases) is caught by `retry_policy_followed`.
#[test]
fn a_dead_letter_before_the_failures_are_used_up_is_caught() {
    let (by_leases, _) = run(&scenario("leases"));
    let (by_failures, _) = run(&scenario("failures"));
    let mut lines = by_leases.clone();
    lines[0] = by_failures[0].clone();
    let check = judge(&lines);
    let m = first_message(&check, Invariant::RetryPolicyFollowed);
    assert!(
        m.contains("the policy calls for a retry, but it went to the DLQ"),
        "{m:?}"
    );
}

//! The bug switches: deliberate defects, each of which some invariant must catch.
//!
//! Owns: the names users type (`--bug NAME`, `[bugs]`), what each breaks, and what should catch
//! it. The defects themselves live where they would in real code (queue, outbox, consumer,
//! retry policy, kernel); nothing here is read by the checker.

use crate::scenario::Bugs;

pub struct BugSwitch {
    pub name: &'static str,
    pub defect: &'static str,
    /// The invariant that catches it, or `replay` for the determinism check.
    pub caught_by: &'static str,
}

pub const ALL: [BugSwitch; 27] = [
    BugSwitch {
        name: "no_fencing",
        defect: "ack / nack / heartbeat accept a stale fencing token",
        caught_by: "fenced_writes",
    },
    BugSwitch {
        name: "no_idempotency",
        defect: "commits never look up the key: every attempt writes a new result and event",
        caught_by: "single_result_per_key",
    },
    BugSwitch {
        name: "tenantless_keys",
        defect: "keys are documentId:vN, without the tenant",
        caught_by: "tenant_isolation",
    },
    BugSwitch {
        name: "naive_dual_write",
        defect: "the result is written, then published directly, with no outbox row in between",
        caught_by: "event_per_result",
    },
    BugSwitch {
        name: "unbounded_retries",
        defect: "transient errors retry forever, ignoring max_attempts",
        caught_by: "attempts_bounded",
    },
    BugSwitch {
        name: "no_consumer_dedupe",
        defect: "the consumer applies every event it receives, including republished ones",
        caught_by: "no_duplicate_effect",
    },
    BugSwitch {
        name: "skip_deadline_check",
        defect: "leaseNext hands out jobs whose deadline has passed",
        caught_by: "deadline_respected",
    },
    BugSwitch {
        name: "raw_dlq_reason",
        defect: "the DLQ stores the error's text (which quotes the document) instead of a code",
        caught_by: "redacted_dlq",
    },
    BugSwitch {
        name: "reuse_on_conflict",
        defect: "the same key with a different payload silently reuses the existing job / result",
        caught_by: "payload_conflict_rejected",
    },
    BugSwitch {
        name: "nondeterministic_step",
        defect: "the model's output comes from an unrecorded, unseeded source",
        caught_by: "replay",
    },
    BugSwitch {
        name: "token_reuse",
        defect: "leaseNext re-leases an expired job under its old fencing token instead of a new one",
        caught_by: "fencing_token_increases",
    },
    BugSwitch {
        name: "ack_before_commit",
        defect: "the worker acks the job, then commits the result (a crash in between loses the effect)",
        caught_by: "acked_with_result",
    },
    BugSwitch {
        name: "backoff_ignored",
        defect: "the queue makes a retried job visible at once, ignoring the backoff the worker asked for",
        caught_by: "backoff_respected",
    },
    BugSwitch {
        name: "deadline_tripled",
        defect: "the queue computes deadlineAt as createdAt + 3 x deadline_ms, and enforces that",
        caught_by: "deadline_respected",
    },
    BugSwitch {
        name: "permanent_error_retried",
        defect: "the retry policy classifies schema_invalid as transient: permanent errors are retried",
        caught_by: "retry_policy_followed",
    },
    BugSwitch {
        name: "cancel_early",
        defect: "a transient error is cancelled when its retry would land past the deadline, before the deadline has passed",
        caught_by: "retry_policy_followed",
    },
    BugSwitch {
        name: "reprocess_same_version",
        defect: "an operator's reprocess resubmits the dead job's key without bumping its version: every reprocess is refused as version_exists",
        caught_by: "reprocess_justified",
    },
    BugSwitch {
        name: "reprocess_cancelled",
        defect: "an operator's reprocess of a cancelled job is let through as if it were dead-lettered",
        caught_by: "audited_reprocess",
    },
    BugSwitch {
        name: "unrecorded_eviction",
        defect: "a full DLQ evicts its oldest entry without recording the eviction",
        caught_by: "dlq_bounded",
    },
    BugSwitch {
        name: "evict_newest",
        defect: "a full DLQ evicts its newest entry instead of its oldest",
        caught_by: "dlq_bounded",
    },
    BugSwitch {
        name: "depth_never_decrements",
        defect: "the queue's depth counter is not decremented when a job is leased",
        caught_by: "depth_matches_history",
    },
    BugSwitch {
        name: "hash_ignores_content",
        defect: "the payload hash is computed without the content: a changed payload under a key looks the same",
        caught_by: "payload_conflict_rejected",
    },
    BugSwitch {
        name: "heartbeat_not_stored",
        defect: "a heartbeat answers the new leaseUntil but the queue keeps the old one: renewed leases expire early",
        caught_by: "single_live_lease",
    },
    BugSwitch {
        name: "early_expiry",
        defect: "the queue treats leaseUntil as exclusive: a lease expires in its last millisecond, while still live",
        caught_by: "single_live_lease",
    },
    BugSwitch {
        name: "jitter_over_cap",
        defect: "full jitter draws in [0, 2d] instead of [0, d]: retry delays exceed the capped backoff",
        caught_by: "backoff_respected",
    },
    BugSwitch {
        name: "unfenced_heartbeat",
        defect: "heartbeats skip the fencing check (\"a heartbeat is harmless\"): a zombie's heartbeat renews the new holder's lease",
        caught_by: "fenced_writes",
    },
    BugSwitch {
        name: "republish_miscount",
        defect: "the metrics count every publish as a republish in summary.json",
        caught_by: "summary_matches_history",
    },
];

pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|b| b.name).collect()
}

/// Turns a switch on by name; false if there is no such switch.
pub fn enable(bugs: &mut Bugs, name: &str) -> bool {
    if !ALL.iter().any(|b| b.name == name) {
        return false;
    }
    let mut value = serde_json::to_value(&*bugs).expect("bugs serialise");
    value[name] = serde_json::Value::Bool(true);
    *bugs = serde_json::from_value(value).expect("every listed switch is a field of Bugs");
    true
}

/// Why the switches on cannot act on a run under a profile: with the scenario's validation
/// (`scenario/validate.rs`), which refuses `[bugs]` with it, so that `scenario` needs nothing
/// of this module (no module cycle); `--bug` is refused with it too.
pub use crate::scenario::refused_under;

/// The names of the switches that are on, in table order.
pub fn enabled(bugs: &Bugs) -> Vec<&'static str> {
    let value = serde_json::to_value(bugs).expect("bugs serialise");
    ALL.iter()
        .filter(|b| value[b.name] == serde_json::Value::Bool(true))
        .map(|b| b.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_can_be_enabled_by_name_and_is_listed_once() {
        for b in &ALL {
            let mut bugs = Bugs::default();
            assert!(enable(&mut bugs, b.name));
            assert_eq!(enabled(&bugs), vec![b.name]);
        }
        assert!(!enable(&mut Bugs::default(), "no_such_bug"));
    }
}

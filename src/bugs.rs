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

pub const ALL: [BugSwitch; 10] = [
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

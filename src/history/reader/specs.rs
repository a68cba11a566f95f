//! The record types a history may hold and the fields each may carry.
//!
//! Owns: `SPECS` (type name, allowed fields), with the held faults' records `specs()`, and
//! `types()` (the names alone).
//! Does not: say which fields are required (the code in `records.rs` and
//! `docs/history-format.md` do).

use crate::vocab::faults::{Held, Struck};
use std::sync::LazyLock;

/// Each record type and the fields it may carry (besides `at` and `type`). Which of them are
/// required is said by the code that reads them and by `docs/history-format.md`.
pub(super) const SPECS: &[(&str, &[&str])] = &[
    (
        "enqueued",
        &[
            "job",
            "tenant",
            "key",
            "operation",
            "content",
            "payload",
            "visible_at",
            "deadline_at",
            "reprocess_of",
        ],
    ),
    (
        "enqueue_deduped",
        &[
            "tenant",
            "key",
            "operation",
            "content",
            "payload",
            "existing",
        ],
    ),
    (
        "enqueue_conflict",
        &[
            "tenant",
            "key",
            "operation",
            "content",
            "payload",
            "existing",
            "existing_payload",
        ],
    ),
    (
        "enqueue_replaced",
        &[
            "tenant",
            "key",
            "operation",
            "content",
            "payload",
            "existing",
            "replaced_operation",
            "replaced_content",
            "replaced_payload",
        ],
    ),
    ("visible", &["job"]),
    (
        "leased",
        &[
            "job",
            "worker",
            "fence",
            "attempt",
            "lease_until",
            "visible_at",
        ],
    ),
    ("lease_expired", &["job", "fence"]),
    ("heartbeat", &["job", "worker", "fence", "lease_until"]),
    (
        "rejected",
        &["job", "worker", "op", "presented", "held", "reason"],
    ),
    ("extract_started", &["job", "worker", "fence", "stalled"]),
    (
        "extract_done",
        &["job", "worker", "fence", "inference", "output"],
    ),
    (
        "attempt_failed",
        &["job", "worker", "fence", "error", "class"],
    ),
    (
        "result_committed",
        &["job", "worker", "key", "payload", "output", "event"],
    ),
    (
        "commit_deduped",
        &[
            "job",
            "worker",
            "key",
            "payload",
            "output",
            "existing_payload",
            "existing_event",
        ],
    ),
    (
        "commit_conflict",
        &["job", "worker", "key", "payload", "existing_payload"],
    ),
    ("acked", &["job", "worker", "fence"]),
    (
        "retry_scheduled",
        &["job", "worker", "fence", "attempt", "visible_at"],
    ),
    (
        "dead_lettered",
        &["job", "worker", "fence", "attempts", "reason"],
    ),
    ("cancelled", &["job", "worker", "fence", "deadline_at"]),
    ("dlq_evicted", &["job", "capacity", "retention"]),
    ("worker_crashed", &["worker", "job", "fence", "point"]),
    ("worker_restarted", &["worker"]),
    (
        "published",
        &["event", "key", "job", "output", "send", "direct"],
    ),
    ("marked_published", &["count", "events"]),
    ("outbox_pruned", &["rows"]),
    ("effect_applied", &["event", "key", "job", "output"]),
    ("duplicate_event", &["event", "key"]),
    ("review_done", &["event", "key", "job"]),
    ("payload_mutated", &["job", "content", "payload"]),
    ("reprocess_refused", &["job", "operator", "reason"]),
    ("reprocessed", &["old_job", "new_job", "operator"]),
    ("log", &["role", "instance", "message"]),
    ("depth_sampled", &["depth"]),
    ("run_ended", &["quiescent"]),
    ("worker_heartbeat", &["worker"]),
    ("rescued", &["job", "worker", "visible_at"]),
];

const _: () = assert!(SPECS.len() == 36);

/// The record types only a version 2 history may hold. (`marked_published.events` was version 2's
/// first; version 1 takes it too, since a store-side relay of either version marks by id.)
pub(super) const V2_TYPES: [&str; 2] = ["worker_heartbeat", "rescued"];

/// Every record type with its fields: [`SPECS`], each held fault's record
/// (`vocab::faults::HELD`: `{worker, job, fence, <field>}`) after `worker_restarted`, and each
/// struck fault's (`vocab::faults::STRUCK`: `{[job], <field>}`) after `outbox_pruned`.
pub(super) fn specs() -> &'static [(&'static str, &'static [&'static str])] {
    static ALL: LazyLock<Vec<(&'static str, &'static [&'static str])>> = LazyLock::new(|| {
        let at = SPECS
            .iter()
            .position(|s| s.0 == "worker_restarted")
            .expect("worker_restarted is a record type")
            + 1;
        let mut all = SPECS[..at].to_vec();
        for h in Held::ALL {
            let fields: &'static [&'static str] =
                Box::leak(Box::new(["worker", "job", "fence", h.spec().field]));
            all.push((h.spec().record, fields));
        }
        let relay = SPECS
            .iter()
            .position(|s| s.0 == "outbox_pruned")
            .expect("outbox_pruned is a record type")
            + 1;
        all.extend_from_slice(&SPECS[at..relay]);
        for s in Struck::ALL {
            let spec = s.spec();
            let fields: &'static [&'static str] = match spec.site.takes_job() {
                true => Box::leak(Box::new(["job", spec.field])),
                false => Box::leak(Box::new([spec.field])),
            };
            all.push((spec.record, fields));
        }
        all.extend_from_slice(&SPECS[relay..]);
        all
    });
    &ALL
}

/// The record types' names, for error messages.
pub(super) fn types() -> String {
    let names: Vec<&str> = specs().iter().map(|s| s.0).collect();
    names.join(", ")
}

//! The closed sets of words a history uses: error kinds and classes, crash points, the reasons a
//! fenced call is rejected and a reprocess refused, DLQ reason codes, queue operations.
//!
//! Owns: the spelling of each word, so that the simulator writes, the reader accepts and the
//! checker compares the same strings. A reader maps a word to the `&'static str` listed here, so
//! a history read back is the history written.
//! Does not: say what a word implies (the retry policy's classification lives in `model::retry`;
//! the checker restates it independently in `check`).

/// What went wrong in an attempt, as the worker saw it.
pub const ERRORS: [&str; 4] = [
    "provider_unavailable",
    "schema_invalid",
    "payload_conflict",
    "deadline_exceeded",
];

/// The class the retry policy gave an error.
pub const ERROR_CLASSES: [&str; 3] = ["transient", "permanent", "cancelled"];

/// Where a worker process can die. The simulator uses the first three; a recorder around real
/// processes can also kill one during its extraction (`mid_extract`) and between its INSERTs and
/// their COMMIT (`mid_commit`, after which the store must roll the transaction back).
pub const CRASH_POINTS: [&str; 5] = [
    "after_lease",
    "after_extract",
    "after_commit_before_ack",
    "mid_extract",
    "mid_commit",
];

/// Why a fenced call was refused: a stale token, the job's state, a lock whose TTL ran out
/// (`lease_expired`), or a store that took the call and changed nothing (`ignored`: a by-id update
/// that matched no row, an SQS delete with a stale receipt handle that did not apply).
pub const REJECTIONS: [&str; 9] = [
    "stale_fence",
    "lease_expired",
    "ignored",
    "waiting",
    "ready",
    "leased",
    "acked",
    "dead_lettered",
    "cancelled",
];

/// Why an operator's reprocess was refused.
/// The roles a `log` record names (a program's, docs/worker-protocol.md).
pub const ROLES: [&str; 3] = ["worker", "relay", "consumer"];

pub const REFUSALS: [&str; 9] = [
    "missing_operator",
    "not_dead_lettered",
    "already_reprocessed",
    "evicted",
    "rate_limited",
    "cancelled_is_terminal",
    "no_such_job",
    "version_exists",
    "version_exhausted",
];

/// The only reasons a redacted DLQ may hold.
pub const DLQ_REASONS: [&str; 2] = ["permanent_error", "max_attempts_exceeded"];

/// The static spelling of `word` if it is in `set`.
pub fn lookup(set: &[&'static str], word: &str) -> Option<&'static str> {
    set.iter().copied().find(|w| *w == word)
}

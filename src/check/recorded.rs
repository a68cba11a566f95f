//! Invariant family: what the recorder computed, cross-checked.
//!
//! Owns: `recorded_values_match` for payload hashes (recomputed from the key's document, the
//! operation and the content with the published function in `vocab::payload`) and for recorded
//! times (`deadline_at`, `lease_until`, `visible_at`). Each such field is optional in a history;
//! when present it must agree with what the configuration and the raw facts give. No other rule
//! reads it.
//! Does not: own the other cross-checks (attempt numbers and `lease_expired` in `leases`, error
//! classes in `policy`, eviction capacities in `dlq`, `visible` in `metrics`).

use super::checker::{Checker, PayloadId};
use super::invariant::Invariant;
use crate::base::ids::{JobId, SimTime};
use crate::history::Record;
use crate::vocab::key::{IdempotencyKey, KeyNames};
use crate::vocab::payload::{payload_hash, PayloadHash};

impl Checker {
    /// A recorded payload hash must be the hash of the key's document, the operation and the
    /// content (when the names are known). `known`: the hash the checker recomputed earlier
    /// from the history for this same document and payload (a live job's, from its enqueue), so
    /// it is not recomputed. Returns the hash it compared with, if it did.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cross_check_hash(
        &mut self,
        r: &Record,
        job: Option<JobId>,
        key: &IdempotencyKey,
        payload: PayloadId,
        recorded: Option<PayloadHash>,
        names: Option<&KeyNames>,
        known: Option<PayloadHash>,
    ) -> Option<PayloadHash> {
        let (Some(recorded), Some(names)) = (recorded, names) else {
            return None;
        };
        let expected = known.unwrap_or_else(|| {
            payload_hash(names, key.document, payload.operation, payload.content)
        });
        debug_assert_eq!(
            expected,
            payload_hash(names, key.document, payload.operation, payload.content),
            "a known hash is the one the history's names give"
        );
        if expected != recorded {
            let document = names.documents.name(key.document);
            let operation = names.operations.name(payload.operation).to_string();
            self.violate(
                Invariant::RecordedValuesMatch,
                r.at,
                job,
                Some(*key),
                || format!("the record's payload hash is {recorded}, but document {document}, operation {operation} and content {:016x} hash to {expected}", payload.content),
                || vec![r.clone()],
            );
        }
        Some(expected)
    }

    /// The payload hash the checker derived at `job`'s enqueue (`JobTrack::derived_hash`), if
    /// it holds for `key`'s document and `payload`.
    pub(super) fn known_hash(
        &self,
        job: JobId,
        key: &IdempotencyKey,
        payload: PayloadId,
    ) -> Option<PayloadHash> {
        self.read_job(job, |t| {
            let same = t.key.document == key.document && t.payload == payload;
            t.derived_hash.filter(|_| same)
        })
    }

    /// A commit's recorded payload hash (`result_committed`, `commit_deduped`,
    /// `commit_conflict`), against the committing job's payload: compared with the hash derived
    /// at its enqueue while it holds, recomputed otherwise.
    pub(super) fn cross_check_commit_hash(
        &mut self,
        r: &Record,
        job: JobId,
        key: &IdempotencyKey,
        recorded: Option<PayloadHash>,
        names: Option<&KeyNames>,
    ) {
        let (payload, known) = self.read_job(job, |t| {
            let same = t.key.document == key.document;
            (t.payload, t.derived_hash.filter(|_| same))
        });
        self.cross_check_hash(r, Some(job), key, payload, recorded, names, known);
    }

    /// A recorded time (`field`) must equal the one recomputed.
    pub(super) fn cross_check_time(
        &mut self,
        r: &Record,
        job: JobId,
        field: &'static str,
        recorded: Option<SimTime>,
        expected: SimTime,
    ) {
        if let Some(v) = recorded.filter(|v| *v != expected) {
            let u = self.unit();
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("{job}'s record says {field} {v} {u}, but the configuration and the history give {expected} {u}")
            });
        }
    }
}

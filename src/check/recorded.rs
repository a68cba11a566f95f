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
use crate::history::Record;
use crate::ids::{JobId, SimTime};
use crate::vocab::key::{IdempotencyKey, KeyNames};
use crate::vocab::payload::{payload_hash, PayloadHash};

impl Checker {
    /// A recorded payload hash must be the hash of the key's document, the operation and the
    /// content (when the names are known).
    pub(super) fn cross_check_hash(
        &mut self,
        r: &Record,
        job: Option<JobId>,
        key: &IdempotencyKey,
        payload: PayloadId,
        recorded: Option<PayloadHash>,
        names: Option<&KeyNames>,
    ) {
        let (Some(recorded), Some(names)) = (recorded, names) else {
            return;
        };
        let expected = payload_hash(names, key.document, payload.operation, payload.content);
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

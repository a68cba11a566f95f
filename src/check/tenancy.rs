//! Invariant family: tenancy.
//!
//! Owns: `tenant_isolation`: every key embeds its job's tenant, and no request (deduplicated or
//! refused as a conflict) resolves to another tenant's job.
//! Does not: judge payloads (see `effects`).

use super::checker::Checker;
use super::invariant::Invariant;
use crate::base::ids::{JobId, TenantId};
use crate::history::Record;
use crate::vocab::key::IdempotencyKey;

impl Checker {
    pub(super) fn tenancy_enqueued(
        &mut self,
        r: &Record,
        job: JobId,
        tenant: TenantId,
        key: &IdempotencyKey,
    ) {
        if key.tenant != Some(tenant) {
            self.violate_job(Invariant::TenantIsolation, r, job, || {
                format!("{job} of {tenant} was enqueued under a key that does not embed its tenant")
            });
        }
    }

    /// A request of `tenant` resolved to `existing` (`how`: deduplicated onto, refused as a
    /// conflict with).
    pub(super) fn tenancy_resolved(
        &mut self,
        r: &Record,
        existing: JobId,
        tenant: TenantId,
        key: &IdempotencyKey,
        how: &str,
    ) {
        let owner = self.job(existing).map(|j| j.tenant);
        if owner != Some(tenant) {
            self.violate(
                Invariant::TenantIsolation,
                r.at,
                Some(existing),
                Some(*key),
                || {
                    format!(
                        "a request of {tenant} was {how} {existing}, which belongs to {}",
                        owner.map_or("no tenant".to_string(), |t| t.to_string())
                    )
                },
                || vec![r.clone()],
            );
        }
    }
}

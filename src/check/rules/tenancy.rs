//! Invariant family: tenancy.
//!
//! Owns: `tenant_isolation`: every key embeds its job's tenant, and no request (deduplicated,
//! refused as a conflict or replacing a payload) resolves to another tenant's job.
//! Does not: judge payloads (`payloads`).

use super::{k, Ctx, Family, Out, Spec};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;

pub(in crate::check) const TENANT_ISOLATION: Spec = Spec {
    name: "tenant_isolation",
    kind: Kind::Always,
    sentence: "every key embeds its job's tenant, and no request resolves to another tenant's job",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Tenancy;

impl Family for Tenancy {
    const READS: u64 = k::ENQUEUED | k::ENQUEUE_DEDUPED | k::ENQUEUE_CONFLICT | k::ENQUEUE_REPLACED;
    const OWNS: &'static [Invariant] = &[Invariant::TenantIsolation];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        let (tenant, key, existing, how) = match &c.r.event {
            Event::Enqueued {
                job, tenant, key, ..
            } => {
                if key.tenant != Some(*tenant) {
                    out.at_record(Invariant::TenantIsolation, c, (Some(*job), Some(*key)), || {
                        format!("{job} of {tenant} was enqueued under a key that does not embed its tenant")
                    });
                }
                return;
            }
            Event::EnqueueDeduped {
                tenant,
                key,
                existing,
                ..
            } => (tenant, key, existing, "deduplicated onto"),
            Event::EnqueueConflict {
                tenant,
                key,
                existing,
                ..
            } => (tenant, key, existing, "refused as a conflict with"),
            Event::EnqueueReplaced {
                tenant,
                key,
                existing,
                ..
            } => (tenant, key, existing, "replaced into"),
            _ => return,
        };
        let owner = c.facts.job(*existing).map(|j| j.tenant);
        if owner != Some(*tenant) {
            out.at_record(
                Invariant::TenantIsolation,
                c,
                (Some(*existing), Some(*key)),
                || {
                    format!(
                        "a request of {tenant} was {how} {existing}, which belongs to {}",
                        owner.map_or("no tenant".to_string(), |t| t.to_string())
                    )
                },
            );
        }
    }
}

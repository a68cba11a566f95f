//! The checker's tests for tenancy (`check/tenancy.rs`): a request resolved within its tenant.

use super::*;

#[test]
fn a_request_resolved_to_another_tenants_job_breaks_isolation() {
    let tenantless = IdempotencyKey::tenantless_for_bug_switch(DocumentId(1), 1);
    let h = vec![
        (0, enqueue(0, T, tenantless, None)),
        (
            1,
            Event::EnqueueDeduped {
                tenant: TenantId(1),
                key: tenantless,
                operation: OperationId::EXTRACT,
                content: 7,
                payload: None,
                existing: JobId(0),
            },
        ),
    ];
    let r = judge(h);
    assert_eq!(r.verdict(Invariant::TenantIsolation).count, 2);
}

//! The name table a scenario's runs share, built once when the scenario is validated.
//!
//! Owns: registering every name a run can use up front, in a fixed order (the generated
//! arrivals' tenants, then the tenants and documents of `[[enqueue]]` and the tenants of
//! `[[burst]]`, in file order), and the ids each explicit entry enqueues under.
//! Does not: check a name's spelling (`vocab/key.rs`, called by `validate.rs` first), or enqueue
//! anything (`sim/intake.rs`).

use super::ScenarioFile;
use crate::base::ids::{DocumentId, TenantId};
use crate::vocab::key::KeyNames;

/// The ids of the explicit entries, index for index with the file's.
#[derive(Clone, Debug, Default)]
pub struct EntryIds {
    /// Each `[[enqueue]]` entry's tenant and document.
    pub enqueue: Vec<(TenantId, DocumentId)>,
    /// Each `[[burst]]` entry's tenant.
    pub burst: Vec<TenantId>,
}

/// Every name of `s` registered, and the explicit entries' ids; or the first entry whose name
/// does not fit the table (more tenants than a key can number). Every name's spelling is
/// already checked.
pub(super) fn register(s: &ScenarioFile) -> Result<(KeyNames, EntryIds), (String, String)> {
    let mut names = KeyNames::default();
    let mut ids = EntryIds::default();
    let refused = |field: String| move |e: crate::vocab::key::KeyError| (field, e.to_string());
    for t in &s.arrivals.tenants {
        names
            .tenants
            .register(t)
            .map_err(refused("arrivals.tenants".into()))?;
    }
    for (i, e) in s.enqueue.iter().enumerate() {
        let tenant = names
            .tenants
            .register(&e.tenant)
            .map_err(refused(format!("enqueue[{i}].tenant")))?;
        let document = names
            .documents
            .named(&e.document)
            .map_err(refused(format!("enqueue[{i}].document")))?;
        ids.enqueue.push((tenant, document));
    }
    for (i, b) in s.burst.iter().enumerate() {
        let tenant = names
            .tenants
            .register(&b.tenant)
            .map_err(refused(format!("burst[{i}].tenant")))?;
        ids.burst.push(tenant);
    }
    Ok((names, ids))
}

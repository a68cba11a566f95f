//! External ids of jobs, workers and outbox events mapped to dense ids, and names interned.
//!
//! Owns: `ExternalId` (an integer or a string, as a recorder wrote it), `IdMap` (dense numbers in
//! order of first appearance; integer ids below a bound keep their number) and `Ids` (a record's
//! fields resolving ids and keys against, and adding to, the reader's tables).
//! Does not: read untyped fields (`fields.rs`).

use super::*;

/// An id as a recorder wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExternalId {
    Int(u64),
    Str(Box<str>),
}

impl fmt::Display for ExternalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalId::Int(n) => write!(f, "{n}"),
            ExternalId::Str(s) => write!(f, "{}", clip(s)),
        }
    }
}

/// External ids of one kind mapped to dense numbers in order of first appearance. Integer ids
/// below `keep_below` map to themselves; every other id gets the next number from `keep_below`.
#[derive(Debug, Default)]
pub(super) struct IdMap {
    pub(super) keep_below: u64,
    /// The first number handed out to an id that does not keep its own.
    pub(super) base: u64,
    pub(super) next: u64,
    pub(super) by_id: HashMap<ExternalId, u64>,
    /// The external id of each assigned number (those mapped to themselves are not listed).
    pub(super) labels: Vec<ExternalId>,
}

impl IdMap {
    pub(super) fn new(first: u64, keep_below: u64) -> IdMap {
        IdMap {
            keep_below,
            base: first.max(keep_below),
            next: first.max(keep_below),
            ..IdMap::default()
        }
    }

    pub(super) fn get(&self, id: &ExternalId) -> Option<u64> {
        match id {
            ExternalId::Int(n) if *n < self.keep_below => Some(*n),
            id => self.by_id.get(id).copied(),
        }
    }

    /// The number of `id`, assigning the next one on first sight; `None` past `max`.
    pub(super) fn intern(&mut self, id: &ExternalId, max: u64) -> Option<(u64, bool)> {
        if let Some(n) = self.get(id) {
            return Some((n, false));
        }
        if self.next > max {
            return None;
        }
        let n = self.next;
        self.next += 1;
        self.by_id.insert(id.clone(), n);
        self.labels.push(id.clone());
        Some((n, true))
    }

    pub(super) fn label(&self, n: u64) -> Option<&ExternalId> {
        self.labels.get(n.checked_sub(self.base)? as usize)
    }
}

/// A record's fields, resolving ids against (and adding to) the reader's tables.
pub(super) struct Ids<'a, R> {
    pub(super) reader: &'a mut HistoryReader<R>,
    pub(super) map: &'a Map<String, Value>,
}

impl<R> FieldSource for Ids<'_, R> {
    fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }

    fn err(&self, field: &str, message: String) -> HistoryError {
        self.reader.error(Some(field), message)
    }
}

impl<R> Ids<'_, R> {
    pub(super) fn new_job(&mut self, name: &str) -> Result<JobId, HistoryError> {
        let id = self
            .external(name)?
            .ok_or_else(|| self.err(name, "missing; the new job's id".into()))?;
        let cap = self.reader.limits.max_jobs;
        match self.reader.jobs.intern(&id, cap - 1) {
            Some((n, true)) => Ok(JobId(n as u32)),
            Some((_, false)) => Err(self.err(
                name,
                format!("job {id} was already enqueued; each job is enqueued once"),
            )),
            None => Err(self.err(
                name,
                format!("more than {cap} jobs: `verify` holds at most {cap} jobs of one history (MAX_HISTORY_JOBS, docs/history-format.md \"Bounds\"); split the history"),
            )),
        }
    }

    pub(super) fn opt_job(&mut self, name: &str) -> Result<Option<JobId>, HistoryError> {
        let Some(id) = self.external(name)? else {
            return Ok(None);
        };
        match self.reader.jobs.get(&id) {
            Some(n) => Ok(Some(JobId(n as u32))),
            None => Err(self.err(
                name,
                format!("job {id} has no earlier `enqueued` line; a job is enqueued before any other line names it"),
            )),
        }
    }

    pub(super) fn job(&mut self, name: &str) -> Result<JobId, HistoryError> {
        self.opt_job(name)?
            .ok_or_else(|| self.err(name, "missing; a job id".into()))
    }

    pub(super) fn opt_worker(&mut self, name: &str) -> Result<Option<WorkerId>, HistoryError> {
        let Some(id) = self.external(name)? else {
            return Ok(None);
        };
        let cap = self.reader.limits.max_ids;
        match self.reader.workers.intern(&id, self.reader.workers.base + cap - 1) {
            Some((n, _)) => Ok(Some(WorkerId(n as u32))),
            None => Err(self.err(
                name,
                format!("more than {cap} workers: `verify` holds at most {cap} distinct ids of a kind (MAX_HISTORY_IDS, docs/history-format.md \"Bounds\")"),
            )),
        }
    }

    pub(super) fn worker(&mut self, name: &str) -> Result<WorkerId, HistoryError> {
        self.opt_worker(name)?
            .ok_or_else(|| self.err(name, "missing; a worker id".into()))
    }

    pub(super) fn opt_event(&mut self, name: &str) -> Result<Option<EventId>, HistoryError> {
        let Some(id) = self.external(name)? else {
            return Ok(None);
        };
        let cap = self.reader.limits.max_ids;
        match self.reader.events.intern(&id, cap) {
            Some((n, _)) => Ok(Some(EventId(n))),
            None => Err(self.err(
                name,
                format!("more than {cap} outbox events: `verify` holds at most {cap} distinct ids of a kind (MAX_HISTORY_IDS, docs/history-format.md \"Bounds\")"),
            )),
        }
    }

    pub(super) fn event(&mut self, name: &str) -> Result<EventId, HistoryError> {
        self.opt_event(name)?
            .ok_or_else(|| self.err(name, "missing; an outbox event id".into()))
    }

    /// A list of outbox event ids (version 2's `marked_published.events`).
    pub(super) fn events(&mut self, name: &str) -> Result<Box<[EventId]>, HistoryError> {
        let what = "a list of outbox event ids";
        let Some(Value::Array(items)) = self.map.get(name) else {
            return Err(self.err(name, format!("not {what}")));
        };
        let mut out = Vec::with_capacity(items.len());
        for v in items {
            let id = match v {
                Value::String(s) if !s.is_empty() && s.len() <= 256 => {
                    ExternalId::Str(s.as_str().into())
                }
                v => match v.as_u64() {
                    Some(n) => ExternalId::Int(n),
                    None => {
                        return Err(self.err(
                            name,
                            format!(
                            "{}: {what}, each a non-negative integer or a string of 1 to 256 bytes",
                            shown(v)
                        ),
                        ))
                    }
                },
            };
            match self.reader.events.get(&id) {
                Some(n) => out.push(EventId(n)),
                None => return Err(self.err(name, format!("event {id} was never named by an earlier line; a relay marks events it read from the outbox"))),
            }
        }
        Ok(out.into())
    }

    /// A `leased` record's token: the recorded one, or (`"fences": "none"`) the job's lease
    /// number, which becomes the worker's latest lease of the job.
    pub(super) fn lease_fence(
        &mut self,
        job: JobId,
        worker: WorkerId,
    ) -> Result<Fence, HistoryError> {
        if self.reader.stated().fences {
            return self.fence("fence");
        }
        let r = &mut *self.reader;
        let i = job.index();
        if r.lease_counts.len() <= i {
            r.lease_counts.resize(i + 1, 0);
        }
        r.lease_counts[i] += 1;
        let n = r.lease_counts[i];
        r.latest.insert((job.0, worker.0), n);
        Ok(Fence(n as u64))
    }

    /// The token a worker's record of `job` carries: the recorded one, or (`"fences": "none"`)
    /// the worker's own latest lease of the job, 0 (which no lease is given) if it had none.
    pub(super) fn write_fence(
        &mut self,
        name: &str,
        job: JobId,
        worker: WorkerId,
    ) -> Result<Fence, HistoryError> {
        if self.reader.stated().fences {
            return self.fence(name);
        }
        Ok(Fence(
            self.reader
                .latest
                .get(&(job.0, worker.0))
                .copied()
                .unwrap_or(0) as u64,
        ))
    }

    /// [`Ids::write_fence`] of a record whose worker and token are optional.
    pub(super) fn opt_write_fence(
        &mut self,
        name: &str,
        job: JobId,
        worker: Option<WorkerId>,
    ) -> Result<Option<Fence>, HistoryError> {
        if self.reader.stated().fences {
            return self.opt_fence(name);
        }
        worker.map(|w| self.write_fence(name, job, w)).transpose()
    }

    /// A `lease_expired` record's token: the recorded one, or the job's latest lease's number.
    pub(super) fn expired_fence(&mut self, job: JobId) -> Result<Fence, HistoryError> {
        if self.reader.stated().fences {
            return self.fence("fence");
        }
        Ok(Fence(
            self.reader
                .lease_counts
                .get(job.index())
                .copied()
                .unwrap_or(0) as u64,
        ))
    }

    pub(super) fn fence(&self, name: &str) -> Result<Fence, HistoryError> {
        let what = "a fencing token: an integer from 0 to 2^53 - 1 (a queue without tokens may record its delivery count)";
        let v = self.required(name, what)?;
        v.as_u64()
            .filter(|n| *n <= MAX_NUMBER)
            .map(Fence)
            .ok_or_else(|| self.err(name, format!("{}: {what}", shown(v))))
    }

    pub(super) fn opt_fence(&self, name: &str) -> Result<Option<Fence>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.fence(name).map(Some),
        }
    }

    pub(super) fn tenant(&mut self, name: &str) -> Result<TenantId, HistoryError> {
        let s = self.string(name)?.to_string();
        if let Some(t) = self.reader.tenants.get(&s) {
            return Ok(*t);
        }
        let v2 = self.reader.stated().version >= 2;
        if v2 && (s.is_empty() || s.len() > 256) {
            return Err(self.err(name, format!("{}: a tenant of 1 to 256 bytes", clip(&s))));
        }
        let names = &mut self.reader.names.tenants;
        let t = match v2 {
            true => names.register_any(&s),
            false => names.register(&s),
        }
        .map_err(|e| self.err(name, e.to_string()))?;
        self.reader.tenants.insert(s, t);
        Ok(t)
    }

    pub(super) fn operation(&mut self, name: &str) -> Result<OperationId, HistoryError> {
        let s = self.string(name)?.to_string();
        if s.is_empty() || s.len() > 256 {
            return Err(self.err(
                name,
                format!("{}: an operation name of 1 to 256 bytes", clip(&s)),
            ));
        }
        if self.reader.names.operations.len() >= MAX_OPERATIONS {
            return Err(self.err(name, format!("more than {MAX_OPERATIONS} operations")));
        }
        Ok(self.reader.names.operations.register(&s))
    }

    /// A version 2 key: an opaque string of 1 to 256 bytes, under the tenant of the first record
    /// that named it (`tenant`: this record's; else the job's it names).
    fn opaque_key(
        &mut self,
        name: &str,
        tenant: Option<TenantId>,
        job: Option<JobId>,
    ) -> Result<IdempotencyKey, HistoryError> {
        let s = self.string(name)?;
        if let Some(k) = self.reader.keys.get(s) {
            return Ok(*k);
        }
        if s.is_empty() || s.len() > 256 {
            return Err(self.err(name, format!("{}: a key of 1 to 256 bytes", clip(s))));
        }
        let cap = self.reader.limits.max_ids;
        if self.reader.keys.len() as u64 >= cap {
            return Err(self.err(name, format!("more than {cap} keys: `verify` holds at most {cap} distinct ids of a kind (MAX_HISTORY_IDS, docs/history-format.md \"Bounds\")")));
        }
        let s: Box<str> = s.into();
        let tenant =
            tenant.or_else(|| job.and_then(|j| self.reader.job_tenants.get(j.index()).copied()));
        let Some(tenant) = tenant else {
            return Err(self.err(
                name,
                format!("{}: a key no submit named and no job's", clip(&s)),
            ));
        };
        let document = self.reader.names.documents.opaque(&s);
        let k = IdempotencyKey::opaque(tenant, document);
        self.reader.keys.insert(s, k);
        Ok(k)
    }

    /// A key: version 2's opaque string ([`Ids::opaque_key`], under the record's `tenant`, else
    /// its job's), or version 1's `tenant:document:vN` (or `document:vN`, a key without its
    /// tenant, which the checker reports).
    pub(super) fn key_of(&mut self, name: &str) -> Result<IdempotencyKey, HistoryError> {
        if self.reader.stated().version == 1 {
            return self.key(name);
        }
        let tenant = match self.map.contains_key("tenant") {
            true => Some(self.tenant("tenant")?),
            false => None,
        };
        let job = match self.map.contains_key("job") {
            true => self.opt_job("job")?,
            false => None,
        };
        self.opaque_key(name, tenant, job)
    }

    /// `tenant:document:vN` (or `document:vN`, a key without its tenant, which the checker
    /// reports).
    pub(super) fn key(&mut self, name: &str) -> Result<IdempotencyKey, HistoryError> {
        let s = self.string(name)?.to_string();
        let what = format!(
            "{}: an idempotency key tenant:document:vN (N from 1 to {MAX_VERSION})",
            clip(&s)
        );
        let parts: Vec<&str> = s.split(':').collect();
        let (tenant, document, version) = match parts.as_slice() {
            [t, d, v] => (Some(*t), *d, *v),
            [d, v] => (None, *d, *v),
            _ => return Err(self.err(name, what)),
        };
        let version = version
            .strip_prefix('v')
            .filter(|n| !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| (1..=MAX_VERSION).contains(n))
            .ok_or_else(|| self.err(name, what.clone()))?;
        let document = self
            .reader
            .names
            .documents
            .named(document)
            .map_err(|e| self.err(name, format!("{e} (in key {})", clip(&s))))?;
        Ok(match tenant {
            Some(t) => {
                let t = match self.reader.tenants.get(t) {
                    Some(t) => *t,
                    None => {
                        let id =
                            self.reader.names.tenants.register(t).map_err(|e| {
                                self.err(name, format!("{e} (in key {})", clip(&s)))
                            })?;
                        self.reader.tenants.insert(t.to_string(), id);
                        id
                    }
                };
                IdempotencyKey::new(t, document, version)
                    .map_err(|e| self.err(name, e.to_string()))?
            }
            None => IdempotencyKey::tenantless_for_bug_switch(document, version),
        })
    }
}

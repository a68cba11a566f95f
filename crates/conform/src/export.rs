//! The store's history, as the simulator's history records.
//!
//! Owns: reading the `history` table in the store's order, converting its µs clock to the
//! history's ms (a record whose clock reading is earlier than its predecessor's — two
//! concurrent PostgreSQL transactions that drew their sequence number and their clock in
//! opposite order, microseconds apart — keeps its predecessor's time), mapping tenant,
//! document and key strings to the simulator's ids, and writing `history.jsonl`.
//! Does not: judge (the library's checker does, unchanged).

use anyhow::{anyhow, bail, Context, Result};
use durasim::history::{Event, Op, Origin, Record};
use durasim::ids::{EventId, Fence, JobId, TenantId, WorkerId};
use durasim::model::key::{IdempotencyKey, KeyNames};
use durasim::model::payload::PayloadHash;
use serde_json::Value;
use std::collections::BTreeMap;

/// Converts store rows to records.
#[derive(Default)]
pub struct Converter {
    pub names: KeyNames,
    statics: BTreeMap<String, &'static str>,
    last_ms: u64,
}

fn field<'v>(b: &'v Value, name: &str) -> Result<&'v Value> {
    b.get(name).ok_or_else(|| anyhow!("missing field `{name}`"))
}

fn u(b: &Value, name: &str) -> Result<u64> {
    field(b, name)?
        .as_u64()
        .ok_or_else(|| anyhow!("field `{name}` is not an unsigned integer"))
}

fn s<'v>(b: &'v Value, name: &str) -> Result<&'v str> {
    field(b, name)?
        .as_str()
        .ok_or_else(|| anyhow!("field `{name}` is not a string"))
}

fn ou(b: &Value, name: &str) -> Result<Option<u64>> {
    match b.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| anyhow!("field `{name}` is not an unsigned integer")),
    }
}

/// µs on the store's clock → ms of the history.
pub fn ms(us: u64) -> u64 {
    us / 1000
}

impl Converter {
    fn intern(&mut self, text: &str) -> &'static str {
        if let Some(s) = self.statics.get(text) {
            return s;
        }
        let leaked: &'static str = Box::leak(text.to_string().into_boxed_str());
        self.statics.insert(text.to_string(), leaked);
        leaked
    }

    /// Registers a tenant (the scenario's tenants first, so their ids match the simulator's).
    pub fn tenant_of(&mut self, name: &str) -> Result<TenantId> {
        self.tenant(name)
    }

    fn tenant(&mut self, name: &str) -> Result<TenantId> {
        self.names
            .tenants
            .register(name)
            .map_err(|e| anyhow!("{e}"))
    }

    fn key(&mut self, text: &str) -> Result<IdempotencyKey> {
        let parts: Vec<&str> = text.split(':').collect();
        let (tenant, document, version) = match parts.as_slice() {
            [t, d, v] => (Some(*t), *d, *v),
            [d, v] => (None, *d, *v),
            _ => bail!("key {text:?} is not tenant:document:vN"),
        };
        let version: u32 = version
            .strip_prefix('v')
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow!("key {text:?}: bad version"))?;
        let document = self
            .names
            .documents
            .named(document)
            .map_err(|e| anyhow!("{e}"))?;
        Ok(match tenant {
            Some(t) => {
                let t = self.tenant(t)?;
                IdempotencyKey::new(t, document, version).map_err(|e| anyhow!("{e}"))?
            }
            None => IdempotencyKey::tenantless_for_bug_switch(document, version),
        })
    }

    fn payload(b: &Value, name: &str) -> Result<PayloadHash> {
        let hex = s(b, name)?;
        Ok(PayloadHash(
            u64::from_str_radix(hex, 16).with_context(|| format!("payload {hex:?}"))?,
        ))
    }

    /// One store row (its clock reading in µs and its JSON body) as a record.
    pub fn record(&mut self, at_us: i64, body: &str) -> Result<Record> {
        let b: Value =
            serde_json::from_str(body).with_context(|| format!("history body {body:?}"))?;
        let at = ms(at_us.max(0) as u64).max(self.last_ms);
        self.last_ms = at;
        let event = self
            .event(&b)
            .with_context(|| format!("history body {body}"))?;
        Ok(Record { at, event })
    }

    fn event(&mut self, b: &Value) -> Result<Event> {
        let job = |b: &Value, n: &str| -> Result<JobId> { Ok(JobId(u(b, n)? as u32)) };
        let worker = |b: &Value| -> Result<WorkerId> { Ok(WorkerId(u(b, "worker")? as u32)) };
        let fence = |b: &Value| -> Result<Fence> { Ok(Fence(u(b, "fence")?)) };
        let time = |b: &Value, n: &str| -> Result<u64> { Ok(ms(u(b, n)?)) };
        let kind = s(b, "type")?.to_string();
        Ok(match kind.as_str() {
            "run_started" => Event::RunStarted {
                seed: u(b, "seed")?,
                attempts_max: u(b, "attempts_max")? as u32,
                lease_ms: u(b, "lease_ms")?,
                deadline_ms: u(b, "deadline_ms")?,
                workers: u(b, "workers")? as u32,
            },
            "enqueued" => Event::Enqueued {
                job: job(b, "job")?,
                tenant: self.tenant(s(b, "tenant")?)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                visible_at: time(b, "visible_at")?,
                deadline_at: time(b, "deadline_at")?,
                origin: match field(b, "origin")? {
                    Value::String(a) if a == "arrival" => Origin::Arrival,
                    o => Origin::Reprocess {
                        from: JobId(
                            o.pointer("/reprocess/from")
                                .and_then(Value::as_u64)
                                .ok_or_else(|| anyhow!("bad origin"))?
                                as u32,
                        ),
                    },
                },
            },
            "enqueue_deduped" => Event::EnqueueDeduped {
                tenant: self.tenant(s(b, "tenant")?)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                existing: job(b, "existing")?,
            },
            "enqueue_conflict" => Event::EnqueueConflict {
                tenant: self.tenant(s(b, "tenant")?)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                existing: job(b, "existing")?,
                existing_payload: Self::payload(b, "existing_payload")?,
            },
            "leased" => Event::Leased {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                attempt: u(b, "attempt")? as u32,
                lease_until: time(b, "lease_until")?,
                visible_at: time(b, "visible_at")?,
            },
            "lease_expired" => Event::LeaseExpired {
                job: job(b, "job")?,
                fence: fence(b)?,
            },
            "heartbeat" => Event::Heartbeat {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                lease_until: time(b, "lease_until")?,
            },
            "rejected" => Event::Rejected {
                job: job(b, "job")?,
                worker: worker(b)?,
                op: match s(b, "op")? {
                    "heartbeat" => Op::Heartbeat,
                    "ack" => Op::Ack,
                    "retry" => Op::Retry,
                    "dead_letter" => Op::DeadLetter,
                    "cancel" => Op::Cancel,
                    other => bail!("unknown op {other:?}"),
                },
                presented: Fence(u(b, "presented")?),
                held: Fence(u(b, "held")?),
                reason: self.intern(s(b, "reason")?),
            },
            "extract_started" => Event::ExtractStarted {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                stalled: field(b, "stalled")?.as_bool().unwrap_or(false),
            },
            "extract_done" => Event::ExtractDone {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                inference_ms: u(b, "inference_ms")?,
                output: u(b, "output")?,
            },
            "attempt_failed" => Event::AttemptFailed {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                error: self.intern(s(b, "error")?),
                class: self.intern(s(b, "class")?),
            },
            "result_committed" => Event::ResultCommitted {
                job: job(b, "job")?,
                worker: worker(b)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                output: u(b, "output")?,
                event: ou(b, "event")?.map(EventId),
            },
            "commit_deduped" => Event::CommitDeduped {
                job: job(b, "job")?,
                worker: worker(b)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                output: u(b, "output")?,
                existing_payload: Self::payload(b, "existing_payload")?,
                existing_event: ou(b, "existing_event")?.map(EventId),
            },
            "commit_conflict" => Event::CommitConflict {
                job: job(b, "job")?,
                worker: worker(b)?,
                key: self.key(s(b, "key")?)?,
                payload: Self::payload(b, "payload")?,
                existing_payload: Self::payload(b, "existing_payload")?,
            },
            "acked" => Event::Acked {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
            },
            "retry_scheduled" => Event::RetryScheduled {
                job: job(b, "job")?,
                worker: worker(b)?,
                fence: fence(b)?,
                attempt: u(b, "attempt")? as u32,
                visible_at: time(b, "visible_at")?,
            },
            "dead_lettered" => Event::DeadLettered {
                job: job(b, "job")?,
                worker: ou(b, "worker")?.map(|w| WorkerId(w as u32)),
                fence: ou(b, "fence")?.map(Fence),
                attempts: u(b, "attempts")? as u32,
                reason: s(b, "reason")?.into(),
            },
            "cancelled" => Event::Cancelled {
                job: job(b, "job")?,
                worker: ou(b, "worker")?.map(|w| WorkerId(w as u32)),
                fence: ou(b, "fence")?.map(Fence),
                deadline_at: time(b, "deadline_at")?,
            },
            "worker_crashed" => Event::WorkerCrashed {
                worker: worker(b)?,
                job: job(b, "job")?,
                fence: fence(b)?,
                point: self.intern(s(b, "point")?),
            },
            "worker_restarted" => Event::WorkerRestarted { worker: worker(b)? },
            "stall_began" => Event::StallBegan {
                worker: worker(b)?,
                job: job(b, "job")?,
                fence: fence(b)?,
                stall_ms: u(b, "stall_ms")?,
            },
            "published" => Event::Published {
                event: EventId(u(b, "event")?),
                key: self.key(s(b, "key")?)?,
                job: job(b, "job")?,
                output: u(b, "output")?,
                send: u(b, "send")? as u32,
                direct: field(b, "direct")?.as_bool().unwrap_or(false),
            },
            "marked_published" => Event::MarkedPublished {
                count: u(b, "count")? as u32,
            },
            "relay_crashed" => Event::RelayCrashed {
                unmarked: u(b, "unmarked")? as u32,
            },
            "effect_applied" => Event::EffectApplied {
                event: EventId(u(b, "event")?),
                key: self.key(s(b, "key")?)?,
                job: job(b, "job")?,
                output: u(b, "output")?,
            },
            "duplicate_event" => Event::DuplicateEvent {
                event: EventId(u(b, "event")?),
                key: self.key(s(b, "key")?)?,
            },
            "review_done" => Event::ReviewDone {
                event: EventId(u(b, "event")?),
                key: self.key(s(b, "key")?)?,
                job: job(b, "job")?,
            },
            "reprocess_refused" => Event::ReprocessRefused {
                job: job(b, "job")?,
                operator: b.get("operator").and_then(Value::as_str).map(Into::into),
                reason: self.intern(s(b, "reason")?),
            },
            "reprocessed" => Event::Reprocessed {
                old_job: job(b, "old_job")?,
                new_job: job(b, "new_job")?,
                operator: s(b, "operator")?.into(),
            },
            "run_ended" => Event::RunEnded {
                quiescent: field(b, "quiescent")?.as_bool().unwrap_or(false),
            },
            other => bail!("unknown history record type {other:?}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_ms_and_never_go_back() {
        let mut c = Converter::default();
        let r = c
            .record(5_400, r#"{"type":"worker_restarted","worker":1}"#)
            .unwrap();
        assert_eq!(r.at, 5);
        let r = c
            .record(4_900, r#"{"type":"worker_restarted","worker":1}"#)
            .unwrap();
        assert_eq!(
            r.at, 5,
            "an earlier clock reading keeps its predecessor's time"
        );
    }

    #[test]
    fn keys_with_and_without_tenant() {
        let mut c = Converter::default();
        let k = c.key("acme:doc-3:v2").unwrap();
        assert_eq!(c.names.key(&k), "acme:doc-3:v2");
        let k = c.key("doc-3:v1").unwrap();
        assert_eq!(k.tenant, None);
        assert!(c.key("a:b:c:d").is_err());
        assert!(c.record(0, r#"{"type":"leased","job":1}"#).is_err());
    }
}

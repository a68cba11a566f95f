//! One record line of a history: its type, its time and its fields, into an [`Event`].
//!
//! Owns: the dispatch on `type`, time order, the fields each record type carries, references
//! to jobs, workers and outbox events earlier lines introduced, undeclared optional records.
//! Does not: read the header (`header.rs`), list the types (`specs.rs`) or read typed values
//! (`fields.rs`, `ids.rs`).

use super::*;

impl<R: BufRead> HistoryReader<R> {
    pub(super) fn record(&mut self, mut map: Map<String, Value>) -> Result<Record, HistoryError> {
        let (ty, at) = self.head(&mut map)?;
        if at < self.last_at {
            return Err(self.error(
                Some("at"),
                format!(
                    "{at} is before the previous line's {}; records must be in time order{}",
                    self.last_at,
                    match self.stated().version {
                        1 => " (a version 2 header may declare a `reorder_window`)",
                        _ => "",
                    }
                ),
            ));
        }
        self.body(ty, at, map)
    }

    /// The line's type and time, taken out of its fields.
    pub(super) fn head(
        &self,
        map: &mut Map<String, Value>,
    ) -> Result<(String, SimTime), HistoryError> {
        let ty = match map.remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => {
                return Err(self.error(
                    Some("type"),
                    format!(
                        "{}: a record type, as a string; allowed: {}",
                        shown(&other),
                        types()
                    ),
                ))
            }
            None => return Err(self.error(Some("type"), format!("missing; allowed: {}", types()))),
        };
        let at = match map.remove("at") {
            Some(v) => match v.as_u64().filter(|n| *n <= MAX_NUMBER) {
                Some(n) => n,
                None => {
                    return Err(self.error(
                        Some("at"),
                        format!("{}: a time, an integer from 0 to {MAX_NUMBER}", shown(&v)),
                    ))
                }
            },
            None => {
                return Err(self.error(
                    Some("at"),
                    "missing: every record has its time `at` (in the header's time unit)",
                ))
            }
        };
        Ok((ty, at))
    }

    /// The record of a line whose type and time [`HistoryReader::head`] took out, in time order.
    pub(super) fn body(
        &mut self,
        ty: String,
        at: SimTime,
        map: Map<String, Value>,
    ) -> Result<Record, HistoryError> {
        self.last_at = at;
        let Some(spec) = specs().iter().find(|s| s.0 == ty) else {
            let hint = if ty == "run_started" {
                " (`run_started` is the header line, written once, first)"
            } else {
                ""
            };
            return Err(self.error(
                Some("type"),
                format!(
                    "{}: unknown record type{hint}; allowed: {}",
                    clip(&ty),
                    types()
                ),
            ));
        };
        let emits = self.config.as_ref().map(|c| c.emits).unwrap_or_default();
        let declared = match spec.0 {
            "visible" => emits.visible,
            "lease_expired" => emits.lease_expired,
            "depth_sampled" => emits.depth_sampled,
            _ => true,
        };
        if !declared {
            return Err(self.error(
                Some("type"),
                format!(
                    "`{ty}` is an optional record the header does not declare; add \"{ty}\" to the header's \"emits\" list"
                ),
            ));
        }
        let f = Fields {
            reader: self,
            map,
            prefix: "",
        };
        f.only(spec.1, &format!("a `{ty}` record"))?;
        let map = f.map;
        self.version_gate(spec.0, &map)?;
        let event = self.event(spec.0, &map)?;
        if matches!(event, Event::RunEnded { .. }) {
            self.ended = true;
        }
        Ok(Record { at, event })
    }

    /// What version 1 does not have, and what the header's statements rule out.
    fn version_gate(&self, ty: &str, map: &Map<String, Value>) -> Result<(), HistoryError> {
        let s = self.stated();
        if s.version == 1 {
            if specs::V2_TYPES.contains(&ty) {
                return Err(self.error(
                    Some("type"),
                    format!("`{ty}` is a version 2 record; this history's header says version 1"),
                ));
            }
            return Ok(());
        }
        if !s.fences {
            if let Some(field) = ["fence", "presented", "held"]
                .into_iter()
                .find(|f| map.get(*f).is_some_and(|v| !v.is_null()))
            {
                return Err(self.error(
                    Some(field),
                    "the header says \"fences\": \"none\": no record carries a token (each job's leases are numbered 1, 2, ... by the reader)",
                ));
            }
        }
        let per_process = s.liveness == crate::vocab::config::Liveness::PerProcess;
        let refusal = match ty {
            "worker_heartbeat" if !per_process => Some("the header's liveness is per job; a worker's heartbeat renews leases only under \"liveness\": {\"per\": \"process\", \"threshold\": T}"),
            "heartbeat" if per_process => Some("the header's liveness is per process: a lease is renewed by its worker's `worker_heartbeat`, not by a per-job heartbeat"),
            "review_done" if !s.review => Some("the header says \"review\": false: this pipeline has no review step"),
            "reprocessed" => Some("reprocess is not in version 2 yet (a key is opaque, so its next version cannot be named): write version 1 for a history with reprocesses"),
            "enqueued" if map.get("reprocess_of").is_some_and(|v| !v.is_null()) => Some("reprocess is not in version 2 yet (a key is opaque, so its next version cannot be named): write version 1 for a history with reprocesses"),
            _ => None,
        };
        match refusal {
            Some(m) => Err(self.error(Some("type"), m)),
            None => Ok(()),
        }
    }

    pub(super) fn event(
        &mut self,
        ty: &str,
        map: &Map<String, Value>,
    ) -> Result<Event, HistoryError> {
        // Ids are resolved (and new ones assigned) as the fields are read.
        let mut g = Ids { reader: self, map };
        Ok(match ty {
            "enqueued" => {
                let job = g.new_job("job")?;
                let tenant = g.tenant("tenant")?;
                if g.reader.stated().version >= 2 {
                    let tenants = &mut g.reader.job_tenants;
                    if tenants.len() <= job.index() {
                        tenants.resize(job.index() + 1, TenantId(0));
                    }
                    tenants[job.index()] = tenant;
                }
                let key = g.key_of("key")?;
                let operation = g.operation("operation")?;
                Event::Enqueued {
                    job,
                    tenant,
                    key,
                    operation,
                    content: g.hex("content")?,
                    payload: g.opt_hex("payload")?.map(PayloadHash),
                    visible_at: g.opt_number("visible_at")?,
                    deadline_at: g.opt_number("deadline_at")?,
                    reprocess_of: g.opt_job("reprocess_of")?,
                }
            }
            "enqueue_deduped" => Event::EnqueueDeduped {
                tenant: g.tenant("tenant")?,
                key: g.key_of("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
            },
            "enqueue_conflict" => Event::EnqueueConflict {
                tenant: g.tenant("tenant")?,
                key: g.key_of("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
            },
            "enqueue_replaced" => Event::EnqueueReplaced {
                tenant: g.tenant("tenant")?,
                key: g.key_of("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
                replaced_operation: g.operation("replaced_operation")?,
                replaced_content: g.hex("replaced_content")?,
                replaced_payload: g.opt_hex("replaced_payload")?.map(PayloadHash),
            },
            "visible" => Event::Visible { job: g.job("job")? },
            "leased" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::Leased {
                job,
                worker,
                fence: g.lease_fence(job, worker)?,
                attempt: g.opt_u32("attempt")?,
                lease_until: g.opt_number("lease_until")?,
                visible_at: g.opt_number("visible_at")?,
            }},
            "lease_expired" => {
                let job = g.job("job")?;
                Event::LeaseExpired {
                job,
                fence: g.expired_fence(job)?,
            }},
            "heartbeat" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::Heartbeat {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
                lease_until: g.opt_number("lease_until")?,
            }},
            "rejected" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::Rejected {
                job,
                worker,
                op: {
                    let op = g.string("op")?;
                    Op::parse(op).ok_or_else(|| {
                        g.err(
                            "op",
                            format!(
                                "{}: allowed: {}",
                                clip(op),
                                Op::ALL.map(Op::name).join(", ")
                            ),
                        )
                    })?
                },
                presented: g.write_fence("presented", job, worker)?,
                held: g.opt_fence("held")?,
                reason: g.code("reason", &codes::REJECTIONS)?,
            }},
            "extract_started" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::ExtractStarted {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
                stalled: g.opt_bool("stalled")?.unwrap_or(false),
            }},
            "extract_done" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::ExtractDone {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
                inference: g.number("inference")?,
                output: g.hex("output")?,
            }},
            "attempt_failed" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::AttemptFailed {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
                error: g.code("error", &codes::ERRORS)?,
                class: g.opt_code("class", &codes::ERROR_CLASSES)?,
            }},
            "result_committed" => Event::ResultCommitted {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key_of("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                output: g.hex("output")?,
                event: g.opt_event("event")?,
            },
            "commit_deduped" => Event::CommitDeduped {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key_of("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                output: g.hex("output")?,
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
                existing_event: g.opt_event("existing_event")?,
            },
            "commit_conflict" => Event::CommitConflict {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key_of("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
            },
            "acked" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::Acked {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
            }},
            "retry_scheduled" => {
                let (job, worker) = (g.job("job")?, g.worker("worker")?);
                Event::RetryScheduled {
                job,
                worker,
                fence: g.write_fence("fence", job, worker)?,
                attempt: g.opt_u32("attempt")?,
                visible_at: g.number("visible_at")?,
            }},
            "dead_lettered" => {
                let (job, worker) = (g.job("job")?, g.opt_worker("worker")?);
                Event::DeadLettered {
                job,
                worker,
                fence: g.opt_write_fence("fence", job, worker)?,
                attempts: g.opt_u32("attempts")?,
                reason: g.string("reason")?.into(),
            }},
            "cancelled" => {
                let (job, worker) = (g.job("job")?, g.opt_worker("worker")?);
                Event::Cancelled {
                job,
                worker,
                fence: g.opt_write_fence("fence", job, worker)?,
                deadline_at: g.opt_number("deadline_at")?,
            }},
            "dlq_evicted" => Event::DlqEvicted {
                job: g.job("job")?,
                capacity: g.opt_u32("capacity")?,
                retention: g.opt_number("retention")?,
            },
            "worker_crashed" => {
                let worker = g.worker("worker")?;
                // Both versions: a kill of a worker holding nothing the recorder knows of names
                // no job; one that names a job may leave out the point it was at (a kill from
                // outside the process, at no point the process announced: `durasim conform
                // --kills random`). Version 1 took this relaxation later; every version 1 file
                // it read before reads as it did (they all named `job`, `fence` and `point`).
                match g.opt_job("job")? {
                    None => {
                        if let Some(f) = ["fence", "point"].into_iter().find(|f| g.present(f).is_some()) {
                            return Err(g.err(f, "only with `job`: a crash that names no job names no lease and no point".into()));
                        }
                        Event::WorkerLost { worker }
                    }
                    Some(job) => Event::WorkerCrashed {
                        worker,
                        job,
                        fence: g.write_fence("fence", job, worker)?,
                        point: match g.present("point") {
                            None => "unknown",
                            Some(_) => g.code("point", &codes::CRASH_POINTS)?,
                        },
                    },
                }
            }
            "worker_restarted" => Event::WorkerRestarted {
                worker: g.worker("worker")?,
            },
            "published" => Event::Published {
                event: g.event("event")?,
                key: g.key_of("key")?,
                job: g.job("job")?,
                output: g.hex("output")?,
                send: g.opt_u32("send")?,
                direct: g.opt_bool("direct")?.unwrap_or(false),
            },
            "marked_published" => match (g.present("count"), g.present("events")) {
                (Some(_), Some(_)) => return Err(g.err("events", "not with `count`: the relay marked either the first `count` pending events or exactly `events`".into())),
                (None, Some(_)) => Event::MarkedEvents { events: g.events("events")? },
                _ => Event::MarkedPublished {
                    count: g.u32("count")?,
                },
            },
            "worker_heartbeat" => Event::WorkerHeartbeat {
                worker: g.worker("worker")?,
            },
            "rescued" => Event::Rescued {
                job: g.job("job")?,
                worker: g.opt_worker("worker")?,
                visible_at: g.opt_number("visible_at")?,
            },
            "outbox_pruned" => Event::OutboxPruned {
                rows: g.number("rows")?,
            },
            "effect_applied" => Event::EffectApplied {
                event: g.event("event")?,
                key: g.key_of("key")?,
                job: g.job("job")?,
                output: g.hex("output")?,
            },
            "duplicate_event" => Event::DuplicateEvent {
                event: g.event("event")?,
                key: g.key_of("key")?,
            },
            "review_done" => Event::ReviewDone {
                event: g.event("event")?,
                key: g.key_of("key")?,
                job: g.job("job")?,
            },
            "payload_mutated" => Event::PayloadMutated {
                job: g.job("job")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
            },
            "reprocess_refused" => Event::ReprocessRefused {
                job: g.opt_job("job")?,
                operator: g.opt_string("operator")?.map(Into::into),
                reason: g.code("reason", &codes::REFUSALS)?,
            },
            "reprocessed" => Event::Reprocessed {
                old_job: g.job("old_job")?,
                new_job: g.job("new_job")?,
                operator: g.string("operator")?.into(),
            },
            "log" => Event::Log {
                role: g.code("role", &codes::ROLES)?,
                instance: g.u32("instance")?,
                message: g.string("message")?.into(),
            },
            "depth_sampled" => Event::DepthSampled {
                depth: g.number("depth")?,
            },
            "run_ended" => Event::RunEnded {
                quiescent: g.bool("quiescent")?,
            },
            other => match crate::vocab::faults::Struck::by_record(other) {
                // A relay crash whose unmarked rows the recorder does not know (both versions;
                // version 1 since `durasim conform --kills random`).
                Some(fault)
                    if !fault.spec().site.takes_job()
                        && g.present(fault.spec().field).is_none() =>
                {
                    Event::RelayLost {}
                }
                Some(fault) => Event::Struck(crate::history::StruckRecord {
                    fault,
                    job: match fault.spec().site.takes_job() {
                        true => Some(g.job("job")?),
                        false => None,
                    },
                    value: g.number(fault.spec().field)?,
                }),
                None => {
                    let fault = crate::vocab::faults::Held::by_record(other)
                        .expect("every spec has a case");
                    let (job, worker) = (g.job("job")?, g.worker("worker")?);
                    Event::Held(crate::history::HeldRecord {
                        fault,
                        worker,
                        job,
                        fence: g.write_fence("fence", job, worker)?,
                        ms: g.number(fault.spec().field)?,
                    })
                }
            },
        })
    }
}

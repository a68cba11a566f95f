//! One record line of a history: its type, its time and its fields, into an [`Event`].
//!
//! Owns: the dispatch on `type`, time order, the fields each record type carries, references
//! to jobs, workers and outbox events earlier lines introduced, undeclared optional records.
//! Does not: read the header (`header.rs`), list the types (`specs.rs`) or read typed values
//! (`fields.rs`, `ids.rs`).

use super::*;

impl<R: BufRead> HistoryReader<R> {
    pub(super) fn record(&mut self, mut map: Map<String, Value>) -> Result<Record, HistoryError> {
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
        if at < self.last_at {
            return Err(self.error(
                Some("at"),
                format!(
                    "{at} is before the previous line's {}; records must be in time order",
                    self.last_at
                ),
            ));
        }
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
        let event = self.event(spec.0, &map)?;
        if matches!(event, Event::RunEnded { .. }) {
            self.ended = true;
        }
        Ok(Record { at, event })
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
                let key = g.key("key")?;
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
                key: g.key("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
            },
            "enqueue_conflict" => Event::EnqueueConflict {
                tenant: g.tenant("tenant")?,
                key: g.key("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
            },
            "enqueue_replaced" => Event::EnqueueReplaced {
                tenant: g.tenant("tenant")?,
                key: g.key("key")?,
                operation: g.operation("operation")?,
                content: g.hex("content")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing: g.job("existing")?,
                replaced_operation: g.operation("replaced_operation")?,
                replaced_content: g.hex("replaced_content")?,
                replaced_payload: g.opt_hex("replaced_payload")?.map(PayloadHash),
            },
            "visible" => Event::Visible { job: g.job("job")? },
            "leased" => Event::Leased {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                attempt: g.opt_u32("attempt")?,
                lease_until: g.opt_number("lease_until")?,
                visible_at: g.opt_number("visible_at")?,
            },
            "lease_expired" => Event::LeaseExpired {
                job: g.job("job")?,
                fence: g.fence("fence")?,
            },
            "heartbeat" => Event::Heartbeat {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                lease_until: g.opt_number("lease_until")?,
            },
            "rejected" => Event::Rejected {
                job: g.job("job")?,
                worker: g.worker("worker")?,
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
                presented: g.fence("presented")?,
                held: g.opt_fence("held")?,
                reason: g.code("reason", &codes::REJECTIONS)?,
            },
            "extract_started" => Event::ExtractStarted {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                stalled: g.opt_bool("stalled")?.unwrap_or(false),
            },
            "extract_done" => Event::ExtractDone {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                inference: g.number("inference")?,
                output: g.hex("output")?,
            },
            "attempt_failed" => Event::AttemptFailed {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                error: g.code("error", &codes::ERRORS)?,
                class: g.opt_code("class", &codes::ERROR_CLASSES)?,
            },
            "result_committed" => Event::ResultCommitted {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                output: g.hex("output")?,
                event: g.opt_event("event")?,
            },
            "commit_deduped" => Event::CommitDeduped {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                output: g.hex("output")?,
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
                existing_event: g.opt_event("existing_event")?,
            },
            "commit_conflict" => Event::CommitConflict {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                key: g.key("key")?,
                payload: g.opt_hex("payload")?.map(PayloadHash),
                existing_payload: g.opt_hex("existing_payload")?.map(PayloadHash),
            },
            "acked" => Event::Acked {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
            },
            "retry_scheduled" => Event::RetryScheduled {
                job: g.job("job")?,
                worker: g.worker("worker")?,
                fence: g.fence("fence")?,
                attempt: g.opt_u32("attempt")?,
                visible_at: g.number("visible_at")?,
            },
            "dead_lettered" => Event::DeadLettered {
                job: g.job("job")?,
                worker: g.opt_worker("worker")?,
                fence: g.opt_fence("fence")?,
                attempts: g.opt_u32("attempts")?,
                reason: g.string("reason")?.into(),
            },
            "cancelled" => Event::Cancelled {
                job: g.job("job")?,
                worker: g.opt_worker("worker")?,
                fence: g.opt_fence("fence")?,
                deadline_at: g.opt_number("deadline_at")?,
            },
            "dlq_evicted" => Event::DlqEvicted {
                job: g.job("job")?,
                capacity: g.opt_u32("capacity")?,
                retention: g.opt_number("retention")?,
            },
            "worker_crashed" => Event::WorkerCrashed {
                worker: g.worker("worker")?,
                job: g.job("job")?,
                fence: g.fence("fence")?,
                point: g.code("point", &codes::CRASH_POINTS)?,
            },
            "worker_restarted" => Event::WorkerRestarted {
                worker: g.worker("worker")?,
            },
            "published" => Event::Published {
                event: g.event("event")?,
                key: g.key("key")?,
                job: g.job("job")?,
                output: g.hex("output")?,
                send: g.opt_u32("send")?,
                direct: g.opt_bool("direct")?.unwrap_or(false),
            },
            "marked_published" => Event::MarkedPublished {
                count: g.u32("count")?,
            },
            "outbox_pruned" => Event::OutboxPruned {
                rows: g.number("rows")?,
            },
            "effect_applied" => Event::EffectApplied {
                event: g.event("event")?,
                key: g.key("key")?,
                job: g.job("job")?,
                output: g.hex("output")?,
            },
            "duplicate_event" => Event::DuplicateEvent {
                event: g.event("event")?,
                key: g.key("key")?,
            },
            "review_done" => Event::ReviewDone {
                event: g.event("event")?,
                key: g.key("key")?,
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
                    Event::Held(crate::history::HeldRecord {
                        fault,
                        worker: g.worker("worker")?,
                        job: g.job("job")?,
                        fence: g.fence("fence")?,
                        ms: g.number(fault.spec().field)?,
                    })
                }
            },
        })
    }
}

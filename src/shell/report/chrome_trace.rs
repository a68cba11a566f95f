//! The run's history as a Chrome trace-event file (`trace.json`), for ui.perfetto.dev and
//! chrome://tracing.
//!
//! Owns: the mapping of history records onto tracks. Process 1 "workers" has a thread per
//! worker with nested complete ("X") slices: `attempt` (lease to the attempt's end), inside it
//! `extract`, `stalled` and `validate`; `commit`, `ack`, `retry`, `dead-letter` and heartbeats as
//! thread instants; crashes and stalls as instants too, and a worker's down time after a crash
//! as a `down` slice. Flow arrows (`s`/`t`/`f`, bound to the enclosing slice) link a job's
//! attempts across workers. Process 2 "pipeline" has the relay, the consumer and the queue
//! (enqueues, lease expiries, operator actions, a `queue depth` counter); reviews are async
//! slices (`b`/`e`) because they overlap. Process 3 "jobs" has one async slice per job from
//! enqueue to its terminal state. Virtual milliseconds become trace microseconds × 1000.
//! Does not: decide anything; every slice comes from a record.

use crate::history::{Event, Op, Record};
use crate::vocab::faults::Component;
use crate::vocab::key::KeyNames;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

const WORKERS: u32 = 1;
const PIPELINE: u32 = 2;
const JOBS: u32 = 3;
const RELAY: u32 = 1;
const CONSUMER: u32 = 2;
const QUEUE: u32 = 3;
const REVIEW: u32 = 4;

fn us(ms: u64) -> u64 {
    ms * 1000
}

/// A slice being built on a worker thread.
struct Open {
    name: &'static str,
    start: u64,
    args: Value,
}

struct Attempt {
    job: u32,
    start: u64,
    args: Value,
    /// Closed child slices, in order.
    children: Vec<(Open, u64)>,
    open: Option<Open>,
    stall: Option<(u64, u64)>,
}

#[derive(Default)]
struct Builder {
    events: Vec<Value>,
    attempts: BTreeMap<u32, Attempt>,
    /// Each job's attempt slices: (start µs, worker tid), for the flow arrows.
    job_attempts: BTreeMap<u32, Vec<(u64, u32)>>,
    job_open: BTreeMap<u32, u64>,
    down_since: BTreeMap<u32, u64>,
    workers: u32,
}

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn x(&mut self, pid: u32, tid: u32, name: &str, cat: &str, start: u64, end: u64, args: Value) {
        self.events.push(json!({
            "name": name, "cat": cat, "ph": "X", "ts": us(start), "dur": us(end.saturating_sub(start)),
            "pid": pid, "tid": tid, "args": args,
        }));
    }

    fn instant(&mut self, pid: u32, tid: u32, name: &str, cat: &str, at: u64, args: Value) {
        self.events.push(json!({
            "name": name, "cat": cat, "ph": "i", "s": "t", "ts": us(at), "pid": pid, "tid": tid, "args": args,
        }));
    }

    fn tid(worker: u32) -> u32 {
        worker + 1
    }

    /// Ends the worker's open child slice (if any) at `at`.
    fn close_child(&mut self, worker: u32, at: u64) {
        if let Some(a) = self.attempts.get_mut(&worker) {
            if let Some(o) = a.open.take() {
                a.children.push((o, at));
            }
        }
    }

    fn open_child(&mut self, worker: u32, at: u64, name: &'static str, args: Value) {
        self.close_child(worker, at);
        if let Some(a) = self.attempts.get_mut(&worker) {
            a.open = Some(Open {
                name,
                start: at,
                args,
            });
        }
    }

    /// Ends the worker's attempt at `at` with `outcome`, emitting its slice and its children.
    fn end_attempt(&mut self, worker: u32, at: u64, outcome: &str) {
        self.close_child(worker, at);
        let Some(a) = self.attempts.remove(&worker) else {
            return;
        };
        let tid = Self::tid(worker);
        let mut args = a.args;
        args["outcome"] = json!(outcome);
        self.x(
            WORKERS,
            tid,
            &format!("attempt job-{}", a.job),
            "attempt",
            a.start,
            at,
            args,
        );
        for (o, end) in a.children {
            let end = end.min(at);
            self.x(WORKERS, tid, o.name, "step", o.start, end, o.args.clone());
            if o.name == "extract" {
                if let Some((s, e)) = a.stall {
                    let (s, e) = (s.max(o.start), e.min(end));
                    if e >= s {
                        self.x(
                            WORKERS,
                            tid,
                            "stalled",
                            "fault",
                            s,
                            e,
                            json!({"job": a.job, "note": "no heartbeat"}),
                        );
                    }
                }
            }
        }
    }

    fn end_job(&mut self, job: u32, at: u64, state: &str) {
        if let Some(start) = self.job_open.remove(&job) {
            let _ = start;
            self.events.push(json!({
                "name": format!("job-{job}"), "cat": "job", "ph": "e", "id": job, "ts": us(at), "pid": JOBS, "tid": 1,
                "args": {"state": state},
            }));
        }
    }

    fn observe(&mut self, r: &Record, names: &KeyNames) {
        let at = r.at;
        match &r.event {
            Event::RunStarted { config } => self.workers = config.workers.unwrap_or(0),
            Event::Enqueued { job, key, tenant, reprocess_of, .. } => {
                let key = names.key(key);
                self.instant(PIPELINE, QUEUE, "enqueue", "queue", at, json!({"job": job.0, "key": key}));
                self.job_open.insert(job.0, at);
                let origin = match reprocess_of {
                    None => "arrival".to_string(),
                    Some(from) => format!("reprocess of job-{}", from.0),
                };
                self.events.push(json!({
                    "name": format!("job-{}", job.0), "cat": "job", "ph": "b", "id": job.0, "ts": us(at), "pid": JOBS, "tid": 1,
                    "args": {"key": key, "tenant": names.tenants.name(*tenant), "origin": origin},
                }));
            }
            Event::EnqueueDeduped { existing, .. } => {
                self.instant(PIPELINE, QUEUE, "enqueue deduped", "queue", at, json!({"existing": existing.0}))
            }
            Event::EnqueueConflict { existing, .. } => {
                self.instant(PIPELINE, QUEUE, "enqueue conflict", "queue", at, json!({"existing": existing.0}))
            }
            Event::EnqueueReplaced { existing, .. } => {
                self.instant(PIPELINE, QUEUE, "enqueue replaced", "queue", at, json!({"existing": existing.0}))
            }
            Event::Leased { job, worker, fence, attempt, lease_until, visible_at } => {
                // A worker that still holds an attempt (never in a well-formed history) closes it.
                self.end_attempt(worker.0, at, "superseded");
                self.attempts.insert(
                    worker.0,
                    Attempt {
                        job: job.0,
                        start: at,
                        args: json!({"job": job.0, "attempt": attempt, "fence": fence.0, "queueWaitMs": visible_at.map(|v| at.saturating_sub(v)), "leaseUntil": lease_until}),
                        children: Vec::new(),
                        open: None,
                        stall: None,
                    },
                );
                self.job_attempts.entry(job.0).or_default().push((us(at), Self::tid(worker.0)));
            }
            Event::LeaseExpired { job, fence } => {
                self.instant(PIPELINE, QUEUE, "lease expired", "queue", at, json!({"job": job.0, "fence": fence.0}))
            }
            Event::Heartbeat { job, worker, lease_until, .. } => {
                self.instant(WORKERS, Self::tid(worker.0), "heartbeat", "heartbeat", at, json!({"job": job.0, "leaseUntil": lease_until}))
            }
            Event::Rejected { job, worker, op, presented, held, reason } => {
                let name = format!("{} rejected", op_name(*op));
                self.instant(
                    WORKERS,
                    Self::tid(worker.0),
                    &name,
                    "fence",
                    at,
                    json!({"job": job.0, "presented": presented.0, "held": held.map(|h| h.0), "reason": reason}),
                );
                if *op != Op::Heartbeat {
                    self.end_attempt(worker.0, at, &name);
                }
            }
            Event::ExtractStarted { job, worker, stalled, .. } => {
                self.open_child(worker.0, at, "extract", json!({"job": job.0, "stalled": stalled}))
            }
            Event::Held(h) => {
                let spec = h.fault.spec();
                if h.fault == crate::vocab::faults::Held::Stall {
                    if let Some(a) = self.attempts.get_mut(&h.worker.0) {
                        a.stall = Some((at, at + h.ms));
                    }
                }
                let mut args = json!({"job": h.job.0});
                args[spec.trace_arg] = json!(h.ms);
                self.instant(WORKERS, Self::tid(h.worker.0), spec.label, "fault", at, args);
            }
            Event::ExtractDone { job, worker, inference, .. } => {
                self.open_child(worker.0, at, "validate", json!({"job": job.0, "inferenceMs": inference}))
            }
            Event::AttemptFailed { job, worker, error, class, .. } => {
                self.close_child(worker.0, at);
                self.instant(WORKERS, Self::tid(worker.0), &format!("failed: {error}"), "error", at, json!({"job": job.0, "class": class}));
            }
            Event::ResultCommitted { job, worker, key, event, .. } => {
                self.close_child(worker.0, at);
                let args = json!({"job": job.0, "key": names.key(key), "outboxEvent": event.map(|e| e.0)});
                self.instant(WORKERS, Self::tid(worker.0), "commit", "commit", at, args);
            }
            Event::CommitDeduped { job, worker, key, .. } => {
                self.close_child(worker.0, at);
                self.instant(WORKERS, Self::tid(worker.0), "commit deduped", "commit", at, json!({"job": job.0, "key": names.key(key)}));
            }
            Event::CommitConflict { job, worker, key, .. } => {
                self.close_child(worker.0, at);
                self.instant(WORKERS, Self::tid(worker.0), "commit conflict", "commit", at, json!({"job": job.0, "key": names.key(key)}));
            }
            Event::Acked { job, worker, .. } => {
                self.instant(WORKERS, Self::tid(worker.0), "ack", "ack", at, json!({"job": job.0}));
                self.end_attempt(worker.0, at, "acked");
                self.end_job(job.0, at, "acked");
            }
            Event::RetryScheduled { job, worker, attempt, visible_at, .. } => {
                self.instant(WORKERS, Self::tid(worker.0), "retry", "retry", at, json!({"job": job.0, "nextAttempt": attempt, "visibleAt": visible_at}));
                self.end_attempt(worker.0, at, "retry");
            }
            Event::DeadLettered { job, worker, attempts, reason, .. } => {
                let args = json!({"job": job.0, "attempts": attempts, "reason": reason.as_ref()});
                match worker {
                    Some(w) => {
                        self.instant(WORKERS, Self::tid(w.0), "dead-letter", "dlq", at, args);
                        self.end_attempt(w.0, at, "dead_lettered");
                    }
                    None => self.instant(PIPELINE, QUEUE, "dead-letter", "dlq", at, args),
                }
                self.end_job(job.0, at, "dead_lettered");
            }
            Event::Cancelled { job, worker, deadline_at, .. } => {
                let args = json!({"job": job.0, "deadlineAt": deadline_at});
                match worker {
                    Some(w) => {
                        self.instant(WORKERS, Self::tid(w.0), "cancel", "cancel", at, args);
                        self.end_attempt(w.0, at, "cancelled");
                    }
                    None => self.instant(PIPELINE, QUEUE, "cancel", "cancel", at, args),
                }
                self.end_job(job.0, at, "cancelled");
            }
            Event::WorkerCrashed { worker, job, point, .. } => {
                self.instant(WORKERS, Self::tid(worker.0), "CRASH", "fault", at, json!({"job": job.0, "point": point}));
                self.end_attempt(worker.0, at, "crashed");
                self.down_since.insert(worker.0, at);
            }
            Event::WorkerLost { worker } => {
                self.instant(WORKERS, Self::tid(worker.0), "CRASH", "fault", at, json!({}));
                self.end_attempt(worker.0, at, "crashed");
                self.down_since.insert(worker.0, at);
            }
            Event::WorkerHeartbeat { worker } => {
                self.instant(WORKERS, Self::tid(worker.0), "worker heartbeat", "heartbeat", at, json!({}))
            }
            Event::Rescued { job, .. } => {
                self.instant(PIPELINE, QUEUE, "rescued", "queue", at, json!({"job": job.0}))
            }
            Event::MarkedEvents { events } => {
                self.instant(PIPELINE, RELAY, "mark published", "relay", at, json!({"count": events.len()}))
            }
            Event::RelayLost {} => self.instant(PIPELINE, RELAY, "relay crashed", "fault", at, json!({})),
            Event::WorkerRestarted { worker } => {
                if let Some(since) = self.down_since.remove(&worker.0) {
                    self.x(WORKERS, Self::tid(worker.0), "down", "fault", since, at, json!({"note": "crashed, restarting"}));
                }
                self.instant(WORKERS, Self::tid(worker.0), "restart", "fault", at, json!({}));
            }
            Event::Published { event, job, send, direct, .. } => {
                let tid = if *direct { CONSUMER } else { RELAY };
                let name = if send.is_some_and(|s| s > 1) { "republish" } else { "publish" };
                self.instant(PIPELINE, tid, name, "relay", at, json!({"event": event.0, "job": job.0, "send": send, "direct": direct}));
            }
            Event::MarkedPublished { count } => {
                self.instant(PIPELINE, RELAY, "mark published", "relay", at, json!({"count": count}))
            }
            Event::OutboxPruned { rows } => {
                self.instant(PIPELINE, RELAY, "outbox pruned", "relay", at, json!({"rows": rows}))
            }
            Event::DlqEvicted { job, capacity, retention } => {
                self.instant(PIPELINE, QUEUE, "DLQ EVICTED", "dlq", at, json!({"job": job.0, "capacity": capacity, "retention": retention}))
            }
            Event::Struck(st) => {
                let spec = st.fault.spec();
                let tid = match spec.site.component() {
                    Component::Relay => RELAY,
                    Component::Consumer => CONSUMER,
                };
                let mut args = json!({});
                if let Some(job) = st.job {
                    args["job"] = json!(job.0);
                }
                args[spec.field] = json!(st.value);
                self.instant(PIPELINE, tid, spec.label, "fault", at, args)
            }
            Event::EffectApplied { event, job, .. } => {
                self.instant(PIPELINE, CONSUMER, "apply", "consumer", at, json!({"event": event.0, "job": job.0}));
                self.events.push(json!({
                    "name": format!("review job-{}", job.0), "cat": "review", "ph": "b", "id": format!("review-{}", event.0),
                    "ts": us(at), "pid": PIPELINE, "tid": REVIEW, "args": {"job": job.0, "event": event.0},
                }));
            }
            Event::DuplicateEvent { event, .. } => {
                self.instant(PIPELINE, CONSUMER, "duplicate absorbed", "consumer", at, json!({"event": event.0}))
            }
            Event::ReviewDone { event, job, .. } => {
                self.events.push(json!({
                    "name": format!("review job-{}", job.0), "cat": "review", "ph": "e", "id": format!("review-{}", event.0),
                    "ts": us(at), "pid": PIPELINE, "tid": REVIEW, "args": {},
                }));
            }
            Event::PayloadMutated { job, .. } => {
                self.instant(PIPELINE, QUEUE, "payload mutated", "queue", at, json!({"job": job.0}))
            }
            Event::ReprocessRefused { job, operator, reason } => self.instant(
                PIPELINE,
                QUEUE,
                "OPERATOR reprocess refused",
                "operator",
                at,
                json!({"job": job.map(|j| j.0), "operator": operator.as_deref(), "reason": reason}),
            ),
            Event::Reprocessed { old_job, new_job, operator } => self.instant(
                PIPELINE,
                QUEUE,
                "OPERATOR reprocess",
                "operator",
                at,
                json!({"oldJob": old_job.0, "newJob": new_job.0, "operator": operator.as_ref()}),
            ),
            Event::DepthSampled { depth } => self.events.push(json!({
                "name": "queue depth", "cat": "queue", "ph": "C", "ts": us(at), "pid": PIPELINE, "tid": QUEUE,
                "args": {"depth": depth},
            })),
            Event::Visible { .. } => {}
            Event::Log { role, instance, message } => {
                let args = json!({"role": role, "instance": instance, "message": message.as_ref()});
                match *role {
                    "worker" => self.instant(WORKERS, Self::tid(*instance), "log", "log", at, args),
                    "relay" => self.instant(PIPELINE, RELAY, "log", "log", at, args),
                    _ => self.instant(PIPELINE, CONSUMER, "log", "log", at, args),
                }
            }
            Event::RunEnded { quiescent } => {
                let workers: Vec<u32> = self.attempts.keys().copied().collect();
                for w in workers {
                    self.end_attempt(w, at, "open at end of run");
                }
                let down: Vec<(u32, u64)> = std::mem::take(&mut self.down_since).into_iter().collect();
                for (w, since) in down {
                    self.x(WORKERS, Self::tid(w), "down", "fault", since, at, json!({}));
                }
                let jobs: Vec<u32> = self.job_open.keys().copied().collect();
                for j in jobs {
                    self.end_job(j, at, "unfinished");
                }
                self.instant(PIPELINE, QUEUE, "run ended", "run", at, json!({"quiescent": quiescent}));
            }
        }
    }

    fn flows(&mut self) {
        for (job, attempts) in std::mem::take(&mut self.job_attempts) {
            if attempts.len() < 2 {
                continue;
            }
            let last = attempts.len() - 1;
            for (i, (ts, tid)) in attempts.into_iter().enumerate() {
                let ph = if i == 0 {
                    "s"
                } else if i == last {
                    "f"
                } else {
                    "t"
                };
                let mut e = json!({"name": "attempts of a job", "cat": "flow", "ph": ph, "id": job, "ts": ts, "pid": WORKERS, "tid": tid});
                if ph == "f" {
                    e["bp"] = json!("e");
                }
                self.events.push(e);
            }
        }
    }

    fn metadata(&self, scenario: &str, seed: u64) -> Vec<Value> {
        let name = |pid: u32, name: &str| json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}});
        let sort = |pid: u32, i: u32| json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": i}});
        let thread = |pid: u32, tid: u32, name: String| json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}});
        let mut m = vec![
            name(WORKERS, &format!("workers — {scenario} seed {seed}")),
            sort(WORKERS, 1),
            name(PIPELINE, "pipeline (relay, consumer, queue, review)"),
            sort(PIPELINE, 2),
            name(JOBS, "jobs (enqueue → terminal)"),
            sort(JOBS, 3),
            thread(PIPELINE, RELAY, "relay".into()),
            thread(PIPELINE, CONSUMER, "consumer".into()),
            thread(PIPELINE, QUEUE, "queue and operators".into()),
            thread(PIPELINE, REVIEW, "review".into()),
            thread(JOBS, 1, "jobs".into()),
        ];
        for w in 0..self.workers {
            m.push(thread(WORKERS, Self::tid(w), format!("worker-{w}")));
            m.push(json!({"name": "thread_sort_index", "ph": "M", "pid": WORKERS, "tid": Self::tid(w), "args": {"sort_index": w}}));
        }
        m
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Heartbeat => "heartbeat",
        Op::Ack => "ack",
        Op::Retry => "retry",
        Op::DeadLetter => "dead-letter",
        Op::Cancel => "cancel",
    }
}

/// The trace-event document for a history.
pub fn chrome_trace(
    trace: &[Record],
    names: &KeyNames,
    scenario: &str,
    seed: u64,
    trace_hash: &str,
) -> Value {
    let mut b = Builder::default();
    for r in trace {
        b.observe(r, names);
    }
    b.flows();
    let mut events = b.metadata(scenario, seed);
    // Sorted by time (stable: equal times keep history order), as viewers like it.
    let mut body = std::mem::take(&mut b.events);
    body.sort_by_key(|e| e["ts"].as_u64().unwrap_or(0));
    events.extend(body);
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "scenario": scenario,
            "seed": seed.to_string(),
            "traceHash": trace_hash,
            "timeUnit": "1 trace µs = 1 virtual µs; the simulator's clock ticks in ms",
        },
    })
}

/// Writes `trace.json`.
pub fn write_chrome_trace(
    path: &Path,
    trace: &[Record],
    names: &KeyNames,
    scenario: &str,
    seed: u64,
    trace_hash: &str,
) -> std::io::Result<()> {
    let doc = chrome_trace(trace, names, scenario, seed, trace_hash);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut w, &doc).map_err(std::io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush()
}

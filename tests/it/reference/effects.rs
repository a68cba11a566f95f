//! Submits, results, outbox events and the consumer, restated: `single_result_per_key`,
//! `event_per_result`, `no_duplicate_effect`, `every_result_delivered`, `first_result_wins`,
//! `acked_with_result`, `payload_conflict_rejected` (payload equality from the recorded
//! operation and content, and the header's `unique` mode against how each submit of a known key
//! was resolved), `tenant_isolation`, and the recorded payload hashes, `replaced_*` and
//! `deadline_at` for `recorded_values_match`.
//!
//! Owns: these rules as docs/history-format.md and the invariants' sentences state them, and
//! the payload hash (FNV-1a-64 of `document\noperation\ncontent as 16 hex digits`), computed
//! here byte by byte.
//! Does not: judge leases (`leases.rs`) or the DLQ (`dlq.rs`).

use super::facts::{Facts, Payload};
use super::leases::recorded_time;
use super::Inv;
use super::{Ctx, Verdicts};
use durasim::base::ids::{JobId, OperationId, SimTime};
use durasim::history::Event;
use durasim::profile::Unique;
use durasim::vocab::key::IdempotencyKey;
use durasim::vocab::payload::PayloadHash;

/// The payload hash as docs/history-format.md defines it.
fn payload_hash(cx: &Ctx, key: &IdempotencyKey, p: Payload) -> Option<u64> {
    let names = cx.names?;
    let text = format!(
        "{}\n{}\n{:016x}",
        names.documents.name(key.document),
        names.operations.name(p.operation),
        p.content
    );
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Some(h)
}

/// A recorded payload hash (when the names are known) must be the hash of `key`'s document and
/// `p`; the violation names `job`.
fn recorded_hash(
    cx: &Ctx,
    out: &mut Verdicts,
    job: JobId,
    key: &IdempotencyKey,
    p: Payload,
    recorded: Option<PayloadHash>,
) {
    let Some(recorded) = recorded else { return };
    let Some(expected) = payload_hash(cx, key, p) else {
        return;
    };
    if recorded.0 != expected {
        out.raise(
            Inv::RecordedValuesMatch,
            cx.here(),
            Some(job),
            Some(*key),
            format!(
                "payload hash {recorded}, but {p} of the key's document hashes to {expected:016x}"
            ),
        );
    }
}

/// A commit's record of the key's result (`existing_payload`, and `existing_event` of a
/// dedupe), when the key has one: its payload's hash, and the first commit's event.
fn existing_result(
    cx: &Ctx,
    out: &mut Verdicts,
    job: JobId,
    key: &IdempotencyKey,
    existing_payload: &Option<PayloadHash>,
    existing_event: Option<&Option<durasim::base::ids::EventId>>,
) {
    let Some(k) = cx.facts.key(key).filter(|k| k.results() > 0) else {
        return;
    };
    if let Some(p) = k.payload() {
        recorded_hash(cx, out, job, key, p, *existing_payload);
    }
    if let Some(Some(e)) = existing_event {
        let first = k.commits[0].3;
        if first != Some(*e) {
            out.raise(
                Inv::RecordedValuesMatch,
                cx.here(),
                Some(job),
                Some(*key),
                format!("a dedupe by {job} records existing event {e}, but the first commit wrote {first:?}"),
            );
        }
    }
}

/// How a submit of a key was resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolved {
    NewJob,
    Deduped,
    Refused,
    Replaced,
}

/// What `unique` allows for a submit of a known key whose newest job is (or not) terminal, or
/// leased (a lease not released nor recorded as expired). `None`: a dedupe or a refusal, as
/// the payloads decide (durasim's `forever`).
fn allowed(mode: Unique, terminal: bool, leased: bool, ever_leased: bool) -> Option<Resolved> {
    match mode {
        Unique::Forever => None,
        Unique::None => Some(Resolved::NewJob),
        Unique::WhileActive | Unique::ConflictWhileRunning if terminal => Some(Resolved::NewJob),
        Unique::WhileActive => Some(Resolved::Deduped),
        Unique::ConflictWhileRunning => Some(Resolved::Refused),
        Unique::Replace if terminal || leased => Some(Resolved::NewJob),
        Unique::Replace => Some(Resolved::Replaced),
        // While the newest job waits (never leased, for `while_new`): a dedupe or a refusal.
        Unique::WhileWaiting if terminal || leased => Some(Resolved::NewJob),
        Unique::WhileWaiting => None,
        Unique::WhileNew if terminal || leased || ever_leased => Some(Resolved::NewJob),
        Unique::WhileNew => None,
    }
}

/// Judges a submit resolved `how` against the key's newest job `newest`; the violation names
/// `job`. Returns whether the mode refuses any payload there (so a refusal of the same payload
/// is no conflict wrongly raised).
fn unique_mode(
    cx: &Ctx,
    out: &mut Verdicts,
    how: Resolved,
    newest: JobId,
    key: &IdempotencyKey,
    job: JobId,
) -> bool {
    let mode = cx.facts.config.unique;
    let n = cx.facts.job(newest);
    let want = allowed(mode, n.terminal.is_some(), n.lease_held, n.leases > 0);
    let ok = match want {
        Some(w) => w == how,
        None => matches!(how, Resolved::Deduped | Resolved::Refused),
    };
    if !ok {
        out.raise(
            Inv::PayloadConflictRejected,
            cx.here(),
            Some(job),
            Some(*key),
            format!("a submit of a known key was {how:?}, but unique = {mode:?} with its newest job {newest} calls for {want:?}"),
        );
    }
    want == Some(Resolved::Refused) && how == Resolved::Refused
}

/// A submit resolved onto `existing`: it must be the key's newest job, and the mode must allow
/// `how`. Returns [`unique_mode`]'s answer (false when `existing` is not the newest).
fn resolved(
    cx: &Ctx,
    out: &mut Verdicts,
    how: Resolved,
    existing: JobId,
    key: &IdempotencyKey,
) -> bool {
    let newest = cx.facts.key(key).and_then(|k| k.newest);
    if newest != Some(existing) {
        out.raise(
            Inv::PayloadConflictRejected,
            cx.here(),
            Some(existing),
            Some(*key),
            format!("a submit {how:?} against {existing}, but the key's newest job is {newest:?}"),
        );
        return false;
    }
    unique_mode(cx, out, how, existing, key, existing)
}

/// A request of `tenant` resolved to `existing` must be that tenant's job.
fn same_tenant(
    cx: &Ctx,
    out: &mut Verdicts,
    existing: JobId,
    tenant: durasim::base::ids::TenantId,
    key: &IdempotencyKey,
) {
    let owner = cx.facts.job(existing).tenant;
    if owner != tenant {
        out.raise(
            Inv::TenantIsolation,
            cx.here(),
            Some(existing),
            Some(*key),
            format!("a request of {tenant} resolved to {existing} of {owner}"),
        );
    }
}

fn payload(operation: OperationId, content: u64) -> Payload {
    Payload { operation, content }
}

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let f = cx.facts;
    let at = cx.at();
    match &cx.r.event {
        Event::Enqueued {
            job,
            tenant,
            key,
            operation,
            content,
            payload: hash,
            deadline_at,
            ..
        } => {
            let p = payload(*operation, *content);
            if let Some(newest) = f.key(key).and_then(|k| k.newest) {
                unique_mode(cx, out, Resolved::NewJob, newest, key, *job);
            }
            if key.tenant != Some(*tenant) {
                out.raise(
                    Inv::TenantIsolation,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("{job} of {tenant} enqueued under a key without its tenant"),
                );
            }
            recorded_hash(cx, out, *job, key, p, *hash);
            let deadline = f
                .config
                .deadline
                .map_or(SimTime::MAX, |d| at.saturating_add(d));
            if let Some(v) = deadline_at.filter(|v| *v != deadline) {
                out.raise(
                    Inv::RecordedValuesMatch,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("{job}'s deadline_at is {v}, but the history gives {deadline}"),
                );
            }
        }
        Event::EnqueueDeduped {
            tenant,
            key,
            operation,
            content,
            payload: hash,
            existing,
        } => {
            let p = payload(*operation, *content);
            same_tenant(cx, out, *existing, *tenant, key);
            resolved(cx, out, Resolved::Deduped, *existing, key);
            let held = f.job(*existing).payload;
            if held != p {
                out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*existing),
                    Some(*key),
                    format!("a submit with {p} deduplicated onto {existing}, which has {held}"),
                );
            }
            recorded_hash(cx, out, *existing, key, p, *hash);
        }
        Event::EnqueueConflict {
            tenant,
            key,
            operation,
            content,
            payload: hash,
            existing,
            existing_payload,
        } => {
            let p = payload(*operation, *content);
            same_tenant(cx, out, *existing, *tenant, key);
            let any_payload = resolved(cx, out, Resolved::Refused, *existing, key);
            if !any_payload && f.job(*existing).payload == p {
                out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*existing),
                    Some(*key),
                    format!("a submit with {p} refused as a conflict with {existing}, which has the same payload"),
                );
            }
            recorded_hash(cx, out, *existing, key, p, *hash);
            let held = f.job(*existing).payload;
            recorded_hash(cx, out, *existing, key, held, *existing_payload);
        }
        Event::EnqueueReplaced {
            tenant,
            key,
            operation,
            content,
            payload: hash,
            existing,
            replaced_operation,
            replaced_content,
            replaced_payload,
        } => {
            let p = payload(*operation, *content);
            let was = payload(*replaced_operation, *replaced_content);
            same_tenant(cx, out, *existing, *tenant, key);
            resolved(cx, out, Resolved::Replaced, *existing, key);
            recorded_hash(cx, out, *existing, key, p, *hash);
            recorded_hash(cx, out, *existing, key, was, *replaced_payload);
            let held = f.job(*existing).payload;
            if held != was {
                out.raise(
                    Inv::RecordedValuesMatch,
                    cx.here(),
                    Some(*existing),
                    Some(*key),
                    format!("a replace says {existing} had {was}, but it had {held}"),
                );
            }
            if held != p {
                out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*existing),
                    Some(*key),
                    format!("a submit with {p} replaced {existing}'s {held}"),
                );
            }
        }
        Event::ResultCommitted {
            job,
            key,
            payload: hash,
            ..
        } => {
            if let Some((first_at, first_job, _)) = f.key(key).and_then(|k| k.first_commit()) {
                out.raise(
                    Inv::SingleResultPerKey,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("a second result for the key by {job}; the first by {first_job} at {first_at}"),
                );
            }
            recorded_hash(cx, out, *job, key, f.job(*job).payload, *hash);
        }
        Event::CommitDeduped {
            job,
            key,
            payload: hash,
            existing_payload,
            existing_event,
            ..
        } => {
            let p = f.job(*job).payload;
            let k = f.key(key);
            match k.filter(|k| k.results() > 0) {
                None => out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("a commit by {job} deduplicated, but the key has no result"),
                ),
                Some(k) if k.payload() != Some(p) => out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!(
                        "a commit by {job} with {p} deduplicated onto a result of {:?}",
                        k.payload()
                    ),
                ),
                Some(_) => {}
            }
            recorded_hash(cx, out, *job, key, p, *hash);
            existing_result(cx, out, *job, key, existing_payload, Some(existing_event));
        }
        Event::CommitConflict {
            job,
            key,
            payload: hash,
            existing_payload,
            ..
        } => {
            let p = f.job(*job).payload;
            let k = f.key(key).filter(|k| k.results() > 0);
            if k.is_none_or(|k| k.payload() == Some(p)) {
                out.raise(
                    Inv::PayloadConflictRejected,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!("a commit by {job} with {p} refused, but the key has no result of another payload"),
                );
            }
            recorded_hash(cx, out, *job, key, p, *hash);
            existing_result(cx, out, *job, key, existing_payload, None);
        }
        Event::Acked { job, worker, fence } => {
            let j = f.job(*job);
            let without = j.own_result.get(&(*fence, *worker)) != Some(&true);
            if without {
                cx.job_violation(
                    out,
                    Inv::AckedWithResult,
                    *job,
                    format!(
                        "{job} acked without its own attempt's committed or deduplicated result"
                    ),
                );
            }
        }
        Event::Cancelled {
            job, deadline_at, ..
        } => {
            let expected = f.job(*job).deadline_at;
            recorded_time(cx, out, *job, "deadline_at", *deadline_at, expected);
        }
        Event::EffectApplied {
            event,
            key,
            job,
            output,
        } => {
            let twice = f.events.get(event).is_some_and(|e| e.applies > 0);
            let k = f.key(key);
            let earlier = k.and_then(|k| k.applied);
            if twice || earlier.is_some() {
                out.raise(
                    Inv::NoDuplicateEffect,
                    cx.here(),
                    Some(*job),
                    Some(*key),
                    format!(
                        "{event} applied, but {} was applied already",
                        match earlier {
                            Some((when, e)) => format!("the key's effect (at {when}, from {e})"),
                            None => format!("{event}"),
                        }
                    ),
                );
            }
            if let Some((_, first_job, first_output)) = k.and_then(|k| k.first_commit()) {
                if first_output != *output {
                    out.raise(
                        Inv::FirstResultWins,
                        cx.here(),
                        Some(*job),
                        Some(*key),
                        format!("applied output {output:x}, but the first result (by {first_job}) is {first_output:x}"),
                    );
                }
            }
        }
        Event::PayloadMutated {
            job,
            content,
            payload: hash,
        } => {
            let j = f.job(*job);
            let p = payload(j.payload.operation, *content);
            recorded_hash(cx, out, *job, &j.key, p, *hash);
        }
        _ => {}
    }
}

/// At the end: every committed result has its event, published, applied and reviewed (keys in
/// the order records first named them), raised at `end` (`run_ended`'s time and index).
pub fn finish(f: &Facts, end: (u64, usize), out: &mut Verdicts) {
    for key in f.keys_in_order() {
        let k = &f.keys[key];
        let Some((when, job, _)) = k.first_commit() else {
            continue;
        };
        match k.event() {
            None => out.raise(
                Inv::EventPerResult,
                end,
                Some(job),
                Some(*key),
                format!("the result committed by {job} at {when} has no event"),
            ),
            Some(e) if !f.events.get(&e).is_some_and(|x| x.published) => out.raise(
                Inv::EventPerResult,
                end,
                Some(job),
                Some(*key),
                format!("{e}, written with the result, was never published"),
            ),
            Some(_) => {}
        }
        // A version 2 header may say the pipeline has no review step.
        if k.applied.is_none() || (f.config.stated.review && !k.reviewed) {
            out.raise(
                Inv::EveryResultDelivered,
                end,
                Some(job),
                Some(*key),
                format!("the result committed by {job} at {when} was not applied and reviewed"),
            );
        }
    }
}

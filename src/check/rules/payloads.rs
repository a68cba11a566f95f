//! Invariant family: payloads and the enqueue-time uniqueness decision.
//!
//! Owns: `payload_conflict_rejected` (docs/checker-rules.md): payload equality judged from the
//! recorded operation and content, both ways (a different payload is never reused, the same
//! payload is never refused), at enqueue and at commit; and how a submit of a key already known
//! was resolved — a new job, a dedupe onto the key's newest job, a refusal, a replace of its
//! payload — against what the header's `unique` mode allows, recomputed from raw facts only:
//! the key's newest job as the history created it and that job's state as its records left it
//! (terminal, leased). The record's own verdict is never taken for granted.
//!
//! The modes (docs/queues.md M10, docs/history-format.md `unique`):
//! - `forever` (durasim's key): never a second job; the newest job resolves every submit;
//! - `none`: always a new job;
//! - `while_active`: a dedupe while the newest job is not terminal, a new job after;
//! - `conflict_while_running`: a refusal (whatever the payload) while it is not terminal, a
//!   new job after;
//! - `replace`: the newest job takes the payload while it is neither leased (a lease not yet
//!   released or recorded as expired) nor terminal; a new job otherwise.
//!
//! Does not: judge tenants (`tenancy`) or recorded hashes (`recorded`).

use super::{k, Ctx, Family, Out, Spec};
use crate::base::ids::JobId;
use crate::check::facts::PayloadId;
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use crate::profile::{Unique, Word};
use crate::vocab::key::IdempotencyKey;

pub(in crate::check) const PAYLOAD_CONFLICT_REJECTED: Spec = Spec {
    name: "payload_conflict_rejected",
    kind: Kind::Always,
    sentence: "the same key with a different payload (operation and content, as recorded) is rejected, at enqueue and at commit, never reused; the same payload is never refused as a conflict unless the header's unique mode refuses any submit there; a submit of a known key gets a new job, a dedupe onto the key's newest job or a refusal exactly as that mode allows, given the newest job's state",
};

/// How the history resolved a submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::check) enum Resolved {
    NewJob,
    Deduped,
    Refused,
    Replaced,
}

impl Resolved {
    fn what(self) -> &'static str {
        match self {
            Resolved::NewJob => "got a new job",
            Resolved::Deduped => "was deduplicated",
            Resolved::Refused => "was refused as a conflict",
            Resolved::Replaced => "replaced the payload",
        }
    }

    fn call(self) -> &'static str {
        match self {
            Resolved::NewJob => "a new job",
            Resolved::Deduped => "a dedupe onto it",
            Resolved::Refused => "a refusal",
            Resolved::Replaced => "a replace of its payload",
        }
    }
}

/// What the mode allows for a submit of a known key whose newest job is (or is not) terminal,
/// or leased. `None`: a dedupe or a refusal, which the payloads decide.
fn allowed(mode: Unique, terminal: bool, leased: bool, ever_leased: bool) -> Option<Resolved> {
    match mode {
        Unique::Forever => None,
        Unique::None => Some(Resolved::NewJob),
        Unique::WhileActive | Unique::ConflictWhileRunning if terminal => Some(Resolved::NewJob),
        Unique::WhileActive => Some(Resolved::Deduped),
        Unique::ConflictWhileRunning => Some(Resolved::Refused),
        Unique::Replace if terminal || leased => Some(Resolved::NewJob),
        Unique::Replace => Some(Resolved::Replaced),
        Unique::WhileWaiting if terminal || leased => Some(Resolved::NewJob),
        // Waiting: a dedupe or a refusal, as the payloads decide (procrastinate refuses any
        // submit with AlreadyEnqueued; an application that catches it records a dedupe).
        Unique::WhileWaiting => None,
        Unique::WhileNew if terminal || leased || ever_leased => Some(Resolved::NewJob),
        Unique::WhileNew => None,
    }
}

#[derive(Default, Hash)]
pub(in crate::check) struct Payloads;

impl Family for Payloads {
    const READS: u64 = k::ENQUEUED
        | k::ENQUEUE_DEDUPED
        | k::ENQUEUE_CONFLICT
        | k::ENQUEUE_REPLACED
        | k::COMMIT_DEDUPED
        | k::COMMIT_CONFLICT;
    const OWNS: &'static [Invariant] = &[Invariant::PayloadConflictRejected];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        const PCR: Invariant = Invariant::PayloadConflictRejected;
        match &c.r.event {
            Event::Enqueued { job, key, .. } => {
                if let Some(newest) = c.facts.newest(key, None) {
                    judge_mode(c, out, Resolved::NewJob, newest, key, *job);
                }
            }
            Event::EnqueueDeduped {
                key,
                operation,
                content,
                existing,
                ..
            } => {
                let p = payload(*operation, *content);
                resolved(c, out, Resolved::Deduped, *existing, key);
                let held = c.track(*existing).payload;
                if held != p {
                    out.at_record(PCR, c, (Some(*existing), Some(*key)), || {
                        format!("an enqueue with {p} was deduplicated onto {existing}, whose payload is {held}")
                    });
                }
            }
            Event::EnqueueConflict {
                key,
                operation,
                content,
                existing,
                ..
            } => {
                let p = payload(*operation, *content);
                let any_payload = resolved(c, out, Resolved::Refused, *existing, key);
                if !any_payload && c.track(*existing).payload == p {
                    out.at_record(PCR, c, (Some(*existing), Some(*key)), || {
                        format!("an enqueue with {p} was refused as a conflict with {existing}, which has the same payload")
                    });
                }
            }
            Event::EnqueueReplaced {
                key,
                operation,
                content,
                existing,
                ..
            } => {
                let p = payload(*operation, *content);
                resolved(c, out, Resolved::Replaced, *existing, key);
                let held = c.track(*existing).payload;
                if held != p {
                    out.at_record(PCR, c, (Some(*existing), Some(*key)), || {
                        format!("an enqueue with {p} replaced the payload of {existing}, which was {held}: a different payload under the key was taken, not refused")
                    });
                }
            }
            Event::CommitDeduped { job, key, .. } => {
                let mine = c.track(*job).payload;
                let k = c.key_track(key, Some(*job));
                let named = (Some(*job), Some(*key));
                if k.results == 0 {
                    out.at_record(PCR, c, named, || {
                        format!("a commit by {job} was deduplicated, but the key has no committed result to deduplicate onto")
                    });
                } else if k.payload != Some(mine) {
                    out.at_record(PCR, c, named, || {
                        format!(
                            "a commit by {job} with {mine} was deduplicated onto a result committed with {}",
                            k.payload.map_or("no payload".to_string(), |p| p.to_string())
                        )
                    });
                }
            }
            Event::CommitConflict { job, key, .. } => {
                let mine = c.track(*job).payload;
                let k = c.key_track(key, Some(*job));
                if k.results == 0 || k.payload == Some(mine) {
                    out.at_record(PCR, c, (Some(*job), Some(*key)), || match k.results {
                        0 => format!("a commit by {job} was refused as a conflict, but the key has no committed result"),
                        _ => format!("a commit by {job} with {mine} was refused as a conflict with a result committed with the same payload"),
                    });
                }
            }
            _ => {}
        }
    }
}

fn payload(operation: crate::base::ids::OperationId, content: u64) -> PayloadId {
    PayloadId { operation, content }
}

/// An `enqueue_deduped`, `enqueue_conflict` or `enqueue_replaced` naming `existing`: it must be
/// the key's newest job, and the mode must allow that outcome in the state that job was in.
/// Returns whether the mode refuses any payload here (`conflict_while_running` on a live job),
/// so the refusal of the same payload is not called a conflict wrongly raised.
fn resolved(c: &Ctx, out: &mut Out, how: Resolved, existing: JobId, key: &IdempotencyKey) -> bool {
    let newest = c.facts.newest(key, Some(existing));
    if newest != Some(existing) {
        let said = how.what();
        let newest = newest.map_or("no job".to_string(), |j| j.to_string());
        out.at_record(
            Invariant::PayloadConflictRejected,
            c,
            (Some(existing), Some(*key)),
            || format!("a submit {said} against {existing}, but the key's newest job is {newest}"),
        );
        return false;
    }
    judge_mode(c, out, how, existing, key, existing)
}

/// Judges `how` against the mode, the newest job being `newest`; `job` is the record's job.
fn judge_mode(
    c: &Ctx,
    out: &mut Out,
    how: Resolved,
    newest: JobId,
    key: &IdempotencyKey,
    job: JobId,
) -> bool {
    let mode = c.config().unique;
    let t = c.track(newest);
    let (terminal, leased) = (t.terminal.is_some(), t.lease_held);
    let want = allowed(mode, terminal, leased, t.leases > 0);
    let ok = match want {
        Some(w) => w == how,
        None => matches!(how, Resolved::Deduped | Resolved::Refused),
    };
    if !ok {
        let state = match (terminal, leased) {
            (true, _) => "terminal",
            (false, true) => "leased",
            (false, false) => "pending",
        };
        let must = want.map_or("a dedupe or a refusal", Resolved::call);
        let said = how.what();
        out.at_record(
            Invariant::PayloadConflictRejected,
            c,
            (Some(job), Some(*key)),
            || format!("a submit of a known key {said}, but under unique = \"{}\" with the key's newest job {newest} {state} the mode calls for {must}", mode.name()),
        );
    }
    want == Some(Resolved::Refused) && how == Resolved::Refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_allows_what_its_system_does() {
        for leased in [false, true] {
            assert_eq!(allowed(Unique::Forever, true, leased, leased), None);
            assert_eq!(
                allowed(Unique::None, false, leased, leased),
                Some(Resolved::NewJob)
            );
            let live = allowed(Unique::WhileActive, false, leased, leased);
            assert_eq!(live, Some(Resolved::Deduped));
            let done = allowed(Unique::WhileActive, true, leased, leased);
            assert_eq!(done, Some(Resolved::NewJob));
            let live = allowed(Unique::ConflictWhileRunning, false, leased, leased);
            assert_eq!(live, Some(Resolved::Refused));
            let done = allowed(Unique::ConflictWhileRunning, true, leased, leased);
            assert_eq!(done, Some(Resolved::NewJob));
            assert_eq!(
                allowed(Unique::Replace, true, leased, leased),
                Some(Resolved::NewJob)
            );
        }
        let pending = allowed(Unique::Replace, false, false, false);
        assert_eq!(pending, Some(Resolved::Replaced));
        let held = allowed(Unique::Replace, false, true, true);
        assert_eq!(held, Some(Resolved::NewJob));
    }

    #[test]
    fn while_new_dedupes_only_onto_a_job_never_leased() {
        assert_eq!(allowed(Unique::WhileNew, false, false, false), None);
        // Waiting again for a retry after a lease: pg-boss's `short` policy makes a new job.
        let retrying = allowed(Unique::WhileNew, false, false, true);
        assert_eq!(retrying, Some(Resolved::NewJob));
        let running = allowed(Unique::WhileNew, false, true, true);
        assert_eq!(running, Some(Resolved::NewJob));
        assert_eq!(
            allowed(Unique::WhileNew, true, false, true),
            Some(Resolved::NewJob)
        );
    }
}

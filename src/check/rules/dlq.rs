//! Invariant family: the dead-letter queue and operator reprocess.
//!
//! Owns: `redacted_dlq` (a DLQ reason is a closed code), `dlq_bounded` (the checker's own DLQ
//! never above the configured capacity; an entry leaves only by an eviction record naming the
//! oldest entry of a full DLQ, or by age past the retention), `no_silent_drop` (every job ends
//! with a terminal record and keeps it: an entry evicted before any reprocess is a lost job),
//! `audited_reprocess` (a reprocess names an operator and a dead-lettered predecessor whose
//! entry is held and not yet reprocessed, whatever other terminal record it has too, and creates
//! the same tenant, document and payload at version + 1) and `reprocess_justified` (a
//! refusal's reason is true in the history; an acceptance respects the per-tenant rate limit),
//! with the state only they need: each tenant's accepted reprocesses within the rate limit's
//! window (docs/checker-rules.md).
//! Does not: judge why a job was dead-lettered (`policy`), or keep the DLQ's entries (a fact).

use super::{k, Ctx, End, Family, Out, Spec};
use crate::base::ids::{JobId, SimTime, TenantId};
use crate::check::facts::{DlqEntry, JobTrack, Terminal};
use crate::check::invariant::{Invariant, Kind};
use crate::history::Event;
use crate::vocab::codes::DLQ_REASONS;
use crate::vocab::key::{IdempotencyKey, MAX_VERSION};
use std::collections::VecDeque;

pub(in crate::check) const REDACTED_DLQ: Spec = Spec {
    name: "redacted_dlq",
    kind: Kind::Always,
    sentence: "every dead-letter reason is a closed code, never an error's text",
};

pub(in crate::check) const DLQ_BOUNDED: Spec = Spec {
    name: "dlq_bounded",
    kind: Kind::Always,
    sentence: "the DLQ, tracked by the checker, never holds more than its capacity, and an entry leaves it only by an eviction record naming its oldest entry when full",
};

pub(in crate::check) const NO_SILENT_DROP: Spec = Spec {
    name: "no_silent_drop",
    kind: Kind::Eventually,
    sentence: "every enqueued job ends acked, dead-lettered or cancelled, and keeps that record: a DLQ entry evicted before any reprocess is a lost job",
};

pub(in crate::check) const AUDITED_REPROCESS: Spec = Spec {
    name: "audited_reprocess",
    kind: Kind::Always,
    sentence: "every reprocessed job has an audit entry naming an operator and a predecessor whose entry is in the DLQ, not yet reprocessed, and the same tenant, document and payload at version + 1",
};

pub(in crate::check) const REPROCESS_JUSTIFIED: Spec = Spec {
    name: "reprocess_justified",
    kind: Kind::Always,
    sentence: "a reprocess is refused only for a reason the history shows, and accepted only within the tenant's reprocess rate limit",
};

#[derive(Default, Hash)]
pub(in crate::check) struct Dlq {
    /// Per tenant: when its accepted reprocesses happened (kept for the rate limit's window).
    reprocesses: Vec<VecDeque<SimTime>>,
}

impl Family for Dlq {
    const READS: u64 = k::DEAD_LETTERED | k::DLQ_EVICTED | k::REPROCESSED | k::REPROCESS_REFUSED;
    const OWNS: &'static [Invariant] = &[
        Invariant::RedactedDlq,
        Invariant::DlqBounded,
        Invariant::NoSilentDrop,
        Invariant::AuditedReprocess,
        Invariant::ReprocessJustified,
    ];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        match &c.r.event {
            Event::DeadLettered { job, reason, .. } => dead_lettered(c, out, *job, reason),
            Event::DlqEvicted { job, retention, .. } => evicted(c, out, *job, *retention),
            Event::Reprocessed {
                old_job,
                new_job,
                operator,
            } => self.reprocessed(c, out, *old_job, *new_job, operator),
            Event::ReprocessRefused {
                job,
                operator,
                reason,
            } => self.refused(c, out, *job, operator.as_deref(), reason),
            _ => {}
        }
    }

    /// Every job has its terminal record, every reprocess its audit entry.
    fn finish(&mut self, e: &End, out: &mut Out) {
        let (u, unsettled) = (e.unit(), e.unsettled());
        for i in 0..e.facts.jobs() {
            let job = JobId(i as u32);
            if !e.facts.needs_finish_check(job) {
                continue;
            }
            let Some(t) = e.facts.job(job) else { continue };
            let named = (Some(job), Some(t.key));
            if t.terminal.is_none() {
                out.raise(
                    Invariant::NoSilentDrop,
                    e.at,
                    named,
                    || format!("{job}, enqueued at {} {u}, has no terminal record (acked, dead-lettered or cancelled){unsettled}", t.enqueued_at),
                    Vec::new,
                );
            }
            if t.reprocessed_from.is_some() && !t.audited {
                out.raise(
                    Invariant::AuditedReprocess,
                    e.at,
                    named,
                    || format!("{job} was created by a reprocess with no audit entry"),
                    Vec::new,
                );
            }
        }
    }
}

fn dead_lettered(c: &Ctx, out: &mut Out, job: JobId, reason: &str) {
    if !DLQ_REASONS.contains(&reason) {
        out.job(Invariant::RedactedDlq, c, job, || {
            format!(
                "{job} entered the DLQ with reason {reason:?}, which is not one of {DLQ_REASONS:?}"
            )
        });
    }
    let entries = c.facts.dlq();
    // A job filed again while held leaves its old entry first (docs/checker-rules.md, "The DLQ").
    let refiled = entries.contains(&job);
    let len = entries.len() as u64 + u64::from(!refiled);
    if let Some(capacity) = c.config().dlq_capacity.filter(|cap| len > *cap as u64) {
        let oldest = entries.iter().copied().find(|j| *j != job).unwrap_or(job);
        out.job(Invariant::DlqBounded, c, job, || {
            format!("the DLQ holds {len} entries with {job}, over its capacity {capacity}: an entry (the oldest is {oldest}) left it without a dlq_evicted record")
        });
    }
}

fn evicted(c: &Ctx, out: &mut Out, job: JobId, retention: Option<u64>) {
    let u = c.unit();
    let config = c.config().dlq_capacity;
    let entries = c.facts.dlq();
    let t = c.track(job);
    let held = t.dlq == DlqEntry::Held;
    let problem = match (retention, config) {
        (Some(_), _) => expiry_problem(c, job, &t, held, retention),
        (None, None) => Some("the DLQ has no capacity, so it never evicts".to_string()),
        (None, Some(cap)) if entries.len() < cap as usize => Some(format!(
            "the DLQ held {} of {cap} entries: only a full DLQ evicts",
            entries.len()
        )),
        (None, Some(_)) if entries.front() != Some(&job) => Some(match held {
            true => format!(
                "{job} is not the oldest entry ({}): a full DLQ evicts its oldest",
                entries.front().map_or("none".into(), |j| j.to_string())
            ),
            false => format!("{job} is not in the DLQ"),
        }),
        _ => None,
    };
    if let Some(p) = problem {
        out.job(Invariant::DlqBounded, c, job, || {
            format!("{job} evicted: {p}")
        });
    }
    // The DLQ entry was the job's terminal record. Unless a reprocess already carried the work
    // on, the job has now left the system with no record of how it ended.
    if !t.reprocessed {
        let capacity = config.map_or("unbounded".to_string(), |c| c.to_string());
        out.job(Invariant::NoSilentDrop, c, job, || match (retention, t.terminal) {
            (Some(keep), Some((_, when))) => format!("{job}, dead-lettered at {when} {u}, expired from the DLQ after its retention of {keep} {u} before any reprocess: it left the system with no terminal record"),
            (Some(keep), None) => format!("{job} expired from the DLQ (retention {keep} {u}) without being dead-lettered: it left the system with no terminal record"),
            (None, Some((Terminal::DeadLettered, when))) => format!("{job}, dead-lettered at {when} {u}, was evicted from the full DLQ (capacity {capacity}) before any reprocess: it left the system with no terminal record"),
            (None, other) => format!("{job} was evicted from the DLQ (capacity {capacity}) while {:?}, never dead-lettered: it left the system with no terminal record", other.map(|t| t.0)),
        });
    }
}

/// What is wrong with an entry expiring by age (recorded retention `recorded`): the header
/// states no retention or another, the job is not in the DLQ, or the entry is not yet older
/// than the retention, counted from its dead-lettering or (`from: "enqueued"`) from the job's
/// enqueue.
fn expiry_problem(
    c: &Ctx,
    job: JobId,
    t: &JobTrack,
    held: bool,
    recorded: Option<u64>,
) -> Option<String> {
    let (at, u) = (c.at(), c.unit());
    let Some(r) = c.config().dlq_retention else {
        return Some("the header states no dlq_retention, so no entry expires by age".into());
    };
    if recorded != Some(r.after) {
        return Some(format!(
            "the record says retention {recorded:?}, the header's dlq_retention is {} {u}",
            r.after
        ));
    }
    if !held {
        return Some(format!("{job} is not in the DLQ"));
    }
    let dead_at = match t.terminal {
        Some((Terminal::DeadLettered, when)) => when,
        _ => return Some(format!("{job} was never dead-lettered")),
    };
    let from = if r.from_enqueue {
        t.enqueued_at
    } else {
        dead_at
    };
    let age = at.saturating_sub(from);
    (age <= r.after).then(|| {
        format!(
            "expired at {at} {u}, {age} {u} after {}, not older than the retention of {} {u}",
            if r.from_enqueue {
                "its enqueue"
            } else {
                "it was dead-lettered"
            },
            r.after
        )
    })
}

impl Dlq {
    /// How many reprocesses `tenant` had accepted in the rate limit's window before `at` (older
    /// ones are forgotten: records come in time order), with the limit.
    fn recent(&mut self, c: &Ctx, tenant: TenantId) -> Option<(u32, u32, u64)> {
        let limit = c.config().reprocess_limit?;
        let at = c.at();
        let n = match self.reprocesses.get_mut(tenant.index()) {
            Some(times) => {
                while times
                    .front()
                    .is_some_and(|t| t.saturating_add(limit.window) <= at)
                {
                    times.pop_front();
                }
                times.len() as u32
            }
            None => 0,
        };
        Some((n, limit.max, limit.window))
    }

    fn reprocessed(&mut self, c: &Ctx, out: &mut Out, old_job: JobId, new_job: JobId, op: &str) {
        let o = c.track(old_job);
        let n = c.track(new_job);
        let problem = if op.trim().is_empty() {
            Some("the audit entry has no operator".to_string())
        } else if o.dlq == DlqEntry::None {
            // Judged by the DLQ entry, not by the first terminal record: a job acked or
            // cancelled and then dead-lettered by a late write (a stale holder's, a by-id
            // rescue's; `terminal_once` speaks of that) is in the DLQ, and an operator may
            // reprocess it from there (swarm seeds 14359, 46312, 322738).
            let state = match o.terminal.map(|t| t.0) {
                Some(Terminal::Acked) => "acked",
                Some(Terminal::Cancelled) => "cancelled",
                Some(Terminal::DeadLettered) => "dead-lettered", // never: it has an entry
                None => "not finished",
            };
            Some(format!(
                "{old_job} was reprocessed while {state}, not dead-lettered"
            ))
        } else if o.dlq != DlqEntry::Held {
            Some(format!(
                "{old_job}'s DLQ entry was already evicted: nothing was left to reprocess"
            ))
        } else if o.reprocessed {
            Some(format!("{old_job} was already reprocessed once"))
        } else if n.reprocessed_from != Some(old_job) {
            Some(format!(
                "{new_job} is not recorded as created from {old_job}"
            ))
        } else if n.key.version != o.key.version + 1
            || n.key.document != o.key.document
            || n.tenant != o.tenant
        {
            Some(format!(
                "{new_job} must be the same tenant and document with version {}",
                o.key.version + 1
            ))
        } else if n.payload != o.payload {
            Some(format!(
                "{new_job} carries {}, but {old_job} was dead-lettered with {}",
                n.payload, o.payload
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            out.at_record(
                Invariant::AuditedReprocess,
                c,
                (Some(new_job), Some(n.key)),
                || message,
            );
        }
        if let Some((count, max, window)) = self.recent(c, o.tenant) {
            if count >= max {
                let u = c.unit();
                out.job(Invariant::ReprocessJustified, c, old_job, || {
                    format!("the reprocess of {old_job} was accepted, but its tenant already had {count} accepted in the last {window} {u} (limit {max})")
                });
            }
        }
        let i = o.tenant.index();
        if self.reprocesses.len() <= i {
            self.reprocesses.resize(i + 1, VecDeque::new());
        }
        self.reprocesses[i].push_back(c.at());
    }

    /// A refused reprocess: its reason must be true of the history.
    fn refused(
        &mut self,
        c: &Ctx,
        out: &mut Out,
        job: Option<JobId>,
        operator: Option<&str>,
        reason: &str,
    ) {
        let Some(job) = job else {
            if reason != "no_such_job" {
                out.at_record(Invariant::ReprocessJustified, c, (None, None), || {
                    format!("a reprocess naming no job was refused as {reason}")
                });
            }
            return;
        };
        let t = c.track(job);
        let operator_missing = operator.is_none_or(|o| o.trim().is_empty());
        let true_reason = match reason {
            "missing_operator" => operator_missing,
            "not_dead_lettered" => !matches!(t.terminal, Some((Terminal::DeadLettered, _))),
            "cancelled_is_terminal" => matches!(t.terminal, Some((Terminal::Cancelled, _))),
            "already_reprocessed" => t.reprocessed,
            "evicted" => t.dlq == DlqEntry::Evicted,
            "rate_limited" => self.recent(c, t.tenant).is_some_and(|(n, max, _)| n >= max),
            "version_exists" => {
                let next = IdempotencyKey {
                    version: t.key.version + 1,
                    ..t.key
                };
                c.key_track(&next, None).enqueued
            }
            "version_exhausted" => t.key.version >= MAX_VERSION,
            // `no_such_job` with a job the history enqueued.
            _ => false,
        };
        if !true_reason {
            let u = c.unit();
            let state = match t.terminal {
                Some((s, when)) => format!("{s:?} at {when} {u}"),
                None => "not terminal".to_string(),
            };
            let entry = match t.dlq {
                DlqEntry::None => "no DLQ entry",
                DlqEntry::Held => "its DLQ entry held",
                DlqEntry::Evicted => "its DLQ entry evicted",
            };
            out.job(Invariant::ReprocessJustified, c, job, || {
                format!(
                    "the reprocess of {job} was refused as {reason}, but the history shows it {state}, {entry}, {}reprocessed{}",
                    if t.reprocessed { "" } else { "not " },
                    if reason == "version_exists" {
                        format!(", and no job under version {}", t.key.version + 1)
                    } else {
                        String::new()
                    }
                )
            });
        }
    }
}

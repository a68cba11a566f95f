//! The DLQ and the operators' reprocesses, restated: `redacted_dlq`, `dlq_bounded`,
//! `no_silent_drop`, `audited_reprocess`, `reprocess_justified`, and an eviction's recorded
//! capacity for `recorded_values_match`.
//!
//! Owns: these rules as docs/history-format.md states them: the DLQ (the facts' own, fed by
//! `dead_lettered` and `dlq_evicted`) never holds more than `dlq_capacity`; an entry leaves only
//! by an eviction naming the oldest entry of a full DLQ, or by age past `dlq_retention`; an
//! entry evicted before any reprocess, or a job with no terminal record at the end, is a lost
//! job; a reprocess names an operator and a dead-lettered, held, not yet reprocessed predecessor,
//! and creates the same tenant, document and payload at version + 1, within the tenant's rate
//! limit; a refusal's reason is true of the history.
//! Does not: judge why a job was dead-lettered (`policy.rs`).

use super::facts::{DlqEntry, Facts, Terminal};
use super::Inv;
use super::{Ctx, Verdicts};
use durasim::history::Event;
use durasim::vocab::key::IdempotencyKey;

const DLQ_REASONS: [&str; 2] = ["permanent_error", "max_attempts_exceeded"];

pub fn judge(cx: &Ctx, out: &mut Verdicts) {
    let f = cx.facts;
    let c = &f.config;
    let at = cx.at();
    let u = cx.unit();
    match &cx.r.event {
        Event::DeadLettered { job, reason, .. } => {
            if !DLQ_REASONS.contains(&reason.as_ref()) {
                cx.job_violation(
                    out,
                    Inv::RedactedDlq,
                    *job,
                    format!("{job} entered the DLQ with {reason:?}, not a code"),
                );
            }
            let len = f.dlq.iter().filter(|j| *j != job).count() + 1;
            if let Some(capacity) = c.dlq_capacity.filter(|cap| len > *cap as usize) {
                cx.job_violation(
                    out,
                    Inv::DlqBounded,
                    *job,
                    format!("the DLQ holds {len} entries with {job}, over its capacity {capacity}"),
                );
            }
        }
        Event::DlqEvicted {
            job,
            capacity,
            retention,
        } => {
            if let Some(got) = capacity.filter(|got| Some(*got) != c.dlq_capacity) {
                cx.job_violation(
                    out,
                    Inv::RecordedValuesMatch,
                    *job,
                    format!(
                        "the eviction of {job} says capacity {got}, the header {:?}",
                        c.dlq_capacity
                    ),
                );
            }
            let j = f.job(*job);
            let held = j.dlq == DlqEntry::Held;
            let problem = match (retention, c.dlq_capacity) {
                (Some(recorded), _) => match c.dlq_retention {
                    None => Some("the header states no dlq_retention".to_string()),
                    Some(r) if r.after != *recorded => {
                        Some(format!("retention {recorded}, the header's is {}", r.after))
                    }
                    Some(_) if !held => Some(format!("{job} is not in the DLQ")),
                    Some(r) => match j.terminal {
                        Some((Terminal::DeadLettered, dead_at)) => {
                            let from = if r.from_enqueue {
                                j.enqueued_at
                            } else {
                                dead_at
                            };
                            let age = at.saturating_sub(from);
                            (age <= r.after).then(|| {
                                format!(
                                    "{age} {u} old, not older than the retention {} {u}",
                                    r.after
                                )
                            })
                        }
                        _ => Some(format!("{job} was never dead-lettered")),
                    },
                },
                (None, None) => Some("the DLQ has no capacity".to_string()),
                (None, Some(cap)) if f.dlq.len() < cap as usize => Some(format!(
                    "the DLQ held {} of {cap}: only a full DLQ evicts",
                    f.dlq.len()
                )),
                (None, Some(_)) if f.dlq.front() != Some(job) => Some(format!(
                    "{job} is not the oldest entry ({:?})",
                    f.dlq.front()
                )),
                (None, Some(_)) => None,
            };
            if let Some(p) = problem {
                cx.job_violation(out, Inv::DlqBounded, *job, format!("{job} evicted: {p}"));
            }
            if !j.reprocessed {
                cx.job_violation(
                    out,
                    Inv::NoSilentDrop,
                    *job,
                    format!("{job} left the DLQ before any reprocess: no terminal record remains"),
                );
            }
        }
        Event::Reprocessed {
            old_job,
            new_job,
            operator,
        } => {
            let (o, n) = (f.job(*old_job), f.job(*new_job));
            let problem = if operator.trim().is_empty() {
                Some("no operator".to_string())
            } else if o.dlq == DlqEntry::None {
                // Never dead-lettered; a job dead-lettered after another terminal record (a
                // late write) is in the DLQ all the same.
                Some(format!(
                    "{old_job} is {:?}, never dead-lettered",
                    o.terminal
                ))
            } else if o.dlq != DlqEntry::Held {
                Some(format!("{old_job}'s DLQ entry is gone"))
            } else if o.reprocessed {
                Some(format!("{old_job} was reprocessed already"))
            } else if n.reprocess_of != Some(*old_job) {
                Some(format!(
                    "{new_job} is not recorded as created from {old_job}"
                ))
            } else if n.key.version != o.key.version + 1
                || n.key.document != o.key.document
                || n.tenant != o.tenant
            {
                Some(format!(
                    "{new_job} is not {old_job}'s tenant and document at version + 1"
                ))
            } else if n.payload != o.payload {
                Some(format!(
                    "{new_job} carries {}, {old_job} {}",
                    n.payload, o.payload
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                out.raise(
                    Inv::AuditedReprocess,
                    cx.here(),
                    Some(*new_job),
                    Some(n.key),
                    p,
                );
            }
            if let Some((recent, max, window)) = f.recent_reprocesses(o.tenant, at) {
                if recent >= max as u64 {
                    cx.job_violation(
                        out,
                        Inv::ReprocessJustified,
                        *old_job,
                        format!("{old_job}'s reprocess accepted, its tenant had {recent} in {window} {u} (limit {max})"),
                    );
                }
            }
        }
        Event::ReprocessRefused {
            job,
            operator,
            reason,
        } => {
            let Some(job) = job else {
                if *reason != "no_such_job" {
                    out.raise(
                        Inv::ReprocessJustified,
                        cx.here(),
                        None,
                        None,
                        format!("a reprocess naming no job refused as {reason}"),
                    );
                }
                return;
            };
            let j = f.job(*job);
            let true_reason = match *reason {
                "missing_operator" => operator.as_deref().is_none_or(|o| o.trim().is_empty()),
                "not_dead_lettered" => !matches!(j.terminal, Some((Terminal::DeadLettered, _))),
                "cancelled_is_terminal" => matches!(j.terminal, Some((Terminal::Cancelled, _))),
                "already_reprocessed" => j.reprocessed,
                "evicted" => j.dlq == DlqEntry::Evicted,
                "rate_limited" => f
                    .recent_reprocesses(j.tenant, at)
                    .is_some_and(|(n, max, _)| n >= max as u64),
                "version_exists" => {
                    let next = IdempotencyKey {
                        version: j.key.version + 1,
                        ..j.key
                    };
                    f.key(&next).is_some_and(|k| k.enqueued)
                }
                "version_exhausted" => j.key.version == 0xFFFF,
                _ => false,
            };
            if !true_reason {
                cx.job_violation(
                    out,
                    Inv::ReprocessJustified,
                    *job,
                    format!(
                        "{job}'s reprocess refused as {reason}, which the history does not show"
                    ),
                );
            }
        }
        _ => {}
    }
}

/// At the end (`run_ended`'s time and index): every job has its terminal record, every
/// reprocess's job its audit entry, in job order.
pub fn finish(f: &Facts, end: (u64, usize), out: &mut Verdicts) {
    for (id, j) in &f.jobs {
        if j.terminal.is_none() {
            out.raise(
                Inv::NoSilentDrop,
                end,
                Some(*id),
                Some(j.key),
                format!("{id} has no terminal record"),
            );
        }
        if j.reprocess_of.is_some() && !j.audited {
            out.raise(
                Inv::AuditedReprocess,
                end,
                Some(*id),
                Some(j.key),
                format!("{id} was created by a reprocess with no audit entry"),
            );
        }
    }
}

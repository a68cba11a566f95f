//! Invariant family: the dead-letter queue and operator reprocess.
//!
//! Owns: `redacted_dlq` (a DLQ reason is a closed code), `dlq_bounded` (the checker keeps its own
//! DLQ: never above the configured capacity; an entry leaves only by an eviction record naming
//! the oldest entry of a full DLQ), the eviction half of `no_silent_drop` (an entry evicted
//! before any reprocess is a lost job), `audited_reprocess` (a reprocess names an operator and a
//! predecessor whose entry is held and not yet reprocessed, and creates the same tenant,
//! document and payload at version + 1) and `reprocess_justified` (a refusal's reason is true in
//! the history; an acceptance respects the per-tenant rate limit).
//! Does not: judge why a job was dead-lettered (see `policy`).

use super::checker::{Checker, DlqEntry, Terminal};
use super::invariant::{Invariant, Sometimes};
use crate::base::ids::{JobId, SimTime, TenantId};
use crate::history::Record;
use crate::vocab::codes::DLQ_REASONS;
use crate::vocab::key::IdempotencyKey;
use std::collections::VecDeque;

/// The DLQ as the checker sees it, and the reprocesses each tenant had accepted.
#[derive(Clone, Debug, Default)]
pub(super) struct DlqTrack {
    /// Live entries, oldest first.
    pub entries: VecDeque<JobId>,
    pub size_max: u64,
    /// Per tenant: when its accepted reprocesses happened (kept for the rate limit's window).
    pub reprocesses: Vec<VecDeque<SimTime>>,
}

impl Checker {
    pub(super) fn dlq_push(&mut self, r: &Record, job: JobId, reason: &str) {
        if !DLQ_REASONS.contains(&reason) {
            self.violate_job(Invariant::RedactedDlq, r, job, || {
                format!("{job} entered the DLQ with reason {reason:?}, which is not one of {DLQ_REASONS:?}")
            });
        }
        self.update_job(job, |t| t.dlq = DlqEntry::Held);
        self.dlq.entries.push_back(job);
        let len = self.dlq.entries.len() as u64;
        self.dlq.size_max = self.dlq.size_max.max(len);
        if let Some(capacity) = self.config.dlq_capacity {
            if len > capacity as u64 {
                let oldest = self.dlq.entries[0];
                self.violate_job(Invariant::DlqBounded, r, job, || {
                    format!("the DLQ holds {len} entries with {job}, over its capacity {capacity}: an entry (the oldest is {oldest}) left it without a dlq_evicted record")
                });
                // The queue evidently dropped one: follow it, so one loss is reported once.
                self.dlq.entries.pop_front();
                self.update_job(oldest, |t| t.dlq = DlqEntry::Evicted);
            }
        }
    }

    pub(super) fn dlq_evicted(
        &mut self,
        r: &Record,
        job: JobId,
        recorded: Option<u32>,
        retention: Option<u64>,
    ) {
        let u = self.unit();
        let config = self.config.dlq_capacity;
        if let Some(c) = recorded.filter(|c| Some(*c) != config) {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("the eviction of {job} records capacity {c}, but the header's dlq_capacity is {config:?}")
            });
        }
        let len = self.dlq.entries.len();
        let oldest = self.dlq.entries.front().copied();
        let held = self.read_job(job, |t| t.dlq) == DlqEntry::Held;
        let problem = match (retention, config) {
            (Some(_), _) => self.expiry_problem(r.at, job, held, retention),
            (None, config) => match config {
                None => Some("the DLQ has no capacity, so it never evicts".to_string()),
                Some(c) if len < c as usize => Some(format!(
                    "the DLQ held {len} of {c} entries: only a full DLQ evicts"
                )),
                _ if oldest != Some(job) => Some(match self.read_job(job, |t| t.dlq) {
                    DlqEntry::Held => format!(
                        "{job} is not the oldest entry ({}): a full DLQ evicts its oldest",
                        oldest.map_or("none".into(), |j| j.to_string())
                    ),
                    _ => format!("{job} is not in the DLQ"),
                }),
                _ => None,
            },
        };
        if let Some(p) = problem {
            self.violate_job(Invariant::DlqBounded, r, job, || {
                format!("{job} evicted: {p}")
            });
        }
        if let Some(i) = self.dlq.entries.iter().position(|j| *j == job) {
            self.dlq.entries.remove(i);
        }
        let t = self.job_at(job);
        self.update_job(job, |t| t.dlq = DlqEntry::Evicted);
        // The DLQ entry was the job's terminal record. Unless a reprocess already carried the
        // work on, the job has now left the system with no record of how it ended.
        if !t.reprocessed {
            let capacity = config.map_or("unbounded".to_string(), |c| c.to_string());
            if let Some(keep) = retention {
                self.violate_job(Invariant::NoSilentDrop, r, job, || match t.terminal {
                    Some((_, when)) => format!("{job}, dead-lettered at {when} {u}, expired from the DLQ after its retention of {keep} {u} before any reprocess: it left the system with no terminal record"),
                    None => format!("{job} expired from the DLQ (retention {keep} {u}) without being dead-lettered: it left the system with no terminal record"),
                });
                return;
            }
            self.violate_job(Invariant::NoSilentDrop, r, job, || match t.terminal {
                Some((Terminal::DeadLettered, when)) => format!("{job}, dead-lettered at {when} {u}, was evicted from the full DLQ (capacity {capacity}) before any reprocess: it left the system with no terminal record"),
                other => format!("{job} was evicted from the DLQ (capacity {capacity}) while {:?}, never dead-lettered: it left the system with no terminal record", other.map(|t| t.0)),
            });
        }
    }

    /// What is wrong with an entry expiring by age at `at` (recorded retention `recorded`): the
    /// header states no retention or another, the job is not in the DLQ, or the entry is not yet
    /// older than the retention, counted from its dead-lettering or (`from: "enqueued"`) from
    /// the job's enqueue.
    fn expiry_problem(
        &mut self,
        at: SimTime,
        job: JobId,
        held: bool,
        recorded: Option<u64>,
    ) -> Option<String> {
        let u = self.unit();
        let Some(r) = self.config.dlq_retention else {
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
        let t = self.job_at(job);
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

    /// How many reprocesses `tenant` had accepted in the rate limit's window before `at`.
    fn recent_reprocesses(&mut self, tenant: TenantId, at: SimTime) -> Option<(u32, u32, u64)> {
        let limit = self.config.reprocess_limit?;
        let times = self.dlq.reprocesses.get_mut(tenant.index())?;
        while times
            .front()
            .is_some_and(|t| t.saturating_add(limit.window) <= at)
        {
            times.pop_front();
        }
        Some((times.len() as u32, limit.max, limit.window))
    }

    pub(super) fn reprocessed(
        &mut self,
        r: &Record,
        old_job: JobId,
        new_job: JobId,
        operator: &str,
    ) {
        let old = self.job(old_job);
        let new = self.job(new_job);
        let problem = match (old, new) {
            (Some(o), Some(n)) => {
                if operator.trim().is_empty() {
                    Some("the audit entry has no operator".to_string())
                } else if !matches!(o.terminal, Some((Terminal::DeadLettered, _))) {
                    Some(format!(
                        "{old_job} was reprocessed while {:?}, not dead-lettered",
                        o.terminal.map(|t| t.0)
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
                }
            }
            _ => Some(format!(
                "the audit entry names {old_job} and {new_job}, which were not both enqueued"
            )),
        };
        if let Some(message) = problem {
            let key = new.map(|n| n.key);
            self.violate(
                Invariant::AuditedReprocess,
                r.at,
                Some(new_job),
                key,
                || message,
                || vec![r.clone()],
            );
        }
        if let Some(o) = old {
            if let Some((n, max, window)) = self.recent_reprocesses(o.tenant, r.at) {
                if n >= max {
                    let u = self.unit();
                    self.violate_job(Invariant::ReprocessJustified, r, old_job, || {
                        format!("the reprocess of {old_job} was accepted, but its tenant already had {n} accepted in the last {window} {u} (limit {max})")
                    });
                }
            }
            let i = o.tenant.index();
            if self.dlq.reprocesses.len() <= i {
                self.dlq.reprocesses.resize(i + 1, Default::default());
            }
            self.dlq.reprocesses[i].push_back(r.at);
        }
        if new.is_some() {
            self.update_job(new_job, |t| t.audited = true);
        }
        if old.is_some() {
            self.update_job(old_job, |t| t.reprocessed = true);
        }
    }

    /// A refused reprocess: its reason must be true of the history.
    pub(super) fn reprocess_refused(
        &mut self,
        r: &Record,
        job: Option<JobId>,
        operator: Option<&str>,
        reason: &str,
    ) {
        let Some(job) = job else {
            if reason != "no_such_job" {
                self.violate(
                    Invariant::ReprocessJustified,
                    r.at,
                    None,
                    None,
                    || format!("a reprocess naming no job was refused as {reason}"),
                    || vec![r.clone()],
                );
            }
            return;
        };
        let t = self.job_at(job);
        if t.terminal.is_some_and(|(s, _)| s == Terminal::Cancelled) {
            self.reached(Sometimes::OperatorAtCancelled);
        }
        let operator_missing = operator.is_none_or(|o| o.trim().is_empty());
        let dead = matches!(t.terminal, Some((Terminal::DeadLettered, _)));
        let true_reason = match reason {
            "missing_operator" => operator_missing,
            "not_dead_lettered" => !dead,
            "cancelled_is_terminal" => matches!(t.terminal, Some((Terminal::Cancelled, _))),
            "already_reprocessed" => t.reprocessed,
            "evicted" => t.dlq == DlqEntry::Evicted,
            "rate_limited" => self
                .recent_reprocesses(t.tenant, r.at)
                .is_some_and(|(n, max, _)| n >= max),
            "version_exists" => {
                let next = IdempotencyKey {
                    version: t.key.version + 1,
                    ..t.key
                };
                self.key_track(&next, None).enqueued()
            }
            // `no_such_job` with a job the history enqueued.
            _ => false,
        };
        if !true_reason {
            let u = self.unit();
            let state = match t.terminal {
                Some((s, when)) => format!("{s:?} at {when} {u}"),
                None => "not terminal".to_string(),
            };
            let entry = match t.dlq {
                DlqEntry::None => "no DLQ entry",
                DlqEntry::Held => "its DLQ entry held",
                DlqEntry::Evicted => "its DLQ entry evicted",
            };
            self.violate_job(Invariant::ReprocessJustified, r, job, || {
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

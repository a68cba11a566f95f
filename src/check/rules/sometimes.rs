//! The `sometimes` properties: what the checker counts to prove a fault path ran (a sweep requires
//! some of them to be reached). Counted, never violated.
//!
//! Owns: the count of each [`Sometimes`], from the records and the facts before them.
//! Does not: judge anything (it owns no invariant).

use super::{Ctx, Family, Out};
use crate::check::facts::Terminal;
use crate::check::invariant::{Invariant, Sometimes};
use crate::history::Event;
use crate::vocab::faults::Held;
use crate::vocab::faults::Struck;

#[derive(Hash)]
pub(in crate::check) struct Counts(pub Vec<u64>);

impl Default for Counts {
    fn default() -> Self {
        Counts(vec![0; Sometimes::ALL.len()])
    }
}

impl Counts {
    #[inline]
    fn add(&mut self, s: Sometimes) {
        self.0[s.index()] += 1;
    }
}

impl Family for Counts {
    const READS: u64 = {
        use super::k::*;
        ENQUEUE_DEDUPED
            | ENQUEUE_CONFLICT
            | COMMIT_CONFLICT
            | LEASED
            | LEASE_EXPIRED
            | HEARTBEAT
            | REJECTED
            | EXTRACT_STARTED
            | HELD
            | COMMIT_DEDUPED
            | ACKED
            | RETRY_SCHEDULED
            | DEAD_LETTERED
            | CANCELLED
            | DLQ_EVICTED
            | WORKER_CRASHED
            | STRUCK
            | DUPLICATE_EVENT
            | REPROCESSED
            | REPROCESS_REFUSED
    };
    const OWNS: &'static [Invariant] = &[];

    #[inline(always)]
    fn judge(&mut self, c: &Ctx, _out: &mut Out) {
        match &c.r.event {
            Event::EnqueueDeduped { .. } => self.add(Sometimes::EnqueueDeduped),
            Event::EnqueueConflict { .. } | Event::CommitConflict { .. } => {
                self.add(Sometimes::PayloadConflict)
            }
            Event::Leased { job, .. } => {
                let t = c.track(*job);
                if let (Some(l), Some(end)) = (t.held(), t.lease_end(c.config())) {
                    if c.at() > end && l.renewed {
                        self.add(Sometimes::RenewedLeaseExpired);
                    }
                }
            }
            Event::LeaseExpired { job, fence } => {
                self.add(Sometimes::LeaseExpired);
                let t = c.track(*job);
                if let (Some(l), Some(end)) = (t.held(), t.lease_end(c.config())) {
                    if l.fence == *fence && c.at() > end && l.renewed {
                        self.add(Sometimes::RenewedLeaseExpired);
                    }
                }
            }
            Event::Heartbeat { .. } => self.add(Sometimes::HeartbeatRenewed),
            // A writer whose token is not the job's latest was refused, whatever the reason the
            // queue gave.
            Event::Rejected { job, presented, .. } if c.track(*job).fence() != Some(*presented) => {
                self.add(Sometimes::StaleFenceRejected)
            }
            Event::ExtractStarted { stalled: true, .. } => self.add(Sometimes::Held(Held::Stall)),
            // A stall is counted at its `extract_started` (a recorder may leave `stall_began`
            // out); every other held fault at its own record.
            Event::Held(h) if h.fault != Held::Stall => self.add(Sometimes::Held(h.fault)),
            Event::CommitDeduped { .. } => self.add(Sometimes::CommitDeduped),
            Event::Acked { job, .. } if c.track(*job).reprocessed_from.is_some() => {
                self.add(Sometimes::ReprocessSucceeded)
            }
            Event::RetryScheduled { .. } => self.add(Sometimes::RetryScheduled),
            Event::DeadLettered { .. } => self.add(Sometimes::DeadLettered),
            Event::Cancelled { .. } => self.add(Sometimes::DeadlineCancellation),
            Event::DlqEvicted { .. } => self.add(Sometimes::DlqEvicted),
            Event::WorkerCrashed { .. } | Event::WorkerLost { .. } => {
                self.add(Sometimes::WorkerCrashed)
            }
            Event::RelayLost {} => self.add(Sometimes::Struck(Struck::RelayCrash)),
            Event::Struck(s) => self.add(Sometimes::Struck(s.fault)),
            Event::DuplicateEvent { .. } => self.add(Sometimes::RepublishAbsorbed),
            Event::Reprocessed { .. } => self.add(Sometimes::Reprocessed),
            Event::ReprocessRefused { job: Some(job), .. } => {
                let t = c.track(*job);
                if t.terminal.is_some_and(|(s, _)| s == Terminal::Cancelled) {
                    self.add(Sometimes::OperatorAtCancelled);
                }
            }
            _ => {}
        }
    }
}

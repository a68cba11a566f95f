//! Invariant family: the detection of a lease's end.
//!
//! Owns: `lease_end_detected` (docs/checker-rules.md): with `lease_expired` in the header's
//! `emits` and its `lease_detection` stated, a lease that ends without renewal or release is
//! recorded as expired by the detection deadline the header's rule gives (a timer: just after
//! the end; a sweeper: its first tick after; BullMQ's two passes; plus a rescue's slack). Its
//! own state: the deadline of each lease and renewal, in the order they come (a deadline is a
//! non-decreasing function of the renewal's time, and records come in time order, so a queue
//! kept in arrival order is kept in deadline order).
//! Does not: judge an early `lease_expired` (`recorded`) or a second lease (`leases`).

use super::{Ctx, Family, Out, Spec};
use crate::base::ids::{Fence, JobId, SimTime};
use crate::check::facts::Facts;
use crate::check::invariant::{Invariant, Kind};
use crate::history::{Event, Record};
use std::collections::VecDeque;

pub(in crate::check) const LEASE_END_DETECTED: Spec = Spec {
    name: "lease_end_detected",
    kind: Kind::Always,
    sentence: "a lease that ends without renewal or release is recorded as expired within the queue's own detection bound, stated by the header's lease_detection",
};

/// A lease's detection deadline: the deadline, the job, the lease's token and last renewal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Deadline {
    at: SimTime,
    job: u32,
    fence: u64,
    renewed_at: SimTime,
}

#[derive(Default, Hash)]
pub(in crate::check) struct Detection {
    deadlines: VecDeque<Deadline>,
}

impl Family for Detection {
    const READS: u64 = super::k::ALL;
    const OWNS: &'static [Invariant] = &[Invariant::LeaseEndDetected];

    /// Before each record: the deadlines it passes, of leases still held as they were.
    #[inline(always)]
    fn judge(&mut self, c: &Ctx, out: &mut Out) {
        if self.deadlines.front().is_none_or(|d| d.at >= c.at()) {
            return;
        }
        self.overdue(c, out);
    }
}

impl Detection {
    fn overdue(&mut self, c: &Ctx, out: &mut Out) {
        let mut overdue = Vec::new();
        while let Some(d) = self.deadlines.front().copied().filter(|d| d.at < c.at()) {
            self.deadlines.pop_front();
            let held = c
                .facts
                .held_lease(JobId(d.job))
                .is_some_and(|l| l.fence == Fence(d.fence) && l.renewed_at == d.renewed_at);
            if held {
                overdue.push(d);
            }
        }
        if overdue.is_empty() {
            return;
        }
        // A lease renewed twice at one time (a `leased` and a `heartbeat` at its time) queued
        // its deadline twice, with others between: one violation a lease and renewal.
        overdue.sort_unstable();
        overdue.dedup();
        let (at, u) = (c.at(), c.unit());
        for d in overdue {
            let (job, fence) = (JobId(d.job), Fence(d.fence));
            out.job(Invariant::LeaseEndDetected, c, job, || {
                format!(
                    "{job}'s lease {fence}, last renewed at {} {u}, had to be recorded as expired by {} {u}, but at {at} {u} it is still held",
                    d.renewed_at, d.at
                )
            });
        }
    }

    /// After a record is applied: a lease it took or renewed gets its deadline.
    #[inline]
    pub fn after(&mut self, r: &Record, facts: &Facts) {
        let (Event::Leased { job, fence, .. } | Event::Heartbeat { job, fence, .. }) = &r.event
        else {
            return;
        };
        let config = facts.config();
        let Some(rule) = config
            .lease_detection
            .filter(|_| config.emits.lease_expired)
        else {
            return;
        };
        let t = facts.job_at(*job);
        let Some(l) = t
            .held()
            .filter(|l| l.fence == *fence && l.renewed_at == r.at)
        else {
            return;
        };
        let end = l.renewed_at.saturating_add(config.lease);
        let d = Deadline {
            at: rule.deadline(l.renewed_at, end),
            job: job.0,
            fence: fence.0,
            renewed_at: l.renewed_at,
        };
        if self.deadlines.back() != Some(&d) {
            debug_assert!(
                self.deadlines.back().is_none_or(|b| b.at <= d.at),
                "deadlines come in order"
            );
            self.deadlines.push_back(d);
        }
    }
}

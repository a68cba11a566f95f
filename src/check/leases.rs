//! Invariant family: leases and fences.
//!
//! Owns: `fencing_token_increases` (every lease of a job carries a larger token than the last),
//! `fenced_writes` (an accepted write comes from the current holder: the worker of the job's
//! latest lease, with its token; a heartbeat only while that lease is live), `single_live_lease`
//! (no lease while another is live), `attempts_bounded`, `deadline_respected`, and the
//! cross-checks of what a recorder wrote about leases (`lease_until`, `attempt`, `lease_expired`).
//! A lease's end is recomputed: the lease or its last heartbeat + the configured lease; a lease
//! is live through its end.
//! Does not: judge retries or backoff (see `policy`) or the queue depth (see `metrics`).

use super::checker::Checker;
use super::invariant::{Invariant, Sometimes};
use crate::base::ids::{Fence, JobId, SimTime, WorkerId};
use crate::history::Record;

impl Checker {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_leased(
        &mut self,
        r: &Record,
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        attempt: Option<u32>,
        lease_until: Option<SimTime>,
        visible_at: Option<SimTime>,
    ) {
        let at = r.at;
        let u = self.unit();
        let t = self.job_at(job);
        if t.leases > 0 && fence <= t.fence {
            self.violate_job(Invariant::FencingTokenIncreases, r, job, || {
                format!(
                    "{job} leased with {fence}, which is not greater than its previous token {}",
                    t.fence
                )
            });
        }
        let end = t.lease_end(&self.config);
        if t.lease_held && at <= end {
            self.violate_job(Invariant::SingleLiveLease, r, job, || {
                format!(
                    "{job} leased with {fence} at {at} {u} while the lease {} (taken at {} {u}, renewed at {} {u}) is live until {end} {u}",
                    t.fence, t.leased_at, t.renewed_at
                )
            });
        }
        if t.lease_held && at > end && t.renewed {
            self.reached(Sometimes::RenewedLeaseExpired);
        }
        let leases = t.leases + 1;
        let max = self.config.attempts_max;
        if leases > max {
            self.violate_job(Invariant::AttemptsBounded, r, job, || {
                format!("{job} leased for attempt {leases} (max_attempts = {max})")
            });
        }
        if at > t.deadline_at {
            let deadline = self.config.deadline;
            self.violate_job(Invariant::DeadlineRespected, r, job, || {
                format!(
                    "{job} leased at {at} {u}, after its deadline at {} {u} (enqueued at {} {u} + deadline {deadline} {u})",
                    t.deadline_at, t.enqueued_at
                )
            });
        }
        if at < t.visible_from {
            self.violate_job(Invariant::BackoffRespected, r, job, || {
                format!(
                    "{job} leased at {at} {u}, before its visible time {} {u}",
                    t.visible_from
                )
            });
        }
        if let Some((state, when)) = t.terminal {
            self.violate_job(Invariant::TerminalOnce, r, job, || {
                format!("{job} leased again after it was {state:?} at {when} {u}")
            });
        }
        if let Some(a) = attempt.filter(|a| *a != leases) {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!(
                    "{job}'s lease records attempt {a}, but it is the job's lease number {leases}"
                )
            });
        }
        self.cross_check_time(
            r,
            job,
            "lease_until",
            lease_until,
            at.saturating_add(self.config.lease),
        );
        self.cross_check_time(r, job, "visible_at", visible_at, t.visible_from);
        self.update_job(job, |tm| {
            tm.leases = leases;
            tm.fence = fence;
            tm.holder = worker;
            tm.leased_at = at;
            tm.renewed_at = at;
            tm.renewed = false;
            tm.lease_held = true;
            tm.failure = None;
        });
        self.depth_leased(at, job);
    }

    pub(super) fn on_heartbeat(
        &mut self,
        r: &Record,
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        lease_until: Option<SimTime>,
    ) {
        self.reached(Sometimes::HeartbeatRenewed);
        self.fenced(r, job, Some(worker), fence, "heartbeat");
        let at = r.at;
        let u = self.unit();
        let config = &self.config;
        let (end, latest, live, held) = self.read_job(job, |t| {
            let live = t.terminal.is_none();
            (t.lease_end(config), t.fence, live, t.lease_held)
        });
        if fence == latest && live {
            if !held {
                self.violate_job(Invariant::FencedWrites, r, job, || {
                    format!("heartbeat of {job} with {fence} accepted at {at} {u}, but that lease was already released or expired")
                });
            } else if at > end {
                self.violate_job(Invariant::FencedWrites, r, job, || {
                    format!("heartbeat of {job} with {fence} accepted at {at} {u}, after its lease ended at {end} {u}")
                });
            }
            self.update_job(job, |tm| {
                tm.renewed_at = at;
                tm.renewed = true;
            });
            self.depth_renewed(at, job);
        }
        self.cross_check_time(
            r,
            job,
            "lease_until",
            lease_until,
            at.saturating_add(self.config.lease),
        );
    }

    /// An accepted write by a lease holder (`worker` absent: the recorder did not say who). The
    /// token must be the job's latest, the writer its holder, and the job not terminal.
    pub(super) fn fenced(
        &mut self,
        r: &Record,
        job: JobId,
        worker: Option<WorkerId>,
        fence: Fence,
        what: &'static str,
    ) {
        let u = self.unit();
        let (leases, latest, holder, leased_at, terminal) = self.read_job(job, |t| {
            (t.leases, t.fence, t.holder, t.leased_at, t.terminal)
        });
        if leases == 0 {
            self.violate_job(Invariant::FencedWrites, r, job, || {
                format!("{what} of {job} accepted with {fence}, but the job was never leased")
            });
        } else if latest != fence {
            self.violate_job(Invariant::FencedWrites, r, job, || {
                format!(
                    "{what} of {job} accepted with {fence}, but the current lease holds {latest}"
                )
            });
        } else if let Some(w) = worker.filter(|w| *w != holder) {
            self.violate_job(Invariant::FencedWrites, r, job, || {
                format!(
                    "{what} of {job} with {fence} accepted from {w}, but {fence} was issued to {holder} at {leased_at} {u}"
                )
            });
        }
        if let Some((state, when)) = terminal {
            self.violate_job(Invariant::TerminalOnce, r, job, || {
                format!("{what} of {job} accepted after it was already {state:?} at {when} {u}")
            });
        }
    }

    pub(super) fn on_lease_expired(&mut self, r: &Record, job: JobId, fence: Fence) {
        self.reached(Sometimes::LeaseExpired);
        let at = r.at;
        let u = self.unit();
        let t = self.job_at(job);
        let end = t.lease_end(&self.config);
        if fence != t.fence || !t.lease_held {
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!("lease_expired for {job} with {fence}, which is not a held lease (latest {}, held: {})", t.fence, t.lease_held)
            });
            return;
        }
        if at <= end {
            // The recorder expired a lease the configuration says is live: the lease stays
            // held for `single_live_lease`, and the job is visible for the depth (it is).
            self.violate_job(Invariant::RecordedValuesMatch, r, job, || {
                format!(
                    "lease_expired for {job} at {at} {u}, but its lease {fence} (renewed at {} {u}) is live until {end} {u}",
                    t.renewed_at
                )
            });
        } else {
            if t.renewed {
                self.reached(Sometimes::RenewedLeaseExpired);
            }
            self.update_job(job, |t| t.lease_held = false);
        }
        self.depth_expired_record(r, job);
    }
}

//! Lease-end detection (docs/queues.md M3): when does the store notice that a lease ended?
//!
//! Owns: the moment a lease is detected as ended, as a pure function of the lease and the
//! profile's expiry kind: an exact timer (durasim, SQS, pgmq), a periodic sweeper that takes
//! leases past their horizon (River, Oban's Lifeline, graphile-worker, pg-boss), BullMQ's
//! two-pass stalled checker, a sweeper over worker processes whose heartbeat is older than
//! `liveness_ms` (procrastinate's recipe: the process heartbeat renews the liveness of every job
//! it holds, so the lease is `liveness_ms` renewed at each process heartbeat), or never. Sweepers tick at every multiple of their period from time 0, so the
//! kernel needs no tick events: it checks at the computed moment and asks again if a renewal
//! moved it.
//! Does not: change the job (the queue does), or decide what a rescue does (see `OnExpiry`).

use super::params::{Expiry, ExpiryKind};
use crate::base::ids::SimTime;

/// A lease as the detector sees it. Under `worker_liveness` the lease is the holder process's
/// liveness: each process heartbeat renews it for `liveness_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeaseView {
    /// When the lease was last taken or renewed (BullMQ's renewal unmarks the job).
    pub renewed_at: SimTime,
    /// The lease is live through this moment.
    pub lease_until: SimTime,
}

/// The first sweeper tick (a multiple of `every`, from `every` on) strictly after `t`.
pub fn next_tick(every: SimTime, t: SimTime) -> SimTime {
    assert!(every > 0, "a sweeper needs a period");
    (t / every + 1).saturating_mul(every)
}

/// When the lease is detected as ended, or `None` if it never will be (as things stand: a
/// renewal or the process's death can change it, and the caller asks again).
pub fn detected_at(expiry: Expiry, lease: LeaseView) -> Option<SimTime> {
    match expiry.kind {
        ExpiryKind::Timer => Some(lease.lease_until + 1),
        // A sweeper over leases, or over process heartbeats older than `liveness_ms`.
        ExpiryKind::Sweep | ExpiryKind::WorkerLiveness => {
            Some(next_tick(expiry.sweep_ms, lease.lease_until))
        }
        ExpiryKind::TwoPass => {
            // Marked at the first pass after the last renewal; moved at the first later pass at
            // which the lock is gone.
            let marked = next_tick(expiry.sweep_ms, lease.renewed_at);
            let gone = lease.lease_until.max(marked);
            Some(next_tick(expiry.sweep_ms, gone))
        }
        ExpiryKind::Never => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(renewed_at: SimTime, lease_until: SimTime) -> LeaseView {
        LeaseView {
            renewed_at,
            lease_until,
        }
    }

    #[test]
    fn a_timer_fires_just_after_the_lease() {
        assert_eq!(detected_at(Expiry::TIMER, lease(0, 1_000)), Some(1_001));
    }

    // River: a job attempted at 0 with a 1 h horizon is taken by the first 30 s tick after 1 h.
    #[test]
    fn a_sweeper_takes_the_lease_at_its_first_tick_past_the_horizon() {
        let river = Expiry::sweep(30_000);
        assert_eq!(detected_at(river, lease(0, 3_600_000)), Some(3_630_000));
        assert_eq!(detected_at(river, lease(5, 3_600_005)), Some(3_630_000));
        assert_eq!(
            detected_at(river, lease(29_999, 3_629_999)),
            Some(3_630_000)
        );
        assert_eq!(
            detected_at(river, lease(30_000, 3_630_000)),
            Some(3_660_000)
        );
    }

    // BullMQ: lockDuration 30 s, stalledInterval 30 s. A lease taken at 0 and never renewed is
    // marked at 30 s (the lock lives through 30 s) and moved at 60 s.
    #[test]
    fn the_two_pass_checker_needs_a_mark_and_a_lapsed_lock() {
        let bull = Expiry::two_pass(30_000);
        assert_eq!(detected_at(bull, lease(0, 30_000)), Some(60_000));
        // Taken at 10 s: marked at 30 s, lock gone after 40 s, moved at 60 s.
        assert_eq!(detected_at(bull, lease(10_000, 40_000)), Some(60_000));
        // Renewed at 45 s: unmarked; marked again at 60 s; lock gone after 75 s; moved at 90 s.
        assert_eq!(detected_at(bull, lease(45_000, 75_000)), Some(90_000));
    }

    // procrastinate's recipe: a process heartbeat every 10 s keeps a 30 s liveness; the process
    // died after its heartbeat at 1 s, so the 10-minute task finds it stale at 600 s.
    #[test]
    fn worker_liveness_sweeps_processes_whose_heartbeat_is_too_old() {
        let recipe = Expiry::worker_liveness(30_000, 600_000);
        assert_eq!(detected_at(recipe, lease(1_000, 31_000)), Some(600_000));
        assert_eq!(
            detected_at(recipe, lease(590_000, 620_000)),
            Some(1_200_000)
        );
        assert_eq!(detected_at(Expiry::NEVER, lease(1_000, 31_000)), None);
    }
}

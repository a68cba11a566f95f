//! The end of a lease, on the kernel's side: timers, checks and rescues at the times the queue
//! returns.
//!
//! Owns: arming a lease check when the holder will not renew or release its lease in time (it
//! sleeps past `lease_until`, stalls or dies), and what the kernel does with each
//! [`LeaseCheck`] and [`Rescued`] outcome: schedule the next check, a sweeper's late rescue
//! write (`RescueWrite`) or a held job's release (`RescueVisible`), draw the rescue's jitter
//! when the queue asks for it, record the lease's end and hand the job out again.
//! Does not: decide when a lease's end is detected or what a rescue does to the job: the queue
//! semantics does (`model::semantics` for the chapter's exact timer, `model::profiled_queue`
//! for a profile's sweeper, stalled checker or rescuer).

use super::kernel::{Ev, Sim};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::history::{Event, Observer};
use crate::model::queue::JobState;
use crate::model::semantics::{LeaseCheck, QueueSemantics, Rescued};
use crate::vocab::probes::Probe;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    /// Arms the lease-expiry timer for the attempt's lease, once per attempt, and only when the
    /// holder will not renew or release it in time (it sleeps past leaseUntil, stalls or dies).
    /// Healthy attempts never pay for a timer; the trace is the same as arming one every lease.
    pub(super) fn arm_expiry(&mut self, w: WorkerId, job: JobId, fence: Fence) {
        let slot = &mut self.workers[w.index()];
        if slot.expiry_armed {
            return;
        }
        slot.expiry_armed = true;
        let j = self.queue.job(job);
        if j.fence != fence || j.state != JobState::Leased {
            self.probes.hit(Probe::ExpiryArmedStale);
            return;
        }
        match self.queue.lease_check_at(job) {
            Some(at) => {
                self.probes.hit(Probe::ExpiryArmed);
                self.schedule(
                    at,
                    Ev::LeaseCheck {
                        job: job.0,
                        fence: fence.0,
                    },
                );
            }
            None => self.probes.hit(Probe::ExpiryNeverDetected),
        }
    }

    /// A lease check fired: the queue looks at lease `fence` of `job` now.
    pub(super) fn on_lease_check(&mut self, job: JobId, fence: Fence) {
        match self.queue.check_lease(self.now, job, fence) {
            LeaseCheck::Nothing => {}
            LeaseCheck::Again(at) => self.schedule(
                at,
                Ev::LeaseCheck {
                    job: job.0,
                    fence: fence.0,
                },
            ),
            LeaseCheck::Expired => self.lease_ended(job, fence),
            LeaseCheck::RescueAt(at) => self.schedule(
                at,
                Ev::RescueWrite {
                    job: job.0,
                    fence: fence.0,
                },
            ),
            LeaseCheck::Rescue => self.rescue(job, fence),
        }
    }

    /// The queue's rescuer takes `job` (lease `fence`) back: now, or as a sweeper's write by
    /// id `rescue_gap_ms` after its read (whatever the job is by then; riverqueue/river#1302).
    pub(super) fn rescue(&mut self, job: JobId, fence: Fence) {
        let draw = if self.queue.rescue_draws_jitter() {
            self.jitter_stream.unit()
        } else {
            0.0
        };
        match self.queue.rescue(self.now, job, fence, draw) {
            Rescued::Ready => self.lease_ended(job, fence),
            // The history records the lease's end when the hold is over, so the job is neither
            // leasable nor counted in the depth meanwhile, on either side.
            Rescued::HeldUntil(visible_at) => self.schedule(
                visible_at,
                Ev::RescueVisible {
                    job: job.0,
                    fence: fence.0,
                },
            ),
        }
    }

    /// A sweeper's write by id, `rescue_gap_ms` after it read the job, lands now.
    pub(super) fn on_rescue_write(&mut self, job: JobId, fence: Fence) {
        self.probes.hit(Probe::RescueWriteLate);
        self.rescue(job, fence);
    }

    /// A rescued job's hold is over: the rescue is recorded as the lease's end, and the job is
    /// ready again (unless it moved on meanwhile).
    pub(super) fn on_rescue_visible(&mut self, job: JobId, fence: Fence) {
        if self.queue.release_rescued(job, fence) {
            self.lease_ended(job, fence);
        }
    }

    /// The lease's end is recorded and the ready job handed out.
    fn lease_ended(&mut self, job: JobId, fence: Fence) {
        self.record(Event::LeaseExpired { job, fence });
        self.hand_out();
    }
}

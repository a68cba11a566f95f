//! Liveness per process (a version 2 header's `liveness: {"per": "process"}`): each worker's last
//! `worker_heartbeat`, and the reducer's step that renews every lease the worker still holds.
//! Does not: decide when a lease ends (`JobTrack::lease_end`) or judge (`rules/`).

use super::Facts;
use crate::base::ids::{SimTime, WorkerId};

impl Facts {
    /// The worker's last `worker_heartbeat` (liveness per process).
    pub fn last_beat(&self, worker: WorkerId) -> Option<SimTime> {
        self.beats.get(worker.index()).copied().flatten()
    }

    /// A worker's heartbeat (liveness per process): every lease it still holds is renewed.
    pub(super) fn beat(&mut self, worker: WorkerId, at: SimTime) {
        let i = worker.index();
        if self.beats.len() <= i {
            self.beats.resize(i + 1, None);
        }
        self.beats[i] = Some(at);
        let Some(jobs) = self.held_by.get_mut(i).map(std::mem::take) else {
            return;
        };
        let mut still = Vec::with_capacity(jobs.len());
        for job in jobs {
            let renewed = self.update(job, |t| match t.lease.as_mut() {
                Some(l) if l.holder == worker && t.lease_held && t.terminal.is_none() => {
                    l.renewed_at = at;
                    l.renewed = true;
                    Some(l.fence)
                }
                _ => None,
            });
            if let Some(fence) = renewed {
                self.renewed(job, fence, at);
                still.push(job);
            }
        }
        self.held_by[i] = still;
    }
}

//! BullMQ's stall counter (docs/queues.md M4, `on_expiry = "stall"`).
//!
//! Owns: per job, how many times the stalled checker moved it back, and whether it is doomed:
//! past `stall_limit` (`maxStalledCount`) the job still goes back to wait, marked so that the
//! next worker to fetch it fails it at once as unrecoverable ("job stalled more than allowable
//! limit", `moveStalledJobsToWait-9.lua`, `worker.ts`). A stall is not an attempt.
//! Does not: detect stalls (see `detection`) or file the DLQ entry (the kernel does).

/// One job's stalls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stalls {
    pub count: u32,
    pub doomed: bool,
}

impl Stalls {
    /// The checker moved the job back to wait.
    pub fn stalled(&mut self, limit: u32) {
        self.count += 1;
        if self.count > limit {
            self.doomed = true;
        }
    }

    /// A worker fetched the job: true if it must fail it at once.
    pub fn fails_on_fetch(&self) -> bool {
        self.doomed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_stall_dooms_the_job_under_max_stalled_count_one() {
        let mut s = Stalls::default();
        s.stalled(1);
        assert!(!s.fails_on_fetch(), "one stall is allowed");
        s.stalled(1);
        assert!(s.fails_on_fetch());
        assert_eq!(s.count, 2);
        let mut none_allowed = Stalls::default();
        none_allowed.stalled(0);
        assert!(none_allowed.fails_on_fetch());
    }
}

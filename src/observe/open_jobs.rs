//! The createdAt of the jobs the metrics still wait on: a window of job ids from the oldest job
//! without a terminal record to the newest job, so it follows live work instead of every job
//! ever enqueued.
//!
//! Owns: each open job's createdAt (jobAgeMs is its terminal time minus it) and the unfinished
//! count at the end. Job ids are dense in enqueue order (the kernel numbers them so, the history
//! reader interns them so), so a finished job is dropped once every older one has finished: a
//! bench run keeps a few thousand entries where it kept 8 bytes for every job, and a job that
//! never ends holds the window open from its id on (never more than the 8 bytes a job kept
//! before).
//! Does not: know tenants, histograms or records (`metrics.rs` does).

use crate::base::ids::{JobId, SimTime};
use std::collections::VecDeque;

/// A job that has ended, or an id no `enqueued` record named.
const DONE: SimTime = SimTime::MAX;

#[derive(Clone, Debug, Default, Hash)]
pub struct OpenJobs {
    /// createdAt of the jobs `start`, `start + 1`, ...; [`DONE`] once ended.
    created_at: VecDeque<SimTime>,
    /// The oldest job id still in the window: every job below it has ended.
    start: usize,
}

impl OpenJobs {
    /// A job was enqueued at `at`. Ids come in increasing order; one the window has already
    /// dropped (an id below an ended one, enqueued after it ended) cannot come from the kernel
    /// or the reader, and is not counted.
    pub fn open(&mut self, job: JobId, at: SimTime) {
        let Some(i) = job.index().checked_sub(self.start) else {
            debug_assert!(
                false,
                "{job} enqueued after every job up to {} had ended",
                self.start
            );
            return;
        };
        if self.created_at.len() <= i {
            self.created_at.resize(i + 1, DONE);
        }
        self.created_at[i] = at;
    }

    /// The job reached its terminal record: its createdAt the first time (`None` when it had
    /// already ended, or was never enqueued).
    pub fn close(&mut self, job: JobId) -> Option<SimTime> {
        let i = job.index().checked_sub(self.start)?;
        let created = std::mem::replace(self.created_at.get_mut(i)?, DONE);
        if created == DONE {
            return None;
        }
        while self.created_at.front() == Some(&DONE) {
            self.created_at.pop_front();
            self.start += 1;
        }
        Some(created)
    }

    /// Jobs enqueued and not ended.
    pub fn unfinished(&self) -> usize {
        self.created_at.iter().filter(|c| **c != DONE).count()
    }

    /// Entries held: the jobs from the oldest open one on.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.created_at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_the_oldest_open_job() {
        let mut o = OpenJobs::default();
        for j in 0..5 {
            o.open(JobId(j), 100 + j as u64);
        }
        assert_eq!(o.unfinished(), 5);
        assert_eq!(o.close(JobId(2)), Some(102));
        assert_eq!(
            o.close(JobId(2)),
            None,
            "a second terminal record is not counted"
        );
        assert_eq!(o.held(), 5, "job 0 is open: nothing is dropped");
        assert_eq!(o.close(JobId(0)), Some(100));
        assert_eq!(o.held(), 4);
        assert_eq!(o.close(JobId(1)), Some(101));
        assert_eq!(o.held(), 2, "jobs 0-2 ended: the window starts at job 3");
        assert_eq!(o.close(JobId(0)), None, "a late record for a dropped job");
        assert_eq!(o.unfinished(), 2);
        // A gap (an id no record named) counts as ended.
        o.open(JobId(7), 700);
        assert_eq!(o.unfinished(), 3);
        assert_eq!(o.close(JobId(6)), None);
        assert_eq!(o.close(JobId(9)), None);
        o.close(JobId(3));
        o.close(JobId(4));
        assert_eq!(o.held(), 1);
        assert_eq!(o.close(JobId(7)), Some(700));
        assert_eq!((o.held(), o.unfinished()), (0, 0));
        o.open(JobId(8), 800);
        assert_eq!((o.held(), o.unfinished()), (1, 1));
    }
}

//! Whether each job's document fails validation: one bit a job, for the whole run.
//!
//! Owns: per job, the validity its arrival drew (or a `replace` resubmission brought), which
//! every attempt of the job and a reprocess of it read back. Bits in 64-bit words: an eighth of
//! a byte a job.
//! Does not: draw it (`arrivals.rs`) or act on it (the worker's plan, `attempts.rs`).

use crate::base::ids::JobId;

#[derive(Clone, Debug, Default, Hash)]
pub struct JobValidity {
    words: Vec<u64>,
    jobs: u32,
}

impl JobValidity {
    pub fn with_capacity(jobs: usize) -> JobValidity {
        JobValidity {
            words: Vec::with_capacity(jobs.div_ceil(64)),
            jobs: 0,
        }
    }

    /// The next job created (jobs are numbered 0, 1, 2, ...) fails validation if `invalid`.
    #[inline]
    pub fn push(&mut self, job: JobId, invalid: bool) {
        assert_eq!(job.0, self.jobs, "jobs are created in id order");
        let bit = job.0 % 64;
        if bit == 0 {
            self.words.push(0);
        }
        self.jobs += 1;
        if let Some(word) = self.words.last_mut() {
            *word |= u64::from(invalid) << bit;
        }
    }

    /// Whether `job`'s document fails validation.
    #[inline]
    pub fn invalid(&self, job: JobId) -> bool {
        assert!(job.0 < self.jobs, "job {} was never created", job.0);
        self.words[job.index() / 64] >> (job.0 % 64) & 1 == 1
    }

    /// `job` now carries a request that validates or not (`unique = "replace"`).
    pub fn set(&mut self, job: JobId, invalid: bool) {
        assert!(job.0 < self.jobs, "job {} was never created", job.0);
        let bit = 1u64 << (job.0 % 64);
        let word = &mut self.words[job.index() / 64];
        match invalid {
            true => *word |= bit,
            false => *word &= !bit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_come_back_across_words_and_a_set_changes_only_its_job() {
        let mut v = JobValidity::with_capacity(3);
        let pattern = |i: u32| i.is_multiple_of(3) || i == 64 || i == 127;
        for i in 0..130 {
            v.push(JobId(i), pattern(i));
        }
        assert_eq!(v.words.len(), 3);
        for i in 0..130 {
            assert_eq!(v.invalid(JobId(i)), pattern(i), "job {i}");
        }
        v.set(JobId(64), false);
        v.set(JobId(65), true);
        for i in 0..130 {
            let want = match i {
                64 => false,
                65 => true,
                _ => pattern(i),
            };
            assert_eq!(v.invalid(JobId(i)), want, "job {i}");
        }
    }

    #[test]
    #[should_panic(expected = "never created")]
    fn a_job_not_created_has_no_bit() {
        let mut v = JobValidity::default();
        v.push(JobId(0), true);
        v.invalid(JobId(1));
    }
}

//! Progress: how many jobs of a run have settled, told to whoever watches.
//!
//! Owns: counting the jobs that reached a terminal state (acked, dead-lettered, cancelled) as the
//! history streams by, and handing the count to a [`ProgressSink`] every 4,096 of them.
//! Does not: draw anything. The shell passes a sink that moves a terminal progress bar; the run
//! never waits on it and nothing it does reaches the history.

use crate::history::{Event, Record};
use std::sync::Arc;

/// Where progress goes: called with (jobs settled, jobs in the run).
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(u64, u64) + Send + Sync>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Counts settled jobs and reports every 4,096 of them.
pub struct Progress {
    sink: ProgressSink,
    jobs: u64,
    done: u64,
}

impl Progress {
    pub fn new(sink: ProgressSink, jobs: u64) -> Progress {
        (sink.0)(0, jobs);
        Progress {
            sink,
            jobs,
            done: 0,
        }
    }

    #[inline]
    pub fn observe(&mut self, r: &Record) {
        if matches!(
            r.event,
            Event::Acked { .. } | Event::DeadLettered { .. } | Event::Cancelled { .. }
        ) {
            self.done += 1;
            if self.done.is_multiple_of(4096) {
                (self.sink.0)(self.done, self.jobs);
            }
        }
    }
}

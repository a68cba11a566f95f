//! The write guard (docs/queues.md M1): does the store take a heartbeat, ack, retry or
//! dead-letter from a worker that may no longer hold the job?
//!
//! Owns: the verdict for one write, from the guard the profile sets for that operation and the
//! job's state as the store sees it: accepted (the normal record, with the fence the writer
//! presented, so the checker's `fenced_writes` or `terminal_once` speaks), rejected (the writer
//! is told), or ignored (a store-side no-op; under `may_apply` the writer is even told success).
//! Does not: change the job (the queue applies an accepted write), draw the `may_apply` coin
//! (the caller passes a draw in [0, 1000)), or judge anything.

use super::params::WriteGuard;

/// The job as the store sees it when the write arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteContext {
    /// The writer presents the job's current token (it holds the latest lease).
    pub current: bool,
    /// The job is leased (running) by someone.
    pub leased: bool,
    /// The job reached a terminal state (acked, dead-lettered, cancelled).
    pub terminal: bool,
    /// The writer is the worker process that took the current lease (whichever attempt).
    pub same_process: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    Accepted,
    /// Refused, and the writer is told (durasim's `Rejected`).
    Rejected,
    /// Nothing happens in the store. The writer is told nothing, or told success
    /// (`may_apply`).
    Ignored,
}

/// The verdict for one write. `coin` is a draw in `[0, 1000)`, used only by `may_apply` against
/// `apply_permille`.
pub fn judge(guard: WriteGuard, w: WriteContext, apply_permille: u32, coin: u32) -> Verdict {
    if w.current && !w.terminal {
        // The holder's own write: every store takes it.
        return Verdict::Accepted;
    }
    let accept_if = |ok: bool| {
        if ok {
            Verdict::Accepted
        } else {
            Verdict::Ignored
        }
    };
    match guard {
        WriteGuard::Reject => Verdict::Rejected,
        WriteGuard::IfLeased => accept_if(w.leased),
        WriteGuard::ById => Verdict::Accepted,
        WriteGuard::IfNotTerminal => accept_if(!w.terminal),
        WriteGuard::IfSameProcess => accept_if(w.same_process && !w.terminal),
        WriteGuard::MayApply => accept_if(!w.terminal && coin < apply_permille),
    }
}

/// Whether `guard` needs a coin: only `may_apply` draws one, so no other profile moves a stream.
pub fn draws(guard: WriteGuard) -> bool {
    guard == WriteGuard::MayApply
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZOMBIE_WHILE_OTHER_RUNS: WriteContext = WriteContext {
        current: false,
        leased: true,
        terminal: false,
        same_process: false,
    };
    const ZOMBIE_AFTER_COMPLETION: WriteContext = WriteContext {
        current: false,
        leased: false,
        terminal: true,
        same_process: false,
    };
    const ZOMBIE_WHILE_WAITING: WriteContext = WriteContext {
        current: false,
        leased: false,
        terminal: false,
        same_process: false,
    };

    #[test]
    fn the_holders_own_write_is_accepted_by_every_guard() {
        let holder = WriteContext {
            current: true,
            leased: true,
            terminal: false,
            same_process: true,
        };
        for g in <WriteGuard as super::super::Word>::ALL {
            assert_eq!(judge(*g, holder, 0, 999), Verdict::Accepted, "{g:?}");
        }
    }

    #[test]
    fn a_stale_write_while_another_worker_runs_the_job() {
        let w = ZOMBIE_WHILE_OTHER_RUNS;
        assert_eq!(judge(WriteGuard::Reject, w, 0, 0), Verdict::Rejected);
        // River, pg-boss complete: `state = 'running'` holds, whoever runs it.
        assert_eq!(judge(WriteGuard::IfLeased, w, 0, 0), Verdict::Accepted);
        assert_eq!(judge(WriteGuard::ById, w, 0, 0), Verdict::Accepted);
        assert_eq!(judge(WriteGuard::IfNotTerminal, w, 0, 0), Verdict::Accepted);
        assert_eq!(judge(WriteGuard::IfSameProcess, w, 0, 0), Verdict::Ignored);
        // SQS: applies or not by the coin, never an error.
        assert_eq!(judge(WriteGuard::MayApply, w, 500, 499), Verdict::Accepted);
        assert_eq!(judge(WriteGuard::MayApply, w, 500, 500), Verdict::Ignored);
    }

    #[test]
    fn a_stale_write_after_the_job_finished() {
        let w = ZOMBIE_AFTER_COMPLETION;
        assert_eq!(judge(WriteGuard::Reject, w, 0, 0), Verdict::Rejected);
        assert_eq!(judge(WriteGuard::IfLeased, w, 0, 0), Verdict::Ignored);
        // Oban's `error_job` by id revives a completed job: accepted on a terminal job.
        assert_eq!(judge(WriteGuard::ById, w, 0, 0), Verdict::Accepted);
        assert_eq!(judge(WriteGuard::IfNotTerminal, w, 0, 0), Verdict::Ignored);
        assert_eq!(judge(WriteGuard::MayApply, w, 1000, 0), Verdict::Ignored);
        // Even the current token cannot write to a finished job, except by id.
        let late_holder = WriteContext { current: true, ..w };
        assert_eq!(
            judge(WriteGuard::Reject, late_holder, 0, 0),
            Verdict::Rejected
        );
        assert_eq!(
            judge(WriteGuard::ById, late_holder, 0, 0),
            Verdict::Accepted
        );
    }

    #[test]
    fn a_stale_write_while_the_job_waits() {
        let w = ZOMBIE_WHILE_WAITING;
        assert_eq!(judge(WriteGuard::IfLeased, w, 0, 0), Verdict::Ignored);
        assert_eq!(judge(WriteGuard::IfNotTerminal, w, 0, 0), Verdict::Accepted);
        let same = WriteContext {
            same_process: true,
            ..w
        };
        assert_eq!(
            judge(WriteGuard::IfSameProcess, same, 0, 0),
            Verdict::Accepted
        );
        assert!(draws(WriteGuard::MayApply));
        assert!(!draws(WriteGuard::ById));
    }
}

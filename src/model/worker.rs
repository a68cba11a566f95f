//! The worker: lease → extract (inference, with heartbeats) → validate → commit → ack.
//!
//! Owns: the order of the steps of one attempt and where the named crash points fall. An attempt
//! is a small state machine; the kernel asks it for the next step, performs it against the queue
//! and the outbox, and comes back when any time it asked to spend has passed.
//! Does not: draw anything (the attempt's fate comes in as an [`AttemptPlan`] decided by the
//! kernel's fault injector), or talk to the queue itself.

use crate::base::ids::{Fence, JobId};
use crate::model::retry::ErrorKind;
use crate::vocab::bugs::{Bug, BugSet};
use crate::vocab::faults::{Held, Lengths};

/// Where a worker process can die.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrashPoint {
    /// Holding the lease, before any extract call.
    AfterLease,
    /// The extraction finished (and was paid for), nothing committed yet.
    AfterExtract,
    /// The result and event are committed, the ack was never sent: the opening incident.
    /// Under the naive dual write this falls between the database write and the publish.
    AfterCommitBeforeAck,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 3] = [
        CrashPoint::AfterLease,
        CrashPoint::AfterExtract,
        CrashPoint::AfterCommitBeforeAck,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::AfterLease => "after_lease",
            CrashPoint::AfterExtract => "after_extract",
            CrashPoint::AfterCommitBeforeAck => "after_commit_before_ack",
        }
    }

    pub fn parse(name: &str) -> Option<CrashPoint> {
        CrashPoint::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Everything chance decides about one attempt, decided before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttemptPlan {
    /// The extraction's duration when it runs normally (inferenceMs).
    pub extract_ms: u64,
    /// The held faults that strike this attempt, and how long each holds it up. A stall
    /// replaces the extraction (this long, with no heartbeat, so the lease is lost); a pause
    /// stops the holder right after its first heartbeat.
    pub lengths: Lengths,
    pub validate_ms: u64,
    pub crash: Option<CrashPoint>,
    /// The error validation reports, if any.
    pub error: Option<ErrorKind>,
    /// What the model answers this time (a language model is not deterministic).
    pub output: u64,
}

/// One step of an attempt, as the kernel must perform it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The process dies here; everything volatile is lost.
    Crash(CrashPoint),
    /// One extract call begins (counted once per attempt that gets this far).
    BeginExtract {
        stalled: bool,
    },
    /// Spend `ms` extracting, then ask again.
    Extract {
        ms: u64,
    },
    /// Renew the lease (the extraction goes on afterwards).
    Heartbeat,
    /// Held fault `fault` holds the attempt up for `ms` (a pause after a heartbeat: the holder
    /// stops, then goes on extracting; a slow heartbeat: the heartbeat that comes next reaches
    /// the queue `ms` late).
    Held {
        fault: Held,
        ms: u64,
    },
    /// The extraction returned `output` after `inference_ms`.
    ExtractDone {
        inference_ms: u64,
        output: u64,
    },
    /// Spend `ms` validating, then ask again.
    Validate {
        ms: u64,
    },
    /// The attempt failed; the retry policy decides what happens to the job.
    Fail(ErrorKind),
    /// Commit result and event to the outbox (or, naive, write the result only).
    Commit,
    /// Naive dual write only: publish straight to the broker after the database write.
    PublishDirect,
    Ack,
    /// The attempt is over; the worker is free.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Leased,
    Extracting {
        remaining_ms: u64,
        slice_ms: u64,
    },
    Extracted,
    Validating,
    Validated,
    Committed,
    Published,
    /// Bug switch `ack_before_commit`: acked, the commit still to come.
    AckedBeforeCommit,
    CommittedAfterAck,
    Finished,
}

#[derive(Clone, Copy, Debug, Hash)]
pub struct Attempt {
    pub job: JobId,
    pub fence: Fence,
    pub number: u32,
    pub plan: AttemptPlan,
    heartbeat_ms: u64,
    /// The bug switches on; an attempt reads `naive_dual_write` (publish directly after the
    /// write, no outbox row) and `ack_before_commit` (ack first, commit after: the crash point
    /// `after_commit_before_ack` then falls between the two).
    bugs: BugSet,
    phase: Phase,
    /// The last step was a heartbeat, and the plan's pause has not been taken yet.
    pause_due: bool,
}

impl Attempt {
    pub fn new(
        job: JobId,
        fence: Fence,
        number: u32,
        plan: AttemptPlan,
        heartbeat_ms: u64,
        bugs: BugSet,
    ) -> Attempt {
        assert!(heartbeat_ms > 0, "heartbeat_ms must be positive");
        Attempt {
            job,
            fence,
            number,
            plan,
            heartbeat_ms,
            bugs,
            phase: Phase::Leased,
            pause_due: false,
        }
    }

    pub fn stalled(&self) -> bool {
        self.plan.lengths.get(Held::Stall).is_some()
    }

    /// Moves to the next step and returns it. Steps that spend time (`Extract`, `Validate`) return once; the kernel calls
    /// `advance` again when the time has passed. Every other step is instantaneous.
    pub fn advance(&mut self) -> Step {
        match self.phase {
            Phase::Leased => {
                if self.plan.crash == Some(CrashPoint::AfterLease) {
                    self.phase = Phase::Finished;
                    return Step::Crash(CrashPoint::AfterLease);
                }
                let total = self
                    .plan
                    .lengths
                    .get(Held::Stall)
                    .unwrap_or(self.plan.extract_ms);
                self.phase = Phase::Extracting {
                    remaining_ms: total,
                    slice_ms: 0,
                };
                Step::BeginExtract {
                    stalled: self.stalled(),
                }
            }
            Phase::Extracting {
                remaining_ms,
                slice_ms,
            } => {
                let remaining_ms = remaining_ms - slice_ms;
                if slice_ms > 0 && remaining_ms > 0 && !self.stalled() {
                    if let Some(ms) = self.plan.lengths.take(Held::SlowHeartbeat) {
                        // The first heartbeat is slow: it reaches the queue `ms` after it was
                        // sent (a slow network, a lock wait in the store) and the holder waits
                        // for its answer. The lease it should renew may run out meanwhile; the
                        // renewal then lands late, under an old token. The phase is unchanged,
                        // so the next step is that heartbeat.
                        return Step::Held {
                            fault: Held::SlowHeartbeat,
                            ms,
                        };
                    }
                    // A heartbeat at lease + k * heartbeat_ms, strictly inside the extraction.
                    self.phase = Phase::Extracting {
                        remaining_ms,
                        slice_ms: 0,
                    };
                    self.pause_due = self.plan.lengths.get(Held::Pause).is_some();
                    return Step::Heartbeat;
                }
                if self.pause_due {
                    // Right after the first heartbeat: the pause, once.
                    self.pause_due = false;
                    let ms = self.plan.lengths.take(Held::Pause).unwrap_or(0);
                    return Step::Held {
                        fault: Held::Pause,
                        ms,
                    };
                }
                if remaining_ms == 0 {
                    self.phase = Phase::Extracted;
                    let inference_ms = self
                        .plan
                        .lengths
                        .get(Held::Stall)
                        .unwrap_or(self.plan.extract_ms);
                    return Step::ExtractDone {
                        inference_ms,
                        output: self.plan.output,
                    };
                }
                // A stalled worker sleeps through in one go: it sends no heartbeat.
                let slice_ms = if self.stalled() {
                    remaining_ms
                } else {
                    remaining_ms.min(self.heartbeat_ms)
                };
                self.phase = Phase::Extracting {
                    remaining_ms,
                    slice_ms,
                };
                Step::Extract { ms: slice_ms }
            }
            Phase::Extracted => {
                if self.plan.crash == Some(CrashPoint::AfterExtract) {
                    self.phase = Phase::Finished;
                    return Step::Crash(CrashPoint::AfterExtract);
                }
                self.phase = Phase::Validating;
                Step::Validate {
                    ms: self.plan.validate_ms,
                }
            }
            Phase::Validating => {
                self.phase = Phase::Validated;
                match self.plan.error {
                    Some(error) => {
                        self.phase = Phase::Finished;
                        Step::Fail(error)
                    }
                    None if self.bugs.contains(Bug::AckBeforeCommit) => {
                        self.phase = Phase::AckedBeforeCommit;
                        Step::Ack
                    }
                    None => Step::Commit,
                }
            }
            Phase::Validated => {
                self.phase = Phase::Committed;
                if self.plan.crash == Some(CrashPoint::AfterCommitBeforeAck) {
                    self.phase = Phase::Finished;
                    return Step::Crash(CrashPoint::AfterCommitBeforeAck);
                }
                self.advance()
            }
            Phase::Committed => {
                if self.bugs.contains(Bug::NaiveDualWrite) {
                    self.phase = Phase::Published;
                    return Step::PublishDirect;
                }
                self.phase = Phase::Finished;
                Step::Ack
            }
            Phase::Published => {
                self.phase = Phase::Finished;
                Step::Ack
            }
            Phase::AckedBeforeCommit => {
                if self.plan.crash == Some(CrashPoint::AfterCommitBeforeAck) {
                    self.phase = Phase::Finished;
                    return Step::Crash(CrashPoint::AfterCommitBeforeAck);
                }
                self.phase = Phase::CommittedAfterAck;
                Step::Commit
            }
            Phase::CommittedAfterAck => {
                self.phase = Phase::Finished;
                if self.bugs.contains(Bug::NaiveDualWrite) {
                    return Step::PublishDirect;
                }
                Step::Done
            }
            Phase::Finished => Step::Done,
        }
    }

    /// The commit was refused (payload conflict): the attempt fails instead of acking.
    pub fn commit_refused(&mut self) -> Step {
        debug_assert!(matches!(
            self.phase,
            Phase::Validated | Phase::CommittedAfterAck
        ));
        self.phase = Phase::Finished;
        Step::Fail(ErrorKind::PayloadConflict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> AttemptPlan {
        AttemptPlan {
            extract_ms: 320,
            lengths: Lengths::default(),
            validate_ms: 5,
            crash: None,
            error: None,
            output: 9,
        }
    }

    fn held(h: Held, ms: u64) -> Lengths {
        let mut l = Lengths::default();
        l.set(h, Some(ms));
        l
    }

    fn steps(mut a: Attempt) -> Vec<Step> {
        let mut out = Vec::new();
        loop {
            let s = a.advance();
            out.push(s);
            if s == Step::Done {
                return out;
            }
        }
    }

    #[test]
    fn a_healthy_attempt_heartbeats_inside_the_extraction_then_commits_and_acks() {
        let a = Attempt::new(JobId(0), Fence(1), 1, plan(), 150, BugSet::EMPTY);
        use Step::*;
        assert_eq!(
            steps(a),
            vec![
                BeginExtract { stalled: false },
                Extract { ms: 150 },
                Heartbeat,
                Extract { ms: 150 },
                Heartbeat,
                Extract { ms: 20 },
                ExtractDone {
                    inference_ms: 320,
                    output: 9
                },
                Validate { ms: 5 },
                Commit,
                Ack,
                Done
            ]
        );
    }

    #[test]
    fn an_extraction_of_exactly_two_periods_heartbeats_once() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            AttemptPlan {
                extract_ms: 300,
                ..plan()
            },
            150,
            BugSet::EMPTY,
        );
        assert_eq!(
            steps(a).iter().filter(|s| **s == Step::Heartbeat).count(),
            1
        );
    }

    #[test]
    fn a_stall_sends_no_heartbeat() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            AttemptPlan {
                lengths: held(Held::Stall, 900),
                ..plan()
            },
            150,
            BugSet::EMPTY,
        );
        let s = steps(a);
        assert!(!s.contains(&Step::Heartbeat));
        assert!(s.contains(&Step::Extract { ms: 900 }));
        assert!(s.contains(&Step::ExtractDone {
            inference_ms: 900,
            output: 9
        }));
    }

    #[test]
    fn a_slow_heartbeat_holds_the_first_heartbeat_back_and_only_it() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            AttemptPlan {
                lengths: held(super::Held::SlowHeartbeat, 900),
                ..plan()
            },
            150,
            BugSet::EMPTY,
        );
        use Step::*;
        assert_eq!(
            steps(a)[..6],
            [
                BeginExtract { stalled: false },
                Extract { ms: 150 },
                Held {
                    fault: super::Held::SlowHeartbeat,
                    ms: 900
                },
                Heartbeat,
                Extract { ms: 150 },
                Heartbeat,
            ]
        );
    }

    #[test]
    fn a_pause_comes_right_after_the_first_heartbeat_and_only_once() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            AttemptPlan {
                lengths: held(super::Held::Pause, 700),
                ..plan()
            },
            150,
            BugSet::EMPTY,
        );
        use Step::*;
        assert_eq!(
            steps(a),
            vec![
                BeginExtract { stalled: false },
                Extract { ms: 150 },
                Heartbeat,
                Held {
                    fault: super::Held::Pause,
                    ms: 700
                },
                Extract { ms: 150 },
                Heartbeat,
                Extract { ms: 20 },
                ExtractDone {
                    inference_ms: 320,
                    output: 9
                },
                Validate { ms: 5 },
                Commit,
                Ack,
                Done
            ]
        );
        let short = AttemptPlan {
            extract_ms: 100,
            lengths: held(super::Held::Pause, 700),
            ..plan()
        };
        let s = steps(Attempt::new(
            JobId(0),
            Fence(1),
            1,
            short,
            150,
            BugSet::EMPTY,
        ));
        assert!(
            !s.iter().any(|x| matches!(x, Held { .. })),
            "no heartbeat, no pause"
        );
    }

    #[test]
    fn crash_points_fall_where_they_are_named() {
        for (point, before) in [
            (CrashPoint::AfterLease, None),
            (
                CrashPoint::AfterExtract,
                Some(Step::ExtractDone {
                    inference_ms: 320,
                    output: 9,
                }),
            ),
            (CrashPoint::AfterCommitBeforeAck, Some(Step::Commit)),
        ] {
            let a = Attempt::new(
                JobId(0),
                Fence(1),
                1,
                AttemptPlan {
                    crash: Some(point),
                    ..plan()
                },
                150,
                BugSet::EMPTY,
            );
            let s = steps(a);
            let i = s.iter().position(|x| *x == Step::Crash(point)).unwrap();
            assert_eq!(i.checked_sub(1).map(|j| s[j]), before);
            assert!(!s.contains(&Step::Ack));
        }
    }

    #[test]
    fn errors_fail_the_attempt_after_validation_and_conflicts_at_commit() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            AttemptPlan {
                error: Some(ErrorKind::SchemaInvalid),
                ..plan()
            },
            150,
            BugSet::EMPTY,
        );
        let s = steps(a);
        assert_eq!(s[s.len() - 2], Step::Fail(ErrorKind::SchemaInvalid));
        assert!(!s.contains(&Step::Commit));
        let mut b = Attempt::new(JobId(0), Fence(1), 1, plan(), 150, BugSet::EMPTY);
        while b.advance() != Step::Commit {}
        assert_eq!(b.commit_refused(), Step::Fail(ErrorKind::PayloadConflict));
        assert_eq!(b.advance(), Step::Done);
    }

    #[test]
    fn ack_before_commit_acks_first_and_can_die_before_committing() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            plan(),
            150,
            Bug::AckBeforeCommit.into(),
        );
        let s = steps(a);
        assert_eq!(&s[s.len() - 3..], &[Step::Ack, Step::Commit, Step::Done]);
        let crash = AttemptPlan {
            crash: Some(CrashPoint::AfterCommitBeforeAck),
            ..plan()
        };
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            crash,
            150,
            Bug::AckBeforeCommit.into(),
        );
        let s = steps(a);
        assert_eq!(
            &s[s.len() - 3..],
            &[
                Step::Ack,
                Step::Crash(CrashPoint::AfterCommitBeforeAck),
                Step::Done
            ]
        );
        assert!(!s.contains(&Step::Commit));
    }

    #[test]
    fn the_naive_dual_write_publishes_after_the_write_and_can_die_in_between() {
        let a = Attempt::new(
            JobId(0),
            Fence(1),
            1,
            plan(),
            150,
            Bug::NaiveDualWrite.into(),
        );
        let s = steps(a);
        assert_eq!(
            &s[s.len() - 4..],
            &[Step::Commit, Step::PublishDirect, Step::Ack, Step::Done]
        );
        let crash = AttemptPlan {
            crash: Some(CrashPoint::AfterCommitBeforeAck),
            ..plan()
        };
        let s = steps(Attempt::new(
            JobId(0),
            Fence(1),
            1,
            crash,
            150,
            Bug::NaiveDualWrite.into(),
        ));
        assert!(!s.contains(&Step::PublishDirect));
    }
}

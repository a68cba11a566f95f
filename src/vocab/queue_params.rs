//! The parameters a queue-semantics profile sets, as closed word lists.
//!
//! Owns: the values of every profile parameter of docs/queues.md §2.1 (how a job is leased and
//! renewed, how stale writes are treated, how stuck jobs are detected and rescued, how attempts
//! are counted and spaced, what the DLQ does, what a duplicate enqueue does), their names as a
//! scenario writes them, and the lists of allowed names that errors print.
//! Here in `vocab/`, not in `profile/` (which re-exports them as `profile::params`), because a
//! history's header (`config.rs`: `unique`, a retry formula's `backoff` and `attempt`) is
//! spelled in them: the vocabulary imports no module above it, so there is no module cycle.
//! Does not: hold any profile's values (see `profile/systems/`), resolve a scenario's overrides
//! (see `profile/resolve.rs`), or decide anything at run time (see `profile/`: `guard`,
//! `detection`, `backoff`, `unique`).

use crate::base::ids::SimTime;

/// A closed word list: every value has one name, and a parser that lists the allowed names.
pub trait Word: Sized + Copy + 'static {
    const ALL: &'static [Self];
    fn name(self) -> &'static str;
    fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
    /// `"a", "b" or "c"`, for an error message.
    fn allowed() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|v| format!("\"{}\"", v.name()))
            .collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

macro_rules! word {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl Word for $name {
            const ALL: &'static [Self] = &[$($name::$v),+];
            fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
        }
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

word!(
    /// Does the holder renew its lease while it works?
    Heartbeat {
        /// Every heartbeat sets `leaseUntil = now + lease_ms` (durasim, SQS's
        /// ChangeMessageVisibility, BullMQ's extendLock, pgmq's set_vt).
        Renew = "renew",
        /// No renewal: the lease (or the rescuer's horizon) runs from the attempt's start.
        None = "none",
    }
);

word!(
    /// How the store treats a write (heartbeat, ack, retry, dead-letter) from a worker whose
    /// lease has ended (docs/queues.md M1).
    WriteGuard {
        /// Refused unless it carries the job's current fencing token (durasim, BullMQ, Temporal).
        Reject = "reject",
        /// Accepted while the job is leased by anyone; ignored when it is not (River's
        /// `state = 'running'`, pg-boss's `state = 'active'`).
        IfLeased = "if_leased",
        /// Accepted while the job exists, in any state, terminal included (Oban, pgmq,
        /// graphile-worker's completion).
        ById = "by_id",
        /// Accepted while the job is not terminal (pg-boss fail, procrastinate finish).
        IfNotTerminal = "if_not_terminal",
        /// Accepted when the worker process that leased the job writes, whichever attempt it
        /// was (graphile-worker's fail: `locked_by`).
        IfSameProcess = "if_same_process",
        /// Reported as success; takes effect or not by a seeded coin (SQS DeleteMessage with a
        /// stale receipt handle: "the request will still succeed, but the message might not
        /// be deleted").
        MayApply = "may_apply",
    }
);

word!(
    /// How the store notices that a lease has ended (M3).
    ExpiryKind {
        /// Exactly, at `leaseUntil + 1` (durasim; SQS and pgmq implicitly at the next receive).
        Timer = "timer",
        /// A periodic rescuer (every `sweep_ms`) takes leases older than their horizon (River,
        /// Oban's Lifeline, graphile-worker, pg-boss's supervisor).
        Sweep = "sweep",
        /// BullMQ's stalled checker: a job is marked at one pass and moved at the next pass at
        /// which its lock is gone; a renewal unmarks it.
        TwoPass = "two_pass",
        /// A sweeper rescues the jobs of worker processes whose process heartbeat is older
        /// than `liveness_ms` (procrastinate's stalled-jobs recipe, Sidekiq Pro's super_fetch).
        WorkerLiveness = "worker_liveness",
        /// Nothing ever rescues a job whose worker went away (procrastinate and Sidekiq OSS).
        Never = "never",
    }
);

word!(
    /// What a rescue does with the job (M4).
    OnExpiry {
        /// Ready again at once, first in line (durasim, SQS, pgmq, Oban, graphile-worker).
        Ready = "ready",
        /// Scheduled with the retry policy's delay (River's rescuer).
        Retry = "retry",
        /// A failed attempt: retried or dead-lettered by the retry policy (pg-boss, Temporal).
        Fail = "fail",
        /// A stall, counted apart from attempts; past `stall_limit` the next lease fails the
        /// job at once into the DLQ (BullMQ's `maxStalledCount`).
        Stall = "stall",
    }
);

word!(
    /// Whether a sweeper's write checks that the job is still what it read (M5).
    RescueWrite {
        /// One atomic statement, or a write that requires the state it read (River after #1373).
        Guarded = "guarded",
        /// Read at the tick, written `rescue_gap_ms` later by id, whatever the job's state by
        /// then (River up to 0.43, riverqueue/river#1302).
        ById = "by_id",
    }
);

word!(
    /// How a worker takes a job (M6).
    Fetch {
        /// A lease the store can take back (every queue but Sidekiq OSS).
        Lease = "lease",
        /// The job leaves the store when fetched (Sidekiq OSS's BRPOP): a crash loses it.
        Pop = "pop",
        /// Sidekiq Pro: a per-process list, recovered when a process starts and finds a
        /// process whose heartbeat expired.
        SuperFetch = "super_fetch",
    }
);

word!(
    /// What counts against `max_attempts` (M7).
    AttemptsCount {
        /// Every lease is an attempt (durasim, SQS's receive count, River, Oban, pg-boss).
        Leases = "leases",
        /// Only failed attempts count; a stall or a re-fetch leases the job again for free
        /// (BullMQ, Sidekiq).
        Failures = "failures",
    }
);

word!(
    /// What the application does with an error its code knows to be permanent (M13).
    PermanentError {
        /// Straight to the DLQ through the queue's no-retry API.
        DeadLetter = "dead_letter",
        /// The queue has no such API: retried like any other error (graphile-worker).
        Retry = "retry",
    }
);

word!(
    /// The retry delay's formula (M8), in integer ms; n is the failed attempt's number (1-based)
    /// unless the profile says otherwise.
    BackoffFormula {
        /// `min(base × 2^(n−1), cap)` (durasim, Temporal: 1 s × 2^(n−1) capped at 100 s).
        Exp2 = "exp2",
        /// `offset + unit × 2^n` (Oban: 15 s + 2^n s).
        Exp2Offset = "exp2_offset",
        /// `unit × m⁴ + offset` with m = n (River: n⁴ s) or m = n − 1 (Sidekiq: c⁴ + 15 s, c
        /// the retry index from 0).
        Pow4 = "pow4",
        /// `unit × e^min(n, 10)` (graphile-worker).
        ExpE = "exp_e",
        /// No delay (BullMQ, pg-boss and procrastinate by default).
        Immediate = "immediate",
        /// No nack: the job becomes visible when its lease would have ended (SQS, pgmq).
        Visibility = "visibility",
    }
);

word!(
    /// Jitter on the delay d (M8), one draw u in [0, 1) from the jitter stream.
    JitterMode {
        None = "none",
        /// `[0, d]`.
        Full = "full",
        /// `[d/2, d]`.
        Equal = "equal",
        /// `d × (1 ± p)` (River: ±10 %).
        Symmetric = "symmetric",
        /// `d × (1 + [0, p])` (Oban: +[0, 10 %]).
        Up = "up",
        /// `d + U[0, step × (c + 1))`, c the retry index from 0 (Sidekiq: step 10 s).
        Additive = "additive",
    }
);

word!(
    /// What happens to a job that failed for good (M9).
    DlqMode {
        /// durasim's DLQ: a separate store with closed reason codes; reprocess is a new,
        /// audited version.
        Queue = "queue",
        /// SQS: a separate queue whose entries expire `retention_ms` after the **original
        /// enqueue**.
        Redrive = "redrive",
        /// Sidekiq's dead set: a capacity that drops the oldest entry, and an age limit.
        DeadSet = "dead_set",
        /// The job's own terminal state (`discarded`, `failed`), deleted `retention_ms` after it
        /// got there (River, Oban's Pruner, pg-boss).
        Discarded = "discarded",
        /// The terminal failure is recorded and kept (graphile-worker, procrastinate, pgmq's
        /// archive, Temporal's failure returned to the workflow).
        Kept = "kept",
    }
);

word!(
    /// What a second enqueue of a key already known does (M10).
    Unique {
        /// durasim's key: unique for ever; same payload resolves to the existing job, a
        /// different payload is refused.
        Forever = "forever",
        /// No uniqueness: every enqueue is a new job (SQS standard, pgmq, Sidekiq OSS, and
        /// every other queue unless the application opts in).
        None = "none",
        /// Deduped only while the existing job is queued or running; after it ends the same
        /// key runs again (pg-boss `exclusive`, BullMQ `deduplication`).
        WhileActive = "while_active",
        /// Refused while a job with the key runs; a new run after it closes (Temporal's
        /// workflow-id defaults: conflict FAIL, reuse ALLOW_DUPLICATE).
        ConflictWhileRunning = "conflict_while_running",
        /// A job with the key that is neither leased nor finished takes the new payload; a
        /// leased or finished one leaves the key to a new job (graphile-worker's `job_key`,
        /// default `job_key_mode = 'replace'`).
        Replace = "replace",
        /// Deduplicated (or refused) only while the key's newest job waits to be leased; once it
        /// is leased or finished a submit makes a new job (procrastinate's `queueing_lock`,
        /// a unique index on the lock over `status = 'todo'`).
        WhileWaiting = "while_waiting",
        /// Deduplicated (or refused) only while the key's newest job has never been leased;
        /// once leased (even if it waits again for a retry) or finished, a submit makes a new
        /// job (pg-boss's `short` policy: a unique index over `state = 'created'`).
        WhileNew = "while_new",
    }
);

/// When and how a lease's end is detected: the kind and its timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Expiry {
    pub kind: ExpiryKind,
    /// The sweeper's period (`sweep`, `two_pass`, `worker_liveness`).
    pub sweep_ms: SimTime,
    /// How old a worker process's heartbeat must be (`worker_liveness`).
    pub liveness_ms: SimTime,
}

impl Expiry {
    pub const TIMER: Expiry = Expiry {
        kind: ExpiryKind::Timer,
        sweep_ms: 0,
        liveness_ms: 0,
    };
    pub const NEVER: Expiry = Expiry {
        kind: ExpiryKind::Never,
        sweep_ms: 0,
        liveness_ms: 0,
    };
    pub const fn sweep(sweep_ms: SimTime) -> Expiry {
        Expiry {
            kind: ExpiryKind::Sweep,
            sweep_ms,
            liveness_ms: 0,
        }
    }
    pub const fn two_pass(sweep_ms: SimTime) -> Expiry {
        Expiry {
            kind: ExpiryKind::TwoPass,
            sweep_ms,
            liveness_ms: 0,
        }
    }
    pub const fn worker_liveness(liveness_ms: SimTime, sweep_ms: SimTime) -> Expiry {
        Expiry {
            kind: ExpiryKind::WorkerLiveness,
            sweep_ms,
            liveness_ms,
        }
    }
}

/// The retry delay: a formula, its constants and a jitter mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Hash)]
pub struct Backoff {
    pub formula: BackoffFormula,
    /// `exp2`: base; `exp2_offset`, `pow4`, `exp_e`: the unit (1,000 ms = seconds).
    pub base_ms: u64,
    /// `exp2`: the cap; the others are uncapped in the systems they model (u64::MAX).
    pub cap_ms: u64,
    /// `exp2_offset`, `pow4`: the constant added.
    pub offset_ms: u64,
    /// `pow4`: m = n − index_from (0 for River's n⁴, 1 for Sidekiq's retry index).
    pub index_from: u32,
    pub jitter: JitterMode,
    /// `symmetric`, `up`: percent.
    pub jitter_pct: u32,
    /// `additive`: the step.
    pub jitter_step_ms: u64,
}

impl Backoff {
    pub const fn exp2(base_ms: u64, cap_ms: u64, jitter: JitterMode) -> Backoff {
        Backoff {
            formula: BackoffFormula::Exp2,
            base_ms,
            cap_ms,
            offset_ms: 0,
            index_from: 0,
            jitter,
            jitter_pct: 0,
            jitter_step_ms: 0,
        }
    }
    pub const fn plain(formula: BackoffFormula) -> Backoff {
        Backoff {
            formula,
            base_ms: 0,
            cap_ms: u64::MAX,
            offset_ms: 0,
            index_from: 0,
            jitter: JitterMode::None,
            jitter_pct: 0,
            jitter_step_ms: 0,
        }
    }
}

/// The DLQ's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dlq {
    pub mode: DlqMode,
    /// Entries kept; a new one evicts the oldest.
    pub capacity: Option<u32>,
    /// Entries deleted this long after they arrived (`redrive`: after the original enqueue).
    pub retention_ms: Option<u64>,
}

impl Dlq {
    pub const QUEUE: Dlq = Dlq {
        mode: DlqMode::Queue,
        capacity: None,
        retention_ms: None,
    };
    pub const KEPT: Dlq = Dlq {
        mode: DlqMode::Kept,
        capacity: None,
        retention_ms: None,
    };
}

/// How each kind of late write is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaleWrites {
    pub heartbeat: WriteGuard,
    pub ack: WriteGuard,
    pub retry: WriteGuard,
    pub dead_letter: WriteGuard,
    /// `may_apply`: the chance in thousandths that the write takes effect.
    pub apply_permille: u32,
}

impl StaleWrites {
    pub const fn all(guard: WriteGuard) -> StaleWrites {
        StaleWrites {
            heartbeat: guard,
            ack: guard,
            retry: guard,
            dead_letter: guard,
            apply_permille: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_parses_back_and_the_allowed_list_names_them_all() {
        for g in WriteGuard::ALL {
            assert_eq!(WriteGuard::parse(g.name()), Some(*g));
        }
        assert_eq!(WriteGuard::parse("maybe"), None);
        assert_eq!(Heartbeat::allowed(), "\"renew\" or \"none\"");
        assert_eq!(Fetch::allowed(), "\"lease\", \"pop\" or \"super_fetch\"");
        for e in ExpiryKind::ALL {
            assert_eq!(ExpiryKind::parse(e.name()), Some(*e));
        }
    }
}

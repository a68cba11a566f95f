//! Judging a history, live or recorded: the same observers and the same verdicts for `run` and
//! `verify`.
//!
//! Owns: [`Judges`] (the checker and the metrics, the observers that keep state from every
//! record), the end of judging (the verdicts with every figure `summary.json` reports counted
//! again by the checker), and [`JudgesSide`] (whether they read a run's records on its thread
//! or on one of their own).
//! Does not: run anything (`run/mod.rs`), read a history file (`run/verify.rs` hands the
//! records over) or compare with `[expect]` (`run/expect.rs`).

use super::observer_thread::ObserverThread;
use crate::check::{CheckReport, Checker};
use crate::history::{Observer, Record};
use crate::observe::metrics::Metrics;
use crate::vocab::key::KeyNames;

/// The observers that keep state from every record: the checker and the metrics. Their state
/// is part of a run's (`sim::state`): both decide verdicts still to come.
#[derive(Hash)]
pub struct Judges {
    pub checker: Checker,
    pub metrics: Metrics,
}

impl Judges {
    /// For a recorded history (`verify`) of a run of `workers` workers: a checker given no
    /// names (the reader's are handed over a record at a time) and metrics that only count.
    pub fn for_history(workers: u32) -> Judges {
        Judges {
            checker: Checker::new(),
            metrics: Metrics::counts_only(workers),
        }
    }

    /// Judges one record of a recorded history; `names` (its reader's, growing as it reads)
    /// lets payload hashes be recomputed.
    pub fn observe_named(&mut self, r: &Record, names: &KeyNames) {
        self.checker.observe_named(r, Some(names));
        self.metrics.observe(r);
    }

    /// The verdicts, with every figure of `summary.json` the history determines counted again
    /// by the checker, and the figures.
    pub fn verdicts(self) -> (CheckReport, Metrics) {
        let Judges { checker, metrics } = self;
        let mut check = checker.finish();
        let distributions = [
            metrics.queue_wait.stats(),
            metrics.inference.stats(),
            metrics.review_wait.stats(),
        ];
        check.cross_check_figures(&metrics.counts, &metrics.held, &distributions);
        (check, metrics)
    }
}

impl Observer for Judges {
    #[inline]
    fn observe(&mut self, r: &Record) {
        self.checker.observe(r);
        self.metrics.observe(r);
    }
}

/// Where the checker and the metrics read the records: on the run's thread, or on one of
/// their own (`observer_thread.rs`).
// One value a run, observed in place: boxing the inline judges would add a pointer to follow
// for every record of every sweep seed.
#[allow(clippy::large_enum_variant)]
pub enum JudgesSide {
    Inline(Judges),
    Thread(ObserverThread<Judges>),
}

impl JudgesSide {
    /// On a thread of their own when `thread` is asked for and a thread can be had.
    pub fn new(judges: Judges, thread: bool) -> JudgesSide {
        if !thread {
            return JudgesSide::Inline(judges);
        }
        match ObserverThread::start(judges) {
            Ok(t) => JudgesSide::Thread(t),
            Err(judges) => JudgesSide::Inline(judges),
        }
    }

    pub fn finish(self) -> Judges {
        match self {
            JudgesSide::Inline(j) => j,
            JudgesSide::Thread(t) => t.finish(),
        }
    }
}

//! What a run is asked for: one request type from the command line down to the kernel.
//!
//! Owns: [`RunRequest`], the seed, job count, bug switches and fault rates the kernel builds its
//! run from, and what the observers keep (the trace, its filter, the progress sink), which
//! `run/` reads.
//! Does not: run anything (`run::run_once` and `Sim` do) or validate (the scenario did).

use super::faults::FaultRates;
use crate::history::Event;
use crate::observe::progress::ProgressSink;
use crate::scenario::Scenario;
use crate::vocab::bugs::BugSet;

/// How to run.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub seed: u64,
    pub jobs: Option<u64>,
    pub bugs: BugSet,
    pub keep_trace: bool,
    pub rates: Option<FaultRates>,
    /// Where to report settled jobs (the CLI passes a terminal progress bar).
    pub progress: Option<ProgressSink>,
    /// With `keep_trace`: keep only the records this accepts.
    pub trace_filter: Option<fn(&Event) -> bool>,
    /// Run the checker and the metrics on a thread of their own (`observer_thread.rs`; the same
    /// verdicts and figures): the CLI's `run` on a machine with a second core. Off for a sweep,
    /// whose threads each run seeds.
    pub observer_thread: bool,
    /// The kernel events the run may take (`--max-events`): past them it stops, its outcome
    /// `over_budget` (the scenario's bound, `Scenario::cost`, is checked before it starts).
    pub max_events: u64,
    /// Run the roles as programs (`sim::program`, docs/worker-protocol.md): an external
    /// program for each role given, durasim's own for the others. None: the kernel's own roles.
    pub programs: Option<super::program::ProgramSpec>,
}

impl RunRequest {
    pub fn for_scenario(s: &Scenario) -> RunRequest {
        RunRequest {
            seed: s.seed,
            jobs: None,
            bugs: s.bugs,
            keep_trace: false,
            rates: None,
            progress: None,
            trace_filter: None,
            observer_thread: false,
            max_events: crate::scenario::cost::DEFAULT_MAX_EVENTS,
            programs: None,
        }
    }
}

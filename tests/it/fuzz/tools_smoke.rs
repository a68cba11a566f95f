//! The tools that read a history (the sweep's coverage and failure groups, the shrinker, the
//! `--freeze` writer, the charts' markers, the Perfetto trace) on every history the model can
//! produce: every bug switch's demo scenario swept with the switch on, each seed's history then
//! edited at random (records dropped, repeated, swapped; fences, jobs and attempts changed) as a
//! defect of the model would write it. No tool panics: a sweep runs every seed and ends with a
//! verdict. Deterministic (the edits are drawn from the seed).
//!
//! The histories edited as text (ids that do not fit, records of another run) are the history
//! smoke's (`history_smoke.rs`, `support/history_props.rs::check_tools`).

use crate::support::splitmix::Rng;
use crate::support::{bug_switches, enable_bug, load};
use durasim::history::{Event, Record};
use durasim::sweep::{self, Plan};

/// One random edit of a kept history, drawn from `seed`: what a defect of the model could write.
fn edit(seed: u64, trace: &mut Vec<Record>) {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x746f_6f6c);
    for _ in 0..1 + r.below(4) {
        if trace.is_empty() {
            return;
        }
        let i = r.below(trace.len());
        let j = r.below(trace.len());
        match r.below(6) {
            0 => {
                trace.remove(i);
            }
            1 => {
                let copy = trace[i].clone();
                trace.insert(j, copy);
            }
            2 => trace.swap(i, j),
            3 => trace.truncate(i),
            _ => {
                let bump = 1 + r.below(3) as u64;
                match &mut trace[i].event {
                    Event::Leased { fence, attempt, .. } => {
                        fence.0 += bump;
                        if r.below(2) == 0 {
                            *attempt = None;
                        }
                    }
                    Event::WorkerCrashed { fence, job, .. }
                    | Event::AttemptFailed { fence, job, .. } => {
                        fence.0 += bump;
                        job.0 = job.0.wrapping_add(r.below(2) as u32);
                    }
                    Event::Held(h) => h.fence.0 += bump,
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn every_bug_switch_with_edited_histories_never_crashes_a_tool() {
    let mut groups = 0;
    for row in bug_switches() {
        let mut plan = Plan::new(load(row.demo), row.demo, (0, 6));
        enable_bug(&mut plan.bugs, row.name);
        plan.threads = 2;
        plan.edit_history = Some(edit);
        let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sweep::sweep(&plan)));
        let out = swept
            .unwrap_or_else(|_| panic!("{} with {}: a tool panicked", row.demo, row.name))
            .unwrap();
        assert_eq!(out.records.len(), 6, "{} with {}", row.demo, row.name);
        // The shrinker's freeze of each failure, and the other tools, on each seed's history.
        let s = plan.scenario.without_expectations();
        for seed in 0..6 {
            let mut request = durasim::run::RunRequest::for_scenario(&s);
            request.bugs = plan.bugs;
            request.seed = seed;
            request.keep_trace = true;
            let mut report = durasim::run::run_once(&s, &request, None);
            let trace = report.trace.as_mut().unwrap();
            edit(seed, trace);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::support::history_props::check_tools(trace, &report.outcome.names)
            }));
            match result {
                Ok(Ok(())) => {}
                Ok(Err(broken)) => panic!("{} with {} seed {seed}: {broken}", row.demo, row.name),
                Err(_) => panic!(
                    "{} with {} seed {seed}: a tool panicked",
                    row.demo, row.name
                ),
            }
        }
        groups += out.json.failures.len();
    }
    assert!(groups > 0);
}

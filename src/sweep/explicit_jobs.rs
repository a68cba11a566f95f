//! Explicit jobs: a run's arrivals as `[[enqueue]]` entries, and removing entries from such a
//! scenario with the job ids its script and operator entries name renumbered.
//!
//! Owns: turning the generated arrivals and bursts of a run into one `[[enqueue]]` entry per
//! request the history records (its time, tenant, document, version, content and whether the
//! document is invalid), so that the shrinker can drop any subset of jobs, not only the last
//! ones; which job each entry created, read from a run's history; and a scenario without some
//! entries, the later job ids shifted down so that faults stay on the jobs they hit.
//! Does not: decide which entries to drop, or whether a candidate still fails (see `shrink`).
//!
//! Job ids are handed out in the order jobs are created. Entries fire at their own times, and
//! entries with the same time in file order (the kernel schedules them all at the start); every
//! entry records exactly one `enqueued`, `enqueue_deduped`, `enqueue_conflict` or
//! `enqueue_replaced`, so the non-reprocess enqueue records of a history are the entries in
//! (time, file order). Dropping
//! entries removes their jobs; every other job, a reprocess's included, moves down by the number
//! of removed jobs below it (timed events keep their order). That holds unless a removed job was
//! the one a later request deduped onto; such a candidate just fails to reproduce and is not kept.

use super::freeze::document_invalid;
use crate::history::{Event, Record};
use crate::run::{run_once, RunRequest};
use crate::scenario::{Enqueue, Scenario, ScenarioFile};
use crate::vocab::key::KeyNames;
use crate::vocab::payload::fnv1a;

/// The text an entry gives for a content fingerprint: the base scenario's own text when it had
/// one with that fingerprint, otherwise a text named after the fingerprint (equal contents give
/// equal texts, different ones different texts); `None` for the default content 0.
fn payload_text(base: &ScenarioFile, content: u64) -> Option<String> {
    if content == 0 {
        return None;
    }
    let known = base
        .enqueue
        .iter()
        .filter_map(|e| e.payload.as_deref())
        .chain(base.script.iter().filter_map(|e| e.payload.as_deref()))
        .find(|t| fnv1a(t.as_bytes()) == content);
    Some(known.map_or_else(|| format!("content-{content:016x}"), str::to_string))
}

/// `s` (which ran as `trace`) with its arrivals and bursts replaced by one `[[enqueue]]` entry
/// per enqueue request of the history, in history order; `None` when it has none to replace.
pub fn explicit(s: &ScenarioFile, trace: &[Record], names: &KeyNames) -> Option<ScenarioFile> {
    if s.arrivals.jobs == 0 && s.burst.is_empty() {
        return None;
    }
    let mut entries = Vec::new();
    for r in trace {
        let (tenant, key, content) = match &r.event {
            Event::Enqueued {
                tenant,
                key,
                content,
                reprocess_of: None,
                ..
            }
            | Event::EnqueueDeduped {
                tenant,
                key,
                content,
                ..
            }
            | Event::EnqueueConflict {
                tenant,
                key,
                content,
                ..
            }
            | Event::EnqueueReplaced {
                tenant,
                key,
                content,
                ..
            } => (*tenant, *key, *content),
            _ => continue,
        };
        entries.push(Enqueue {
            at_ms: r.at,
            tenant: names.tenants.name(tenant).to_string(),
            document: names.documents.name(key.document),
            version: key.version,
            payload: payload_text(s, content),
            invalid: document_invalid(s, names, key.document),
        });
    }
    let mut c = s.clone();
    c.arrivals.jobs = 0;
    c.arrivals.document_collision = 0.0;
    c.arrivals.resubmit = 0.0;
    c.arrivals.resubmit_changed = 0.0;
    c.arrivals.invalid_documents = None;
    c.burst.clear();
    c.enqueue = entries;
    Some(c)
}

/// Which job each `[[enqueue]]` entry of `s` created (`None`: deduped or refused), from a run of
/// `s` with its trace; `None` when `s` still generates arrivals, is not valid or the history
/// does not fit. `programs`: the roles' programs the run has (`sim::program`), if any.
pub fn created_jobs(
    s: &ScenarioFile,
    programs: Option<&crate::sim::program::ProgramSpec>,
) -> Option<Vec<Option<u32>>> {
    if s.arrivals.jobs != 0 || !s.burst.is_empty() {
        return None;
    }
    let s = Scenario::from_file(s.clone(), "<candidate>").ok()?;
    let mut request = RunRequest::for_scenario(&s);
    request.keep_trace = true;
    request.programs = programs.cloned();
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_once(&s, &request, None)
    }))
    .ok()?;
    let outcomes: Vec<Option<u32>> = report
        .trace
        .as_deref()?
        .iter()
        .filter_map(|r| match &r.event {
            Event::Enqueued {
                job,
                reprocess_of: None,
                ..
            } => Some(Some(job.0)),
            Event::EnqueueDeduped { .. }
            | Event::EnqueueConflict { .. }
            | Event::EnqueueReplaced { .. } => Some(None),
            _ => None,
        })
        .collect();
    if outcomes.len() != s.enqueue.len() {
        return None;
    }
    let mut order: Vec<usize> = (0..s.enqueue.len()).collect();
    order.sort_by_key(|&i| s.enqueue[i].at_ms);
    let mut created = vec![None; s.enqueue.len()];
    for (i, outcome) in order.into_iter().zip(outcomes) {
        created[i] = outcome;
    }
    Some(created)
}

/// `s` without the entries `drop` marks (`drop[i]`: entry `i`), given the job each entry created:
/// script and operator entries of a removed job go, the others' job ids move down past the
/// removed ones.
pub fn without(s: &ScenarioFile, created: &[Option<u32>], drop: &[bool]) -> ScenarioFile {
    let mut removed: Vec<u32> = created
        .iter()
        .zip(drop)
        .filter(|(_, d)| **d)
        .filter_map(|(j, _)| *j)
        .collect();
    removed.sort_unstable();
    let moved = |j: u32| -> Option<u32> {
        match removed.binary_search(&j) {
            Ok(_) => None,
            Err(below) => Some(j - below as u32),
        }
    };
    let mut c = s.clone();
    c.enqueue = s
        .enqueue
        .iter()
        .zip(drop)
        .filter(|(_, d)| !**d)
        .map(|(e, _)| e.clone())
        .collect();
    c.script = s
        .script
        .iter()
        .filter_map(|e| match e.job {
            None => Some(e.clone()),
            Some(j) => moved(j).map(|j| {
                let mut e = e.clone();
                e.job = Some(j);
                e
            }),
        })
        .collect();
    c.operator = s
        .operator
        .iter()
        .filter_map(|o| match o.job {
            None => Some(o.clone()),
            Some(j) => moved(j).map(|j| {
                let mut o = o.clone();
                o.job = Some(j);
                o
            }),
        })
        .collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{FaultKind, Script};

    fn entry(at_ms: u64, document: &str) -> Enqueue {
        Enqueue {
            at_ms,
            tenant: "acme".into(),
            document: document.into(),
            version: 1,
            payload: None,
            invalid: false,
        }
    }

    fn scenario() -> ScenarioFile {
        let s = Scenario::parse("t.toml", "name = \"t\"\n[arrivals]\njobs = 0\n").unwrap();
        s.file().clone()
    }

    fn crash(job: u32) -> Script {
        Script {
            at_ms: 0,
            fault: FaultKind::Crash,
            point: Some("after_lease".into()),
            job: Some(job),
            attempt: Some(1),
            length: None,
            payload: None,
        }
    }

    #[test]
    fn removing_entries_moves_later_jobs_down_and_drops_their_faults() {
        let mut s = scenario();
        s.enqueue = vec![entry(0, "a"), entry(5, "b"), entry(5, "a"), entry(9, "c")];
        s.script = vec![crash(0), crash(1), crash(2), crash(3)];
        // Entry 2 repeats entry 0's key: deduped, no job. Job 3 is a reprocess's (no entry).
        let created = [Some(0), Some(1), None, Some(2)];
        let c = without(&s, &created, &[false, true, false, false]);
        let docs: Vec<&str> = c.enqueue.iter().map(|e| e.document.as_str()).collect();
        assert_eq!(docs, ["a", "a", "c"]);
        let jobs: Vec<Option<u32>> = c.script.iter().map(|e| e.job).collect();
        assert_eq!(jobs, [Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn created_jobs_follow_time_then_file_order() {
        let mut s = scenario();
        s.enqueue = vec![
            entry(10, "late"),
            entry(0, "a"),
            entry(0, "a"),
            entry(3, "b"),
        ];
        assert_eq!(
            created_jobs(&s, None).unwrap(),
            vec![Some(2), Some(0), None, Some(1)]
        );
    }
}

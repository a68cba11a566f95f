//! A history's records in ms: what `verify --out` feeds the metrics of a history recorded in µs
//! (a `conform` store's, an outside recorder's), so its `summary.json` figures and CSVs are in
//! ms like a run's.
//!
//! Owns: which fields of a record are times or durations (the record's `at`, visible and
//! deadline times, lease ends, inference, held-fault lengths, a DLQ retention), each divided by
//! the history's units per ms.
//! Does not: touch the verdicts (the checker judges the history as written, in its own unit) or
//! the header's settings (no figure reads them).

use crate::history::{Event, Record};

/// `r` with its times and durations in ms (`per_ms`: 1000 for a history in µs).
pub fn in_ms(r: &Record, per_ms: u64) -> Record {
    let per_ms = per_ms.max(1);
    let ms = |t: u64| t / per_ms;
    let opt = |t: &mut Option<u64>| *t = t.map(ms);
    let mut out = r.clone();
    out.at = ms(r.at);
    match &mut out.event {
        Event::Enqueued {
            visible_at,
            deadline_at,
            ..
        } => {
            opt(visible_at);
            opt(deadline_at);
        }
        Event::Leased {
            lease_until,
            visible_at,
            ..
        } => {
            opt(lease_until);
            opt(visible_at);
        }
        Event::Heartbeat { lease_until, .. } => opt(lease_until),
        Event::ExtractDone { inference, .. } => *inference = ms(*inference),
        Event::RetryScheduled { visible_at, .. } => *visible_at = ms(*visible_at),
        Event::Cancelled { deadline_at, .. } => opt(deadline_at),
        Event::DlqEvicted { retention, .. } => opt(retention),
        Event::Held(h) => h.ms = ms(h.ms),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::{Fence, JobId, WorkerId};

    #[test]
    fn times_and_durations_are_divided_and_nothing_else() {
        let leased = Record {
            at: 1_500_000,
            event: Event::Leased {
                job: JobId(3),
                worker: WorkerId(1),
                fence: Fence(7),
                attempt: Some(2),
                lease_until: Some(2_500_999),
                visible_at: None,
            },
        };
        let got = in_ms(&leased, 1000);
        assert_eq!(got.at, 1500);
        assert_eq!(
            got.event,
            Event::Leased {
                job: JobId(3),
                worker: WorkerId(1),
                fence: Fence(7),
                attempt: Some(2),
                lease_until: Some(2500),
                visible_at: None,
            }
        );
        assert_eq!(in_ms(&leased, 1), leased);
    }
}

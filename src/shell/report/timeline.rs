//! The job timeline: one lane per worker (and the queue above, the relay and the consumer
//! below) over virtual time, each attempt a bar labelled with its job and fencing token, and
//! the instants that matter on it — heartbeats, crashes, stalls and pauses, lease expiries,
//! commits, dedupes, acks, rejections — so a violation can be read next to what happened.
//!
//! Owns: the timeline's data ([`Timeline`]: bars, marks, bands, in ms), built from a history
//! (`build`: two passes, the second keeping only the jobs a budget allows, the jobs a violation
//! names first), from `timeline.json` (what `run --chart` leaves so `chart` can draw it again
//! without a trace) or, partially, from `attempts.csv`; its JSON (`timeline.json`, and the
//! page's embedded copy); and the page's section (`page`).
//! Does not: judge (the violations come from `summary.json`) or draw charts.

mod build;
pub mod page;

pub use build::build;

use crate::shell::report::chart::data::Attempt;
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many history records' worth of items are kept (jobs beyond it are left out,
/// the ones a violation names never).
pub const ITEM_BUDGET: u64 = 40_000;
/// At most this many items without a job (relay batches, restarts) are kept.
pub const JOBLESS_BUDGET: usize = 20_000;

/// Lanes: the queue, the relay, the consumer, then one per worker (`WORKER0 + worker`).
pub const QUEUE: u32 = 0;
pub const RELAY: u32 = 1;
pub const CONSUMER: u32 = 2;
pub const WORKER0: u32 = 3;

/// A time in ms: whole for a history in ms, with µs as thousandths for one in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ms(pub u64, pub u16);

impl Ms {
    pub fn of(at: u64, per_ms: u64) -> Ms {
        let per_ms = per_ms.max(1);
        Ms(at / per_ms, ((at % per_ms) * 1000 / per_ms) as u16)
    }

    /// `self` plus `other`.
    pub fn plus(self, other: Ms) -> Ms {
        let frac = self.1 as u64 + other.1 as u64;
        Ms(self.0 + other.0 + frac / 1000, (frac % 1000) as u16)
    }
    fn write(self, out: &mut String) {
        if self.1 == 0 {
            let _ = write!(out, "{}", self.0);
        } else {
            let _ = write!(out, "{}.{:03}", self.0, self.1);
        }
    }
}

/// An attempt: a worker's lease of a job from the lease to its last step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    pub worker: u32,
    pub job: u32,
    pub fence: u64,
    pub attempt: u32,
    pub start: Ms,
    pub end: Ms,
    /// When the lease expired, if it did (before the end: the holder went on as a zombie).
    pub lost: Option<Ms>,
    /// How it ended: `acked`, `retry`, `dead_lettered`, `cancelled`, `crashed`,
    /// `ack_rejected`, ..., or `open` (no step ended it).
    pub outcome: String,
}

/// An instant on a lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub lane: u32,
    pub at: Ms,
    /// `hb`, `crash`, `exp`, `commit`, `dedupe`, `ack`, `rej`, ... (see `build`).
    pub kind: String,
    pub job: Option<u32>,
    pub fence: Option<u64>,
    pub detail: String,
}

/// A span on a lane: a stall or a pause (a held fault), or a worker down after a crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    pub lane: u32,
    pub start: Ms,
    pub end: Ms,
    pub kind: String,
    pub job: Option<u32>,
}

/// Everything the timeline draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    pub end: Ms,
    /// The history's units per ms (1, or 1000 for a history in µs): a violation's evidence
    /// is in the history's units.
    pub per_ms: u64,
    pub workers: u32,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
    pub bands: Vec<Band>,
    pub jobs_total: u64,
    pub jobs_shown: u64,
    /// Where it came from, and what it leaves out.
    pub source: String,
}

impl Timeline {
    /// A partial timeline from `attempts.csv`: the attempts and how they ended, nothing else.
    pub fn from_attempts(attempts: &[Attempt], end_ms: u64) -> Timeline {
        let mut t = Timeline {
            end: Ms(end_ms, 0),
            per_ms: 1,
            source: "attempts.csv only (no history: leases and how they ended; no heartbeats, expiries, commits or delivery side)".into(),
            ..Timeline::default()
        };
        let mut jobs = std::collections::BTreeSet::new();
        for a in attempts {
            jobs.insert(a.job);
            t.workers = t.workers.max(a.worker + 1);
            t.bars.push(Bar {
                worker: a.worker,
                job: a.job,
                fence: a.fence.unwrap_or(0),
                attempt: a.attempt,
                start: Ms(a.leased_at_ms, 0),
                end: Ms(a.ended_at_ms, 0),
                lost: None,
                outcome: a.outcome.clone(),
            });
        }
        t.bars.sort_by_key(|b| (b.start, b.worker));
        t.jobs_total = jobs.len() as u64;
        t.jobs_shown = t.jobs_total;
        t
    }

    /// The compact JSON the page's script reads: arrays, not objects, per item.
    pub fn to_json(&self) -> String {
        let mut o = String::with_capacity(64 + 48 * (self.bars.len() + self.marks.len()));
        o.push_str("{\"version\":1,\"end\":");
        self.end.write(&mut o);
        let _ = write!(
            o,
            ",\"perMs\":{},\"workers\":{},\"jobsTotal\":{},\"jobsShown\":{},\"source\":{},\"bars\":[",
            self.per_ms,
            self.workers,
            self.jobs_total,
            self.jobs_shown,
            json_str(&self.source)
        );
        for (i, b) in self.bars.iter().enumerate() {
            o.push_str(if i == 0 { "[" } else { ",[" });
            let _ = write!(o, "{},{},{},{},", b.worker, b.job, b.fence, b.attempt);
            b.start.write(&mut o);
            o.push(',');
            b.end.write(&mut o);
            o.push(',');
            match b.lost {
                Some(l) => l.write(&mut o),
                None => o.push_str("null"),
            }
            let _ = write!(o, ",{}]", json_str(&b.outcome));
        }
        o.push_str("],\"marks\":[");
        for (i, m) in self.marks.iter().enumerate() {
            o.push_str(if i == 0 { "[" } else { ",[" });
            let _ = write!(o, "{},", m.lane);
            m.at.write(&mut o);
            let _ = write!(
                o,
                ",{},{},{},{}]",
                json_str(&m.kind),
                opt(m.job.map(u64::from)),
                opt(m.fence),
                json_str(&m.detail)
            );
        }
        o.push_str("],\"bands\":[");
        for (i, b) in self.bands.iter().enumerate() {
            o.push_str(if i == 0 { "[" } else { ",[" });
            let _ = write!(o, "{},", b.lane);
            b.start.write(&mut o);
            o.push(',');
            b.end.write(&mut o);
            let _ = write!(o, ",{},{}]", json_str(&b.kind), opt(b.job.map(u64::from)));
        }
        o.push_str("]}");
        o
    }
}

impl Timeline {
    /// Reads back what [`Timeline::to_json`] wrote (`timeline.json`); `None` when it is not that.
    pub fn from_json(text: &str) -> Option<Timeline> {
        let v: Value = serde_json::from_str(text).ok()?;
        if v.get("version")?.as_u64()? != 1 {
            return None;
        }
        let items = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let mut t = Timeline {
            end: ms(v.get("end")?)?,
            per_ms: v.get("perMs")?.as_u64()?,
            workers: v.get("workers")?.as_u64()? as u32,
            jobs_total: v.get("jobsTotal")?.as_u64()?,
            jobs_shown: v.get("jobsShown")?.as_u64()?,
            source: v.get("source")?.as_str()?.to_string(),
            ..Timeline::default()
        };
        for b in items("bars") {
            let u = |i: usize| b.get(i).and_then(Value::as_u64);
            t.bars.push(Bar {
                worker: u(0)? as u32,
                job: u(1)? as u32,
                fence: u(2)?,
                attempt: u(3)? as u32,
                start: ms(b.get(4)?)?,
                end: ms(b.get(5)?)?,
                lost: b.get(6).and_then(ms),
                outcome: b.get(7)?.as_str()?.to_string(),
            });
        }
        for m in items("marks") {
            t.marks.push(Mark {
                lane: m.get(0)?.as_u64()? as u32,
                at: ms(m.get(1)?)?,
                kind: m.get(2)?.as_str()?.to_string(),
                job: m.get(3).and_then(Value::as_u64).map(|j| j as u32),
                fence: m.get(4).and_then(Value::as_u64),
                detail: m.get(5)?.as_str()?.to_string(),
            });
        }
        for b in items("bands") {
            t.bands.push(Band {
                lane: b.get(0)?.as_u64()? as u32,
                start: ms(b.get(1)?)?,
                end: ms(b.get(2)?)?,
                kind: b.get(3)?.as_str()?.to_string(),
                job: b.get(4).and_then(Value::as_u64).map(|j| j as u32),
            });
        }
        Some(t)
    }
}

/// A time as [`Ms::write`] wrote it.
fn ms(v: &Value) -> Option<Ms> {
    let text = v.as_number()?.to_string();
    let (whole, frac) = text.split_once('.').unwrap_or((&text, "0"));
    let frac: String = frac.chars().chain("000".chars()).take(3).collect();
    Some(Ms(whole.parse().ok()?, frac.parse().ok()?))
}

fn opt(v: Option<u64>) -> String {
    v.map_or("null".into(), |v| v.to_string())
}

/// A JSON string that is also safe inside an HTML `<script>` element (no `</`, no `<!--`).
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s)
        .expect("a string serializes")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_keep_microseconds_as_thousandths() {
        let mut s = String::new();
        Ms::of(1_105_250, 1000).write(&mut s);
        s.push(' ');
        Ms::of(1105, 1).write(&mut s);
        assert_eq!(s, "1105.250 1105");
    }

    #[test]
    fn the_json_reads_back() {
        let t = Timeline {
            end: Ms(2000, 5),
            per_ms: 1000,
            workers: 2,
            bars: vec![Bar {
                worker: 1,
                job: 7,
                fence: 3,
                attempt: 2,
                start: Ms(10, 0),
                end: Ms(900, 250),
                lost: Some(Ms(510, 0)),
                outcome: "acked".into(),
            }],
            marks: vec![Mark {
                lane: WORKER0 + 1,
                at: Ms(300, 0),
                kind: "hb".into(),
                job: Some(7),
                fence: Some(3),
                detail: "a \"quoted\" </script>".into(),
            }],
            bands: vec![Band {
                lane: RELAY,
                start: Ms(1, 0),
                end: Ms(2, 0),
                kind: "down".into(),
                job: None,
            }],
            jobs_total: 1,
            jobs_shown: 1,
            source: "test".into(),
        };
        assert_eq!(Timeline::from_json(&t.to_json()), Some(t));
    }

    #[test]
    fn strings_cannot_close_the_script_element() {
        assert_eq!(
            json_str("</script><!--&"),
            r#""\u003c/script\u003e\u003c!--\u0026""#
        );
    }
}

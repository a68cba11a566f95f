//! What the charts draw, read back from a finished run's directory.
//!
//! Owns: loading `summary.json`, `depth.csv`, `jobs.csv`, `attempts.csv` and the fault markers
//! and per-document review waits, from the best source present: the in-memory history (`run
//! --chart`), `trace.jsonl`, the small `faults.csv` / `reviews.csv` that `run --chart` leaves
//! behind, or, failing those, the crashed attempts of `attempts.csv` and the operator actions of
//! `scenario.toml`.
//! Does not: draw anything or re-run the simulation.

use crate::history::{Event, Record};
use crate::shell::files::{open_regular, read_capped};
use crate::shell::report::error::ReportError;
use crate::shell::report::history_source::HistorySource;
use crate::shell::report::timeline::Timeline;
use crate::vocab::counters::Counter;
use crate::vocab::faults::{Held, Struck};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One attempt, as `attempts.csv` prints it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub job: u32,
    pub attempt: u32,
    pub worker: u32,
    #[serde(default)]
    pub fence: Option<u64>,
    pub leased_at_ms: u64,
    pub queue_wait_ms: u64,
    pub inference_ms: Option<u64>,
    pub ended_at_ms: u64,
    pub outcome: String,
}

/// One job, as `jobs.csv` prints it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub job: u32,
    #[serde(default)]
    pub tenant: String,
    pub created_at_ms: u64,
    pub state: String,
    pub terminal_at_ms: Option<u64>,
    pub attempts: u32,
}

/// A document's review: the consumer applied its effect, then the review finished.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub job: u32,
    pub applied_at_ms: u64,
    pub review_done_at_ms: u64,
    pub review_wait_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A worker process died mid-attempt.
    Crash,
    /// A worker paused without heartbeats (from `time_ms` to `until_ms`).
    Stall,
    /// The outbox relay died after publishing, before marking.
    RelayCrash,
    /// The consumer died right after applying an event, before the relay heard it was handled.
    ConsumerCrash,
    /// An operator reprocessed a dead-lettered job, or was refused.
    Operator,
}

impl FaultKind {
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::Crash => "worker crash",
            FaultKind::Stall => "worker stall (no heartbeat)",
            FaultKind::RelayCrash => "relay crash",
            FaultKind::ConsumerCrash => "consumer crash",
            FaultKind::Operator => "operator action",
        }
    }

    /// A struck fault's marker (`vocab::faults::STRUCK`) and its detail, from its record's value.
    fn struck(fault: Struck, value: u64) -> (FaultKind, String) {
        match fault {
            Struck::RelayCrash => (FaultKind::RelayCrash, format!("{value} unmarked")),
            Struck::ConsumerCrash => (
                FaultKind::ConsumerCrash,
                format!("event {value} applied, unacknowledged"),
            ),
        }
    }
}

/// A fault or operator action to mark on the timeline.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub time_ms: u64,
    pub kind: FaultKind,
    pub worker: Option<u32>,
    pub job: Option<u32>,
    pub until_ms: Option<u64>,
    pub detail: String,
}

/// Where the fault markers and review waits came from (shown on the charts and the report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The run's history (in memory with `run --chart`, or `trace.jsonl`): complete.
    History,
    /// `faults.csv` and `reviews.csv`, written by `run --chart`: complete.
    Extracts,
    /// No history and no extracts: only the operator actions `scenario.toml` schedules are
    /// known. Crashes, stalls, relay crashes and review waits are not recorded (a crash marker
    /// from `attempts.csv` alone would show a partial picture as a complete one).
    Fallback,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::History => "the run's history",
            Source::Extracts => "faults.csv and reviews.csv",
            Source::Fallback => "scenario.toml only (no history: crashes, stalls, relay and consumer crashes and review waits were not recorded; chart with `run --chart`, or run with --trace)",
        }
    }
}

/// Everything the single-run charts and the HTML report need.
pub struct RunData {
    pub summary: serde_json::Value,
    pub scenario: String,
    pub seed: u64,
    pub bugs: Vec<String>,
    pub end_ms: u64,
    pub depth: Vec<(u64, u64)>,
    /// Empty when the run used `--no-rows`.
    pub attempts: Vec<Attempt>,
    pub jobs: Vec<Job>,
    /// `None` when no source knows them (see [`Source::Fallback`]).
    pub reviews: Option<Vec<Review>>,
    pub faults: Vec<Fault>,
    pub source: Source,
    pub scenario_text: Option<String>,
    /// The scenario charts' series (tenants, retries, outbox, DLQ).
    pub series: super::series_data::Series,
    /// The job timeline, or why there is none.
    pub timeline: Result<Timeline, String>,
}

impl RunData {
    /// The chart title prefix: scenario, seed, bug switches.
    pub fn title(&self) -> String {
        let mut t = format!("{} · seed {}", self.scenario, self.seed);
        if !self.bugs.is_empty() {
            t.push_str(&format!(" · bugs: {}", self.bugs.join(", ")));
        }
        t
    }

    pub fn has_rows(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// What the charts cannot show for lack of data, one line per chart that lacks some, with
    /// what would supply it (printed by `durasim chart` as `missing ...` lines).
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        let crashes = |c: Counter| {
            let path = c.path().expect("a counted figure").replace('.', "/");
            self.summary
                .pointer(&format!("/{path}"))
                .and_then(|v| v.as_u64())
                .unwrap_or(0)
        };
        if self.source == Source::Fallback {
            out.push(format!(
                "depth: no fault markers (worker crashes, stalls, relay and consumer crashes): the \
                 run kept no history (summary.json counts {} worker, {} relay and {} consumer \
                 crashes); chart with `durasim run --chart`, or run with --trace",
                crashes(Counter::WorkerCrashes),
                crashes(Counter::RelayCrashes),
                crashes(Counter::ConsumerCrashes)
            ));
        }
        if !self.has_rows() {
            out.push(
                "latency: queueWaitMs and inferenceMs need attempts.csv (the run used --no-rows)"
                    .into(),
            );
            out.push("stages: needs jobs.csv (the run used --no-rows)".into());
            out.push("outcomes: needs jobs.csv and attempts.csv (the run used --no-rows)".into());
        }
        if self.reviews.is_none() {
            out.push(
                "latency, stages: reviewWaitMs needs the history (trace.jsonl or reviews.csv)"
                    .into(),
            );
        }
        out
    }

    /// A latency field of `summary.json` (`queueWaitMs`, ...): its `(p50, p95, p99)`.
    pub fn percentiles(&self, metric: &str) -> Option<(u64, u64, u64)> {
        let m = self.summary.get("metrics")?.get(metric)?;
        if m.get("count")?.as_u64()? == 0 {
            return None;
        }
        Some((
            m.get("p50")?.as_u64()?,
            m.get("p95")?.as_u64()?,
            m.get("p99")?.as_u64()?,
        ))
    }
}

pub(super) fn read_csv<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, ReportError> {
    let file = open_regular(path, "CSV file")?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > crate::base::limits::MAX_DATA_BYTES {
        return Err(ReportError::malformed(
            path.display(),
            format!("{len} bytes, larger than any CSV file durasim writes"),
        ));
    }
    let mut r = csv::Reader::from_reader(std::io::BufReader::new(file));
    r.deserialize()
        .collect::<Result<Vec<T>, _>>()
        .map_err(|e| ReportError::malformed(path.display(), format!("unexpected contents: {e}")))
}

/// Loads a run directory. `history`, when given (by `run --chart`), is the run's in-memory trace
/// and wins over every file.
pub fn load(dir: &Path, history: Option<&[Record]>) -> Result<RunData, ReportError> {
    let summary_path = dir.join("summary.json");
    let text = read_capped(
        &summary_path,
        crate::base::limits::MAX_SUMMARY_BYTES,
        "summary.json",
    )?;
    let summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ReportError::malformed(
            summary_path.display(),
            format!("not a durasim summary: {e}"),
        )
    })?;
    let scenario = summary
        .get("scenario")
        .and_then(|s| s.as_str())
        .ok_or_else(|| ReportError::malformed(summary_path.display(), "no \"scenario\" field"))?
        .to_string();
    let seed = summary.get("seed").and_then(|s| s.as_u64()).unwrap_or(0);
    let bugs = summary
        .get("bugs")
        .and_then(|b| b.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let scenario_text = read_capped(
        &dir.join("scenario.toml"),
        crate::base::limits::MAX_SCENARIO_BYTES,
        "scenario file",
    )
    .ok();
    let mut d = RunData {
        end_ms: summary
            .get("virtualTimeMs")
            .and_then(|s| s.as_u64())
            .unwrap_or(0),
        summary,
        scenario,
        seed,
        bugs,
        depth: read_depth(dir)?,
        attempts: read_optional(&dir.join("attempts.csv"))?,
        jobs: read_optional(&dir.join("jobs.csv"))?,
        reviews: None,
        faults: Vec::new(),
        source: Source::Fallback,
        series: super::series_data::load(dir)?,
        timeline: Err(String::new()),
        scenario_text,
    };
    load_history_views(dir, history, &mut d)?;
    d.end_ms = d.end_ms.max(d.depth.last().map_or(0, |p| p.0)).max(
        d.faults
            .iter()
            .map(|f| f.until_ms.unwrap_or(f.time_ms))
            .max()
            .unwrap_or(0),
    );
    Ok(d)
}

fn read_optional<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, ReportError> {
    if path.exists() {
        read_csv(path)
    } else {
        Ok(Vec::new())
    }
}

fn read_depth(dir: &Path) -> Result<Vec<(u64, u64)>, ReportError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Row {
        time_ms: u64,
        depth: u64,
    }
    Ok(read_optional::<Row>(&dir.join("depth.csv"))?
        .into_iter()
        .map(|r| (r.time_ms, r.depth))
        .collect())
}

/// The fault markers, the review waits and the timeline, each from the best source present:
/// the history (in memory, or a history file), else the extracts `run --chart` writes
/// (`faults.csv`, `reviews.csv`, `timeline.json`), else what `scenario.toml` and
/// `attempts.csv` say.
fn load_history_views(
    dir: &Path,
    history: Option<&[Record]>,
    d: &mut RunData,
) -> Result<(), ReportError> {
    let focus = crate::shell::report::timeline::page::focus_jobs(&d.summary);
    if let Some(h) = HistorySource::find(dir, history) {
        let mut b = Builder::default();
        h.replay(&mut |r, per_ms| b.record(r, per_ms))?;
        if d.series.retries_from.is_none() {
            d.series.retries = b.retries.iter().map(|(t, n)| (*t, *n)).collect();
            d.series.retries_from = Some("the history");
        }
        let (faults, reviews) = b.finish();
        (d.faults, d.reviews, d.source) = (faults, Some(reviews), Source::History);
        d.timeline = Ok(crate::shell::report::timeline::build(&h, &focus)?);
        return Ok(());
    }
    let (faults_path, reviews_path) = (dir.join("faults.csv"), dir.join("reviews.csv"));
    if faults_path.exists() && reviews_path.exists() {
        d.faults = read_csv(&faults_path)?;
        d.reviews = Some(read_csv(&reviews_path)?);
        d.source = Source::Extracts;
    } else {
        d.faults = scheduled_operator_actions(d.scenario_text.as_deref());
    }
    d.timeline = match read_timeline_json(dir)? {
        Some(t) => Ok(t),
        None if d.attempts.is_empty() => Err(
            "no history (trace.jsonl or history.jsonl), no timeline.json and no attempts.csv"
                .to_string(),
        ),
        None => Ok(Timeline::from_attempts(&d.attempts, d.end_ms)),
    };
    Ok(())
}

/// `timeline.json`, which `run --chart` writes so the timeline can be drawn again without a
/// history.
fn read_timeline_json(dir: &Path) -> Result<Option<Timeline>, ReportError> {
    let path = dir.join(TIMELINE_JSON);
    if !path.exists() {
        return Ok(None);
    }
    let text = read_capped(&path, crate::base::limits::MAX_DATA_BYTES, "timeline.json")?;
    Timeline::from_json(&text)
        .map(Some)
        .ok_or_else(|| ReportError::malformed(path.display(), "not a durasim timeline"))
}

/// Fault markers and reviews from typed history records (times in ms).
pub fn from_records(records: &[Record]) -> (Vec<Fault>, Vec<Review>) {
    let mut b = Builder::default();
    for r in records {
        b.record(r, 1);
    }
    b.finish()
}

/// Without a history: the operator actions `scenario.toml` schedules, and nothing else.
fn scheduled_operator_actions(scenario_text: Option<&str>) -> Vec<Fault> {
    let mut faults: Vec<Fault> = Vec::new();
    if let Some(ops) = scenario_text
        .and_then(|t| toml::from_str::<toml::Value>(t).ok())
        .and_then(|v| v.get("operator").and_then(|o| o.as_array()).cloned())
    {
        for op in ops {
            let at = op
                .get("at_ms")
                .and_then(|x| x.as_integer())
                .unwrap_or(0)
                .max(0) as u64;
            let job = op.get("job").and_then(|x| x.as_integer()).map(|j| j as u32);
            let who = op
                .get("operator")
                .and_then(|x| x.as_str())
                .unwrap_or("(no operator)");
            let action = op
                .get("action")
                .and_then(|x| x.as_str())
                .unwrap_or("action");
            faults.push(Fault {
                time_ms: at,
                kind: FaultKind::Operator,
                worker: None,
                job,
                until_ms: None,
                detail: format!("{action} job-{} by {who} (scheduled)", job.unwrap_or(0)),
            });
        }
    }
    faults.sort_by_key(|f| f.time_ms);
    faults
}

#[derive(Default)]
struct Builder {
    faults: Vec<Fault>,
    applied: std::collections::BTreeMap<u32, u64>,
    /// Retries scheduled per 100 ms window, by the window's start (ms).
    retries: std::collections::BTreeMap<u64, u64>,
    reviews: Vec<Review>,
}

impl Builder {
    /// Takes one record; `per_ms` converts its times and durations to ms.
    fn record(&mut self, r: &Record, per_ms: u64) {
        let at = r.at / per_ms.max(1);
        match &r.event {
            Event::WorkerCrashed {
                worker, job, point, ..
            } => self.fault(
                at,
                FaultKind::Crash,
                Some(worker.0),
                Some(job.0),
                None,
                point.to_string(),
            ),
            Event::Held(h) if h.fault == Held::Stall => {
                let ms = h.ms / per_ms.max(1);
                self.fault(
                    at,
                    FaultKind::Stall,
                    Some(h.worker.0),
                    Some(h.job.0),
                    Some(at + ms),
                    format!("{ms} ms"),
                )
            }
            Event::Struck(st) => {
                let (kind, detail) = FaultKind::struck(st.fault, st.value);
                self.fault(at, kind, None, st.job.map(|j| j.0), None, detail)
            }
            Event::Reprocessed {
                old_job,
                new_job,
                operator,
            } => self.fault(
                at,
                FaultKind::Operator,
                None,
                Some(old_job.0),
                None,
                format!(
                    "{operator} reprocessed job-{} as job-{}",
                    old_job.0, new_job.0
                ),
            ),
            Event::ReprocessRefused {
                job,
                operator,
                reason,
            } => self.fault(
                at,
                FaultKind::Operator,
                None,
                job.map(|j| j.0),
                None,
                format!(
                    "reprocess of {} by {} refused: {reason}",
                    job.map_or("an unknown job".to_string(), |j| j.to_string()),
                    operator.as_deref().unwrap_or("(no operator)")
                ),
            ),
            Event::EffectApplied { job, .. } => self.applied(at, job.0),
            Event::ReviewDone { job, .. } => self.review_done(at, job.0),
            Event::RetryScheduled { .. } => *self.retries.entry(at / 100 * 100).or_default() += 1,
            _ => {}
        }
    }

    fn fault(
        &mut self,
        at: u64,
        kind: FaultKind,
        worker: Option<u32>,
        job: Option<u32>,
        until: Option<u64>,
        detail: String,
    ) {
        self.faults.push(Fault {
            time_ms: at,
            kind,
            worker,
            job,
            until_ms: until,
            detail,
        });
    }

    fn applied(&mut self, at: u64, job: u32) {
        self.applied.insert(job, at);
    }

    fn review_done(&mut self, at: u64, job: u32) {
        let applied = self.applied.get(&job).copied().unwrap_or(at);
        self.reviews.push(Review {
            job,
            applied_at_ms: applied,
            review_done_at_ms: at,
            review_wait_ms: at - applied,
        });
    }

    fn finish(mut self) -> (Vec<Fault>, Vec<Review>) {
        self.reviews.sort_by_key(|r| r.job);
        (self.faults, self.reviews)
    }
}

/// The file `run --chart` writes the timeline's data to.
pub const TIMELINE_JSON: &str = "timeline.json";

/// Writes `faults.csv`, `reviews.csv` and `timeline.json`: what the charts and the timeline need
/// from the history, so a run directory stays chartable without its (large) `trace.jsonl`.
/// `summary` names the jobs the timeline keeps first (the ones a violation names).
pub fn write_extracts(
    dir: &Path,
    records: &[Record],
    summary: &serde_json::Value,
) -> Result<(), ReportError> {
    let focus = crate::shell::report::timeline::page::focus_jobs(summary);
    let timeline = crate::shell::report::timeline::build(&HistorySource::Memory(records), &focus)?;
    let path = dir.join(TIMELINE_JSON);
    std::fs::write(&path, timeline.to_json() + "\n")
        .map_err(ReportError::io("write", path.display()))?;
    let (faults, reviews) = from_records(records);
    write_rows(
        dir,
        "faults.csv",
        &["timeMs", "kind", "worker", "job", "untilMs", "detail"],
        &faults,
    )?;
    write_rows(
        dir,
        "reviews.csv",
        &["job", "appliedAtMs", "reviewDoneAtMs", "reviewWaitMs"],
        &reviews,
    )
}

/// Writes `rows` as `DIR/name`; the header alone when there are none.
fn write_rows<T: Serialize>(
    dir: &Path,
    name: &str,
    header: &[&str],
    rows: &[T],
) -> Result<(), ReportError> {
    let file = std::fs::File::create(dir.join(name)).map_err(ReportError::io("create", name))?;
    let mut w = csv::Writer::from_writer(file);
    let written: Result<(), csv::Error> = (|| {
        if rows.is_empty() {
            w.write_record(header)?;
        }
        for r in rows {
            w.serialize(r)?;
        }
        Ok(w.flush()?)
    })();
    written.map_err(|e| ReportError::io("write", name)(e.into()))
}

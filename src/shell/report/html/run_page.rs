//! The HTML report of a run (or of a `verify` or `conform` output): the verdict, the
//! reproduction command, the summary tables, the invariants (each violation linked to its moment
//! and jobs on the job timeline), the timeline, the charts, the fault events and the files.
//!
//! Owns: the run page's sections and their order.
//! Does not: draw charts, build the timeline's data, or compute a figure (it formats
//! `summary.json`).

use super::{esc, figures, kv_table, num, page_end, page_start, write_page};
use crate::shell::report::chart::data::{FaultKind, RunData};
use crate::shell::report::chart::ChartFile;
use crate::shell::report::error::ReportError;
use crate::shell::report::timeline::page as timeline;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Writes `out/index.html` for a run.
pub fn write_run_report(
    out: &Path,
    d: &RunData,
    charts: &[ChartFile],
) -> Result<PathBuf, ReportError> {
    let s = &d.summary;
    let mut h = page_start(&format!("durasim · {}", d.title()));
    header(&mut h, d);
    h.push_str(
        "<nav><a href=\"#reproduce\">reproduce</a><a href=\"#summary\">summary</a><a href=\"#invariants\">invariants</a>\
         <a href=\"#tl\">job timeline</a><a href=\"#charts\">charts</a><a href=\"#faults\">fault events</a>\
         <a href=\"#files\">files</a></nav>\n",
    );
    let reproduce = s
        .get("reproduce")
        .and_then(Value::as_str)
        .unwrap_or("(unknown)");
    let _ = write!(
        h,
        "<h2 id=\"reproduce\">Reproduce</h2>\n<pre><code>{}</code></pre>\n<p class=\"muted\">{}</p>\n",
        esc(reproduce),
        reproduce_note(reproduce)
    );
    unmet(&mut h, s);
    summary_tables(&mut h, s);
    invariants(&mut h, s, out);
    timeline::section(&mut h, d.timeline.as_ref().map_err(String::as_str), s);
    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    figures(&mut h, charts)?;
    faults(&mut h, d);
    files(&mut h, out);
    page_end(&mut h);
    write_page(out, h)
}

/// What the reproduction command gives again: a simulated run its history (`replay` checks),
/// a recorded history its verdicts, a real store's run only the same scenario.
fn reproduce_note(reproduce: &str) -> &'static str {
    if reproduce.starts_with("durasim verify ") {
        "The same file, the same verdicts: <code>history.jsonl</code> beside this page is a copy of it."
    } else if reproduce.starts_with("durasim conform ") {
        "A real store's timing is not repeatable: the same command runs the same scenario again, \
         not the same history. The history it recorded is <code>history.jsonl</code> beside this page \
         (<code>durasim verify</code> judges it again)."
    } else {
        "Same seed, same history: <code>durasim replay DIR</code> re-runs it and compares the trace hash."
    }
}

fn scenario_description(text: Option<&str>) -> Option<String> {
    let v: toml::Value = toml::from_str(text?).ok()?;
    v.get("description")?.as_str().map(|s| s.trim().to_string())
}

fn header(h: &mut String, d: &RunData) {
    let s = &d.summary;
    let passed = s
        .get("expectationsMet")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let held = s.get("invariants").and_then(Value::as_array).map(|a| {
        let holds = a
            .iter()
            .filter(|i| i.get("holds").and_then(Value::as_bool) == Some(true))
            .count();
        format!("{holds}/{}", a.len())
    });
    let quiescent = s.get("quiescent").and_then(Value::as_bool) != Some(false);
    let _ = write!(
        h,
        "<h1><span class=\"badge {cls}\">{verdict}</span>{title}</h1>\n<p class=\"muted\">trace {trace} · {events} history events · \
         {vt} ms virtual time · invariants {held} hold · {quiescent}</p>\n",
        cls = if passed { "pass" } else { "fail" },
        verdict = if passed { "PASS" } else { "FAIL" },
        title = esc(&d.title()),
        trace = num(s.get("traceHash")),
        events = num(s.get("events")),
        vt = num(s.get("virtualTimeMs")),
        held = held.unwrap_or_else(|| "?".into()),
        quiescent = if quiescent { "quiescent" } else { "TIME LIMIT HIT" },
    );
    if let Some(desc) = scenario_description(d.scenario_text.as_deref()) {
        let _ = writeln!(h, "<p class=\"desc\">{}</p>", esc(&desc));
    }
}

fn unmet(h: &mut String, s: &Value) {
    let unmet = s
        .get("unmetExpectations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if unmet.is_empty() {
        return;
    }
    h.push_str("<h2>Unmet expectations</h2><table id=\"unmet\"><tr><th>field</th><th>expected</th><th>actual</th></tr>");
    for u in &unmet {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            num(u.get("field")),
            num(u.get("expected")),
            num(u.get("actual"))
        );
    }
    h.push_str("</table>\n");
}

/// The count tables and the metrics table (one cell per column in every row: the queue depth's
/// percentiles, which the summary does not hold, are dashes).
fn summary_tables(h: &mut String, s: &Value) {
    h.push_str("<h2 id=\"summary\">Summary</h2>\n<div class=\"grid\">\n");
    for (heading, key) in [
        ("jobs", "jobs"),
        ("effects", "effects"),
        ("leases", "leases"),
        ("crashes", "crashes"),
        ("dead-letter queue", "dlq"),
    ] {
        kv_table(h, heading, s.get(key));
    }
    const COLUMNS: [&str; 7] = ["count", "min", "p50", "p95", "p99", "max", "mean"];
    h.push_str("</div>\n<table id=\"metrics\"><tr><th>metric (ms)</th>");
    for c in COLUMNS {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>");
    let mut row = |name: &str, v: Option<&Value>, fields: [&str; 7]| {
        let _ = write!(h, "<tr><td>{name}</td>");
        // Nothing observed (a real store's history has no depth samples): no figure to show.
        let none = v.and_then(|v| v.get(fields[0])).and_then(Value::as_u64) == Some(0);
        for (i, f) in fields.into_iter().enumerate() {
            let cell = if f.is_empty() || (none && i > 0) {
                "–".into()
            } else {
                num(v.and_then(|v| v.get(f)))
            };
            let _ = write!(h, "<td class=\"num\">{cell}</td>");
        }
        h.push_str("</tr>");
    };
    for m in ["queueWaitMs", "inferenceMs", "reviewWaitMs", "jobAgeMs"] {
        row(m, s.pointer(&format!("/metrics/{m}")), COLUMNS);
    }
    row(
        "queueDepth (jobs)",
        s.pointer("/metrics/queueDepth"),
        ["samples", "min", "", "", "", "max", "mean"],
    );
    h.push_str("</table>\n");
}

/// The invariants, each violation with its moment and jobs linked on the timeline (and the
/// Perfetto trace when the directory has one).
fn invariants(h: &mut String, s: &Value, out: &Path) {
    h.push_str(
        "<h2 id=\"invariants\">Invariants</h2>\n<table id=\"invariants-table\"><tr><th>invariant</th><th>kind</th><th>verdict</th>\
         <th>violations</th><th>first violation</th><th>show</th></tr>",
    );
    let perfetto = out.join("trace.json").exists();
    for i in s
        .get("invariants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let holds = i.get("holds").and_then(Value::as_bool).unwrap_or(false);
        let name = i.get("name").and_then(Value::as_str).unwrap_or("");
        let first = i.get("firstViolation").filter(|f| !f.is_null());
        let show = first.map_or(String::new(), |f| {
            let jobs = timeline::violation_jobs(f);
            let on = if jobs.is_empty() {
                "the moment".to_string()
            } else {
                format!("job-{}", jobs[0])
            };
            let mut links = format!(
                "<a class=\"tl-link\" href=\"{}\" data-violation=\"{}\">{} on the timeline</a>",
                timeline::violation_link(name),
                esc(name),
                esc(&on)
            );
            if perfetto {
                links.push_str(" · <a href=\"trace.json\">Perfetto trace</a>");
            }
            links
        });
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{show}</td></tr>",
            esc(name),
            num(i.get("kind")),
            if holds { "holds" } else { "violated" },
            if holds { "holds" } else { "VIOLATED" },
            num(i.get("violations")),
            first.map(first_violation).unwrap_or_default()
        );
    }
    h.push_str("</table>\n");
    if let Some(Value::Object(map)) = s.get("sometimes") {
        h.push_str("<p class=\"muted\">Reached at least once (<em>sometimes</em> properties): ");
        let parts: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{} × {}", esc(k), num(Some(v))))
            .collect();
        h.push_str(&parts.join(", "));
        h.push_str("</p>\n");
    }
}

fn first_violation(f: &Value) -> String {
    format!(
        "at {} ms{}{}: {}",
        num(f.get("atMs")),
        f.get("job")
            .and_then(Value::as_u64)
            .map(|j| format!(", job-{j}"))
            .unwrap_or_default(),
        f.get("key")
            .and_then(Value::as_str)
            .map(|k| format!(", key {}", esc(k)))
            .unwrap_or_default(),
        esc(f.get("message").and_then(Value::as_str).unwrap_or(""))
    )
}

fn faults(h: &mut String, d: &RunData) {
    const SHOWN: usize = 200;
    let _ = write!(
        h,
        "<h2 id=\"faults\">Fault events</h2>\n<p class=\"muted\">From {}.</p>\n",
        esc(d.source.describe())
    );
    if d.faults.is_empty() {
        h.push_str(
            "<p>None: no worker crash, stall, relay or consumer crash or operator action in this run.</p>\n",
        );
        return;
    }
    h.push_str("<table id=\"faults-table\"><tr><th>time (ms)</th><th>kind</th><th>worker</th><th>job</th><th>until (ms)</th><th>detail</th><th>show</th></tr>");
    for f in d.faults.iter().take(SHOWN) {
        let jobs: Vec<u32> = f.job.into_iter().collect();
        let _ = write!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>\
             <td><a class=\"tl-link\" href=\"{}\">timeline</a></td></tr>",
            f.time_ms,
            esc(match f.kind {
                FaultKind::Crash => "worker crash",
                FaultKind::Stall => "worker stall",
                FaultKind::RelayCrash => "relay crash",
                FaultKind::ConsumerCrash => "consumer crash",
                FaultKind::Operator => "operator",
            }),
            f.worker.map(|w| format!("worker-{w}")).unwrap_or_default(),
            f.job.map(|j| format!("job-{j}")).unwrap_or_default(),
            f.until_ms.map(|u| u.to_string()).unwrap_or_default(),
            esc(&f.detail),
            timeline::link(&jobs, Some(f.time_ms)),
        );
    }
    h.push_str("</table>\n");
    if d.faults.len() > SHOWN {
        let _ = writeln!(
            h,
            "<p class=\"muted\">… and {} more.</p>",
            d.faults.len() - SHOWN
        );
    }
}

fn files(h: &mut String, out: &Path) {
    h.push_str("<h2 id=\"files\">Files</h2>\n<ul>");
    for (f, what) in [
        (
            "summary.json",
            "every count, the latency percentiles, the invariant verdicts",
        ),
        ("scenario.toml", "the scenario exactly as run"),
        ("jobs.csv", "a row per job"),
        (
            "attempts.csv",
            "a row per attempt, with queueWaitMs and inferenceMs",
        ),
        ("depth.csv", "queue depth samples"),
        (
            "tenants.csv",
            "a row per tenant: outcomes, queueWaitMs, jobAgeMs",
        ),
        ("retries.csv", "retries scheduled per 100 ms"),
        ("outbox.csv", "outbox rows held at each depth sample"),
        (
            "dlq.csv",
            "jobs held in the dead-letter queue at each depth sample",
        ),
        ("faults.csv", "fault markers (written by run --chart)"),
        (
            "reviews.csv",
            "review wait per document (written by run --chart)",
        ),
        (
            "timeline.json",
            "the job timeline's data (written by run --chart)",
        ),
        ("trace.jsonl", "the history, one event a line (run --trace)"),
        (
            "history.jsonl",
            "the history judged (conform, verify --out)",
        ),
        (
            "conform.json",
            "the real run beside the simulated one (conform)",
        ),
        (
            "trace.json",
            "the Perfetto / Chrome trace (run --trace-format chrome)",
        ),
    ] {
        if out.join(f).exists() {
            let _ = write!(h, "<li><a href=\"{f}\">{f}</a> — {}</li>", esc(what));
        }
    }
    h.push_str("</ul>\n");
}

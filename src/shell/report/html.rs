//! The HTML report: one static, self-contained `index.html` per run or sweep directory.
//!
//! Owns: the page: the verdict, the reproduction command, the summary tables, the invariants
//! and their verdicts, the fault events, and the charts embedded as `data:` URIs, so the file
//! opens anywhere with no network and no sibling files. A small inline script records load
//! errors and how many charts decoded on `<html data-errors=.. data-charts-rendered=..>`, which
//! the headless-browser test reads.
//! Does not: draw (see `report::chart`) or compute metrics (it formats `summary.json`).

use crate::shell::report::chart::data::{FaultKind, RunData};
use crate::shell::report::chart::sweep_charts::SweepData;
use crate::shell::report::chart::ChartFile;
use crate::shell::report::error::ReportError;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

const STYLE: &str = r#"
:root { --ok: #00795a; --bad: #b3261e; --ink: #222; --muted: #666; --line: #ddd; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink); margin: 0 auto;
       max-width: 1480px; padding: 24px 32px 64px; line-height: 1.45; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 20px; margin: 36px 0 10px; border-bottom: 1px solid var(--line); }
.badge { display: inline-block; padding: 2px 12px; border-radius: 4px; color: #fff; font-weight: bold; margin-right: 10px; }
.pass { background: var(--ok); } .fail { background: var(--bad); }
.muted { color: var(--muted); } .desc { white-space: pre-line; max-width: 900px; }
pre { background: #f5f5f5; border: 1px solid var(--line); padding: 10px 14px; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { border: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.holds { color: var(--ok); font-weight: bold; } .violated { color: var(--bad); font-weight: bold; }
figure { margin: 16px 0 32px; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 14px; max-width: 1100px; }
nav a { margin-right: 14px; }
"#;

/// Records errors from the moment the page starts loading.
const HEAD_SCRIPT: &str = r#"<script>
window.__durasimErrors = [];
window.addEventListener('error', function (e) {
  window.__durasimErrors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || 'error'));
  document.documentElement.setAttribute('data-errors', String(window.__durasimErrors.length));
}, true);
</script>"#;

/// Counts decoded charts once everything has loaded.
const TAIL_SCRIPT: &str = r#"<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.querySelectorAll('img.chart'));
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; });
  var root = document.documentElement;
  root.setAttribute('data-charts', String(imgs.length));
  root.setAttribute('data-charts-rendered', String(ok.length));
  root.setAttribute('data-errors', String(window.__durasimErrors.length));
  root.setAttribute('data-loaded', 'true');
});
</script>"#;

fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\" data-errors=\"0\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n{HEAD_SCRIPT}\n\
         <style>{STYLE}</style>\n</head>\n<body>\n",
        esc(title)
    )
}

fn page_end(out: &mut String) {
    let _ = write!(
        out,
        "<p class=\"muted\">Generated by durasim {} from the run's output files. Self-contained: the charts are embedded; \
         the links below open the raw files next to this page.</p>\n{TAIL_SCRIPT}\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
}

/// The chart images, embedded. PNG is preferred when both formats exist.
fn figures(out: &mut String, charts: &[ChartFile]) -> Result<(), ReportError> {
    for c in charts {
        let pick = c
            .files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "png"))
            .or_else(|| c.files.first())
            .expect("a chart has at least one file (one a format)");
        let bytes = std::fs::read(pick).map_err(ReportError::io("read", pick.display()))?;
        let mime = if pick.extension().is_some_and(|e| e == "svg") {
            "image/svg+xml"
        } else {
            "image/png"
        };
        let others: Vec<String> = c
            .files
            .iter()
            .map(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                format!("<a href=\"charts/{0}\">{0}</a>", esc(&name))
            })
            .collect();
        let _ = write!(
            out,
            "<figure id=\"chart-{name}\">\n<img class=\"chart\" alt=\"{name} chart\" src=\"data:{mime};base64,{data}\">\n\
             <figcaption>{caption} <span class=\"muted\">({files})</span></figcaption>\n</figure>\n",
            name = c.name,
            data = base64(&bytes),
            caption = esc(&c.caption),
            files = others.join(", "),
        );
    }
    Ok(())
}

fn num(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::String(s)) => esc(s),
        Some(Value::Null) | None => "–".into(),
        Some(other) => esc(&other.to_string()),
    }
}

/// A two-column table of an object's scalar fields.
fn kv_table(out: &mut String, heading: &str, obj: Option<&Value>) {
    let Some(Value::Object(map)) = obj else {
        return;
    };
    let _ = write!(
        out,
        "<table><tr><th colspan=\"2\">{}</th></tr>",
        esc(heading)
    );
    for (k, v) in map {
        if v.is_object() || v.is_array() {
            continue;
        }
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
            esc(k),
            num(Some(v))
        );
    }
    out.push_str("</table>\n");
}

fn scenario_description(text: Option<&str>) -> Option<String> {
    let v: toml::Value = toml::from_str(text?).ok()?;
    v.get("description")?.as_str().map(|s| s.trim().to_string())
}

/// Writes `out/index.html` for a run.
pub fn write_run_report(
    out: &Path,
    d: &RunData,
    charts: &[ChartFile],
) -> Result<PathBuf, ReportError> {
    let s = &d.summary;
    let mut h = page_start(&format!("durasim · {}", d.title()));
    let passed = s
        .get("expectationsMet")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let held = s.get("invariants").and_then(Value::as_array).map(|a| {
        (
            a.iter()
                .filter(|i| i.get("holds").and_then(Value::as_bool) == Some(true))
                .count(),
            a.len(),
        )
    });
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
        held = held.map_or("?".into(), |(a, b)| format!("{a}/{b}")),
        quiescent = if s.get("quiescent").and_then(Value::as_bool) == Some(false) { "TIME LIMIT HIT" } else { "quiescent" },
    );
    if let Some(desc) = scenario_description(d.scenario_text.as_deref()) {
        let _ = writeln!(h, "<p class=\"desc\">{}</p>", esc(&desc));
    }
    h.push_str("<nav><a href=\"#reproduce\">reproduce</a><a href=\"#summary\">summary</a><a href=\"#invariants\">invariants</a>\
                <a href=\"#charts\">charts</a><a href=\"#faults\">fault events</a><a href=\"#files\">files</a></nav>\n");
    let _ = write!(
        h,
        "<h2 id=\"reproduce\">Reproduce</h2>\n<pre><code>{}</code></pre>\n<p class=\"muted\">Same seed, same history: \
         <code>durasim replay DIR</code> re-runs it and compares the trace hash.</p>\n",
        esc(s.get("reproduce").and_then(Value::as_str).unwrap_or("(unknown)"))
    );
    let unmet = s
        .get("unmetExpectations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !unmet.is_empty() {
        h.push_str("<h2>Unmet expectations</h2><table><tr><th>field</th><th>expected</th><th>actual</th></tr>");
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

    h.push_str("<h2 id=\"summary\">Summary</h2>\n<div class=\"grid\">\n");
    for (heading, key) in [
        ("jobs", "jobs"),
        ("effects", "effects"),
        ("leases", "leases"),
        ("crashes", "crashes"),
        ("dead-letter queue", "dlq"),
    ] {
        kv_table(&mut h, heading, s.get(key));
    }
    h.push_str("</div>\n<table><tr><th>metric (ms)</th><th>count</th><th>min</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>mean</th></tr>");
    for m in ["queueWaitMs", "inferenceMs", "reviewWaitMs", "jobAgeMs"] {
        let v = s.pointer(&format!("/metrics/{m}"));
        let _ = write!(h, "<tr><td>{m}</td>");
        for f in ["count", "min", "p50", "p95", "p99", "max", "mean"] {
            let _ = write!(
                h,
                "<td class=\"num\">{}</td>",
                num(v.and_then(|v| v.get(f)))
            );
        }
        h.push_str("</tr>");
    }
    let qd = s.pointer("/metrics/queueDepth");
    let _ = writeln!(
        h,
        "<tr><td>queueDepth (jobs)</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td colspan=\"4\"></td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td></tr></table>",
        num(qd.and_then(|v| v.get("samples"))),
        num(qd.and_then(|v| v.get("min"))),
        num(qd.and_then(|v| v.get("max"))),
        num(qd.and_then(|v| v.get("mean"))),
    );

    h.push_str("<h2 id=\"invariants\">Invariants</h2>\n<table><tr><th>invariant</th><th>kind</th><th>verdict</th><th>violations</th><th>first violation</th></tr>");
    for i in s
        .get("invariants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let holds = i.get("holds").and_then(Value::as_bool).unwrap_or(false);
        let first = i.get("firstViolation").filter(|f| !f.is_null()).map(|f| {
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
        });
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            num(i.get("name")),
            num(i.get("kind")),
            if holds { "holds" } else { "violated" },
            if holds { "holds" } else { "VIOLATED" },
            num(i.get("violations")),
            first.unwrap_or_default()
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

    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    figures(&mut h, charts)?;

    let _ = write!(
        h,
        "<h2 id=\"faults\">Fault events</h2>\n<p class=\"muted\">From {}.</p>\n",
        esc(d.source.describe())
    );
    if d.faults.is_empty() {
        h.push_str(
            "<p>None: no worker crash, stall, relay or consumer crash or operator action in this run.</p>\n",
        );
    } else {
        const SHOWN: usize = 200;
        h.push_str("<table><tr><th>time (ms)</th><th>kind</th><th>worker</th><th>job</th><th>until (ms)</th><th>detail</th></tr>");
        for f in d.faults.iter().take(SHOWN) {
            let _ = write!(
                h,
                "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
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
                esc(&f.detail)
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
        ("faults.csv", "fault markers (written by run --chart)"),
        (
            "reviews.csv",
            "review wait per document (written by run --chart)",
        ),
        ("trace.jsonl", "the history, one event a line (run --trace)"),
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
    page_end(&mut h);
    let path = out.join("index.html");
    std::fs::write(&path, h).map_err(ReportError::io("write", path.display()))?;
    Ok(path)
}

/// Writes `out/index.html` for a sweep.
pub fn write_sweep_report(
    out: &Path,
    sw: &SweepData,
    charts: &[ChartFile],
) -> Result<PathBuf, ReportError> {
    let j = &sw.json;
    let title = format!(
        "sweep of {} · seeds {}..{}",
        j.scenario, j.seeds.start, j.seeds.end
    );
    let mut h = page_start(&format!("durasim · {title}"));
    let bugs = if j.bugs.is_empty() {
        "none".to_string()
    } else {
        j.bugs.join(", ")
    };
    let _ = write!(
        h,
        "<h1><span class=\"badge {}\">{}</span>{}</h1>\n<p class=\"muted\">{} seeds run, {} failed · bugs: {} · swarm: {}</p>\n",
        if j.passed { "pass" } else { "fail" },
        if j.passed { "PASS" } else { "FAIL" },
        esc(&title),
        j.seeds_run,
        j.seeds_failed,
        esc(&bugs),
        j.swarm,
    );
    h.push_str("<h2>Failures</h2>\n");
    if j.failures.is_empty() {
        h.push_str("<p>No seed violated an invariant.</p>\n");
    } else {
        h.push_str("<table><tr><th>invariant</th><th>class</th><th>seeds</th><th>first seeds</th><th>reproduce</th><th>shrunk scenario</th></tr>");
        for g in &j.failures {
            let sig = g.signatures.first();
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&g.invariant),
                esc(&g.class),
                g.seeds,
                esc(&serde_json::to_string(&g.first_seeds).expect("seeds serialize")),
                esc(sig.map_or("–", |s| s.reproduce.as_str())),
                esc(sig
                    .and_then(|s| s.shrunk.as_ref())
                    .map_or("–", |s| s.path.as_str())),
            );
        }
        h.push_str("</table>\n");
    }
    let cov = &j.coverage;
    h.push_str("<h2>Coverage</h2>\n<p class=\"muted\">In how many seeds each fault kind, crash point and <em>sometimes</em> property fired.</p>\n<div class=\"grid\">");
    let faults = |v: &[crate::sweep::FaultCoverage]| -> Vec<(String, u64)> {
        v.iter().map(|c| (c.name.clone(), c.seeds)).collect()
    };
    let sometimes: Vec<(String, u64)> = cov
        .sometimes
        .iter()
        .map(|c| (c.name.clone(), c.seeds))
        .collect();
    for (heading, rows) in [
        ("fault kind", faults(&cov.faults)),
        ("crash point", faults(&cov.crash_points)),
        ("sometimes", sometimes),
    ] {
        let _ = write!(h, "<table><tr><th>{heading}</th><th>seeds</th></tr>");
        for (name, seeds) in rows {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"num\">{seeds}</td></tr>",
                esc(&name)
            );
        }
        h.push_str("</table>");
    }
    let _ = writeln!(
        h,
        "</div>\n<p>Coverage gate: <strong>{}</strong></p>",
        esc(&cov.gate)
    );
    h.push_str("<h2>Charts</h2>\n");
    figures(&mut h, charts)?;
    page_end(&mut h);
    let path = out.join("index.html");
    std::fs::write(&path, h).map_err(ReportError::io("write", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn escaping_covers_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }
}

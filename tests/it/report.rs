//! Charts, the HTML report (rendered in headless Chromium: that test is ignored, run by
//! `cargo test -- --ignored`, and fails without Chromium) and the Chrome / Perfetto trace export.

use crate::support::{durasim, ok, require_tools, temp_path, text};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// Width and height of a PNG, checking its signature.
pub(crate) fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    assert_eq!(&b[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

const RUN_CHARTS: [&str; 4] = ["depth", "latency", "stages", "outcomes"];

#[test]
fn run_chart_draws_every_chart_and_a_self_contained_report() {
    let dir = temp_path!("s12");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/synthetic-12.toml",
        "--chart",
        "--out",
        d,
        "--quiet",
    ]));
    for c in RUN_CHARTS {
        let (w, h) = png_size(&dir.join("charts").join(format!("{c}.png")));
        assert!(w >= 1000 && h >= 500, "{c}: {w}x{h}");
    }
    assert!(dir.join("faults.csv").is_file() && dir.join("reviews.csv").is_file());
    let reviews = std::fs::read_to_string(dir.join("reviews.csv")).unwrap();
    assert_eq!(
        reviews.lines().count(),
        13,
        "a header and 12 documents:\n{reviews}"
    );
    assert!(
        reviews.lines().skip(1).all(|l| l.ends_with(",90")),
        "reviewWaitMs is 90 for each:\n{reviews}"
    );
    assert!(
        !dir.join("trace.jsonl").exists(),
        "--chart alone writes no trace.jsonl"
    );

    assert!(
        dir.join("timeline.json").is_file(),
        "--chart keeps the timeline's data for a later `chart`"
    );

    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    // The four charts of every run, and the scenario charts it has the data for (two tenants,
    // an outbox); no retry and no dead letter: listed with the reason, not drawn.
    let drawn = std::fs::read_dir(dir.join("charts")).unwrap().count();
    assert_eq!(drawn, 6);
    assert_eq!(html.matches("<img class=\"chart\"").count(), drawn);
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), drawn);
    for c in ["tenants", "outbox"] {
        assert!(html.contains(&format!("alt=\"{c} chart\"")), "{c} is drawn");
    }
    assert!(html.contains("retries: not drawn (no retry was scheduled in this run)"));
    assert!(html.contains("dlq: not drawn (no job was dead-lettered in this run)"));
    assert!(html.contains("<section id=\"timeline\">") && html.contains("id=\"tl-data\""));
    for needle in [
        "durasim run scenarios/synthetic-12.toml --seed 1",
        "single_result_per_key",
        "queueWaitMs",
        "PASS",
    ] {
        assert!(html.contains(needle), "index.html lacks {needle:?}");
    }
    for remote in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "src=\"//",
        "@import",
    ] {
        assert!(
            !html.contains(remote),
            "index.html loads something remote: {remote}"
        );
    }
}

#[test]
fn chart_redraws_a_directory_in_both_formats_and_from_csvs_alone() {
    // No trace, no --chart: only the operator actions scenario.toml schedules are known.
    let dir = temp_path!("chaos-plain");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--out",
        d,
        "--quiet",
    ]));
    let out = temp_path!("chaos-plain-charts");
    let o = out.to_str().unwrap();
    let r = durasim(&["chart", d, "--out", o, "--format", "both"]);
    ok(&r);
    for c in RUN_CHARTS {
        png_size(&out.join("charts").join(format!("{c}.png")));
        let svg = std::fs::read_to_string(out.join("charts").join(format!("{c}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("<text"),
            "{c}.svg has no text"
        );
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("scenario.toml only (no history"),
        "the report says where markers came from"
    );
    assert!(
        html.contains("operator"),
        "operator actions come from scenario.toml"
    );

    // With a trace, the markers are complete.
    let traced = temp_path!("chaos-traced");
    let t = traced.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--trace",
        "--out",
        t,
        "--quiet",
    ]));
    ok(&durasim(&["chart", t]));
    let html = std::fs::read_to_string(traced.join("index.html")).unwrap();
    assert!(
        html.contains("From the run&#39;s history."),
        "markers from trace.jsonl"
    );
    assert!(html.contains("worker stall") && html.contains("relay crash"));
}

/// `chart` on a `--no-rows` run drew "worker crash × 0" (markers taken from an attempts.csv that
/// was never written) and said nothing of the empty panels.
#[test]
fn chart_of_a_no_rows_run_names_the_charts_that_lack_data() {
    let dir = temp_path!("no-rows");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--no-rows",
        "--out",
        d,
        "--quiet",
    ]));
    let r = durasim(&["chart", d]);
    ok(&r);
    let out = String::from_utf8_lossy(&r.stdout);
    for needle in [
        "missing depth: no fault markers",
        "summary.json counts 15 worker, 10 relay and 0 consumer crashes",
        "--trace",
        "missing latency",
        "missing stages",
        "missing outcomes",
    ] {
        assert!(out.contains(needle), "lacks {needle:?}: {out}");
    }
    let svg_dir = temp_path!("no-rows-svg");
    ok(&durasim(&[
        "chart",
        d,
        "--out",
        svg_dir.to_str().unwrap(),
        "--format",
        "svg",
    ]));
    let svg = std::fs::read_to_string(svg_dir.join("charts/depth.svg")).unwrap();
    assert!(
        !svg.contains("worker crash × 0"),
        "a count it does not know"
    );
    assert!(svg.contains("worker crash — not recorded"), "{svg}");
}

#[test]
fn chart_rejects_what_is_not_a_run() {
    let r = durasim(&["chart", "no/such/dir"]);
    assert_eq!(r.status.code(), Some(2));
    let empty = temp_path!("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let r = durasim(&["chart", empty.to_str().unwrap()]);
    assert_eq!(
        r.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("neither summary.json"));
}

#[test]
fn sweep_directory_gets_cross_seed_charts() {
    let dir = temp_path!("sweep");
    let d = dir.to_str().unwrap();
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..24",
        "--out",
        d,
        "--quiet",
    ]);
    ok(&r);
    let bug = dir.join("no_fencing");
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..24",
        "--bug",
        "no_fencing",
        "--no-shrink",
        "--quiet",
        "--out",
        bug.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "no_fencing is caught");
    ok(&durasim(&["chart", d]));
    let (w, h) = png_size(&dir.join("charts/sweep.png"));
    assert!(w >= 1000 && h >= 800);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        html.contains("per-seed metrics of the 24 seeds, from seeds.jsonl"),
        "the sweep recorded each seed's figures and the chart read them"
    );
    // The charts read what the sweep recorded and never run a seed again: without seeds.jsonl
    // there is nothing to show.
    let copy = temp_path!("sweep-without-seeds");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(dir.join("sweep.json"), copy.join("sweep.json")).unwrap();
    let out = temp_path!("sweep-without-seeds-charts");
    ok(&durasim(&[
        "chart",
        copy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("no per-seed metrics:") && html.contains("seeds.jsonl: cannot read"),
        "{html}"
    );
}

// ---- the Chrome trace-event format --------------------------------------------------------

/// Checks a document against the trace-event format as ui.perfetto.dev and chrome://tracing
/// read it: required fields per phase, balanced async pairs, complete events properly nested
/// on each thread, flows that start before they finish.
fn validate_trace_events(doc: &Value) -> Result<BTreeMap<String, usize>, String> {
    let events = doc
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array")?;
    let mut phases: BTreeMap<String, usize> = BTreeMap::new();
    let mut slices: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    let mut async_open: HashMap<(String, String), i64> = HashMap::new();
    let mut flows: HashMap<String, (u32, u32, u64)> = HashMap::new();
    let mut last_ts = 0u64;
    for (i, e) in events.iter().enumerate() {
        let err = |m: &str| format!("event #{i} {e}: {m}");
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| err("no ph"))?;
        *phases.entry(ph.to_string()).or_default() += 1;
        e.get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| err("no name"))?;
        let pid = e
            .get("pid")
            .and_then(Value::as_u64)
            .ok_or_else(|| err("no integer pid"))?;
        let tid = e
            .get("tid")
            .and_then(Value::as_u64)
            .ok_or_else(|| err("no integer tid"))?;
        if ph == "M" {
            e.get("args")
                .and_then(Value::as_object)
                .ok_or_else(|| err("metadata without args"))?;
            continue;
        }
        let ts = e
            .get("ts")
            .and_then(Value::as_u64)
            .ok_or_else(|| err("no ts"))?;
        if ts < last_ts {
            return Err(err("events not sorted by ts"));
        }
        last_ts = ts;
        match ph {
            "X" => {
                let dur = e
                    .get("dur")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| err("X without dur"))?;
                slices.entry((pid, tid)).or_default().push((ts, ts + dur));
            }
            "i" | "I" => {
                let s = e.get("s").and_then(Value::as_str).unwrap_or("t");
                if !["g", "p", "t"].contains(&s) {
                    return Err(err("bad instant scope"));
                }
            }
            "b" | "e" => {
                let cat = e
                    .get("cat")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err("async without cat"))?;
                let id = e
                    .get("id")
                    .ok_or_else(|| err("async without id"))?
                    .to_string();
                let n = async_open.entry((cat.to_string(), id)).or_default();
                *n += if ph == "b" { 1 } else { -1 };
                if *n < 0 {
                    return Err(err("async end before begin"));
                }
            }
            "s" | "t" | "f" => {
                let id = e
                    .get("id")
                    .ok_or_else(|| err("flow without id"))?
                    .to_string();
                let f = flows.entry(id).or_default();
                match ph {
                    "s" => f.0 += 1,
                    "f" => {
                        if f.0 == 0 {
                            return Err(err("flow finishes before it starts"));
                        }
                        f.1 += 1
                    }
                    _ => {}
                }
                f.2 = ts;
            }
            "C" => {
                let args = e
                    .get("args")
                    .and_then(Value::as_object)
                    .ok_or_else(|| err("counter without args"))?;
                if !args.values().all(Value::is_number) {
                    return Err(err("counter with a non-numeric value"));
                }
            }
            other => return Err(err(&format!("unexpected phase {other}"))),
        }
    }
    for ((cat, id), n) in async_open {
        if n != 0 {
            return Err(format!("async slice {cat}/{id} never ends"));
        }
    }
    for (id, (s, f, _)) in flows {
        if s != 1 || f != 1 {
            return Err(format!("flow {id}: {s} starts, {f} finishes"));
        }
    }
    // Complete events on one thread must nest: sort by start, longest first, and keep a stack.
    for ((pid, tid), mut v) in slices {
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut stack: Vec<(u64, u64)> = Vec::new();
        for (s, e) in v {
            while stack
                .last()
                .is_some_and(|top| top.1 <= s && !(top.0 == s && top.1 >= e))
            {
                stack.pop();
            }
            if let Some(top) = stack.last() {
                if e > top.1 {
                    return Err(format!(
                        "pid {pid} tid {tid}: slice {s}..{e} overlaps its parent {}..{}",
                        top.0, top.1
                    ));
                }
            }
            stack.push((s, e));
        }
    }
    Ok(phases)
}

#[test]
fn chrome_trace_is_valid_trace_event_json_with_tracks_and_flows() {
    let dir = temp_path!("chaos-chrome");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--trace-format",
        "chrome",
        "--out",
        d,
        "--quiet",
    ]));
    assert!(!dir.join("trace.jsonl").exists(), "chrome replaces jsonl");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap())
            .expect("trace.json is JSON");
    let phases = validate_trace_events(&doc).unwrap_or_else(|e| panic!("invalid trace: {e}"));
    for ph in ["M", "X", "i", "b", "e", "s", "f", "C"] {
        assert!(
            phases.get(ph).copied().unwrap_or(0) > 0,
            "no {ph} events: {phases:?}"
        );
    }
    let events = doc["traceEvents"].as_array().unwrap();
    let named = |n: &str| {
        events
            .iter()
            .filter(|e| e["name"].as_str().is_some_and(|x| x.starts_with(n)))
            .count()
    };
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        named("CRASH") as u64,
        summary["crashes"]["worker"].as_u64().unwrap()
    );
    assert_eq!(
        named("RELAY CRASH") as u64,
        summary["crashes"]["relay"].as_u64().unwrap()
    );
    assert_eq!(
        named("STALL") as u64,
        summary["crashes"]["stalls"].as_u64().unwrap()
    );
    assert_eq!(
        named("attempt job-") as u64,
        summary["attempts"].as_u64().unwrap()
    );
    let threads: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    for t in ["worker-0", "worker-5", "relay", "consumer", "review"] {
        assert!(threads.contains(&t), "no {t} track: {threads:?}");
    }

    // And --trace --trace-format jsonl is the plain trace.
    let j = temp_path!("s12-jsonl");
    ok(&durasim(&[
        "run",
        "scenarios/synthetic-12.toml",
        "--trace-format",
        "jsonl",
        "--out",
        j.to_str().unwrap(),
        "--quiet",
    ]));
    assert!(j.join("trace.jsonl").is_file() && !j.join("trace.json").exists());
}

// ---- the report in a real browser ----------------------------------------------------------

/// Runs chromium headless with a fresh profile; its output goes to files (a dumped DOM is larger
/// than a pipe's buffer). None when it does not finish in time.
pub(crate) fn chromium(args: &[&str], profile: &Path) -> Option<Output> {
    let stdout_path = profile.with_extension("stdout");
    let stderr_path = profile.with_extension("stderr");
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(Output {
                status,
                stdout: std::fs::read(&stdout_path).unwrap_or_default(),
                stderr: std::fs::read(&stderr_path).unwrap_or_default(),
            });
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(crate) fn attr(dom: &str, name: &str) -> Option<String> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    Some(dom[at..].split('"').next()?.to_string())
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn html_report_renders_in_headless_chromium() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let dir = temp_path!("chaos-html");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--chart",
        "--out",
        d,
        "--quiet",
    ]));
    let page = format!(
        "file://{}",
        dir.join("index.html").canonicalize().unwrap().display()
    );
    let profile = temp_path!("chromium-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let out = chromium(
        &["--virtual-time-budget=10000", "--dump-dom", &page],
        &profile,
    )
    .expect("chromium finished within 90 s");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && dom.contains("<html"),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        attr(&dom, "data-loaded").as_deref(),
        Some("true"),
        "the load event ran"
    );
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some("0"),
        "errors while loading"
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let charts = html.matches("<img class=\"chart\"").count().to_string();
    assert_eq!(charts, "8", "chaos has data for every chart");
    assert_eq!(attr(&dom, "data-charts").as_deref(), Some(charts.as_str()));
    assert_eq!(
        attr(&dom, "data-charts-rendered").as_deref(),
        Some(charts.as_str()),
        "every chart decoded"
    );
    assert_eq!(
        attr(&dom, "data-tl-ready").as_deref(),
        Some("true"),
        "the timeline drew"
    );
    assert!(dom.contains("single_result_per_key"));

    // A screenshot, for a person to look at (chaos-html.png beside the run's directory).
    let shot = dir.with_extension("png");
    let _ = chromium(
        &[
            "--window-size=1500,2400",
            &format!("--screenshot={}", shot.display()),
            &page,
        ],
        &profile,
    );
    if shot.exists() {
        let (w, h) = png_size(&shot);
        assert!(w >= 1000 && h >= 1000);
    }
}

// ---- the report's tables, read by their headers -------------------------------------------

/// A table of an HTML report, found by its `id`: the header cells, then each row's cells as
/// text (tags dropped, entities decoded). Tests read a cell by its row's first cell and its
/// column's header, so a row shifted by a column fails.
pub(crate) struct HtmlTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn cell_text(raw: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in raw.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
        .trim()
        .to_string()
}

/// The cells of one `<tr>`: each `<th>` or `<td>`'s content.
fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = row;
    while let Some(open) = rest.find("<t") {
        let tag = &rest[open..];
        if !(tag.starts_with("<td") || tag.starts_with("<th")) {
            rest = &rest[open + 2..];
            continue;
        }
        let close = if tag.starts_with("<td") {
            "</td>"
        } else {
            "</th>"
        };
        let start = tag.find('>').expect("a cell's tag closes") + 1;
        let end = tag.find(close).expect("a cell closes");
        out.push(cell_text(&tag[start..end]));
        rest = &tag[end + close.len()..];
    }
    out
}

impl HtmlTable {
    pub fn read(html: &str, id: &str) -> HtmlTable {
        let at = html
            .find(&format!("<table id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no table {id:?} in the report"));
        let body = &html[at..at + html[at..].find("</table>").expect("the table closes")];
        let mut rows = body.split("<tr>").skip(1).map(cells);
        let headers = rows.next().expect("a header row");
        let rows: Vec<Vec<String>> = rows.collect();
        for r in &rows {
            assert!(
                r.len() == headers.len() && !r.iter().any(|c| c.contains("colspan")),
                "table {id}: a row of {} cells under {} headers: {r:?} (headers {headers:?})",
                r.len(),
                headers.len()
            );
        }
        HtmlTable { headers, rows }
    }

    pub fn column(&self, header: &str) -> usize {
        self.headers
            .iter()
            .position(|h| h == header)
            .unwrap_or_else(|| panic!("no column {header:?} in {:?}", self.headers))
    }

    /// The cell of the row whose first cell is `first`, under `header`.
    pub fn cell(&self, first: &str, header: &str) -> &str {
        let col = self.column(header);
        let row = self
            .rows
            .iter()
            .find(|r| r[0] == first)
            .unwrap_or_else(|| panic!("no row {first:?}: {:?}", self.rows));
        &row[col]
    }

    /// Every row's cell under `header`.
    pub fn values(&self, header: &str) -> Vec<&str> {
        let col = self.column(header);
        self.rows.iter().map(|r| r[col].as_str()).collect()
    }
}

fn summary_of(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn charted_run(name: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let dir = crate::support::fresh(module_path!(), name, false);
    let d = dir.to_str().unwrap().to_string();
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--chart", "--out", &d, "--quiet"]);
    let r = durasim(&all);
    assert!(matches!(r.status.code(), Some(0 | 1)), "{r:?}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    (dir, html)
}

/// The queue depth's row had `colspan="4"` under three columns: its max showed under "mean"
/// (chaos seed 0: "mean 61", the real mean 31.4).
#[test]
fn metrics_table_shows_each_figure_under_its_header() {
    let (dir, html) = charted_run("chaos-seed-0", &["scenarios/chaos.toml", "--seed", "0"]);
    let s = summary_of(&dir);
    let t = HtmlTable::read(&html, "metrics");
    assert_eq!(
        t.headers,
        [
            "metric (ms)",
            "count",
            "min",
            "p50",
            "p95",
            "p99",
            "max",
            "mean"
        ]
    );
    let depth = &s["metrics"]["queueDepth"];
    assert_eq!(
        t.cell("queueDepth (jobs)", "mean"),
        depth["mean"].to_string()
    );
    assert_eq!(t.cell("queueDepth (jobs)", "max"), depth["max"].to_string());
    assert_eq!(
        t.cell("queueDepth (jobs)", "count"),
        depth["samples"].to_string()
    );
    assert_eq!(t.cell("queueDepth (jobs)", "p95"), "–");
    assert_ne!(
        depth["mean"], depth["max"],
        "the case that showed the shift"
    );
    let q = &s["metrics"]["queueWaitMs"];
    for h in ["count", "min", "p50", "p95", "p99", "max", "mean"] {
        assert_eq!(
            t.cell("queueWaitMs", h),
            q[h].to_string(),
            "queueWaitMs {h}"
        );
    }
}

/// A sweep's page listed only the first failure signature of each invariant; a `no_fencing`
/// sweep has several, each with its own shrunk scenario.
#[test]
fn sweep_report_lists_every_failure_signature_with_its_shrunk_file() {
    let dir = temp_path!("no-fencing-sweep");
    let d = dir.to_str().unwrap();
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..30",
        "--bug",
        "no_fencing",
        "--quiet",
        "--out",
        d,
    ]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    ok(&durasim(&["chart", d]));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    let t = HtmlTable::read(&html, "failures");
    let mut expected = Vec::new();
    for g in json["failures"].as_array().unwrap() {
        for s in g["signatures"].as_array().unwrap() {
            expected.push((
                g["invariant"].as_str().unwrap().to_string(),
                s["signature"].as_str().unwrap().to_string(),
                s["reproduce"].as_str().unwrap().to_string(),
                s["shrunk"]["path"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert!(expected.len() >= 2, "several signatures: {expected:?}");
    let (inv, sig, rep, shr) = (
        t.values("invariant"),
        t.values("signature"),
        t.values("reproduce"),
        t.values("shrunk scenario"),
    );
    let shown: Vec<(String, String, String, String)> = (0..t.rows.len())
        .map(|i| {
            (
                inv[i].to_string(),
                sig[i].to_string(),
                rep[i].to_string(),
                shr[i].to_string(),
            )
        })
        .collect();
    assert_eq!(shown, expected);
    for (_, _, _, shrunk) in &expected {
        assert!(dir.join(shrunk).is_file(), "{shrunk} is there");
        assert!(
            html.contains(&format!("href=\"{shrunk}\"")),
            "{shrunk} is linked"
        );
    }
}

/// The depth chart carried synthetic-12's last sample (1 job at 515 ms) on to the run's end
/// (690 ms), past the end of the work: the line ends at the last sample.
#[test]
fn depth_line_ends_at_the_last_sample() {
    let (dir, html) = charted_run("s12-depth", &["scenarios/synthetic-12.toml"]);
    let depth = std::fs::read_to_string(dir.join("depth.csv")).unwrap();
    let last = depth.lines().last().unwrap().split(',').next().unwrap();
    assert_eq!(last, "515");
    let t = HtmlTable::read(&html, "data-depth");
    assert_eq!(t.cell("queue depth", "to (ms)"), last);
    assert_eq!(t.cell("queue depth", "points"), "12");
    assert!(t
        .cell("queue depth", "drawn as")
        .contains("ending at the last sample"));
    assert_eq!(
        summary_of(&dir)["virtualTimeMs"],
        690,
        "the run goes on past it"
    );
}

/// The chaos depth chart was dominated by 45 full-height operator lines and overlapping stall
/// bands: the faults are in a strip above the series, a frequent kind as counts per bucket.
#[test]
fn frequent_faults_are_aggregated_above_the_depth_line() {
    let dir = temp_path!("chaos-3-svg");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--trace",
        "--out",
        d,
        "--quiet",
    ]));
    ok(&durasim(&["chart", d, "--format", "both"]));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let t = HtmlTable::read(&html, "data-depth");
    assert_eq!(t.cell("operator action", "points"), "45");
    assert!(
        t.cell("operator action", "drawn as")
            .starts_with("counts per "),
        "{}",
        t.cell("operator action", "drawn as")
    );
    assert_eq!(
        t.cell("worker stall", "drawn as"),
        "bands in the strip, from the stall to its end"
    );
    assert_eq!(t.cell("worker crash", "drawn as"), "ticks in the strip");
    // No mark of a fault crosses the plot: every green (operator) or orange (stall) shape is
    // within the strip's height.
    let svg = std::fs::read_to_string(dir.join("charts/depth.svg")).unwrap();
    for element in svg.split('<').filter(|e| {
        e.contains("#009E73")
            || e.contains("#E69F00")
            || e.contains("#009e73")
            || e.contains("#e69f00")
    }) {
        let height = element
            .split("height=\"")
            .nth(1)
            .and_then(|h| h.split('"').next())
            .and_then(|h| h.parse::<f64>().ok());
        if let Some(h) = height {
            assert!(h <= 22.0, "a fault mark {h} px high: <{element}");
        }
        let ys: Vec<f64> = element
            .split("points=\"")
            .nth(1)
            .map(|p| {
                p.split('"')
                    .next()
                    .unwrap()
                    .split(' ')
                    .filter_map(|xy| xy.split(',').nth(1)?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if let (Some(lo), Some(hi)) = (
            ys.iter().cloned().reduce(f64::min),
            ys.iter().cloned().reduce(f64::max),
        ) {
            assert!(
                hi - lo <= 22.0,
                "a fault line {} px long: <{element}",
                hi - lo
            );
        }
    }
}

/// "1,000" at 10.5 px read as "1.000": tick labels group thousands with a thin space, at 14.5 px
/// (plotters' size 18).
#[test]
fn tick_labels_group_thousands_with_a_thin_space() {
    let dir = temp_path!("chaos-ticks");
    let d = dir.to_str().unwrap();
    ok(&durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--out",
        d,
        "--quiet",
    ]));
    let out = temp_path!("chaos-ticks-svg");
    ok(&durasim(&[
        "chart",
        d,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "svg",
    ]));
    let svg = std::fs::read_to_string(out.join("charts/depth.svg")).unwrap();
    assert!(svg.contains("\n10\u{2009}000\n"), "a grouped tick label");
    for text in svg.split("<text").skip(1) {
        let content = text
            .split('>')
            .nth(1)
            .unwrap_or("")
            .split('<')
            .next()
            .unwrap_or("")
            .trim();
        let digits = content.chars().filter(|c| c.is_ascii_digit()).count();
        if digits >= 4
            && content
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '\u{2009}')
        {
            assert!(!content.contains(','), "a comma-grouped tick: {content}");
            let size: f64 = text
                .split("font-size=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .and_then(|s| s.trim_end_matches("px").parse().ok())
                .unwrap_or(0.0);
            assert!(size >= 14.0, "tick {content} at {size} px");
        }
    }
}

/// The sweep caption said failing seeds are red; the bars are dark orange. The caption names
/// the colours the data table says are drawn.
#[test]
fn sweep_caption_names_the_colours_the_bars_are_drawn_in() {
    let dir = temp_path!("sweep-colours");
    let d = dir.to_str().unwrap();
    let r = durasim(&[
        "sweep",
        "scenarios/chaos.toml",
        "--seeds",
        "0..12",
        "--bug",
        "no_fencing",
        "--no-shrink",
        "--quiet",
        "--out",
        d,
    ]);
    assert_eq!(r.status.code(), Some(1));
    ok(&durasim(&["chart", d, "--format", "both"]));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let t = HtmlTable::read(&html, "data-sweep");
    let failed = t.cell("seeds that violated an invariant", "colour");
    let held = t.cell("seeds where every invariant held", "colour");
    assert_eq!((failed, held), ("dark orange", "blue"));
    let caption = html
        .split("<figcaption>")
        .nth(1)
        .unwrap()
        .split("</figcaption>")
        .next()
        .unwrap();
    assert!(
        caption.contains(&format!("violated an invariant in {failed}")),
        "{caption}"
    );
    assert!(!caption.contains(" red"), "{caption}");
    let svg = std::fs::read_to_string(dir.join("charts/sweep.svg")).unwrap();
    assert!(
        svg.to_uppercase().contains("#D55E00"),
        "dark orange is drawn"
    );
    // Its figures group thousands too (the p95 queueWaitMs axis and its p50/p95/max labels).
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split('>').nth(1)?.split('<').next())
        .map(str::trim)
        .collect();
    assert!(texts.iter().any(|t| t.contains('\u{2009}')), "{texts:?}");
    for t in texts {
        let number = t.rsplit("= ").next().unwrap();
        assert!(
            !(number.len() >= 4 && number.chars().all(|c| c.is_ascii_digit())),
            "an ungrouped figure: {t}"
        );
    }
}

/// noisy-tenant's point is per-tenant waits, retry-storm's retries per 100 ms, outbox-retention's
/// outbox rows over time, dlq-eviction's DLQ size: each is charted when the run has the data, and
/// the index says why a chart was not drawn.
#[test]
fn each_scenario_gets_the_chart_it_is_about() {
    let (dir, html) = charted_run("noisy", &["scenarios/noisy-tenant.toml"]);
    let t = HtmlTable::read(&html, "data-tenants");
    let csv = std::fs::read_to_string(dir.join("tenants.csv")).unwrap();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(t.cell(f[0], "queueWaitMs p95"), f[6], "{line}");
        assert_eq!(t.cell(f[0], "enqueued"), f[1], "{line}");
    }
    assert!(html.contains("<img class=\"chart\" alt=\"tenants chart\""));
    assert!(
        html.contains("retries: not drawn (no retry was scheduled in this run)"),
        "the index says why"
    );

    let (_, html) = charted_run("storm", &["scenarios/retry-storm-no-jitter.toml"]);
    let t = HtmlTable::read(&html, "data-retries");
    assert!(t
        .cell("retries scheduled", "drawn as")
        .starts_with("a bar per 100 ms window"));
    assert!(html.contains("<img class=\"chart\" alt=\"retries chart\""));

    let (_, html) = charted_run("outbox", &["scenarios/outbox-retention.toml"]);
    let t = HtmlTable::read(&html, "data-outbox");
    assert_eq!(t.cell("outbox rows", "points"), "31");
    assert!(html.contains("outbox rows (max 505)") || html.contains("alt=\"outbox chart\""));

    let (_, html) = charted_run("dlq", &["scenarios/dlq-eviction.toml"]);
    assert!(html.contains("<img class=\"chart\" alt=\"dlq chart\""));
    HtmlTable::read(&html, "data-dlq");
}

/// `verify --out` writes no `retries.csv`: `chart` counts the retries from the history, the
/// same windows the run's `retries.csv` holds, and says where they came from; a history where
/// every invariant holds is a PASS (verify exits 0).
#[test]
fn a_verify_report_counts_retries_from_the_history() {
    let (run, run_html) = charted_run(
        "storm-run",
        &["scenarios/retry-storm-no-jitter.toml", "--trace"],
    );
    let from_run = HtmlTable::read(&run_html, "data-retries");
    assert!(from_run
        .cell("retries scheduled", "drawn as")
        .ends_with("(from retries.csv)"));
    let out = crate::support::fresh(module_path!(), "storm-verified", false);
    let r = durasim(&[
        "verify",
        run.join("trace.jsonl").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert!(!out.join("retries.csv").exists());
    ok(&durasim(&["chart", out.to_str().unwrap()]));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<img class=\"chart\" alt=\"retries chart\""));
    let t = HtmlTable::read(&html, "data-retries");
    assert!(t
        .cell("retries scheduled", "drawn as")
        .ends_with("(from the history)"));
    for h in ["points", "from (ms)", "to (ms)"] {
        assert_eq!(
            t.cell("retries scheduled", h),
            from_run.cell("retries scheduled", h),
            "{h}"
        );
    }
    assert!(html.contains("<span class=\"badge pass\">PASS</span>"));
    assert_eq!(summary_of(&out)["expectationsMet"], true);
}

/// The committed example reports (`examples/reports/*/`) are what `scripts/example-reports.sh` writes
/// with this durasim: each `run EXIT ARGS...` line of the script is run again into a fresh
/// directory and every file the committed manifest lists compared, `summary.json` without its
/// wall-clock fields. A change to durasim's output fails here until the script is run and its
/// output committed.
#[test]
fn committed_example_reports_are_what_their_script_writes() {
    let root = crate::support::root();
    let script = std::fs::read_to_string(root.join("scripts/example-reports.sh")).unwrap();
    let runs: Vec<Vec<&str>> = script
        .lines()
        .filter_map(|l| l.strip_prefix("run "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(runs.len() >= 3, "the script's run lines: {runs:?}");
    let wall = ["wallS", "eventsPerWallS", "simToWallRatio"];
    for args in runs {
        let (expected, args) = (args[0], &args[1..]);
        let at = args.iter().position(|a| *a == "--out").expect("--out DIR");
        let committed = root.join(args[at + 1]);
        let name = args[at + 1].trim_start_matches("examples/reports/");
        let fresh = crate::support::fresh(module_path!(), &format!("example-{name}"), false);
        let mut all = vec!["run"];
        all.extend_from_slice(&args[..at]);
        all.extend_from_slice(&["--out", fresh.to_str().unwrap(), "--quiet"]);
        all.extend_from_slice(&args[at + 2..]);
        let r = durasim(&all);
        assert_eq!(
            r.status.code().map(|c| c.to_string()).as_deref(),
            Some(expected),
            "{all:?}: {r:?}"
        );
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(committed.join("durasim-manifest.json")).unwrap(),
        )
        .unwrap();
        let files: Vec<&str> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let fresh_manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(fresh.join("durasim-manifest.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            fresh_manifest["files"], manifest["files"],
            "{name}: the same files"
        );
        for f in files {
            let (a, b) = (committed.join(f), fresh.join(f));
            let same = if f == "summary.json" {
                let read = |p: &Path| {
                    let mut v: Value =
                        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
                    for k in wall {
                        v.as_object_mut().unwrap().remove(k);
                    }
                    v
                };
                read(&a) == read(&b)
            } else {
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap()
            };
            assert!(
                same,
                "examples/reports/{name}/{f} is not what this durasim writes: run \
                 scripts/example-reports.sh and commit examples/reports/ with the change"
            );
        }
    }
}

/// The same inputs give the same bytes: the charts and the page (the timeline's data
/// included) are drawn with no clock and no hash order.
#[test]
fn charts_and_report_are_byte_identical_across_runs() {
    let (a, ha) = charted_run(
        "same-a",
        &["scenarios/chaos.toml", "--seed", "3", "--bug", "no_fencing"],
    );
    let (b, hb) = charted_run(
        "same-b",
        &["scenarios/chaos.toml", "--seed", "3", "--bug", "no_fencing"],
    );
    let strip = |h: &str, d: &Path| h.replace(d.to_str().unwrap(), "DIR");
    assert!(strip(&ha, &a) == strip(&hb, &b), "index.html differs");
    for f in [
        "charts/depth.png",
        "charts/tenants.png",
        "timeline.json",
        "faults.csv",
    ] {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} differs"
        );
    }
}

/// Case 5 of issue 26: `replay --help`'s and `verify --help`'s examples, `durasim run
/// scenarios/chaos.toml --chart` and the README's `--freeze` row wrote over the committed example
/// reports. The committed examples (the `--out` directories of `scripts/example-reports.sh`)
/// now live outside `reports/`, durasim's default output root, which the repository ignores; and
/// every command shown by a `--help` text, README.md or scenarios/README.md writes under
/// `reports/` (an explicit `--out`, `--freeze`, `--junit` or `chart DIR`, or the default
/// `reports/<name>...` of its scenario) or to a placeholder (`DIR`, `OUT.toml`), and no command
/// in docs/ (some describe CI's own workspace) writes into a committed example.
#[test]
fn no_help_example_or_documented_command_writes_over_a_committed_example() {
    let root = crate::support::root();
    let script = std::fs::read_to_string(root.join("scripts/example-reports.sh")).unwrap();
    let committed: Vec<String> = script
        .lines()
        .filter(|l| l.starts_with("run "))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let at = t.iter().position(|a| *a == "--out").expect("--out DIR");
            t[at + 1].trim_end_matches('/').to_string()
        })
        .collect();
    assert!(committed.len() >= 3, "{committed:?}");
    for c in &committed {
        assert!(
            !c.starts_with("reports/") && root.join(c).join("durasim-manifest.json").is_file(),
            "{c}: a committed example must exist and live outside reports/"
        );
    }
    let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l.trim() == "/reports/"),
        ".gitignore must ignore the default output root /reports/ whole"
    );

    const SUBCOMMANDS: [&str; 10] = [
        "run", "replay", "check", "bugs", "conform", "verify", "sweep", "merge", "explore", "chart",
    ];
    // Where the commands are shown: every --help text, and the user documentation.
    let mut sources: Vec<(String, String)> = Vec::new();
    let top = durasim(&["--help"]);
    sources.push(("durasim --help".into(), text(&top)));
    for sub in SUBCOMMANDS {
        let h = durasim(&[sub, "--help"]);
        assert_eq!(h.status.code(), Some(0), "durasim {sub} --help: {h:?}");
        sources.push((format!("durasim {sub} --help"), text(&h)));
    }
    let mut docs = vec![root.join("README.md"), root.join("scenarios/README.md")];
    let mut in_docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    for d in docs {
        let name = d.strip_prefix(&root).unwrap().display().to_string();
        sources.push((name, std::fs::read_to_string(&d).unwrap()));
    }

    let mut commands = Vec::new();
    for (source, body) in &sources {
        for line in body.lines() {
            let mut rest = line;
            while let Some(i) = rest.find("durasim ") {
                let tail = &rest[i..];
                rest = &rest[i + "durasim ".len()..];
                let sub = tail["durasim ".len()..].split_whitespace().next();
                if !sub.is_some_and(|s| SUBCOMMANDS.contains(&s)) {
                    continue;
                }
                // A command ends at the end of its code span or line, or at a shell comment;
                // `a && b`, `a | b` and `a; b` are two commands (the second found next).
                let end = ["`", " #", "&&", " | ", ";"]
                    .iter()
                    .filter_map(|m| tail.find(m))
                    .min()
                    .unwrap_or(tail.len());
                commands.push((source.clone(), tail[..end].trim().to_string()));
            }
        }
    }
    let shown = |s: &str| commands.iter().filter(|(src, _)| src == s).count();
    for s in [
        "durasim replay --help",
        "durasim verify --help",
        "README.md",
    ] {
        assert!(shown(s) > 0, "no command found in {s}");
    }

    // The default output of a scenario command: reports/<name><suffix>.
    let default_out = |sub: &str, scenario: Option<&str>| -> Option<String> {
        let suffix = match sub {
            "run" | "conform" => "",
            "sweep" | "merge" => "-sweep",
            "explore" => "-explore",
            _ => return None,
        };
        let name = scenario
            .and_then(|s| std::fs::read_to_string(root.join(s)).ok())
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let v = l.strip_prefix("name")?.trim_start().strip_prefix('=')?;
                    Some(v.trim().trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| "SCENARIO".into());
        Some(format!("reports/{name}{suffix}"))
    };
    let placeholder = |p: &str| {
        let stem = p.split(['.', '/']).next().unwrap_or("");
        !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c == '<' || c == '>')
    };
    let (mut checked, mut wrong) = (0, Vec::new());
    for (source, command) in &commands {
        let tokens: Vec<String> = shell_words(command)
            .into_iter()
            .map(|t| t.trim_matches(['[', ']']).to_string())
            .collect();
        let sub = tokens[1].as_str();
        let first = tokens
            .get(2)
            .filter(|t| !t.starts_with('-'))
            .map(String::as_str);
        let mut outputs = Vec::new();
        for flag in ["--out", "--freeze", "--junit"] {
            if let Some(at) = tokens.iter().position(|t| t == flag) {
                if let Some(v) = tokens.get(at + 1) {
                    outputs.push(v.clone());
                }
            }
        }
        if !tokens.iter().any(|t| t == "--out") {
            if sub == "chart" {
                outputs.extend(first.map(str::to_string));
            } else {
                let scenario = if sub == "merge" { None } else { first };
                outputs.extend(default_out(sub, scenario));
            }
        }
        for out in outputs {
            checked += 1;
            let out = out.trim_start_matches("./").trim_end_matches('/');
            if placeholder(out) || out.starts_with("DIR") {
                continue;
            }
            // docs/ also describes what CI and the deploy manifests run in their own
            // workspaces; what a user is shown to type (help, READMEs) writes under reports/.
            let shown_to_type = !source.starts_with("docs/");
            if shown_to_type
                && !(out.starts_with("reports/") || out.starts_with('/') || out.starts_with('$'))
            {
                wrong.push(format!(
                    "{source}: `{command}` writes {out}, outside reports/ (the ignored default \
                     output root)"
                ));
            }
            for c in &committed {
                if out == c
                    || out.starts_with(&format!("{c}/"))
                    || c.starts_with(&format!("{out}/"))
                {
                    wrong.push(format!(
                        "{source}: `{command}` writes {out}, over the committed example {c}"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands shown to users that would write outside reports/ or over a committed \
         example:\n{}",
        wrong.join("\n")
    );
    assert!(
        checked >= 20,
        "only {checked} output paths found in {commands:?}"
    );
}

/// `text` split into words as a POSIX shell would for the commands the docs show: whitespace
/// outside quotes separates, single and double quotes group.
fn shell_words(text: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

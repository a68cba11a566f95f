//! The job timeline of the HTML report: its data (what a zombie's `fenced_writes` violation
//! links to: both holders, both tokens, the accepted stale write), the same timeline from every
//! source (the run's memory, `timeline.json`, a `verify --out` directory's history), and the
//! page in headless Chromium: DOM assertions, and a screenshot compared with
//! `timeline_golden/zombie-no-fencing.txt` for structure (which lanes hold which bars), not
//! pixels. The Chromium tests are ignored (`cargo test -- --ignored` runs them) and fail
//! without Chromium.

use crate::report::{attr, chromium, HtmlTable, CHROMIUM};
use crate::support::{durasim, ok, require_tools, temp_dir, temp_path};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `durasim run scenarios/zombie-worker.toml --bug no_fencing --chart [EXTRA]` into a fresh
/// directory: the run fails (fenced_writes), the report is written.
fn zombie(name: &str, extra: &[&str]) -> PathBuf {
    let dir = crate::support::fresh(module_path!(), name, false);
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "run",
        "scenarios/zombie-worker.toml",
        "--bug",
        "no_fencing",
        "--chart",
        "--out",
        d,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let r = durasim(&args);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    dir
}

/// The data the page's script reads: `{"timeline": ..., "violations": [...]}`.
fn embedded(html: &str) -> Value {
    let start = html
        .find("<script type=\"application/json\" id=\"tl-data\">")
        .expect("the timeline's data is embedded")
        + "<script type=\"application/json\" id=\"tl-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("the embedded data is JSON")
}

fn report(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("index.html")).unwrap()
}

/// The done-means of the timeline: a zombie's fenced_writes violation links to a timeline that
/// shows both holders (worker-0 and worker-1), both tokens (fence 1 and 2), the lease the
/// zombie lost and the stale ack that was accepted.
#[test]
fn a_zombies_violation_links_to_both_holders_tokens_and_the_stale_write() {
    let dir = zombie("zombie", &[]);
    let html = report(&dir);
    let t = HtmlTable::read(&html, "invariants-table");
    assert_eq!(t.cell("fenced_writes", "verdict"), "VIOLATED");
    assert_eq!(t.cell("fenced_writes", "show"), "job-0 on the timeline");
    assert!(html.contains("href=\"#tl?v=fenced_writes\" data-violation=\"fenced_writes\""));

    let data = embedded(&html);
    let tl = &data["timeline"];
    // [worker, job, fence, attempt, start, end, lost, outcome]
    let bars: Vec<&Value> = tl["bars"].as_array().unwrap().iter().collect();
    assert_eq!(bars.len(), 2, "{bars:?}");
    assert_eq!(
        bars[0],
        &serde_json::json!([0, 0, 1, 1, 0, 1105, 1001, "acked"])
    );
    assert_eq!(
        bars[1],
        &serde_json::json!([1, 0, 2, 2, 1001, 1406, null, "ack_rejected"])
    );
    // [lane, at, kind, job, fence, detail]; worker-0's lane is 3.
    let marks = tl["marks"].as_array().unwrap();
    let stale_ack = marks
        .iter()
        .find(|m| m[2] == "ack")
        .expect("the accepted ack is marked");
    assert_eq!(stale_ack[0], 3, "on worker-0, the zombie");
    assert_eq!(
        (stale_ack[1].as_u64(), stale_ack[4].as_u64()),
        (Some(1105), Some(1))
    );
    assert!(marks
        .iter()
        .any(|m| m[2] == "exp" && m[1] == 1001 && m[4] == 1));
    assert!(
        tl["bands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b[0] == 3 && b[3] == "stall"),
        "the stall that made it a zombie"
    );
    let v = &data["violations"][0];
    assert_eq!(v["name"], "fenced_writes");
    assert_eq!(v["at"], 1105);
    assert_eq!(v["jobs"], serde_json::json!([0]));
    assert_eq!(v["evidence"][0]["type"], "acked");
    assert_eq!(v["evidence"][0]["fence"], 1);
}

/// `chart` draws the same timeline from every source a directory can hold: the run's memory
/// (`run --chart`), `timeline.json` (what `--chart` leaves), `trace.jsonl`, and the history a
/// `verify --out` directory copied.
#[test]
fn chart_draws_the_same_timeline_from_every_source() {
    let items = |dir: &Path| {
        let mut tl = embedded(&report(dir))["timeline"].clone();
        tl.as_object_mut().unwrap().remove("source");
        tl
    };
    let memory = zombie("memory", &["--trace"]);
    let expected = items(&memory);

    // timeline.json only: the trace removed, the report drawn again.
    let copy = temp_dir!("from-timeline-json");
    for f in std::fs::read_dir(&memory).unwrap() {
        let f = f.unwrap().path();
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        if f.is_file() && name != "trace.jsonl" && name != "durasim-manifest.json" {
            std::fs::copy(&f, copy.join(&name)).unwrap();
        }
    }
    let out = temp_path!("from-timeline-json-out");
    ok(&durasim(&[
        "chart",
        copy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(items(&out), expected);
    assert!(
        report(&out).contains("From the run&#39;s history"),
        "timeline.json says its source"
    );

    // trace.jsonl, in place.
    ok(&durasim(&["chart", memory.to_str().unwrap()]));
    assert_eq!(items(&memory), expected);
    assert!(report(&memory).contains("From the history in trace.jsonl"));

    // verify --out, then chart: the history is the source.
    let verified = temp_path!("verified");
    let r = durasim(&[
        "verify",
        memory.join("trace.jsonl").to_str().unwrap(),
        "--out",
        verified.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert!(String::from_utf8_lossy(&r.stdout).contains("VIOLATED fenced_writes"));
    for f in [
        "summary.json",
        "history.jsonl",
        "depth.csv",
        "jobs.csv",
        "attempts.csv",
        "dlq.csv",
    ] {
        assert!(verified.join(f).is_file(), "verify --out writes {f}");
    }
    ok(&durasim(&["chart", verified.to_str().unwrap()]));
    let html = report(&verified);
    assert_eq!(items(&verified), expected);
    assert!(html.contains("From the history in history.jsonl"));
    assert_eq!(embedded(&html)["violations"][0]["name"], "fenced_writes");
    let t = HtmlTable::read(&html, "invariants-table");
    assert_eq!(t.cell("fenced_writes", "show"), "job-0 on the timeline");
    // The page says what verify said (exit 1): FAIL, every invariant must hold.
    assert!(html.contains("<span class=\"badge fail\">FAIL</span>"));
    let unmet = HtmlTable::read(&html, "unmet");
    assert_eq!(unmet.cell("violations", "expected"), "[]");
    assert_eq!(unmet.cell("violations", "actual"), "[fenced_writes]");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(verified.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["expectationsMet"], false);
    assert!(
        !html.contains("durasim replay DIR") && html.contains("The same file, the same verdicts"),
        "a history is not replayed: no scenario.toml"
    );
}

/// `verify --out` writes a directory whole or not at all, never over one durasim did not write;
/// its files are in ms whatever the history's unit.
#[test]
fn verify_out_follows_the_output_directory_rules() {
    let src = zombie("verify-src", &["--trace"]);
    let trace = src.join("trace.jsonl");
    let users = temp_dir!("users-dir");
    std::fs::write(users.join("notes.txt"), "mine").unwrap();
    let r = durasim(&[
        "verify",
        trace.to_str().unwrap(),
        "--out",
        users.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(users.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(!users.join("summary.json").exists());

    // A history in µs (an outside recorder's): judged in µs, its files in ms, its timeline
    // drawn from the copy.
    let out = temp_path!("us-out");
    let r = durasim(&[
        "verify",
        "tests/data/external-history.jsonl",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert!(String::from_utf8_lossy(&r.stdout).contains("first at 41000050 µs"));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["virtualTimeMs"], 50000, "in ms");
    let fenced = summary["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "fenced_writes")
        .unwrap();
    assert_eq!(fenced["firstViolation"]["atMs"], 41000);
    ok(&durasim(&["chart", out.to_str().unwrap()]));
    let data = embedded(&report(&out));
    assert_eq!(data["timeline"]["perMs"], 1000);
    assert_eq!(data["violations"][0]["jobs"], serde_json::json!([1]));
}

/// An outside recorder's history in µs with no depth samples (as a real store's), ending at
/// 50 000.5 ms, verified and charted into a fresh directory.
fn recorded_without_depth(name: &str) -> PathBuf {
    let src = std::fs::read_to_string("tests/data/external-history.jsonl").unwrap();
    let history = temp_dir!(&format!("{name}-src")).join("recorded.jsonl");
    std::fs::write(
        &history,
        src.replace("{\"at\":50000000,", "{\"at\":50000500,"),
    )
    .unwrap();
    let out = temp_path!(name);
    let r = durasim(&[
        "verify",
        history.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    ok(&durasim(&["chart", out.to_str().unwrap()]));
    out
}

/// A history without depth samples (a real store's, an outside recorder's) has no queue depth,
/// outbox or DLQ size: the report says they were not sampled, never that they were 0.
#[test]
fn a_history_without_depth_samples_shows_no_depth_figures() {
    let out = recorded_without_depth("no-depth");
    let html = report(&out);
    let m = HtmlTable::read(&html, "metrics");
    assert_eq!(m.cell("queueDepth (jobs)", "count"), "0");
    for h in ["min", "max", "mean"] {
        assert_eq!(m.cell("queueDepth (jobs)", h), "–", "{h}");
    }
    assert_eq!(m.cell("queueWaitMs", "count"), "3", "the others are there");
    let depth = HtmlTable::read(&html, "data-depth");
    assert_eq!(depth.cell("queue depth", "points"), "0");
    for chart in ["outbox", "dlq"] {
        assert!(
            html.contains(&format!(
                "{chart}: not drawn ({chart}.csv has no samples: the history has no depth samples)"
            )),
            "{chart}"
        );
    }
}

// ---- in a real browser ---------------------------------------------------------------------

/// The page's DOM after its scripts ran, at `fragment`, in a window `w`×`h`.
fn dump_dom(page: &Path, fragment: &str, (w, h): (u32, u32), tag: &str) -> String {
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().unwrap().display()
    );
    let profile = temp_dir!(&format!("chromium-{tag}"));
    let out = chromium(
        &[
            &format!("--window-size={w},{h}"),
            "--force-device-scale-factor=1",
            "--virtual-time-budget=10000",
            "--dump-dom",
            &url,
        ],
        &profile,
    )
    .expect("chromium finished within 90 s");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && dom.contains("<html"),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some("0"),
        "errors while loading"
    );
    assert_eq!(
        attr(&dom, "data-tl-ready").as_deref(),
        Some("true"),
        "the timeline drew"
    );
    dom
}

/// The start tags of the elements whose `class` attribute starts with `class`.
fn elements<'a>(dom: &'a str, tag: &str, class: &str) -> Vec<&'a str> {
    let open = format!("<{tag} class=\"{class}");
    dom.match_indices(&open)
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap()])
        .collect()
}

fn attr_of(element: &str, name: &str) -> String {
    attr(element, name).unwrap_or_else(|| panic!("no {name} in {element}"))
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn the_timeline_in_headless_chromium_shows_the_zombie() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let dir = zombie("browser", &[]);
    let dom = dump_dom(
        &dir.join("index.html"),
        "#tl?v=fenced_writes",
        (1400, 900),
        "zombie",
    );
    assert_eq!(
        attr(&dom, "data-tl-focus").as_deref(),
        Some("fenced_writes")
    );
    assert_eq!(
        attr(&dom, "data-tl-lanes").as_deref(),
        Some("queue,worker-0,worker-1,relay,consumer")
    );
    let bars = elements(&dom, "g", "tl-bar");
    let holders: Vec<(String, String, String)> = bars
        .iter()
        .map(|b| {
            (
                attr_of(b, "data-lane"),
                attr_of(b, "data-job"),
                attr_of(b, "data-fence"),
            )
        })
        .collect();
    assert_eq!(
        holders,
        [
            ("worker-0".into(), "0".into(), "1".into()),
            ("worker-1".into(), "0".into(), "2".into())
        ],
        "both holders, both tokens"
    );
    for label in ["job-0 · fence 1", "job-0 · fence 2"] {
        assert!(
            dom.contains(&format!(">{label}</text>")),
            "the bar says {label}"
        );
    }
    assert_eq!(
        elements(&dom, "rect", "tl-lost").len(),
        1,
        "the zombie's lost lease, hatched"
    );
    let stale = elements(&dom, "g", "tl-mark tl-vio");
    assert_eq!(stale.len(), 1, "the accepted stale write is highlighted");
    assert_eq!(attr_of(stale[0], "data-kind"), "ack");
    assert_eq!(attr_of(stale[0], "data-lane"), "worker-0");
    assert_eq!(attr_of(stale[0], "data-fence"), "1");
    assert_eq!(attr_of(stale[0], "data-at"), "1105");
    assert_eq!(
        elements(&dom, "line", "tl-focus").len(),
        1,
        "the moment is marked"
    );
    assert!(dom
        .contains("fenced_writes violated at 1\u{2009}105 ms: ack of job-0 accepted with fence-1"));

    a_link_picks_jobs_and_a_window(&dir);
}

/// A filter and a window from the link: job 0 only, 900 to 1,200 ms.
fn a_link_picks_jobs_and_a_window(dir: &Path) {
    let page = dir.join("index.html");
    let dom = dump_dom(&page, "#tl?jobs=0&from=900&to=1200", (1400, 900), "window");
    assert_eq!(attr(&dom, "data-tl-window").as_deref(), Some("900..1200"));
    assert_eq!(attr(&dom, "data-tl-focus").as_deref(), Some(""));
    assert_eq!(
        elements(&dom, "g", "tl-bar").len(),
        2,
        "both attempts overlap the window"
    );
}

/// A bigger run: chaos seed 3 with no_fencing; the first violation's jobs picked, every other
/// job folded away, no error.
#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn the_timeline_of_a_chaos_run_picks_the_violations_jobs() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let dir = temp_path!("chaos-no-fencing");
    let r = durasim(&[
        "run",
        "scenarios/chaos.toml",
        "--seed",
        "3",
        "--bug",
        "no_fencing",
        "--chart",
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(r.status.code(), Some(1));
    let data = embedded(&report(&dir));
    let v = &data["violations"][0];
    let dom = dump_dom(&dir.join("index.html"), "", (1400, 900), "chaos");
    assert_eq!(
        attr(&dom, "data-tl-focus").as_deref(),
        v["name"].as_str(),
        "the first violation by default"
    );
    let jobs: Vec<String> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.to_string())
        .collect();
    let bars = elements(&dom, "g", "tl-bar");
    assert!(!bars.is_empty());
    assert!(
        bars.iter().all(|b| jobs.contains(&attr_of(b, "data-job"))),
        "only the picked jobs"
    );
    assert!(
        attr(&dom, "data-tl-evidence")
            .unwrap()
            .parse::<u32>()
            .unwrap()
            >= 1
    );
    // The whole run, every job: drawn within the element budget.
    let dom = dump_dom(
        &dir.join("index.html"),
        "#tl?only=1",
        (1400, 900),
        "chaos-all",
    );
    let drawn: u32 = attr(&dom, "data-tl-bars").unwrap().parse().unwrap();
    assert!(drawn > 200, "{drawn} attempts drawn");
}

/// The biggest bundled run (bench-pipeline: 100,000 jobs, 160 workers), the whole run at once:
/// the jobs kept span the run (every k-th job, not the first ones), items narrower than a few
/// pixels are merged so the drawing covers the run evenly within the element budget, a crowded
/// window still draws what went wrong (crashes, expiries, refusals), and the note says what was
/// merged or left out.
#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn a_big_runs_whole_timeline_spans_the_run_within_the_budget() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let dir = temp_path!("bench");
    let r = durasim(&[
        "run",
        "scenarios/bench-pipeline.toml",
        "--chart",
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    ok(&r);
    let data = embedded(&report(&dir));
    let total = data["timeline"]["jobsTotal"].as_u64().unwrap();
    let shown = data["timeline"]["jobsShown"].as_u64().unwrap();
    assert!(
        total == 100_000 && shown < total,
        "{shown} of {total} jobs kept"
    );
    let dom = dump_dom(&dir.join("index.html"), "#tl?full=1", (1400, 900), "bench");
    let bars = elements(&dom, "g", "tl-bar");
    let tenths: std::collections::BTreeSet<u64> = bars
        .iter()
        .map(|b| attr_of(b, "data-job").parse::<u64>().unwrap() * 10 / total)
        .collect();
    assert_eq!(tenths.len(), 10, "bars of jobs from every tenth of the run");
    let marks = elements(&dom, "g", "tl-mark");
    assert!(
        bars.len() + marks.len() <= 6_002,
        "within the element budget"
    );
    for kind in ["crash", "exp"] {
        assert!(
            marks.iter().any(|m| attr_of(m, "data-kind") == kind),
            "a crowded window still draws a {kind}"
        );
    }
    let merged: u32 = attr(&dom, "data-tl-merged").unwrap().parse().unwrap();
    assert!(merged > 0, "narrow items merged");
    assert!(
        dom.contains("items share a few pixels with one drawn"),
        "the note says so"
    );
}

/// A µs history's times in ms with the µs as thousandths, grouped like every other figure.
#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn a_microsecond_historys_times_read_in_grouped_ms() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let out = recorded_without_depth("us-browser");
    let dom = dump_dom(&out.join("index.html"), "#tl?only=0", (1400, 900), "us");
    assert!(
        dom.contains("of 50\u{2009}000.500 ms · all jobs"),
        "{}",
        &dom[dom.find("id=\"tl-window\"").unwrap()..][..120]
    );
}

// ---- the screenshot, compared for structure ------------------------------------------------

const GOLDEN: &str = "tests/it/timeline_golden/zombie-no-fencing.txt";
const CELLS: usize = 48;
/// The script's layout: the lane labels' gutter and the right margin (timeline.js).
const GUTTER: u32 = 112;
const RIGHT: u32 = 14;

/// What a pixel is, for the structure: a bar's colour by outcome, the hatch of a lost lease,
/// the lane's background, or anything else (a mark, a line, text).
fn class_of(p: [u8; 3]) -> char {
    let near = |c: [u8; 3]| (0..3).all(|i| (p[i] as i32 - c[i] as i32).abs() <= 16);
    let (lo, hi) = (p.iter().min().unwrap(), p.iter().max().unwrap());
    if *lo >= 225 && hi - lo <= 10 {
        '.' // the lanes' backgrounds, white, light grid lines
    } else if near([0x00, 0x9E, 0x73]) {
        'A' // acked
    } else if near([0xCC, 0x79, 0xA7]) {
        'R' // a refused call ended it
    } else if near([0xFD, 0xE2, 0xDF]) || near([0xB3, 0x26, 0x1E]) {
        'Z' // lease lost, the holder went on (and the violation's ring)
    } else {
        '*'
    }
}

/// One line per lane: its name and, for each of [`CELLS`] cells across the time axis, the class
/// most of the cell's pixels have, on a row through the bars above their labels.
fn structure(png: &Path, dom: &str) -> String {
    let decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    let pixel = |x: u32, y: u32| {
        let i = y as usize * info.line_size + x as usize * bpp;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let bx: Vec<u32> = attr(dom, "data-tl-box")
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let (x0, x1) = (bx[0] + GUTTER, bx[0] + bx[2] - RIGHT);
    let mut out = String::new();
    for lane in elements(dom, "rect", "tl-lane") {
        let y = bx[1] + attr_of(lane, "y").parse::<u32>().unwrap() + 6;
        assert!(y < info.height, "the lane is in the screenshot");
        let mut row = String::new();
        for c in 0..CELLS as u32 {
            let (a, b) = (
                x0 + (x1 - x0) * c / CELLS as u32,
                x0 + (x1 - x0) * (c + 1) / CELLS as u32,
            );
            let mut counts = std::collections::BTreeMap::new();
            for x in a..b {
                *counts.entry(class_of(pixel(x, y))).or_insert(0) += 1;
            }
            row.push(*counts.iter().max_by_key(|(_, n)| **n).unwrap().0);
        }
        out.push_str(&format!("{:<10}|{row}|\n", attr_of(lane, "data-lane")));
    }
    out
}

/// Equal but at a cell next to a change of class in the expected row (an edge a pixel off).
fn same_structure(got: &str, expected: &str) -> bool {
    let (g, e): (Vec<&str>, Vec<&str>) = (got.lines().collect(), expected.lines().collect());
    g.len() == e.len()
        && g.iter().zip(&e).all(|(g, e)| {
            let (g, e): (Vec<char>, Vec<char>) = (g.chars().collect(), e.chars().collect());
            g.len() == e.len()
                && (0..e.len()).all(|i| {
                    g[i] == e[i]
                        || (i > 0 && e[i - 1] != e[i])
                        || (i + 1 < e.len() && e[i + 1] != e[i])
                })
        })
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn the_timelines_screenshot_has_the_structure_of_its_data() {
    require_tools(&[CHROMIUM], "apt-get install -y chromium");
    let dir = zombie("screenshot", &[]);
    let page = dir.join("index.html");
    let fragment = "#tl?v=fenced_writes&full=1";
    let size = (1400, 600);
    let dom = dump_dom(&page, fragment, size, "shot-dom");
    let shot = dir.with_extension("png");
    let profile = temp_dir!("chromium-shot");
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().unwrap().display()
    );
    chromium(
        &[
            &format!("--window-size={},{}", size.0, size.1),
            "--force-device-scale-factor=1",
            "--virtual-time-budget=10000",
            &format!("--screenshot={}", shot.display()),
            &url,
        ],
        &profile,
    )
    .expect("chromium finished within 90 s");
    assert!(shot.is_file(), "no screenshot");
    let got = structure(&shot, &dom);
    let golden = crate::support::root().join(GOLDEN);
    if std::env::var_os("DURASIM_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap();
    assert!(
        same_structure(&got, &expected),
        "the screenshot {} differs from {GOLDEN} (DURASIM_UPDATE_GOLDEN=1 rewrites it after a \
         deliberate change):\n{got}",
        shot.display()
    );
    // The ring around the accepted stale write is drawn where the DOM says the mark is.
    let vio = elements(&dom, "g", "tl-mark tl-vio")[0];
    let at = attr_of(vio, "transform");
    let xy: Vec<f64> = at
        .trim_start_matches("translate(")
        .trim_end_matches(')')
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    let bx: Vec<f64> = attr(&dom, "data-tl-box")
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let (cx, cy) = ((bx[0] + xy[0]) as usize, (bx[1] + xy[1]) as usize);
    let red = (cy - 12..=cy + 12)
        .flat_map(|y| (cx - 12..=cx + 12).map(move |x| (x, y)))
        .filter(|(x, y)| {
            let i = y * info.line_size + x * bpp;
            class_of([buf[i], buf[i + 1], buf[i + 2]]) == 'Z' && buf[i] < 200
        })
        .count();
    assert!(
        red >= 20,
        "the violation's ring ({red} red pixels around {cx},{cy})"
    );
}

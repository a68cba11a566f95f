//! The timeline's section of the HTML report: the controls (jobs, a violation, zoom, the whole
//! run, full page), the SVG the inline script draws into, the data embedded as JSON, and the
//! violations from `summary.json` with the moment, the jobs and the evidence each names.
//!
//! Owns: the section's markup, its style and its script (`timeline.js`, `timeline.css`, compiled
//! in: nothing is fetched), and the link a violation or a fault row makes to a moment
//! ([`link`]: `#tl?v=NAME`, `#tl?jobs=..&at=..`), which the script reads.
//! Does not: build the data (`build`) or write the rest of the page (`report::html`).

use super::{json_str, Timeline};
use crate::shell::report::html::esc;
use serde_json::Value;
use std::fmt::Write as _;

const SCRIPT: &str = include_str!("timeline.js");
pub const STYLE: &str = include_str!("timeline.css");

/// A link to a moment of the timeline: the jobs to pick and the time to mark.
pub fn link(jobs: &[u32], at_ms: Option<u64>) -> String {
    let mut h = String::from("#tl?");
    if !jobs.is_empty() {
        let list: Vec<String> = jobs.iter().map(u32::to_string).collect();
        let _ = write!(h, "jobs={}", list.join(","));
    }
    if let Some(at) = at_ms {
        let _ = write!(h, "{}at={at}", if jobs.is_empty() { "" } else { "&" });
    }
    h
}

/// The link to a violation (the script looks it up in the embedded data).
pub fn violation_link(name: &str) -> String {
    format!("#tl?v={}", esc(name))
}

/// The jobs a first violation names: its own, then its evidence's.
pub fn violation_jobs(first: &Value) -> Vec<u32> {
    let mut jobs: Vec<u32> = Vec::new();
    let evidence = first.get("evidence").and_then(Value::as_array);
    let own = first.get("job").and_then(Value::as_u64);
    for j in own.into_iter().chain(
        evidence
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("job").and_then(Value::as_u64)),
    ) {
        if !jobs.contains(&(j as u32)) {
            jobs.push(j as u32);
        }
    }
    jobs
}

/// Every job any violation of `summary.json` names.
pub fn focus_jobs(summary: &Value) -> Vec<u32> {
    let mut jobs = Vec::new();
    for first in first_violations(summary) {
        for j in violation_jobs(first.1) {
            if !jobs.contains(&j) {
                jobs.push(j);
            }
        }
    }
    jobs
}

fn first_violations(summary: &Value) -> Vec<(&str, &Value)> {
    summary
        .get("invariants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let first = i.get("firstViolation").filter(|f| !f.is_null())?;
            Some((i.get("name")?.as_str()?, first))
        })
        .collect()
}

/// The violations as the script reads them.
fn violations_json(summary: &Value) -> String {
    let items: Vec<String> = first_violations(summary)
        .into_iter()
        .map(|(name, f)| {
            let jobs: Vec<String> = violation_jobs(f).iter().map(u32::to_string).collect();
            let evidence = f
                .get("evidence")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            format!(
                "{{\"name\":{},\"at\":{},\"jobs\":[{}],\"message\":{},\"evidence\":{}}}",
                json_str(name),
                f.get("atMs").and_then(Value::as_u64).unwrap_or(0),
                jobs.join(","),
                json_str(f.get("message").and_then(Value::as_str).unwrap_or("")),
                json_str_value(&evidence)
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// A JSON value, safe inside `<script>`.
fn json_str_value(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The section: heading, controls, the SVG, the embedded data and the script. `timeline` is
/// `Err(why)` when the directory holds nothing to draw it from.
pub fn section(out: &mut String, timeline: Result<&Timeline, &str>, summary: &Value) {
    out.push_str("<section id=\"timeline\">\n<h2 id=\"tl\">Job timeline</h2>\n");
    let t = match timeline {
        Ok(t) => t,
        Err(why) => {
            let _ = writeln!(out, "<p>Not drawn: {}.</p>\n</section>", esc(why));
            return;
        }
    };
    let _ = writeln!(
        out,
        "<p class=\"muted\">From {}. One lane per worker, the queue above, the relay and the consumer below; each attempt a bar \
         labelled with its job and fencing token (hatched once its lease expired while the holder went on), with its heartbeats, \
         stalls and pauses, crashes, lease expiries, commits, dedupes, acks and rejections. Pick jobs or a violation; drag to pan, \
         scroll (or the buttons) to zoom; hover for details.</p>",
        esc(&t.source)
    );
    out.push_str(CONTROLS);
    let _ = write!(
        out,
        "<script type=\"application/json\" id=\"tl-data\">{{\"timeline\":{},\"violations\":{}}}</script>\n\
         <noscript><p>The timeline is drawn by the page's inline script; with scripts off, its data is in timeline.json.</p></noscript>\n\
         <script>\n{SCRIPT}\n</script>\n</section>\n",
        t.to_json(),
        violations_json(summary)
    );
}

const CONTROLS: &str = r#"<div class="tl-controls">
<label>jobs <input id="tl-jobs" type="text" size="22" placeholder="all, or e.g. 3 17 40"></label>
<label><input id="tl-only" type="checkbox" checked> only these jobs</label>
<label>violation <select id="tl-violation"><option value="">(none)</option></select></label>
<button id="tl-in" type="button">zoom in</button><button id="tl-out" type="button">zoom out</button>
<button id="tl-all" type="button">whole run</button><button id="tl-full" type="button">full page</button>
<span id="tl-window" class="muted"></span>
</div>
<div id="tl-callout" class="tl-callout" hidden></div>
<div id="tl-box"><svg id="tl-svg" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="job timeline"></svg></div>
<p id="tl-note" class="muted"></p>
<details class="tl-key"><summary>Key</summary><svg id="tl-key" xmlns="http://www.w3.org/2000/svg" width="1100" height="120"></svg></details>
"#;

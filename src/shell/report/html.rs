//! The HTML report: one static, self-contained `index.html` per run or sweep directory.
//!
//! Owns: the page's frame (style, the scripts that record load errors and how many charts
//! decoded on `<html data-errors=.. data-charts-rendered=..>`, which the headless-browser test
//! reads), the charts embedded as `data:` URIs with their data tables and the index of the
//! charts (drawn, or why not), and the table helpers; the run's page (`run_page`: verdict,
//! reproduction, summary tables, invariants linked to the job timeline, fault events, files) and
//! the sweep's (`sweep_page`). The file opens anywhere with no network and no sibling files.
//! Does not: draw (`report::chart`), build the timeline (`report::timeline`) or compute metrics
//! (it formats `summary.json`).

mod run_page;
mod sweep_page;

pub use run_page::write_run_report;
pub use sweep_page::write_sweep_report;

use crate::shell::report::chart::table::DataTable;
use crate::shell::report::chart::ChartFile;
use crate::shell::report::error::ReportError;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

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
details.data { margin: 4px 0 0; font-size: 14px; } details.data summary { cursor: pointer; color: var(--muted); }
ul.index { columns: 2; max-width: 1100px; }
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
         <style>{STYLE}{}</style>\n</head>\n<body>\n",
        esc(title),
        crate::shell::report::timeline::page::STYLE
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

/// The index of the charts: each drawn one linked, each other one with why it was not drawn.
fn chart_index(out: &mut String, charts: &[ChartFile]) {
    out.push_str("<ul class=\"index\">");
    for c in charts {
        match &c.not_drawn {
            None => {
                let _ = write!(out, "<li><a href=\"#chart-{0}\">{0}</a></li>", c.name);
            }
            Some(why) => {
                let _ = write!(
                    out,
                    "<li class=\"muted\" id=\"chart-{0}\">{0}: not drawn ({1})</li>",
                    c.name,
                    esc(why)
                );
            }
        }
    }
    out.push_str("</ul>\n");
}

/// The chart images, embedded, each with its data table. PNG is preferred when both formats
/// exist. Charts that were not drawn are in the index only.
fn figures(out: &mut String, charts: &[ChartFile]) -> Result<(), ReportError> {
    chart_index(out, charts);
    for c in charts.iter().filter(|c| c.not_drawn.is_none()) {
        let pick = c
            .files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "png"))
            .or_else(|| c.files.first())
            .expect("a drawn chart has at least one file (one a format)");
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
             <figcaption>{caption} <span class=\"muted\">({files})</span></figcaption>\n",
            name = c.name,
            data = base64(&bytes),
            caption = esc(&c.caption),
            files = others.join(", "),
        );
        if let Some(t) = &c.table {
            out.push_str("<details class=\"data\"><summary>what it draws</summary>\n");
            data_table(out, t, &format!("data-{}", c.name));
            out.push_str("</details>\n");
        }
        out.push_str("</figure>\n");
    }
    Ok(())
}

/// A table with a header row, its cells escaped; `id` names it for a reader (and the tests).
pub(crate) fn data_table(out: &mut String, t: &DataTable, id: &str) {
    let _ = write!(out, "<table id=\"{}\"><tr>", esc(id));
    for h in &t.headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for r in &t.rows {
        out.push_str("<tr>");
        for c in r {
            let numeric = !c.is_empty()
                && c.chars()
                    .all(|ch| ch.is_ascii_digit() || ch == '.' || ch == '-');
            let _ = write!(
                out,
                "<td{}>{}</td>",
                if numeric { " class=\"num\"" } else { "" },
                esc(c)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
}

/// Writes the page to `out/index.html`.
fn write_page(out: &Path, page: String) -> Result<std::path::PathBuf, ReportError> {
    let path = out.join("index.html");
    std::fs::write(&path, page).map_err(ReportError::io("write", path.display()))?;
    Ok(path)
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

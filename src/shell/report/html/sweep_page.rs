//! The HTML report of a sweep: the verdict, every failure signature of every invariant (each
//! with its seeds, its reproduction command and its shrunk scenario), the coverage tables and
//! the charts.
//!
//! Owns: the sweep page's sections.
//! Does not: read `sweep.json` (`chart::sweep_charts::load`) or draw the charts.

use super::{esc, figures, page_end, page_start, write_page};
use crate::shell::report::chart::sweep_charts::SweepData;
use crate::shell::report::chart::ChartFile;
use crate::shell::report::error::ReportError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
    failures(&mut h, sw);
    coverage(&mut h, sw);
    h.push_str("<h2>Charts</h2>\n");
    figures(&mut h, charts)?;
    page_end(&mut h);
    write_page(out, h)
}

/// One row per failure signature: an invariant fails in different ways (a `no_fencing` sweep
/// has several), each with its own first seeds, reproduction and shrunk scenario.
fn failures(h: &mut String, sw: &SweepData) {
    let j = &sw.json;
    h.push_str("<h2>Failures</h2>\n");
    if j.failures.is_empty() {
        h.push_str("<p>No seed violated an invariant.</p>\n");
        return;
    }
    h.push_str(
        "<table id=\"failures\"><tr><th>invariant</th><th>class</th><th>signature</th><th>seeds</th><th>first seeds</th>\
         <th>first violation</th><th>reproduce</th><th>shrunk scenario</th></tr>",
    );
    for g in &j.failures {
        for sig in &g.signatures {
            let shrunk = sig.shrunk.as_ref().map_or("–".to_string(), |s| {
                format!("<a href=\"{0}\">{0}</a>", esc(&s.path))
            });
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&g.invariant),
                esc(&g.class),
                esc(&sig.signature),
                sig.seeds,
                esc(&serde_json::to_string(&sig.first_seeds).expect("seeds serialize")),
                esc(&sig.first_message),
                esc(&sig.reproduce),
                shrunk,
            );
        }
    }
    h.push_str("</table>\n");
}

fn coverage(h: &mut String, sw: &SweepData) {
    let cov = &sw.json.coverage;
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
}

//! A finished run's or sweep's report: its charts and its `index.html`, drawn from the files in
//! its directory (or, for `run --chart`, from the run's history in memory).
//!
//! Owns: `durasim chart DIR` and `run --chart`: telling a run's directory from a sweep's, where
//! the charts go (`OUT/charts/`), and what could not be drawn.
//! Does not: simulate (a sweep's per-seed figures come from its seeds.jsonl), choose the output
//! directory or print (the shell does).

use super::chart::{self, data, sweep_charts, ChartFile, Format};
use super::error::ReportError;
use super::html;
use crate::history::Record;
use std::path::{Path, PathBuf};

/// What was drawn.
#[derive(Clone, Debug)]
pub struct ChartReport {
    pub charts: Vec<ChartFile>,
    pub html: PathBuf,
    /// What could not be drawn, and why (a `--no-rows` run has no per-job rows).
    pub missing: Vec<String>,
}

/// Draws the charts and the report of a run or sweep directory `dir` into `out` (usually the
/// same directory): `out/charts/*.{png,svg}` and `out/index.html`. `history` is the in-memory
/// trace when called from `run --chart`.
pub fn render_dir(
    dir: &Path,
    out: &Path,
    format: Format,
    history: Option<&[Record]>,
) -> Result<ChartReport, ReportError> {
    let charts_dir = out.join("charts");
    std::fs::create_dir_all(&charts_dir)
        .map_err(ReportError::io("create", charts_dir.display()))?;
    if !dir.join("summary.json").exists() && dir.join("sweep.json").exists() {
        let sweep = sweep_charts::load(dir)?;
        let charts = chart::draw_sweep(&sweep, &charts_dir, format)?;
        let html = html::write_sweep_report(out, &sweep, &charts)?;
        return Ok(ChartReport {
            charts,
            html,
            missing: Vec::new(),
        });
    }
    if !dir.join("summary.json").exists() {
        return Err(ReportError::malformed(
            dir.display(),
            "neither summary.json (a run) nor sweep.json (a sweep) is there",
        ));
    }
    let d = data::load(dir, history)?;
    let charts = chart::draw_run(&d, &charts_dir, format)?;
    let html = html::write_run_report(out, &d, &charts)?;
    Ok(ChartReport {
        charts,
        html,
        missing: d.missing(),
    })
}

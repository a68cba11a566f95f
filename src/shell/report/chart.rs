//! Charts of a run (or a sweep), drawn with plotters into PNG or SVG.
//!
//! Owns: which charts exist, their file names, their captions, their data tables and the choice
//! of backend. A run gets `charts/depth`, `charts/latency`, `charts/stages` and
//! `charts/outcomes`, and, when it has their data, the scenario charts `charts/tenants`,
//! `charts/retries`, `charts/outbox` and `charts/dlq` (a chart without data is listed with the
//! reason, not drawn); a sweep gets `charts/sweep`.
//! Does not: simulate, read a directory (`chart::data`, `chart::sweep_charts::load`) or write the
//! page around the charts (`report::html`; `report::render` does both for a directory).

pub mod data;
mod depth;
mod latency;
mod outcomes;
mod series;
pub mod series_data;
mod stages;
mod strip;
mod style;
pub mod sweep_charts;
pub mod table;
mod tenants;

use crate::shell::report::error::ReportError;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Which image formats to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Png,
    Svg,
    /// Both PNG and SVG.
    Both,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Png, Format::Svg, Format::Both];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
            Format::Both => "both",
        }
    }

    fn list(self) -> &'static [&'static str] {
        match self {
            Format::Png => &["png"],
            Format::Svg => &["svg"],
            Format::Both => &["png", "svg"],
        }
    }
}

/// One drawn chart.
#[derive(Clone, Debug)]
pub struct ChartFile {
    /// File stem: `depth`, `latency`, ...
    pub name: &'static str,
    /// What it shows, for the report's caption.
    pub caption: String,
    /// Every file written for it (one per format); none when it was not drawn.
    pub files: Vec<PathBuf>,
    /// What it draws, as text (shown under it in the report).
    pub table: Option<table::DataTable>,
    /// Why it was not drawn (the run has no data for it); `files` is then empty.
    pub not_drawn: Option<String>,
}

macro_rules! render {
    ($ext:expr, $path:expr, $size:expr, $f:path, $($arg:expr),*) => {{
        let path: &Path = $path;
        let result: style::R = (|| {
            if $ext == "svg" {
                let root = SVGBackend::new(path, $size).into_drawing_area();
                $f(&root, $($arg),*)?;
                root.present()?;
            } else {
                let (w, h) = $size;
                let mut buf = vec![0u8; w as usize * h as usize * 3];
                {
                    let root = BitMapBackend::with_buffer(&mut buf, $size).into_drawing_area();
                    $f(&root, $($arg),*)?;
                    root.present()?;
                }
                write_indexed_png(path, &buf, w, h)?;
            }
            Ok(())
        })();
        result.map_err(|e| ReportError::Draw {
            file: path.display().to_string(),
            message: e.to_string(),
        })
    }};
}

/// Writes an RGB buffer as an 8-bit indexed PNG at the best compression: a chart has few
/// colours, so this is several times smaller than plotters' own RGB encoding. With more than 256
/// colours (anti-aliased edges), the 256 most frequent are kept and every other colour maps to
/// its nearest; solid colours are always among them. Deterministic for equal input.
pub fn write_indexed_png(
    path: &Path,
    rgb: &[u8],
    w: u32,
    h: u32,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use std::collections::HashMap;
    let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
    for px in rgb.chunks_exact(3) {
        *counts.entry([px[0], px[1], px[2]]).or_default() += 1;
    }
    let mut by_freq: Vec<([u8; 3], u64)> = counts.iter().map(|(c, n)| (*c, *n)).collect();
    by_freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let palette: Vec<[u8; 3]> = by_freq.iter().take(256).map(|c| c.0).collect();
    let index: HashMap<[u8; 3], u8> = counts
        .keys()
        .map(|c| {
            let dist = |p: &[u8; 3]| {
                (0..3)
                    .map(|i| (c[i] as i32 - p[i] as i32).pow(2))
                    .sum::<i32>()
            };
            let best = (0..palette.len())
                .min_by_key(|&i| (dist(&palette[i]), i))
                .unwrap_or(0);
            (*c, best as u8)
        })
        .collect();
    let pixels: Vec<u8> = rgb
        .chunks_exact(3)
        .map(|px| index[&[px[0], px[1], px[2]]])
        .collect();
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, w, h);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_palette(palette.concat());
    enc.set_compression(png::Compression::Best);
    enc.set_filter(png::FilterType::NoFilter);
    let mut writer = enc.write_header()?;
    writer.write_image_data(&pixels)?;
    writer.finish()?;
    Ok(())
}

/// Draws a sweep's page of charts into `charts_dir`.
pub fn draw_sweep(
    sweep: &sweep_charts::SweepData,
    charts_dir: &Path,
    format: Format,
) -> Result<Vec<ChartFile>, ReportError> {
    style::register_fonts();
    let mut files = Vec::new();
    for ext in format.list() {
        let path = charts_dir.join(format!("sweep.{ext}"));
        render!(*ext, &path, (1400, 1000), sweep_charts::draw, sweep)?;
        files.push(path);
    }
    Ok(vec![ChartFile {
        name: "sweep",
        caption: sweep_charts::caption(sweep),
        files,
        table: Some(sweep_charts::table(sweep)),
        not_drawn: None,
    }])
}

/// One chart of a run: its name, its size, its caption, and whether it is drawn.
struct Spec {
    name: &'static str,
    size: (u32, u32),
    caption: String,
    drawn: Result<(), String>,
}

fn run_specs(d: &data::RunData) -> Vec<Spec> {
    let big = !d.has_rows() || d.jobs.len() > stages::MAX_BARS;
    let spec = |name, size: (u32, u32), caption: &str, drawn| Spec {
        name,
        size,
        caption: caption.to_string(),
        drawn,
    };
    vec![
        spec("depth", (1400, 680), "Queue depth over virtual time (a step line that ends at the last sample). Above it, the fault strip: a row each \
             for worker stalls (no heartbeat, the lease runs out: bands), worker crashes, relay crashes (published, not marked), consumer crashes \
             (applied, not acknowledged) and operator actions, as ticks, or as counts per time bucket when a kind has more than 40.", Ok(())),
        spec("latency", (1400, 1080), "Distributions of queueWaitMs and inferenceMs (per attempt) and reviewWaitMs (per document): histogram left, \
             cumulative distribution right; vertical lines at p50, p95 and p99 (the values in summary.json).", Ok(())),
        spec("stages", (1400, 600), if big {
            "Stage times by the document's arrival time: p50 (solid) and p95 (dashed) of queue wait, inference and review wait. Three numbers per \
             document, never one that hides them."
        } else {
            "Per-document stage breakdown: queue wait, inference and review wait stacked, one bar per document. Three numbers per document, never \
             one that hides them."
        }, Ok(())),
        spec("outcomes", (1400, 560), "Left: cumulative outcomes over virtual time (acked, retried, dead-lettered, cancelled jobs; crashed attempts). \
             Right: attempts per job, stacked by the job's final state.", Ok(())),
        spec("tenants", (1400, 600), "queueWaitMs per tenant (tenants.csv, attempts.csv): left, each tenant's p95 by when its work became visible, so \
             one tenant's burst shows as the others' wait; right, each tenant's p50, p95 and p99 over the run.", tenants::drawn(d)),
        spec("retries", (1400, 640), "Retries scheduled per 100 ms window of virtual time (retries.csv; wider windows for a long run): synchronised \
             waves and silences, or a smooth spread. The fault strip above, as on the depth chart.", series::drawn(d, "retries")),
        spec("outbox", (1400, 640), "Outbox rows held over virtual time (outbox.csv, at each depth sample): a retention levels it off, no retention \
             lets it grow. The fault strip above, as on the depth chart.", series::drawn(d, "outbox")),
        spec("dlq", (1400, 640), "Jobs held in the dead-letter queue over virtual time (dlq.csv, at each depth sample: dead-lettered and not \
             evicted). The fault strip above, as on the depth chart.", series::drawn(d, "dlq")),
    ]
}

/// The data table of a run's chart.
fn run_table(d: &data::RunData, name: &str) -> Option<table::DataTable> {
    match name {
        "depth" => Some(depth::table(d)),
        "tenants" => Some(tenants::table(d)),
        "retries" | "outbox" | "dlq" => Some(series::table(d, name)),
        _ => None,
    }
}

/// Draws a run's charts into `charts_dir`; a chart without data is listed, not drawn.
pub fn draw_run(
    d: &data::RunData,
    charts_dir: &Path,
    format: Format,
) -> Result<Vec<ChartFile>, ReportError> {
    style::register_fonts();
    let mut charts = Vec::new();
    for spec in run_specs(d) {
        let mut files = Vec::new();
        if spec.drawn.is_ok() {
            for ext in format.list() {
                let path = charts_dir.join(format!("{}.{ext}", spec.name));
                let size = spec.size;
                match spec.name {
                    "depth" => render!(*ext, &path, size, depth::depth, d)?,
                    "latency" => render!(*ext, &path, size, latency::latency, d)?,
                    "stages" => render!(*ext, &path, size, stages::stages, d)?,
                    "outcomes" => render!(*ext, &path, size, outcomes::outcomes, d)?,
                    "tenants" => render!(*ext, &path, size, tenants::tenants, d)?,
                    "retries" => render!(*ext, &path, size, series::retries, d)?,
                    "outbox" => render!(*ext, &path, size, series::outbox, d)?,
                    _ => render!(*ext, &path, size, series::dlq, d)?,
                }
                files.push(path);
            }
        }
        charts.push(ChartFile {
            name: spec.name,
            caption: spec.caption,
            table: spec
                .drawn
                .is_ok()
                .then(|| run_table(d, spec.name))
                .flatten(),
            not_drawn: spec.drawn.err(),
            files,
        });
    }
    Ok(charts)
}

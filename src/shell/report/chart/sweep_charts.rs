//! Sweep charts: distributions across seeds of p95 queueWaitMs, max queue depth and the DLQ
//! fraction, and seeds-to-detect per bug switch.
//!
//! Per-seed figures come from `seeds.jsonl`, where the sweep recorded them (`metrics` of each
//! record): nothing is simulated again. Seeds-to-detect reads `sweep.json` of this directory and
//! of each subdirectory that holds one (e.g. one sweep per bug switch:
//! `sweep chaos.toml --bug X --out DIR/X`).

use super::style::*;
use crate::shell::report::error::ReportError;
use crate::shell::report::sweep_dir::{for_each_seed_record, read_sweep_json};
use crate::sweep::SweepJson;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One seed's point in the distributions.
#[derive(Clone, Debug)]
pub struct SeedPoint {
    pub seed: u64,
    pub queue_wait_p95: u64,
    pub depth_max: u64,
    pub dlq_fraction: f64,
    pub failed: bool,
}

/// How quickly one sweep found a failure.
#[derive(Clone, Debug)]
pub struct Detection {
    /// The sweep's bug switches, or "no bug switch".
    pub label: String,
    /// Seeds run up to and including the first failing one; none when no seed failed.
    pub seeds_to_detect: Option<u64>,
    pub seeds_run: u64,
}

pub struct SweepData {
    pub json: SweepJson,
    pub metrics: Vec<SeedPoint>,
    /// Where the per-seed figures came from, or why there are none.
    pub metrics_note: String,
    pub detections: Vec<Detection>,
}

fn bugs_label(json: &SweepJson) -> String {
    if json.bugs.is_empty() {
        "no bug switch".into()
    } else {
        json.bugs.join(" + ")
    }
}

fn detection(json: &SweepJson) -> Detection {
    let stride = json.shard.map_or(1, |s| s.count).max(1) as u64;
    let first = json
        .failures
        .iter()
        .filter_map(|g| g.first_seeds.first().copied())
        .min();
    Detection {
        label: bugs_label(json),
        seeds_to_detect: first.map(|f| (f - json.seeds.start) / stride + 1),
        seeds_run: json.seeds_run,
    }
}

/// Loads a sweep directory: its sweep.json, its seeds' figures, and the detections of the
/// sweeps in it and in its subdirectories.
pub fn load(dir: &Path) -> Result<SweepData, ReportError> {
    let json = read_sweep_json(dir)?;
    let mut detections = vec![detection(&json)];
    let mut subdirs: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.join("sweep.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    subdirs.sort();
    // A subdirectory that is not a readable sweep is not one of this page's sweeps.
    detections.extend(
        subdirs
            .iter()
            .filter_map(|sub| read_sweep_json(sub).ok())
            .map(|j| detection(&j)),
    );
    let (metrics, metrics_note) = match seed_points(dir, &json) {
        Ok((points, without)) => {
            let n = points.len() + without;
            let note = match (points.len(), without) {
                (0, _) => format!(
                    "no per-seed metrics: the {n} records of seeds.jsonl carry none (written by an older durasim, or every run panicked); run the sweep again"
                ),
                (_, 0) => format!("per-seed metrics of the {n} seeds, from seeds.jsonl"),
                (k, w) => format!(
                    "per-seed metrics of {k} of the {n} seeds, from seeds.jsonl ({w} without: their run panicked, or an older durasim wrote them)"
                ),
            };
            (points, note)
        }
        Err(e) => (Vec::new(), format!("no per-seed metrics: {e}")),
    };
    Ok(SweepData {
        json,
        metrics,
        metrics_note,
        detections,
    })
}

/// The per-seed figures the sweep recorded in `seeds.jsonl`, and how many records had none.
fn seed_points(dir: &Path, json: &SweepJson) -> Result<(Vec<SeedPoint>, usize), ReportError> {
    let mut points = Vec::new();
    let mut without = 0;
    for_each_seed_record(dir, json.seeds_run, |r| match &r.metrics {
        Some(m) => points.push(SeedPoint {
            seed: r.seed,
            queue_wait_p95: m.queue_wait_p95_ms,
            depth_max: m.depth_max,
            dlq_fraction: m.dlq_fraction(),
            failed: !r.failures.is_empty(),
        }),
        None => without += 1,
    })?;
    Ok((points, without))
}

pub fn title(sw: &SweepData) -> String {
    let j = &sw.json;
    format!(
        "sweep of {} · seeds {}..{} · {}{}",
        j.scenario,
        j.seeds.start,
        j.seeds.end,
        bugs_label(j),
        if j.swarm { " · swarm" } else { "" },
    )
}

/// The colour of the seeds where every invariant held, and of those that violated one.
const C_HELD: RGBColor = C_BLUE;
const C_FAILED: RGBColor = C_VERMILLION;

pub fn caption(sw: &SweepData) -> String {
    format!(
        "Distributions across seeds (each seed one sample, stacked: seeds where every invariant held in {}, seeds that violated an \
         invariant in {}): p95 queueWaitMs, maximum queue depth, and the fraction of jobs dead-lettered; and, per sweep in this \
         directory and its subdirectories, how many seeds ran until the first failure ({}). {}.",
        color_name(C_HELD),
        color_name(C_FAILED),
        color_name(C_FAILED),
        sw.metrics_note
    )
}

/// What the distributions draw: each colour, what it means and how many seeds.
pub fn table(sw: &SweepData) -> super::table::DataTable {
    let mut t = super::table::DataTable::new(&["layer", "colour", "seeds"]);
    let failed = sw.metrics.iter().filter(|s| s.failed).count();
    t.row(vec![
        "seeds where every invariant held".into(),
        color_name(C_HELD).into(),
        (sw.metrics.len() - failed).to_string(),
    ]);
    t.row(vec![
        "seeds that violated an invariant".into(),
        color_name(C_FAILED).into(),
        failed.to_string(),
    ]);
    t
}

/// Draws the 2×2 page.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, sw: &SweepData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(
        root,
        &format!(
            "{} — across seeds (held: {}, violated: {})",
            title(sw),
            color_name(C_HELD),
            color_name(C_FAILED)
        ),
    )?;
    let panels = body.split_evenly((2, 2));
    let m = &sw.metrics;
    let q: Vec<(f64, bool)> = m
        .iter()
        .map(|s| (s.queue_wait_p95 as f64, s.failed))
        .collect();
    let d: Vec<(f64, bool)> = m.iter().map(|s| (s.depth_max as f64, s.failed)).collect();
    let f: Vec<(f64, bool)> = m
        .iter()
        .map(|s| (s.dlq_fraction * 100.0, s.failed))
        .collect();
    distribution(
        &panels[0],
        "p95 queueWaitMs per seed",
        "p95 queueWaitMs of the seed (ms)",
        &q,
        &sw.metrics_note,
        false,
    )?;
    distribution(
        &panels[1],
        "maximum queue depth per seed",
        "max queue depth of the seed (jobs)",
        &d,
        &sw.metrics_note,
        true,
    )?;
    distribution(
        &panels[2],
        "DLQ fraction per seed",
        "jobs dead-lettered (% of enqueued)",
        &f,
        &sw.metrics_note,
        false,
    )?;
    detections(&panels[3], &sw.detections)?;
    Ok(())
}

fn distribution<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    values: &[(f64, bool)],
    note: &str,
    integer: bool,
) -> R
where
    DB::ErrorType: 'static,
{
    if values.is_empty() {
        return empty_panel(area, title, note);
    }
    let mut sorted: Vec<f64> = values.iter().map(|v| v.0).collect();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let bins = 30usize;
    let mut width = ((hi - lo) / bins as f64).max(if integer { 1.0 } else { 1e-9 });
    if integer {
        width = width.ceil();
    }
    if hi == lo {
        width = if integer {
            1.0
        } else {
            (hi.abs() * 0.05).max(0.5)
        };
    }
    let start = if integer { lo.floor() } else { lo };
    let mut counts = vec![[0u64; 2]; bins + 2];
    for (v, failed) in values {
        let b = (((v - start) / width).floor() as usize).min(bins + 1);
        counts[b][*failed as usize] += 1;
    }
    let y_max = counts.iter().map(|c| c[0] + c[1]).max().unwrap_or(1).max(1) as f64 * 1.3;
    let x_lo = start - width;
    let x_hi =
        start + width * (counts.iter().rposition(|c| c[0] + c[1] > 0).unwrap_or(0) as f64 + 2.0);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{title} (n = {} seeds)", values.len()), font(17))
        .margin(10)
        .margin_right(22)
        .x_label_area_size(46)
        .y_label_area_size(58)
        .build_cartesian_2d(x_lo..x_hi, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("seeds")
        .axis_desc_style(font(15))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&|v| {
            if integer {
                ms_label(v)
            } else if v.abs() >= 100.0 {
                grouped(v.round() as i64)
            } else {
                format!("{v:.1}")
            }
        })
        .y_label_formatter(&count_label)
        .x_labels(8)
        .max_light_lines(0)
        .draw()?;
    for (b, c) in counts.iter().enumerate() {
        let x0 = start + b as f64 * width;
        let x1 = x0 + width * 0.92;
        if c[0] > 0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x1, c[0] as f64)],
                C_HELD.mix(0.85).filled(),
            )))?;
        }
        if c[1] > 0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, c[0] as f64), (x1, (c[0] + c[1]) as f64)],
                C_FAILED.mix(0.9).filled(),
            )))?;
        }
    }
    let pct =
        |q: f64| sorted[(((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len())) - 1];
    let fmt = |v: f64| {
        if integer || v.abs() >= 100.0 {
            grouped(v.round() as i64)
        } else {
            format!("{v:.2}")
        }
    };
    let mut placed: Vec<f64> = Vec::new();
    for (i, (name, v)) in [("p50", pct(0.5)), ("p95", pct(0.95)), ("max", hi)]
        .into_iter()
        .enumerate()
    {
        if placed.contains(&v) {
            continue;
        }
        placed.push(v);
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(v, 0.0), (v, y_max * 0.88)],
            C_DARK.mix(0.7).stroke_width(1),
        )))?;
        let right = (v - x_lo) / (x_hi - x_lo) < 0.6;
        let pos = plotters::style::text_anchor::Pos::new(
            if right {
                plotters::style::text_anchor::HPos::Left
            } else {
                plotters::style::text_anchor::HPos::Right
            },
            plotters::style::text_anchor::VPos::Center,
        );
        let dx = (x_hi - x_lo) * 0.01 * if right { 1.0 } else { -1.0 };
        chart.draw_series(std::iter::once(Text::new(
            format!("{name} = {}", fmt(v)),
            (v + dx, y_max * (0.95 - 0.07 * i as f64)),
            font(13).pos(pos),
        )))?;
    }
    Ok(())
}

fn detections<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, det: &[Detection]) -> R
where
    DB::ErrorType: 'static,
{
    let title = "seeds to detect: seeds run until the first failure";
    if det.is_empty() {
        return empty_panel(area, title, "no sweep.json");
    }
    // Scaled to the detections; a sweep that found nothing gets a full-width bar that says so.
    let x_max = det
        .iter()
        .filter_map(|d| d.seeds_to_detect)
        .max()
        .unwrap_or(1)
        .max(8) as f64
        * 1.5;
    let n = det.len() as f64;
    let labels: Vec<String> = det.iter().map(|d| d.label.clone()).collect();
    let label_w = (labels.iter().map(|l| l.chars().count()).max().unwrap_or(8) as u32 * 8 + 24)
        .clamp(90, 260);
    let mut chart = ChartBuilder::on(area)
        .caption(title, font(17))
        .margin(10)
        .margin_right(22)
        .x_label_area_size(46)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0f64..x_max, -0.6f64..(n - 0.4))?;
    let fmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc("seeds (the failing seed counted)")
        .axis_desc_style(font(15))
        .label_style(font(LABEL_PX))
        .y_labels(det.len() + 1)
        .y_label_formatter(&fmt)
        .x_label_formatter(&count_label)
        .disable_y_mesh()
        .max_light_lines(0)
        .draw()?;
    for (i, d) in det.iter().enumerate() {
        let y = i as f64;
        let (len, color, text, at) = match d.seeds_to_detect {
            Some(s) => (
                s as f64,
                C_FAILED.mix(0.85),
                format!("{s} seed{}", if s == 1 { "" } else { "s" }),
                s as f64 + x_max * 0.01,
            ),
            None => (
                x_max,
                C_GREY.mix(0.35),
                format!("no failure in {} seeds", d.seeds_run),
                x_max * 0.02,
            ),
        };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.32), (len.max(x_max * 0.004), y + 0.32)],
            color.filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            text,
            (at, y),
            font(13).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            )),
        )))?;
    }
    Ok(())
}

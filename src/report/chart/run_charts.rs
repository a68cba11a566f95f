//! The single-run charts: queue depth with faults, latency distributions, the per-document
//! stage breakdown, and outcomes over time with attempts per job.

use super::data::{FaultKind, RunData};
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// At most this many documents get a bar each; more are grouped by arrival time.
pub const MAX_BARS: usize = 60;

fn y_top(max: f64) -> f64 {
    if max <= 0.0 {
        1.0
    } else {
        max * 1.12
    }
}

/// Queue depth over virtual time, with worker crashes, stalls, relay crashes and operator
/// actions marked.
pub fn depth<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(
        root,
        &format!(
            "{} — queue depth over virtual time, faults marked",
            d.title()
        ),
    )?;
    let (w, _) = body.dim_in_pixel();
    let (plot_area, legend_area) = body.split_horizontally(w - 300);
    let x_max = d.end_ms.max(1) as f64;
    let max_depth = d.depth.iter().map(|p| p.1).max().unwrap_or(0) as f64;
    let y_max = y_top(max_depth.max(1.0)) + 0.6;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(52)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("virtual time (ms)")
        .y_desc("queue depth (jobs waiting)")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&ms_label)
        .y_label_formatter(&|v| {
            if (v.fract()).abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .max_light_lines(0)
        .bold_line_style(C_GREY.mix(0.3))
        .draw()?;

    let of = |k: FaultKind| d.faults.iter().filter(move |f| f.kind == k);
    // Stalls first, as shaded bands behind everything else.
    chart.draw_series(of(FaultKind::Stall).map(|f| {
        let end = f.until_ms.unwrap_or(f.time_ms).max(f.time_ms + 1) as f64;
        Rectangle::new(
            [(f.time_ms as f64, 0.0), (end, y_max)],
            C_ORANGE.mix(0.22).filled(),
        )
    }))?;
    // The depth as a step line: a sample holds until the next one.
    let mut steps = Vec::with_capacity(d.depth.len() * 2 + 1);
    for (i, (t, v)) in d.depth.iter().enumerate() {
        if i > 0 {
            steps.push((*t as f64, d.depth[i - 1].1 as f64));
        }
        steps.push((*t as f64, *v as f64));
    }
    if let Some((_, v)) = d.depth.last() {
        steps.push((x_max, *v as f64));
    }
    chart.draw_series(LineSeries::new(steps, C_BLUE.stroke_width(2)))?;
    if d.depth.len() <= 200 {
        chart.draw_series(
            d.depth
                .iter()
                .map(|(t, v)| Circle::new((*t as f64, *v as f64), 3, C_BLUE.filled())),
        )?;
    }
    let vline = |t: u64, c: RGBColor, width: u32| {
        PathElement::new(
            vec![(t as f64, 0.0), (t as f64, y_max)],
            c.mix(0.75).stroke_width(width),
        )
    };
    chart.draw_series(of(FaultKind::Crash).map(|f| vline(f.time_ms, C_VERMILLION, 1)))?;
    chart.draw_series(of(FaultKind::Crash).map(|f| {
        Cross::new(
            (f.time_ms as f64, y_max * 0.97),
            5,
            C_VERMILLION.stroke_width(2),
        )
    }))?;
    chart.draw_series(of(FaultKind::RelayCrash).map(|f| vline(f.time_ms, C_PURPLE, 1)))?;
    chart.draw_series(
        of(FaultKind::RelayCrash)
            .map(|f| Circle::new((f.time_ms as f64, y_max * 0.92), 4, C_PURPLE.filled())),
    )?;
    chart.draw_series(of(FaultKind::Operator).map(|f| vline(f.time_ms, C_GREEN, 3)))?;
    chart.draw_series(
        of(FaultKind::Operator)
            .map(|f| TriangleMarker::new((f.time_ms as f64, y_max * 0.86), 7, C_GREEN.filled())),
    )?;

    // Without a history only scheduled operator actions are known: "× 0" would be a claim.
    let recorded = d.source != super::data::Source::Fallback;
    let count = |k: FaultKind| {
        if recorded || k == FaultKind::Operator {
            format!("× {}", of(k).count())
        } else {
            "— not recorded".to_string()
        }
    };
    let depth_stats = d.summary.pointer("/metrics/queueDepth");
    let mut entries = vec![(
        Mark::Line(C_BLUE),
        format!(
            "queue depth ({} samples)",
            depth_stats
                .and_then(|s| s.get("samples"))
                .and_then(|v| v.as_u64())
                .unwrap_or(d.depth.len() as u64)
        ),
    )];
    entries.push((
        Mark::Band(C_ORANGE),
        format!("worker stall {}", count(FaultKind::Stall)),
    ));
    entries.push((
        Mark::Cross(C_VERMILLION),
        format!("worker crash {}", count(FaultKind::Crash)),
    ));
    entries.push((
        Mark::Dot(C_PURPLE),
        format!("relay crash {}", count(FaultKind::RelayCrash)),
    ));
    entries.push((
        Mark::VLine(C_GREEN),
        format!("operator action {}", count(FaultKind::Operator)),
    ));
    let below = 40 + legend(&legend_area.margin(40, 0, 0, 0), Some("Legend"), &entries)?;
    let notes = [
        format!(
            "depth min {} · max {} · mean {}",
            stat(depth_stats, "min"),
            stat(depth_stats, "max"),
            stat(depth_stats, "mean")
        ),
        format!("markers from {}", short_source(d)),
    ];
    for (i, n) in notes.iter().enumerate() {
        legend_area.draw(&Text::new(
            n.clone(),
            (10, below + 8 + 22 * i as i32),
            font(13),
        ))?;
    }
    Ok(())
}

fn stat(v: Option<&serde_json::Value>, k: &str) -> String {
    v.and_then(|v| v.get(k))
        .map(|x| x.to_string())
        .unwrap_or_else(|| "?".into())
}

fn short_source(d: &RunData) -> &'static str {
    match d.source {
        super::data::Source::History => "the history",
        super::data::Source::Extracts => "faults.csv",
        super::data::Source::Fallback => "scenario.toml only (no history)",
    }
}

struct Metric<'a> {
    name: &'static str,
    what: &'static str,
    color: RGBColor,
    values: Option<Vec<u64>>,
    missing: &'a str,
}

/// Histograms and CDFs of queueWaitMs, inferenceMs and reviewWaitMs, p50/p95/p99 marked.
pub fn latency<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(
        root,
        &format!(
            "{} — latency distributions (p50 / p95 / p99 marked)",
            d.title()
        ),
    )?;
    let no_rows = "no attempts.csv: the run used --no-rows";
    let metrics = [
        Metric {
            name: "queueWaitMs",
            what: "per attempt: leased − visible",
            color: C_BLUE,
            values: d
                .has_rows()
                .then(|| d.attempts.iter().map(|a| a.queue_wait_ms).collect()),
            missing: no_rows,
        },
        Metric {
            name: "inferenceMs",
            what: "per attempt that finished extraction",
            color: C_ORANGE,
            values: d
                .has_rows()
                .then(|| d.attempts.iter().filter_map(|a| a.inference_ms).collect()),
            missing: no_rows,
        },
        Metric {
            name: "reviewWaitMs",
            what: "per document: effect applied → review done",
            color: C_GREEN,
            values: d
                .reviews
                .as_ref()
                .map(|r| r.iter().map(|r| r.review_wait_ms).collect()),
            missing: "needs the history: chart with `run --chart`, or run with --trace",
        },
    ];
    let rows = body.split_evenly((metrics.len(), 2));
    for (i, m) in metrics.iter().enumerate() {
        let (hist_area, cdf_area) = (&rows[2 * i], &rows[2 * i + 1]);
        let Some(values) = m.values.as_ref().filter(|v| !v.is_empty()) else {
            let why = if m.values.is_some() {
                "no samples in this run"
            } else {
                m.missing
            };
            empty_panel(hist_area, m.name, why)?;
            empty_panel(cdf_area, m.name, why)?;
            continue;
        };
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let pct = d.percentiles(m.name).unwrap_or_else(|| {
            (
                percentile(&sorted, 0.5),
                percentile(&sorted, 0.95),
                percentile(&sorted, 0.99),
            )
        });
        let (lo, hi) = (sorted[0], *sorted.last().expect("non-empty"));
        let width = ((hi - lo + 1) as f64 / 30.0).ceil().max(1.0) as u64;
        let start = lo / width * width;
        let mut bins: BTreeMap<u64, u64> = BTreeMap::new();
        for v in &sorted {
            *bins.entry((v - start) / width).or_default() += 1;
        }
        // A narrow range (a constant stage time) gets room on both sides.
        let pad = if hi - lo < 10 { 5 } else { width };
        let x_lo = start.saturating_sub(pad) as f64;
        let x_hi = (hi + width + pad) as f64;
        let y_max = bins.values().copied().max().unwrap_or(1) as f64 / BARS_TOP;
        let mut hist = ChartBuilder::on(hist_area)
            .caption(
                format!("{} — histogram ({}, n = {})", m.name, m.what, sorted.len()),
                font(16),
            )
            .margin(8)
            .margin_right(18)
            .x_label_area_size(42)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, 0f64..y_max)?;
        hist.configure_mesh()
            .x_desc(format!("{} (ms)", m.name))
            .y_desc("count")
            .axis_desc_style(font(14))
            .label_style(font(13))
            .x_label_formatter(&ms_label)
            .y_label_formatter(&|v| {
                if v.fract().abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .x_labels(8)
            .y_labels(6)
            .max_light_lines(0)
            .draw()?;
        hist.draw_series(bins.iter().map(|(b, n)| {
            let x0 = (start + b * width) as f64;
            let bar_w = (width as f64).max((x_hi - x_lo) / 150.0);
            Rectangle::new(
                [(x0, 0.0), (x0 + bar_w, *n as f64)],
                m.color.mix(0.85).filled(),
            )
        }))?;
        mark_percentiles(&mut hist, pct, y_max)?;

        let mut cdf = ChartBuilder::on(cdf_area)
            .caption(format!("{} — cumulative distribution", m.name), font(16))
            .margin(8)
            .margin_right(18)
            .x_label_area_size(42)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, 0f64..CDF_TOP)?;
        cdf.configure_mesh()
            .x_desc(format!("{} (ms)", m.name))
            .y_desc("fraction ≤ x")
            .axis_desc_style(font(14))
            .label_style(font(13))
            .x_label_formatter(&ms_label)
            .y_label_formatter(&|v| {
                if *v <= 1.0 + 1e-9 {
                    format!("{v:.1}")
                } else {
                    String::new()
                }
            })
            .x_labels(8)
            .y_labels(6)
            .max_light_lines(0)
            .draw()?;
        let n = sorted.len() as f64;
        let mut pts = vec![(x_lo, 0.0)];
        for (i, v) in sorted.iter().enumerate() {
            pts.push((*v as f64, i as f64 / n));
            pts.push((*v as f64, (i + 1) as f64 / n));
        }
        pts.push((x_hi, 1.0));
        cdf.draw_series(LineSeries::new(pts, m.color.stroke_width(2)))?;
        mark_percentiles(&mut cdf, pct, CDF_TOP)?;
    }
    Ok(())
}

/// The CDF's y range: the curve (at most 1.0) stays below the percentile labels' band.
const CDF_TOP: f64 = 1.4;
/// Highest bar of a latency histogram, as a share of its y range (`y_top(max * 1.25)`).
const BARS_TOP: f64 = 1.0 / (1.25 * 1.12);
/// Where percentile lines stop, as a share of the y range.
const LINE_TOP: f64 = 0.74;

/// The height (share of the y range) of the `i`-th percentile label's row.
fn label_row(i: usize) -> f64 {
    0.95 - 0.08 * i as f64
}

/// Percentile lines and their labels. The lines stop at 74% of the plot's height and each label
/// has its own row above them (the histogram's bars and the CDF's curve stay below 72%), so no
/// label crosses a line, a bar, the curve or another label, however close the values are.
fn mark_percentiles<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    (p50, p95, p99): (u64, u64, u64),
    y_max: f64,
) -> R
where
    DB::ErrorType: 'static,
{
    // Equal percentiles share one line and one label.
    let mut groups: Vec<(u64, Vec<&str>)> = Vec::new();
    for (name, v) in [("p50", p50), ("p95", p95), ("p99", p99)] {
        match groups.iter_mut().find(|g| g.0 == v) {
            Some(g) => g.1.push(name),
            None => groups.push((v, vec![name])),
        }
    }
    let (x_lo, x_hi) = {
        let r = chart.x_range();
        (r.start, r.end)
    };
    for (i, (v, names)) in groups.iter().enumerate() {
        let x = *v as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, y_max * LINE_TOP)],
            C_DARK.mix(0.7).stroke_width(1),
        )))?;
        let label = format!("{} = {}", names.join(" = "), v);
        // Labels right of the line, flipped left near the right edge; one row each.
        let right_side = (x - x_lo) / (x_hi - x_lo) < 0.6;
        let y = y_max * label_row(i);
        let style = if right_side {
            font(13).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ))
        } else {
            font(13).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Center,
            ))
        };
        let dx = (x_hi - x_lo) * 0.008 * if right_side { 1.0 } else { -1.0 };
        chart.draw_series(std::iter::once(Text::new(label, (x + dx, y), style)))?;
    }
    Ok(())
}

/// Per-document stage times: queue wait, inference, review wait.
struct DocStages {
    job: u32,
    created_at: u64,
    queue_wait: u64,
    inference: u64,
    review_wait: Option<u64>,
}

fn doc_stages(d: &RunData) -> Vec<DocStages> {
    let mut by_job: BTreeMap<u32, DocStages> = d
        .jobs
        .iter()
        .map(|j| {
            (
                j.job,
                DocStages {
                    job: j.job,
                    created_at: j.created_at_ms,
                    queue_wait: 0,
                    inference: 0,
                    review_wait: None,
                },
            )
        })
        .collect();
    for a in &d.attempts {
        if let Some(s) = by_job.get_mut(&a.job) {
            s.queue_wait += a.queue_wait_ms;
            s.inference += a.inference_ms.unwrap_or(0);
        }
    }
    if let Some(reviews) = &d.reviews {
        for r in reviews {
            if let Some(s) = by_job.get_mut(&r.job) {
                s.review_wait = Some(s.review_wait.unwrap_or(0) + r.review_wait_ms);
            }
        }
    }
    by_job.into_values().collect()
}

/// The chapter's "three numbers per document": stacked bars for small runs, percentiles by
/// arrival-time bucket for large ones.
pub fn stages<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let docs = doc_stages(d);
    let per_doc = docs.len() <= MAX_BARS;
    let what = if per_doc {
        "one bar per document"
    } else {
        "p50 and p95 by arrival time"
    };
    let body = titled(root, &format!("{} — stage breakdown, {what}", d.title()))?;
    if docs.is_empty() {
        return empty_panel(
            &body,
            "no documents",
            "no jobs.csv: the run used --no-rows, or no job arrived",
        );
    }
    let (w, _) = body.dim_in_pixel();
    let (plot_area, legend_area) = body.split_horizontally(w - 300);
    let review_note = if d.reviews.is_some() {
        ""
    } else {
        " (unknown: no history)"
    };
    let stage_names = [
        ("queueWaitMs", C_BLUE),
        ("inferenceMs", C_ORANGE),
        ("reviewWaitMs", C_GREEN),
    ];
    if per_doc {
        let y_max = y_top(
            docs.iter()
                .map(|s| (s.queue_wait + s.inference + s.review_wait.unwrap_or(0)) as f64)
                .fold(1.0, f64::max),
        );
        let n = docs.len() as f64;
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(12)
            .margin_right(20)
            .x_label_area_size(56)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.6f64..(n - 0.4), 0f64..y_max)?;
        let labels: Vec<String> = docs.iter().map(|s| s.job.to_string()).collect();
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
            .x_desc("document (job id, in arrival order)")
            .y_desc("time (ms)")
            .axis_desc_style(font(AXIS_DESC_PX))
            .label_style(font(LABEL_PX))
            .x_labels(docs.len() + 1)
            .x_label_formatter(&fmt)
            .y_label_formatter(&ms_label)
            .disable_x_mesh()
            .max_light_lines(0)
            .draw()?;
        for (i, s) in docs.iter().enumerate() {
            let x = i as f64;
            let parts = [s.queue_wait, s.inference, s.review_wait.unwrap_or(0)];
            let mut base = 0.0;
            for (k, v) in parts.iter().enumerate() {
                let top = base + *v as f64;
                if *v > 0 {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.38, base), (x + 0.38, top)],
                        stage_names[k].1.mix(0.9).filled(),
                    )))?;
                }
                base = top;
            }
        }
    } else {
        // Buckets of arrival time, about 15 documents each, at most 20.
        let t_max = docs.iter().map(|s| s.created_at).max().unwrap_or(0) + 1;
        let buckets = (docs.len() / 15).clamp(4, 20) as u64;
        let width = t_max.div_ceil(buckets).max(1);
        let mut grouped: BTreeMap<u64, [Vec<u64>; 3]> = BTreeMap::new();
        for s in &docs {
            let g = grouped.entry(s.created_at / width).or_default();
            g[0].push(s.queue_wait);
            g[1].push(s.inference);
            if let Some(r) = s.review_wait {
                g[2].push(r);
            }
        }
        let mut series: Vec<[Vec<(f64, f64)>; 2]> =
            vec![Default::default(), Default::default(), Default::default()];
        for (b, g) in grouped.iter_mut() {
            let mid = (*b * width) as f64 + width as f64 / 2.0;
            for k in 0..3 {
                if g[k].is_empty() {
                    continue;
                }
                g[k].sort_unstable();
                series[k][0].push((mid, percentile(&g[k], 0.5) as f64));
                series[k][1].push((mid, percentile(&g[k], 0.95) as f64));
            }
        }
        let y_max = y_top(
            series
                .iter()
                .flat_map(|s| s.iter().flatten())
                .map(|p| p.1)
                .fold(1.0, f64::max),
        );
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(12)
            .margin_right(20)
            .x_label_area_size(56)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..(buckets * width) as f64, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc(format!(
                "arrival time of the document (ms; buckets of {width} ms)"
            ))
            .y_desc("time (ms)")
            .axis_desc_style(font(AXIS_DESC_PX))
            .label_style(font(LABEL_PX))
            .x_label_formatter(&ms_label)
            .y_label_formatter(&ms_label)
            .max_light_lines(0)
            .draw()?;
        for (k, s) in series.iter().enumerate() {
            let c = stage_names[k].1;
            chart.draw_series(LineSeries::new(s[0].clone(), c.stroke_width(3)))?;
            chart.draw_series(s[0].iter().map(|p| Circle::new(*p, 4, c.filled())))?;
            chart.draw_series(DashedLineSeries::new(s[1].clone(), 8, 5, c.stroke_width(2)))?;
            chart.draw_series(s[1].iter().map(|p| Circle::new(*p, 3, c.stroke_width(2))))?;
        }
    }
    let mut entries: Vec<(Mark, String)> = Vec::new();
    for (name, c) in stage_names {
        let suffix = if name == "reviewWaitMs" {
            review_note
        } else {
            ""
        };
        if per_doc {
            entries.push((Mark::Bar(c), format!("{name}{suffix}")));
        } else {
            entries.push((Mark::Line(c), format!("{name} p50{suffix}")));
            entries.push((Mark::Dashed(c), format!("{name} p95")));
        }
    }
    let heading = if per_doc { "Stage (stacked)" } else { "Stage" };
    let note_y = 40 + 8 + legend(&legend_area.margin(40, 0, 0, 0), Some(heading), &entries)?;
    for (i, n) in [
        "queue wait and inference: summed",
        "over a document's attempts",
    ]
    .iter()
    .enumerate()
    {
        legend_area.draw(&Text::new(
            n.to_string(),
            (10, note_y + 20 * i as i32),
            font(13),
        ))?;
    }
    Ok(())
}

/// Outcomes over time (cumulative) and the distribution of attempts per job.
pub fn outcomes<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(
        root,
        &format!("{} — outcomes over time and attempts per job", d.title()),
    )?;
    if !d.has_rows() {
        return empty_panel(
            &body,
            "no rows",
            "no jobs.csv / attempts.csv: the run used --no-rows",
        );
    }
    let (w, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(w * 58 / 100);
    let (left_plot, left_legend) = left.split_horizontally(w * 58 / 100 - 200);

    // Cumulative counts of each outcome by virtual time.
    let ended = |state: &str| -> Vec<u64> {
        d.jobs
            .iter()
            .filter(|j| j.state == state)
            .filter_map(|j| j.terminal_at_ms)
            .collect()
    };
    let attempts_ending = |outcome: &str| -> Vec<u64> {
        d.attempts
            .iter()
            .filter(|a| a.outcome == outcome)
            .map(|a| a.ended_at_ms)
            .collect()
    };
    let mut kinds: Vec<(&str, RGBColor, Vec<u64>)> = vec![
        ("acked", C_GREEN, ended("acked")),
        ("retried", C_ORANGE, attempts_ending("retry")),
        ("dead-lettered", C_VERMILLION, ended("dead_lettered")),
        ("cancelled", C_GREY, ended("cancelled")),
        ("attempt crashed", C_PURPLE, attempts_ending("crashed")),
    ];
    for k in kinds.iter_mut() {
        k.2.sort_unstable();
    }
    let x_max = d.end_ms.max(1) as f64;
    let y_max = y_top(kinds.iter().map(|k| k.2.len()).max().unwrap_or(0).max(1) as f64);
    let mut chart = ChartBuilder::on(&left_plot)
        .caption("cumulative outcomes", font(17))
        .margin(12)
        .margin_right(16)
        .x_label_area_size(52)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("virtual time (ms)")
        .y_desc("count (cumulative)")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&ms_label)
        .x_labels(6)
        .y_label_formatter(&|v| {
            if v.fract().abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .max_light_lines(0)
        .draw()?;
    let mut entries = Vec::new();
    for (name, c, times) in &kinds {
        let mut pts = vec![(0.0, 0.0)];
        for (i, t) in times.iter().enumerate() {
            pts.push((*t as f64, i as f64));
            pts.push((*t as f64, (i + 1) as f64));
        }
        pts.push((x_max, times.len() as f64));
        chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))?;
        entries.push((Mark::Line(*c), format!("{name} ({})", times.len())));
    }
    legend(&left_legend.margin(50, 0, 0, 0), None, &entries)?;

    // Attempts per job, stacked by the job's final state.
    let states = [
        ("acked", C_GREEN),
        ("dead_lettered", C_VERMILLION),
        ("cancelled", C_GREY),
        ("unfinished", C_DARK),
    ];
    let max_attempts = d.jobs.iter().map(|j| j.attempts).max().unwrap_or(0);
    let mut counts: BTreeMap<(u32, usize), u64> = BTreeMap::new();
    for j in &d.jobs {
        let s = states.iter().position(|s| s.0 == j.state).unwrap_or(3);
        *counts.entry((j.attempts, s)).or_default() += 1;
    }
    let per_attempts: BTreeMap<u32, u64> =
        counts.iter().fold(BTreeMap::new(), |mut m, ((a, _), n)| {
            *m.entry(*a).or_default() += n;
            m
        });
    let y_max = y_top(per_attempts.values().copied().max().unwrap_or(1) as f64);
    let (right_plot, right_legend) = right.split_vertically(right.dim_in_pixel().1 - 70);
    let mut chart = ChartBuilder::on(&right_plot)
        .caption("attempts per job, by final state", font(17))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(52)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.6f64..(max_attempts as f64 + 0.6), 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("attempts (leases granted)")
        .y_desc("jobs")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_labels(max_attempts as usize + 2)
        .x_label_formatter(&|v| {
            if v.fract().abs() < 1e-6 && *v >= 0.0 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| {
            if v.fract().abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .disable_x_mesh()
        .max_light_lines(0)
        .draw()?;
    for a in 0..=max_attempts {
        let mut base = 0.0;
        for (s, (_, c)) in states.iter().enumerate() {
            let n = counts.get(&(a, s)).copied().unwrap_or(0) as f64;
            if n > 0.0 {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(a as f64 - 0.35, base), (a as f64 + 0.35, base + n)],
                    c.mix(0.9).filled(),
                )))?;
            }
            base += n;
        }
        if base > 0.0 {
            chart.draw_series(std::iter::once(Text::new(
                format!("{base:.0}"),
                (a as f64, base + y_max * 0.03),
                centered(13),
            )))?;
        }
    }
    // A one-line legend under the bars.
    let mut x = 70;
    for (name, c) in states {
        right_legend.draw(&Rectangle::new(
            [(x, 20), (x + 16, 34)],
            c.mix(0.9).filled(),
        ))?;
        right_legend.draw(&Text::new(name.replace('_', "-"), (x + 22, 19), font(14)))?;
        x += 40 + 9 * name.len() as i32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// latency.png's p95 and p99 labels collided with each other's lines: labels sat below the
    /// tops of the lines. Each label now has its own row, above every line, bar and curve.
    #[test]
    fn percentile_labels_never_cross_a_line_a_bar_the_curve_or_each_other() {
        // A 13 px label in a panel about 250 px tall: half its height is 0.03 of the range.
        let half = 0.03;
        for i in 0..3 {
            assert!(label_row(i) - half > LINE_TOP, "row {i} crosses the lines");
            if i > 0 {
                assert!(
                    label_row(i - 1) - label_row(i) > 2.0 * half,
                    "rows {i} overlap"
                );
            }
        }
        assert!(label_row(0) + half < 1.0);
        const { assert!(BARS_TOP < LINE_TOP && 1.0 / CDF_TOP < LINE_TOP) };
    }
}

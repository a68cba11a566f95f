//! The latency chart: distributions of queueWaitMs, inferenceMs and reviewWaitMs, histogram and
//! cumulative distribution side by side, with p50, p95 and p99 marked.

use super::data::RunData;
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

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
            .label_style(font(LABEL_PX))
            .x_label_formatter(&ms_label)
            .y_label_formatter(&count_label)
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
            .label_style(font(LABEL_PX))
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

//! The depth chart: queue depth over virtual time, with the fault strip above it (worker
//! stalls and crashes, relay and consumer crashes, operator actions: `strip`).
//!
//! Owns: the depth line (a step line that holds each sample until the next and ends at the last
//! sample: past it the depth is not known), the legend and the chart's data table.
//! Does not: load the samples (`data`) or decide how a fault row is drawn (`strip`).

use super::data::RunData;
use super::strip;
use super::style::*;
use super::table::{layer_row, DataTable, LAYER_HEADERS};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The step line's points: each sample held until the next, ending at the last sample.
pub fn steps(depth: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let mut steps = Vec::with_capacity(depth.len() * 2);
    for (i, (t, v)) in depth.iter().enumerate() {
        if i > 0 {
            steps.push((*t as f64, depth[i - 1].1 as f64));
        }
        steps.push((*t as f64, *v as f64));
    }
    steps
}

/// Queue depth over virtual time, the fault strip above it.
pub fn depth<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(
        root,
        &format!(
            "{} — queue depth over virtual time, faults above",
            d.title()
        ),
    )?;
    let (w, _) = body.dim_in_pixel();
    let (plot_area, legend_area) = body.split_horizontally(w - 300);
    let (strip_area, chart_area) = plot_area.split_vertically(strip::height() + 8);
    let x_max = d.end_ms.max(1) as f64;
    let max_depth = d.depth.iter().map(|p| p.1).max().unwrap_or(0) as f64;
    let y_max = y_top(max_depth.max(1.0)) + 0.6;
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(12)
        .margin_top(4)
        .margin_right(20)
        .x_label_area_size(52)
        .y_label_area_size(84)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("virtual time (ms)")
        .y_desc("queue depth (jobs waiting)")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&ms_label)
        .y_label_formatter(&count_label)
        .max_light_lines(0)
        .bold_line_style(C_GREY.mix(0.3))
        .draw()?;
    chart.draw_series(LineSeries::new(steps(&d.depth), C_BLUE.stroke_width(2)))?;
    if d.depth.len() <= 200 {
        chart.draw_series(
            d.depth
                .iter()
                .map(|(t, v)| Circle::new((*t as f64, *v as f64), 3, C_BLUE.filled())),
        )?;
    }
    let x_px = chart.plotting_area().get_pixel_range().0;
    strip::draw(&strip_area, d, x_max, x_px)?;
    depth_legend(&legend_area, d)
}

fn depth_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let depth_stats = d.summary.pointer("/metrics/queueDepth");
    let samples = depth_stats
        .and_then(|s| s.get("samples"))
        .and_then(|v| v.as_u64())
        .unwrap_or(d.depth.len() as u64);
    let mut entries = vec![(
        Mark::Line(C_BLUE),
        if samples == 0 {
            "queue depth: not sampled".to_string()
        } else {
            format!("queue depth ({samples} samples)")
        },
    )];
    entries.extend(strip::legend_entries(d));
    let below = 40 + legend(&area.margin(40, 0, 0, 0), Some("Legend"), &entries)?;
    let notes = [
        if samples == 0 {
            // A real store's history records no depth samples: the depth is not known.
            "no depth samples in this history".to_string()
        } else {
            format!(
                "depth min {} · max {} · mean {}",
                stat(depth_stats, "min"),
                stat(depth_stats, "max"),
                stat(depth_stats, "mean")
            )
        },
        format!("faults in the strip above; over {}", strip::RUG_MAX),
        "of a kind: counts per time bucket".to_string(),
        format!("markers from {}", strip::short_source(d)),
    ];
    for (i, n) in notes.iter().enumerate() {
        area.draw(&Text::new(
            n.clone(),
            (10, below + 8 + 22 * i as i32),
            font(14),
        ))?;
    }
    Ok(())
}

/// What the depth chart draws, layer by layer.
pub fn table(d: &RunData) -> DataTable {
    let mut t = DataTable::new(&LAYER_HEADERS);
    let span = d.depth.first().zip(d.depth.last()).map(|(a, b)| (a.0, b.0));
    t.row(layer_row(
        "queue depth",
        d.depth.len(),
        span,
        "step line, each sample held until the next, ending at the last sample",
    ));
    strip::table_rows(d, &mut t);
    t
}

fn stat(v: Option<&serde_json::Value>, k: &str) -> String {
    v.and_then(|v| v.get(k))
        .map(|x| x.to_string())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// synthetic-12's line went on at its last sample's depth to the end of the run: the steps
    /// end at the last sample.
    #[test]
    fn the_step_line_ends_at_the_last_sample() {
        let s = steps(&[(20, 1), (65, 2), (515, 1)]);
        assert_eq!(
            s,
            [
                (20.0, 1.0),
                (65.0, 1.0),
                (65.0, 2.0),
                (515.0, 2.0),
                (515.0, 1.0)
            ]
        );
        assert!(steps(&[]).is_empty());
    }
}

//! The depth chart: queue depth over virtual time, with worker crashes, stalls, relay and
//! consumer crashes and operator actions marked.

use super::data::{FaultKind, RunData};
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Queue depth over virtual time, with worker crashes, stalls, relay and consumer crashes and
/// operator actions marked.
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
    chart.draw_series(of(FaultKind::ConsumerCrash).map(|f| vline(f.time_ms, C_SKY, 1)))?;
    chart.draw_series(of(FaultKind::ConsumerCrash).map(|f| {
        let (x, y) = (f.time_ms as f64, y_max * 0.89);
        // A square 8 px wide whatever the axes' scales: a square marker centred on the point.
        EmptyElement::at((x, y)) + Rectangle::new([(-4, -4), (4, 4)], C_SKY.filled())
    }))?;
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
        Mark::Square(C_SKY),
        format!("consumer crash {}", count(FaultKind::ConsumerCrash)),
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

//! The scenario charts over virtual time: retries scheduled per window (`retries.csv`: the
//! retry storms' waves), outbox rows held (`outbox.csv`: what a retention keeps) and the
//! dead-letter queue's size (`dlq.csv`), each with the fault strip above it.
//!
//! Owns: these three charts, when each has something to draw, and their data tables.
//! Does not: load the series (`series_data`) or draw the fault strip (`strip`).

use super::data::RunData;
use super::strip;
use super::style::*;
use super::table::{layer_row, DataTable, LAYER_HEADERS};
use plotters::coord::Shift;
use plotters::prelude::*;

/// At most this many retry bars: longer runs sum neighbouring 100 ms windows.
const MAX_BARS: usize = 600;

/// How one series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// One bar per window of this many ms.
    Bars(u64),
    /// A step line, each sample held until the next.
    Steps,
}

struct Plot<'a> {
    title: &'a str,
    label: String,
    y_desc: &'a str,
    color: RGBColor,
    points: Vec<(u64, u64)>,
    style: Style,
}

/// The retries per window: 100 ms, or a multiple of it for a long run (at most [`MAX_BARS`]
/// windows); only the windows with a retry.
fn retry_windows(d: &RunData) -> (Vec<(u64, u64)>, u64) {
    let windows = d.end_ms / 100 + 1;
    let width = 100 * windows.div_ceil(MAX_BARS as u64).max(1);
    let mut sums: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for (t, n) in d.series.retries.iter().filter(|r| r.1 > 0) {
        *sums.entry(t / width * width).or_default() += n;
    }
    (sums.into_iter().collect(), width)
}

/// Retries scheduled per window over virtual time.
pub fn retries<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let (points, width) = retry_windows(d);
    time_chart(
        root,
        d,
        &Plot {
            title: "retries scheduled over virtual time",
            label: format!(
                "retries per {} ms ({} in all)",
                grouped(width as i64),
                d.series.retries_total()
            ),
            y_desc: &format!("retries scheduled per {} ms", grouped(width as i64)),
            color: C_ORANGE,
            points,
            style: Style::Bars(width),
        },
    )
}

/// Outbox rows held over virtual time.
pub fn outbox<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    time_chart(
        root,
        d,
        &Plot {
            title: "outbox rows held over virtual time",
            label: format!("outbox rows (max {})", d.series.outbox_max()),
            y_desc: "outbox rows held",
            color: C_PURPLE,
            points: d.series.outbox.clone(),
            style: Style::Steps,
        },
    )
}

/// The dead-letter queue's size over virtual time.
pub fn dlq<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    time_chart(
        root,
        d,
        &Plot {
            title: "dead-letter queue size over virtual time",
            label: format!("jobs in the DLQ (max {})", d.series.dlq_max()),
            y_desc: "jobs held in the DLQ",
            color: C_VERMILLION,
            points: d.series.dlq.clone(),
            style: Style::Steps,
        },
    )
}

fn time_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData, p: &Plot) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(root, &format!("{} — {}", d.title(), p.title))?;
    let (w, _) = body.dim_in_pixel();
    let (plot_area, legend_area) = body.split_horizontally(w - 300);
    let (strip_area, chart_area) = plot_area.split_vertically(strip::height() + 8);
    let x_max = d.end_ms.max(1) as f64;
    let y_max = y_top(p.points.iter().map(|x| x.1).max().unwrap_or(0).max(1) as f64);
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
        .y_desc(p.y_desc)
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&ms_label)
        .y_label_formatter(&count_label)
        .max_light_lines(0)
        .bold_line_style(C_GREY.mix(0.3))
        .draw()?;
    match p.style {
        Style::Bars(width) => {
            chart.draw_series(p.points.iter().filter(|x| x.1 > 0).map(|(t, n)| {
                let (a, b) = (*t as f64, (*t + width) as f64 - width as f64 * 0.15);
                Rectangle::new([(a, 0.0), (b.min(x_max), *n as f64)], p.color.filled())
            }))?;
        }
        Style::Steps => {
            chart.draw_series(LineSeries::new(
                super::depth::steps(&p.points),
                p.color.stroke_width(2),
            ))?;
        }
    }
    let x_px = chart.plotting_area().get_pixel_range().0;
    strip::draw(&strip_area, d, x_max, x_px)?;
    let mark = match p.style {
        Style::Bars(_) => Mark::Bar(p.color),
        Style::Steps => Mark::Line(p.color),
    };
    let mut entries = vec![(mark, p.label.clone())];
    entries.extend(strip::legend_entries(d));
    legend(&legend_area.margin(40, 0, 0, 0), Some("Legend"), &entries)?;
    Ok(())
}

/// Whether the chart has anything to draw, or why not.
pub fn drawn(d: &RunData, name: &str) -> Result<(), String> {
    let s = &d.series;
    let (file, has, none) = match name {
        "retries" => (
            "retries.csv",
            s.retries_total() > 0,
            "no retry was scheduled",
        ),
        "outbox" => (
            "outbox.csv",
            s.outbox_max() > 0,
            "the outbox never held a row",
        ),
        _ => ("dlq.csv", s.dlq_max() > 0, "no job was dead-lettered"),
    };
    if name == "retries" && s.retries_from.is_none() {
        // `retries.csv` is written by `run` and `conform`; without it, retries are counted
        // from the history.
        Err("no retries.csv (written by durasim run and conform) and no history".into())
    } else if name != "retries" && !s.present.contains(&file) {
        Err(format!(
            "no {file} (written by durasim run, conform and verify --out)"
        ))
    } else if name != "retries" && (if name == "outbox" { &s.outbox } else { &s.dlq }).is_empty() {
        // Sampled with the queue depth: a history without depth samples (a real store's) has
        // none, which says nothing about the rows held.
        Err(format!(
            "{file} has no samples: the history has no depth samples"
        ))
    } else if !has {
        Err(format!("{none} in this run"))
    } else {
        Ok(())
    }
}

/// What a series chart draws, layer by layer.
pub fn table(d: &RunData, name: &str) -> DataTable {
    let mut t = DataTable::new(&LAYER_HEADERS);
    let (layer, points, drawn) = match name {
        "retries" => {
            let (points, width) = retry_windows(d);
            (
                "retries scheduled",
                points,
                format!(
                    "a bar per {} ms window with a retry (from {})",
                    grouped(width as i64),
                    d.series.retries_from.unwrap_or("nothing")
                ),
            )
        }
        "outbox" => ("outbox rows", d.series.outbox.clone(), step_words()),
        _ => ("dead-letter queue size", d.series.dlq.clone(), step_words()),
    };
    let span = points.first().zip(points.last()).map(|(a, b)| (a.0, b.0));
    t.row(layer_row(layer, points.len(), span, &drawn));
    strip::table_rows(d, &mut t);
    t
}

fn step_words() -> String {
    "step line, each sample held until the next, ending at the last sample".into()
}

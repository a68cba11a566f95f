//! The tenants chart: how long each tenant's work waited, so one tenant's burst shows as the
//! others' starvation. Left: each tenant's p95 queueWaitMs by the time its attempts became
//! visible (`attempts.csv`, tenants from `jobs.csv`); right: each tenant's p50, p95 and p99
//! queueWaitMs over the whole run (`tenants.csv`).
//!
//! Owns: this chart, when it is drawn (two tenants or more) and its data table.
//! Does not: load the files (`data`, `series_data`).

use super::data::RunData;
use super::style::*;
use super::table::DataTable;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// Tenants drawn as their own line; the table lists every tenant.
const MAX_LINES: usize = 7;
const COLORS: [RGBColor; MAX_LINES] = [
    C_BLUE,
    C_ORANGE,
    C_GREEN,
    C_PURPLE,
    C_SKY,
    C_VERMILLION,
    C_GREY,
];

/// Whether the chart is drawn, or why not.
pub fn drawn(d: &RunData) -> Result<(), String> {
    match d.series.tenants.len() {
        0 if !d.series.present.contains(&"tenants.csv") => {
            Err("no tenants.csv (written by durasim run, conform and verify --out)".into())
        }
        0 | 1 => Err("one tenant only: nothing to compare".into()),
        _ => Ok(()),
    }
}

/// Per tenant (in `tenants.csv` order, at most [`MAX_LINES`]), its p95 queueWaitMs per bucket of
/// visible time: `(bucket start, p95)`.
/// A tenant's line: its name and `(bucket start, p95)` points.
type Line = (String, Vec<(u64, u64)>);

fn p95_by_time(d: &RunData) -> (Vec<Line>, u64) {
    let bucket = super::strip::bucket_ms(d.end_ms as f64 * 1.5).max(1);
    let tenant_of: BTreeMap<u32, &str> =
        d.jobs.iter().map(|j| (j.job, j.tenant.as_str())).collect();
    let mut waits: BTreeMap<(&str, u64), Vec<u64>> = BTreeMap::new();
    for a in &d.attempts {
        let Some(t) = tenant_of.get(&a.job) else {
            continue;
        };
        let visible = a.leased_at_ms.saturating_sub(a.queue_wait_ms);
        waits
            .entry((t, visible / bucket * bucket))
            .or_default()
            .push(a.queue_wait_ms);
    }
    let lines = d
        .series
        .tenants
        .iter()
        .take(MAX_LINES)
        .map(|t| {
            let pts = waits
                .iter_mut()
                .filter(|((name, _), _)| *name == t.tenant)
                .map(|((_, at), v)| {
                    v.sort_unstable();
                    (*at, percentile(v, 0.95))
                })
                .collect();
            (t.tenant.clone(), pts)
        })
        .collect();
    (lines, bucket)
}

/// Both panels.
pub fn tenants<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let body = titled(root, &format!("{} — queueWaitMs per tenant", d.title()))?;
    let (w, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(w * 60 / 100);
    over_time(&left, d)?;
    percentiles(&right, d)
}

fn over_time<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let title = "p95 queueWaitMs by when the work became visible";
    if !d.has_rows() {
        return empty_panel(
            area,
            title,
            "needs jobs.csv and attempts.csv (the run used --no-rows)",
        );
    }
    let (lines, bucket) = p95_by_time(d);
    let y_max = y_top(
        lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.1))
            .max()
            .unwrap_or(1)
            .max(1) as f64,
    );
    let x_max = d.end_ms.max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{title} ({} ms buckets)", grouped(bucket as i64)),
            font(17),
        )
        .margin(12)
        .margin_right(16)
        .x_label_area_size(52)
        .y_label_area_size(84)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("virtual time the attempt became visible (ms)")
        .y_desc("p95 queueWaitMs (ms)")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_label_formatter(&ms_label)
        .y_label_formatter(&ms_label)
        .x_labels(6)
        .max_light_lines(0)
        .draw()?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let c = COLORS[i];
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .map(|(t, v)| ((*t + bucket / 2) as f64, *v as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(xy.clone(), c.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(xy.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
    }
    chart
        .configure_series_labels()
        .label_font(font(LEGEND_PX))
        .background_style(WHITE.mix(0.85))
        .border_style(C_GREY.mix(0.5))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

fn percentiles<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &RunData) -> R
where
    DB::ErrorType: 'static,
{
    let t = &d.series.tenants;
    let y_max = y_top(
        t.iter()
            .map(|r| r.queue_wait_ms_p99)
            .max()
            .unwrap_or(1)
            .max(1) as f64,
    );
    let n = t.len();
    let names: Vec<String> = t.iter().map(|r| r.tenant.clone()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption("queueWaitMs p50 · p95 · p99 (tenants.csv)", font(17))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(52)
        .y_label_area_size(84)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)?;
    let label = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .y_desc("queueWaitMs (ms)")
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(LABEL_PX))
        .x_labels(n + 1)
        .x_label_formatter(&label)
        .y_label_formatter(&ms_label)
        .disable_x_mesh()
        .max_light_lines(0)
        .draw()?;
    let shades = [
        (C_BLUE.mix(0.45), "p50"),
        (C_BLUE.mix(0.75), "p95"),
        (C_BLUE.mix(1.0), "p99"),
    ];
    for (k, (c, name)) in shades.into_iter().enumerate() {
        let value = |r: &super::series_data::TenantRow| match k {
            0 => r.queue_wait_ms_p50,
            1 => r.queue_wait_ms_p95,
            _ => r.queue_wait_ms_p99,
        };
        chart
            .draw_series(t.iter().enumerate().map(|(i, r)| {
                let x = i as f64 - 0.33 + k as f64 * 0.22;
                Rectangle::new([(x, 0.0), (x + 0.2, value(r) as f64)], c.filled())
            }))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
    }
    chart
        .configure_series_labels()
        .label_font(font(LEGEND_PX))
        .background_style(WHITE.mix(0.85))
        .border_style(C_GREY.mix(0.5))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

/// Every tenant's figures, as drawn.
pub fn table(d: &RunData) -> DataTable {
    let mut t = DataTable::new(&[
        "tenant",
        "enqueued",
        "acked",
        "queueWaitMs p50",
        "queueWaitMs p95",
        "queueWaitMs p99",
        "queueWaitMs max",
        "drawn as",
    ]);
    for (i, r) in d.series.tenants.iter().enumerate() {
        t.row(vec![
            r.tenant.clone(),
            r.enqueued.to_string(),
            r.acked.to_string(),
            r.queue_wait_ms_p50.to_string(),
            r.queue_wait_ms_p95.to_string(),
            r.queue_wait_ms_p99.to_string(),
            r.queue_wait_ms_max.to_string(),
            if i < MAX_LINES {
                "a line (left) and bars (right)"
            } else {
                "bars (right)"
            }
            .into(),
        ]);
    }
    t
}

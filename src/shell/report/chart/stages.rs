//! The stages chart: each document's queue wait, inference and review wait, one bar a document,
//! or p50 and p95 by arrival time when there are too many documents for bars.

use super::data::RunData;
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// At most this many documents get a bar each; more are grouped by arrival time.
pub const MAX_BARS: usize = 60;

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

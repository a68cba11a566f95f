//! The outcomes chart: cumulative outcomes over virtual time, and attempts per job by the job's
//! final state.

use super::data::RunData;
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

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
        .y_label_formatter(&count_label)
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
        .y_label_formatter(&count_label)
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

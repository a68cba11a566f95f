//! The fault strip above a time chart: one row per kind of fault or operator action (worker
//! stalls, worker crashes, relay crashes, consumer crashes, operator actions), aligned with the
//! chart's time axis, so the series below stays visible however many faults there are.
//!
//! Owns: how each row is drawn — a rug of ticks (stalls as bands) while a kind has at most
//! [`RUG_MAX`] events, counts per time bucket past that — and the words that say so in the
//! chart's data table.
//! Does not: load the faults (`chart::data`) or draw the series under it (`depth`, `series`).

use super::data::{Fault, FaultKind, RunData, Source};
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A kind with more events than this is drawn as counts per bucket, not one tick each.
pub const RUG_MAX: usize = 40;
/// Roughly how many buckets the time axis is cut into for counts.
const BUCKETS: f64 = 60.0;
/// Pixel height of one row.
pub const ROW_PX: u32 = 22;

/// The kinds of the strip, top to bottom.
pub const KINDS: [FaultKind; 5] = [
    FaultKind::Stall,
    FaultKind::Crash,
    FaultKind::RelayCrash,
    FaultKind::ConsumerCrash,
    FaultKind::Operator,
];

/// A kind's colour, shared with the legend.
pub fn color(kind: FaultKind) -> RGBColor {
    match kind {
        FaultKind::Stall => C_ORANGE,
        FaultKind::Crash => C_VERMILLION,
        FaultKind::RelayCrash => C_PURPLE,
        FaultKind::ConsumerCrash => C_SKY,
        FaultKind::Operator => C_GREEN,
    }
}

/// A row's short name, written at its left.
fn short(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Stall => "stalls",
        FaultKind::Crash => "crashes",
        FaultKind::RelayCrash => "relay",
        FaultKind::ConsumerCrash => "consumer",
        FaultKind::Operator => "operator",
    }
}

/// The strip's height for its five rows.
pub fn height() -> u32 {
    ROW_PX * KINDS.len() as u32 + 14
}

/// Whether the run's source recorded this kind at all (without a history only the scheduled
/// operator actions are known).
pub fn recorded(d: &RunData, kind: FaultKind) -> bool {
    d.source != Source::Fallback || kind == FaultKind::Operator
}

/// A bucket width of 1, 2 or 5 × 10^k ms giving about [`BUCKETS`] buckets over `x_max`.
pub fn bucket_ms(x_max: f64) -> u64 {
    let raw = (x_max / BUCKETS).max(1.0);
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            if (unit * m) as f64 >= raw {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

/// How a kind's row is drawn, for the data table.
pub fn drawn_as(d: &RunData, kind: FaultKind, x_max: f64) -> String {
    let n = of(d, kind).count();
    if !recorded(d, kind) {
        "not recorded (no history)".into()
    } else if n == 0 {
        "none".into()
    } else if n > RUG_MAX {
        let counts = bucket_counts(d, kind, x_max);
        format!(
            "counts per {} ms bucket in the strip (max {})",
            grouped(bucket_ms(x_max) as i64),
            counts.iter().max().unwrap_or(&0)
        )
    } else if kind == FaultKind::Stall {
        "bands in the strip, from the stall to its end".into()
    } else {
        "ticks in the strip".into()
    }
}

fn of(d: &RunData, kind: FaultKind) -> impl Iterator<Item = &Fault> {
    d.faults.iter().filter(move |f| f.kind == kind)
}

fn bucket_counts(d: &RunData, kind: FaultKind, x_max: f64) -> Vec<u64> {
    let b = bucket_ms(x_max);
    let mut counts = vec![0u64; (x_max as u64 / b + 1) as usize];
    for f in of(d, kind) {
        let i = ((f.time_ms / b) as usize).min(counts.len() - 1);
        counts[i] += 1;
    }
    counts
}

/// Draws the strip into `area`; `x_px` is the pixel range (absolute, as the chart below reports
/// it) that time `0..x_max` spans, so the strip lines up with the chart under it.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &RunData,
    x_max: f64,
    x_px: std::ops::Range<i32>,
) -> R
where
    DB::ErrorType: 'static,
{
    let (bx, _) = area.get_base_pixel();
    let (x0, x1) = (x_px.start - bx, x_px.end - bx);
    let px = |t: f64| x0 + ((t / x_max.max(1.0)) * (x1 - x0) as f64).round() as i32;
    let label = font(13).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, kind) in KINDS.into_iter().enumerate() {
        let top = 6 + i as i32 * ROW_PX as i32;
        let (lo, hi, mid) = (top + 3, top + ROW_PX as i32 - 3, top + ROW_PX as i32 / 2);
        area.draw(&Rectangle::new(
            [(x0, top), (x1, top + ROW_PX as i32)],
            if i % 2 == 0 {
                C_GREY.mix(0.07)
            } else {
                WHITE.mix(1.0)
            }
            .filled(),
        ))?;
        area.draw(&Text::new(short(kind), (x0 - 8, mid), label.clone()))?;
        let c = color(kind);
        let n = of(d, kind).count();
        if !recorded(d, kind) {
            let note = font(12)
                .color(&C_GREY)
                .pos(Pos::new(HPos::Left, VPos::Center));
            area.draw(&Text::new("not recorded (no history)", (x0 + 6, mid), note))?;
        } else if n > RUG_MAX {
            let counts = bucket_counts(d, kind, x_max);
            let max = *counts.iter().max().unwrap_or(&1) as f64;
            let b = bucket_ms(x_max) as f64;
            for (k, &cnt) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let h = ((hi - lo) as f64 * cnt as f64 / max).max(2.0) as i32;
                let (a, z) = (px(k as f64 * b), px(((k + 1) as f64 * b).min(x_max)));
                area.draw(&Rectangle::new(
                    [(a, hi - h), ((z - 1).max(a + 1), hi)],
                    c.filled(),
                ))?;
            }
        } else {
            for f in of(d, kind) {
                let x = px(f.time_ms as f64);
                match (kind, f.until_ms) {
                    (FaultKind::Stall, Some(u)) => area.draw(&Rectangle::new(
                        [(x, lo + 2), (px(u as f64).max(x + 2), hi - 2)],
                        c.mix(0.75).filled(),
                    ))?,
                    _ => area.draw(&PathElement::new(vec![(x, lo), (x, hi)], c.stroke_width(2)))?,
                }
            }
        }
    }
    Ok(())
}

/// The legend's name of a fault kind.
pub fn kind_name(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Stall => "worker stall",
        FaultKind::Crash => "worker crash",
        FaultKind::RelayCrash => "relay crash",
        FaultKind::ConsumerCrash => "consumer crash",
        FaultKind::Operator => "operator action",
    }
}

/// The strip's legend entries: each kind with its count ("— not recorded" without a history,
/// never a "× 0" it does not know).
pub fn legend_entries(d: &RunData) -> Vec<(Mark, String)> {
    KINDS
        .into_iter()
        .map(|kind| {
            let mark = match kind {
                FaultKind::Stall => Mark::Band(color(kind)),
                _ => Mark::VLine(color(kind)),
            };
            let count = if recorded(d, kind) {
                format!("× {}", of(d, kind).count())
            } else {
                "— not recorded".to_string()
            };
            (mark, format!("{} {count}", kind_name(kind)))
        })
        .collect()
}

/// Where the markers came from, in a few words.
pub fn short_source(d: &RunData) -> &'static str {
    match d.source {
        Source::History => "the history",
        Source::Extracts => "faults.csv",
        Source::Fallback => "scenario.toml only (no history)",
    }
}

/// The strip's rows of a chart's layers table (`table::LAYER_HEADERS`).
pub fn table_rows(d: &RunData, t: &mut super::table::DataTable) {
    let x_max = d.end_ms.max(1) as f64;
    for kind in KINDS {
        let times: Vec<u64> = of(d, kind).map(|f| f.time_ms).collect();
        let span = times.first().zip(times.last()).map(|(a, b)| (*a, *b));
        t.row(super::table::layer_row(
            kind_name(kind),
            times.len(),
            span,
            &drawn_as(d, kind, x_max),
        ));
    }
}

//! Shared look of every chart: fonts, the colour palette, a legend panel, text helpers.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub type R = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Registers the embedded DejaVu fonts once; plotters' ab_glyph backend has no system fonts.
pub fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

// The Okabe-Ito palette: distinguishable with the common colour-vision deficiencies.
pub const C_BLUE: RGBColor = RGBColor(0x00, 0x72, 0xB2);
pub const C_ORANGE: RGBColor = RGBColor(0xE6, 0x9F, 0x00);
pub const C_GREEN: RGBColor = RGBColor(0x00, 0x9E, 0x73);
pub const C_VERMILLION: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
pub const C_PURPLE: RGBColor = RGBColor(0xCC, 0x79, 0xA7);
pub const C_SKY: RGBColor = RGBColor(0x56, 0xB4, 0xE9);
pub const C_GREY: RGBColor = RGBColor(0x80, 0x80, 0x80);
pub const C_DARK: RGBColor = RGBColor(0x22, 0x22, 0x22);

pub const TITLE_PX: u32 = 22;
pub const AXIS_DESC_PX: u32 = 16;
pub const LABEL_PX: u32 = 14;
pub const LEGEND_PX: u32 = 15;

pub fn font(px: u32) -> TextStyle<'static> {
    ("sans-serif", px).into_font().color(&C_DARK)
}

pub fn bold(px: u32) -> TextStyle<'static> {
    ("sans-serif", px)
        .into_font()
        .style(FontStyle::Bold)
        .color(&C_DARK)
}

pub fn centered(px: u32) -> TextStyle<'static> {
    font(px).pos(Pos::new(HPos::Center, VPos::Center))
}

/// Fills the area and writes the title; returns the area below it.
pub fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    Ok(root.titled(title, bold(TITLE_PX))?)
}

/// A legend entry's symbol.
#[derive(Clone, Copy)]
pub enum Mark {
    Line(RGBColor),
    Dashed(RGBColor),
    Band(RGBColor),
    Bar(RGBColor),
    Cross(RGBColor),
    Dot(RGBColor),
    /// A vertical line with a square on it.
    Square(RGBColor),
    VLine(RGBColor),
}

/// Draws a legend as a list of entries at the top-left of `area` (pixel coordinates); returns
/// the y just below it.
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    heading: Option<&str>,
    entries: &[(Mark, String)],
) -> Result<i32, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let mut y: i32 = 14;
    if let Some(h) = heading {
        area.draw(&Text::new(h.to_string(), (8, y - 8), bold(LEGEND_PX)))?;
        y += 26;
    }
    for (mark, label) in entries {
        let (x0, x1) = (10, 36);
        match *mark {
            Mark::Line(c) => {
                area.draw(&PathElement::new(vec![(x0, y), (x1, y)], c.stroke_width(3)))?
            }
            Mark::Dashed(c) => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + 8, y)],
                    c.stroke_width(2),
                ))?;
                area.draw(&PathElement::new(
                    vec![(x0 + 14, y), (x0 + 22, y)],
                    c.stroke_width(2),
                ))?;
            }
            Mark::Band(c) => area.draw(&Rectangle::new(
                [(x0, y - 7), (x1, y + 7)],
                c.mix(0.3).filled(),
            ))?,
            Mark::Bar(c) => area.draw(&Rectangle::new([(x0, y - 7), (x1, y + 7)], c.filled()))?,
            Mark::Cross(c) => {
                area.draw(&PathElement::new(
                    vec![(x0 + 13, y - 9), (x0 + 13, y + 9)],
                    c.mix(0.6).stroke_width(1),
                ))?;
                area.draw(&Cross::new((x0 + 13, y), 5, c.stroke_width(2)))?;
            }
            Mark::Dot(c) => {
                area.draw(&PathElement::new(
                    vec![(x0 + 13, y - 9), (x0 + 13, y + 9)],
                    c.mix(0.6).stroke_width(1),
                ))?;
                area.draw(&Circle::new((x0 + 13, y), 5, c.filled()))?;
            }
            Mark::Square(c) => {
                area.draw(&PathElement::new(
                    vec![(x0 + 13, y - 9), (x0 + 13, y + 9)],
                    c.mix(0.6).stroke_width(1),
                ))?;
                area.draw(&Rectangle::new(
                    [(x0 + 9, y - 4), (x0 + 17, y + 4)],
                    c.filled(),
                ))?;
            }
            Mark::VLine(c) => area.draw(&PathElement::new(
                vec![(x0 + 13, y - 9), (x0 + 13, y + 9)],
                c.stroke_width(2),
            ))?,
        }
        area.draw(&Text::new(label.clone(), (x1 + 8, y - 8), font(LEGEND_PX)))?;
        y += 26;
    }
    Ok(y)
}

/// A panel that has nothing to draw: says why, in the middle.
pub fn empty_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, title: &str, why: &str) -> R
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    area.draw(&Rectangle::new(
        [(10, 10), (w as i32 - 10, h as i32 - 10)],
        C_GREY.mix(0.5).stroke_width(1),
    ))?;
    area.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, h as i32 / 2 - 14),
        bold(AXIS_DESC_PX).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    area.draw(&Text::new(
        why.to_string(),
        (w as i32 / 2, h as i32 / 2 + 14),
        centered(LABEL_PX),
    ))?;
    Ok(())
}

/// Tick labels for milliseconds: plain integers, thousands separated by a thin space.
pub fn ms_label(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new(); // fractional ticks of a narrow axis would repeat a rounded label
    }
    let n = v.round() as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The top of a y axis that leaves room above its highest value.
pub fn y_top(max: f64) -> f64 {
    if max <= 0.0 {
        1.0
    } else {
        max * 1.12
    }
}

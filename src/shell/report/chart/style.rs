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

/// A palette colour's name, as captions and data tables say it (so a caption never names a
/// colour the chart does not draw).
pub fn color_name(c: RGBColor) -> &'static str {
    match (c.0, c.1, c.2) {
        (0x00, 0x72, 0xB2) => "blue",
        (0xE6, 0x9F, 0x00) => "orange",
        (0x00, 0x9E, 0x73) => "green",
        (0xD5, 0x5E, 0x00) => "dark orange",
        (0xCC, 0x79, 0xA7) => "pink",
        (0x56, 0xB4, 0xE9) => "sky blue",
        (0x80, 0x80, 0x80) => "grey",
        _ => "dark grey",
    }
}

pub const TITLE_PX: u32 = 22;
pub const AXIS_DESC_PX: u32 = 16;
/// Tick labels. plotters draws a size of N at N / 1.24 px (an SVG says `font-size="14.5"` for
/// 18): 14.5 px at the chart's own size, about 11.4 px where a page shows a 1,400 px chart
/// 1,100 px wide.
pub const LABEL_PX: u32 = 18;
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

/// The thousands separator of tick labels: a thin space (U+2009), never a comma, which at a
/// small size reads as a decimal point ("1,000" as "1.000").
pub const THOUSANDS: char = '\u{2009}';

/// Tick labels for milliseconds: plain integers, thousands separated by a thin space.
pub fn ms_label(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new(); // fractional ticks of a narrow axis would repeat a rounded label
    }
    grouped(v.round() as i64)
}

/// An integer with its thousands separated by [`THOUSANDS`].
pub fn grouped(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(THOUSANDS);
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Tick labels for counts: whole numbers only (grouped), nothing at fractional ticks.
pub fn count_label(v: &f64) -> String {
    if v.fract().abs() < 1e-9 {
        grouped(v.round() as i64)
    } else {
        String::new()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// "1,000" at a small size read as "1.000": ticks are grouped with a thin space.
    #[test]
    fn tick_labels_group_thousands_with_a_thin_space() {
        assert_eq!(ms_label(&1000.0), "1\u{2009}000");
        assert_eq!(ms_label(&12_345_678.0), "12\u{2009}345\u{2009}678");
        assert_eq!(ms_label(&999.0), "999");
        assert_eq!(ms_label(&-1500.0), "-1\u{2009}500");
        assert_eq!(ms_label(&0.5), "");
        assert_eq!(count_label(&2000.0), "2\u{2009}000");
        assert!(LABEL_PX as f64 / 1.24 >= 14.0);
    }
}

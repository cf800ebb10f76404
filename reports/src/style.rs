//! Palette, sizes and the embedded font: every chart draws with these, so
//! the charts of one report look like one family.

use std::sync::OnceLock;

use plotters::style::{FontStyle, RGBColor, register_font};

use crate::error::ReportError;

/// PNG size: sharp on a laptop screen, still legible scaled to half.
pub const PNG_SIZE: (u32, u32) = (1600, 900);
/// SVG size inlined in the HTML (scaled by the browser to the page width).
pub const SVG_SIZE: (u32, u32) = (1200, 675);

/// The font family every chart asks for; registered from the embedded file.
pub const FONT: &str = "sans-serif";

/// Font sizes in pixels at [`PNG_SIZE`] width; charts scale them with the
/// canvas so the SVGs keep the same proportions.
pub const CAPTION_PX: f64 = 40.0;
/// Axis descriptions and tick labels.
pub const LABEL_PX: f64 = 26.0;
/// Legend entries and value labels.
pub const LEGEND_PX: f64 = 24.0;

/// DejaVu Sans (see `assets/DejaVuSans-LICENSE.txt`), embedded so the PNGs
/// render identically on a machine with no fonts installed.
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Register the embedded font once per process.
pub fn register_fonts() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        [FontStyle::Normal, FontStyle::Bold].iter().all(|style| register_font(FONT, *style, DEJAVU_SANS).is_ok())
    });
    if ok { Ok(()) } else { Err(ReportError::Font) }
}

/// Scale a pixel size from the PNG canvas to a canvas `width` wide.
pub fn px(size: f64, width: u32) -> f64 {
    size * f64::from(width) / f64::from(PNG_SIZE.0)
}

/// Colours of the lanes, in a fixed order by lane name so a lane keeps its
/// colour across charts (colour-blind-safe, Okabe–Ito).
pub const LANE_COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(213, 94, 0),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// Colour of the `index`-th lane.
pub fn lane_color(index: usize) -> RGBColor {
    LANE_COLORS[index % LANE_COLORS.len()]
}

/// Slices owned by the library.
pub const LIBRARY_COLOR: RGBColor = RGBColor(213, 94, 0);
/// The slice that is SQLite's own work.
pub const SQLITE_COLOR: RGBColor = RGBColor(0, 114, 178);
/// A thread's closing work (`replied→idle`, `done→returned`).
pub const TAIL_COLOR: RGBColor = RGBColor(204, 121, 167);
/// Cross-thread slices: the boundary.
pub const BOUNDARY_COLOR: RGBColor = RGBColor(120, 120, 120);
/// The caller's own code around the write.
pub const CALLER_COLOR: RGBColor = RGBColor(0, 158, 115);
/// A wait whose inside is not split.
pub const WAIT_COLOR: RGBColor = RGBColor(86, 180, 233);
/// Time between marks: what no slice covers.
pub const BETWEEN_COLOR: RGBColor = RGBColor(200, 200, 200);
/// Grid and reference lines.
pub const GRID_COLOR: RGBColor = RGBColor(200, 200, 200);

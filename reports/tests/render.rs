//! Rendering from a real `result.json` (a short run on this project's VM,
//! kept as a fixture) and from a degenerate one: every chart is a real PNG of
//! the documented size, the page is self-contained, nothing panics.

use hopscope_analyze::Decomposition;
use hopscope_reports::{ChartKind, ChartOptions, render, style};

fn fixture() -> Decomposition {
    Decomposition::from_json(include_str!("fixtures/result.json")).expect("fixture parses")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-reports-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let word = |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (word(16), word(20))
}

#[test]
fn every_chart_is_a_png_of_the_documented_size_and_the_page_holds_them() {
    let dir = temp_dir("full");
    let rendered = render(&fixture(), &dir, ChartOptions::default()).expect("renders");
    assert_eq!(rendered.pngs.len(), ChartKind::ALL.len());
    for png in &rendered.pngs {
        let bytes = std::fs::read(png).expect("png written");
        assert_eq!(png_size(&bytes), style::PNG_SIZE, "{}", png.display());
        assert!(bytes.len() > 20_000, "{} looks empty ({} bytes)", png.display(), bytes.len());
    }
    let html = std::fs::read_to_string(&rendered.html).expect("html written");
    assert_eq!(html.matches("<svg").count(), ChartKind::ALL.len());
    for kind in ChartKind::ALL {
        assert!(html.contains(&format!("id=\"{}\"", kind.file_stem())), "{} missing", kind.file_stem());
    }
    assert!(html.contains("<table>"), "receipt tables missing");
    assert!(html.contains("Of the ") && html.contains("µs hop"), "headline missing");
    assert!(!html.contains("<script"), "the page must not need scripts");
    assert!(!html.contains("<img"), "charts are inline SVG, no image to break");
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "the page must open offline ({remote})");
    }
    assert!(!html.contains("{{"), "an unfilled template slot");
}

#[test]
fn text_is_drawn_with_the_embedded_font() {
    // Two renders of the same chart must be byte-identical: no dependence on
    // whatever fonts the machine has.
    let d = fixture();
    let a = temp_dir("font-a").join("lanes.png");
    let b = temp_dir("font-b").join("lanes.png");
    ChartKind::Lanes.render_png(&d, ChartOptions::default(), &a).expect("a");
    ChartKind::Lanes.render_png(&d, ChartOptions::default(), &b).expect("b");
    assert_eq!(std::fs::read(a).expect("a"), std::fs::read(b).expect("b"));
    let svg = ChartKind::Lanes.render_svg(&d, ChartOptions::default()).expect("svg");
    assert!(svg.contains("µs per write"), "axis text missing from the SVG");
}

#[test]
fn the_log_axis_option_renders() {
    let dir = temp_dir("log");
    ChartKind::Distributions
        .render_png(&fixture(), ChartOptions { log_x: true }, &dir.join("d.png"))
        .expect("log distributions");
}

#[test]
fn a_run_with_nothing_to_draw_still_renders_with_notes() {
    let mut d = fixture();
    d.slices.clear();
    d.floor_slices.clear();
    d.derived = None;
    d.crosscheck = None;
    d.cpu_us_per_op.clear();
    for lane in d.lanes.values_mut() {
        lane.us_per_op = None;
        lane.blocks_us.clear();
        lane.op_latency_quantiles_us.clear();
    }
    let dir = temp_dir("empty");
    let rendered = render(&d, &dir, ChartOptions::default()).expect("renders notes");
    let html = std::fs::read_to_string(rendered.html).expect("html");
    assert!(html.contains("no slices to draw") || html.contains("No probed lane"));
}

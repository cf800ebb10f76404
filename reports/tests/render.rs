//! Rendering from a real `result.json` (a short run on this project's VM,
//! kept as a fixture) and from a degenerate one: every chart is a real PNG of
//! the documented size, the page is self-contained, nothing panics.

use hopscope_analyze::Decomposition;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::warning::Warning;
use hopscope_reports::{ChartKind, ChartOptions, render, style};

fn fixture() -> Decomposition {
    Decomposition::from_json(include_str!("fixtures/result.json")).expect("fixture parses")
}

/// The fixture with a batch sweep (`decompose --group-lanes 1,4,16,64` on
/// this project's VM), so every chart has something to draw.
fn fixture_with_sweep() -> Decomposition {
    let mut d = fixture();
    d.batch_sweep = Some(serde_json::from_str(include_str!("fixtures/batch_sweep.json")).expect("sweep parses"));
    d
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
    let rendered = render(&fixture_with_sweep(), &dir, ChartOptions::default()).expect("renders");
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
    assert!(html.contains("Of the ") && html.contains(") hop, "), "headline missing");
    assert_eq!(html.matches(") hop, ").count(), 1, "the headline is shown once");
    assert!(!fixture().warnings.is_empty(), "the fixture carries warnings");
    assert_eq!(html.matches("<h2>Warnings</h2>").count(), 1, "the warnings are shown once");
    assert!(!html.contains("<script"), "the page must not need scripts");
    assert!(!html.contains("<img"), "charts are inline SVG, no image to break");
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "the page must open offline ({remote})");
    }
    assert!(!html.contains("{{"), "an unfilled template slot");
}

#[test]
fn a_contended_run_says_so_at_the_top_of_its_page() {
    let quiet = hopscope_reports::page(&fixture(), ChartOptions::default()).expect("renders");
    assert!(!quiet.contains("Contended:"));
    let mut d = fixture();
    let waits = hopscope_analyze::contention::LaneWaits {
        run_queue_us_per_op: 110.0,
        share: 0.86,
        by_role: Default::default(),
        involuntary_per_op: Default::default(),
        contended_blocks: 6,
        blocks: 6,
        in_contended: Some((110.0, 128.0)),
    };
    d.contention = Some(hopscope_analyze::contention::Contention {
        threshold_share: 0.5,
        lanes: [("writer".to_owned(), waits)].into(),
        rounds: 6,
        contended_rounds: 6,
        dropped_rounds: false,
        contended: true,
        in_slices: Default::default(),
    });
    let html = hopscope_reports::page(&d, ChartOptions::default()).expect("renders");
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle} missing"));
    assert!(at("Contended: another process held this run") < at(") hop, "), "said before the figures");
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
    d.peer_slices.clear();
    d.derived = None;
    d.observer_effect = None;
    d.crosscheck = None;
    d.cpu_us_per_op.clear();
    for lane in d.lanes.values_mut() {
        lane.us_per_op = None;
        lane.blocks_us.clear();
        lane.op_latency_quantiles_us.clear();
    }
    let dir = temp_dir("empty");
    // A chart drawn by an earlier render of the same directory goes.
    std::fs::write(dir.join("waterfall.png"), b"stale").expect("stale png");
    let rendered = render(&d, &dir, ChartOptions::default()).expect("renders notes");
    assert!(rendered.pngs.is_empty(), "no empty chart is written: {:?}", rendered.pngs);
    assert!(!dir.join("waterfall.png").exists(), "the stale chart is removed");
    let html = std::fs::read_to_string(rendered.html).expect("html");
    assert!(!html.contains("<svg"), "no empty chart frame on the page");
    assert!(html.contains("Charts left out") && html.contains("no slices to draw"), "the page says what is left out");
    // The peers' chart is left out with a note where peers ran, and not
    // listed at all for a run without peer lanes.
    assert!(d.comparison.is_some() && html.contains("No probed peer"), "peers ran: the note says why");
    d.comparison = None;
    let rendered = render(&d, &dir, ChartOptions::default()).expect("renders notes");
    let html = std::fs::read_to_string(rendered.html).expect("html");
    assert!(html.contains("Charts left out") && !html.contains("No probed peer"), "only charts about what ran");
    // Drawn on its own, an empty chart still explains itself.
    let svg = ChartKind::Waterfall.render_svg(&d, ChartOptions::default()).expect("note");
    assert!(svg.contains("no slices to draw"));
}

#[test]
fn a_programs_capture_leaves_out_only_the_charts_it_has_no_figures_for() {
    // A program's own capture: one sliced lane, no lane arithmetic, no
    // clean/probed pair, no CPU readings, no peers.
    let mut d = fixture();
    d.peer_slices.clear();
    d.derived = None;
    d.observer_effect = None;
    d.cpu_us_per_op.clear();
    let drawn = ChartKind::drawn_for(&d);
    assert_eq!(drawn, [ChartKind::Waterfall, ChartKind::Lanes, ChartKind::Distributions, ChartKind::Stability]);
    let dir = temp_dir("capture");
    let rendered = render(&d, &dir, ChartOptions::default()).expect("renders");
    assert_eq!(rendered.pngs.len(), drawn.len());
    let html = std::fs::read_to_string(rendered.html).expect("html");
    assert_eq!(html.matches("<svg").count(), drawn.len());
    assert!(html.contains("nothing was paired") && html.contains("no CPU readings"));
    assert!(html.contains("No probed peer was paired with a reference"));
}

/// Strings from another machine, each trying to become markup.
const HOSTILE: [&str; 5] = [
    "<img src=x onerror=alert(1)>",
    "\"><script>alert(2)</script>",
    "</table><iframe src=javascript:alert(3)>",
    "{{ title }} {% if true %}",
    "Vec<u8>",
];

/// The fixture with a hostile string in every field a run, a trace or a
/// result.json controls: lane names, thread roles, slice (hop) names,
/// warnings, the command line, the commit, the shape.
fn hostile() -> Decomposition {
    let mut d = fixture();
    let names: Vec<String> = d.lanes.keys().cloned().collect();
    let rename = |i: usize| format!("{} {i}", HOSTILE[i % HOSTILE.len()]);
    let mapping: std::collections::BTreeMap<String, String> =
        names.iter().enumerate().map(|(i, n)| (n.clone(), rename(i))).collect();
    let map = |name: &String| mapping.get(name).cloned().unwrap_or_else(|| name.clone());
    d.lanes = std::mem::take(&mut d.lanes).into_iter().map(|(k, v)| (map(&k), v)).collect();
    d.cpu_us_per_op = std::mem::take(&mut d.cpu_us_per_op)
        .into_iter()
        .map(|(k, roles)| (map(&k), roles.into_iter().map(|(r, v)| (format!("{r}{}", HOSTILE[0]), v)).collect()))
        .collect();
    d.ctx_switches_per_op = std::mem::take(&mut d.ctx_switches_per_op).into_iter().map(|(k, v)| (map(&k), v)).collect();
    if let Some(derived) = &mut d.derived {
        derived.lanes = derived.lanes.iter().map(|(role, lane)| (role.clone(), map(lane))).collect();
    }
    d.insitu_lane = d.insitu_lane.as_ref().map(map);
    for (i, slice) in d.slices.iter_mut().enumerate() {
        slice.name = format!("{}→{}", HOSTILE[i % HOSTILE.len()], HOSTILE[(i + 1) % HOSTILE.len()]);
    }
    d.warnings = HOSTILE
        .iter()
        .map(|h| Recorded::Typed(Warning::Noisy { lane: (*h).to_owned(), spread: 0.5, limit: 0.05 }))
        .collect();
    for key in ["command", "commit", "shape"] {
        d.run.meta.insert(key.to_owned(), HOSTILE.join(" "));
    }
    d
}

#[test]
fn hostile_strings_in_every_field_stay_text_in_the_page_and_its_charts() {
    let html = hopscope_reports::page(&hostile(), ChartOptions::default()).expect("renders");
    let lower = html.to_ascii_lowercase();
    for tag in ["<img", "<script", "<iframe"] {
        assert!(!lower.contains(tag), "{tag} reached the page as markup");
    }
    // A template tag in the data is not evaluated: it is there, literally.
    assert!(html.contains("{{ title }} {% if true %}"), "a template tag in the data was evaluated");
    // Each string is there, as text: escaped for HTML.
    for text in ["Vec&#60;u8&#62;", "&#60;img src=x onerror=alert(1)&#62;"] {
        assert!(html.contains(text), "`{text}` is not in the page as text");
    }
    let svg_text = ["Vec&lt;u8&gt;", "Vec&#60;u8&#62;"];
    assert!(svg_text.iter().any(|t| html.contains(t)));
    // The page's own markup is not escaped with it (the header is HTML).
    assert!(html.contains("<header>\n<h1>") && !html.contains("&lt;h1&gt;"), "the header was escaped twice");
}

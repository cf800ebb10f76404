//! `report.html` in a real browser: headless Chromium loads the page
//! rendered by `hopscope report`, takes a screenshot, and its DOM must hold
//! every chart and table. Run where `HOPSCOPE_BROWSER` names a Chromium
//! (`/usr/bin/chromium`): three cold browser starts cost 6–19 s here, so the
//! default suite skips them with a message, and `.ci/run` installs Debian's
//! `chromium` and runs them as a stage of their own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::temp_dir;

const CHARTS: [&str; 7] = ["waterfall", "differences", "lanes", "distributions", "cpu-vs-wall", "stability", "peers"];
/// A browser that has not answered by then is hung, not slow.
const BROWSER_DEADLINE: Duration = Duration::from_secs(90);

/// The browser `HOPSCOPE_BROWSER` names; `None` when it names none. A
/// named browser that is not there fails the test: a run that asked for
/// the browser check must not pass without it.
fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("HOPSCOPE_BROWSER")?);
    assert!(path.is_file(), "HOPSCOPE_BROWSER={}: no such browser", path.display());
    Some(path)
}

/// Why a browser test did not run.
const SKIPPED: &str = "skipping: set HOPSCOPE_BROWSER=/usr/bin/chromium to load the report in a real browser \
                       (.ci/run installs Chromium and does)";

/// Run Chromium headless on `page` with `extra` flags; returns stdout.
fn headless(browser: &Path, page: &Path, extra: &[String]) -> String {
    // Its own profile per call: tests run in parallel, and two browsers on
    // one profile refuse each other.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = temp_dir(&format!("profile-{call}"));
    // Stdout goes to a file: a pipe nobody reads while we poll would fill
    // with the dumped DOM and block the browser.
    let stdout_path = profile.join("stdout.txt");
    let stdout = std::fs::File::create(&stdout_path).expect("stdout file");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("chromium status").is_some() {
            break;
        }
        if start.elapsed() > BROWSER_DEADLINE {
            let _ = child.kill();
            panic!("chromium did not finish within {BROWSER_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(&stdout_path).expect("chromium stdout")
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("{SKIPPED}");
        return;
    };
    let dir = temp_dir("report");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/tests/fixtures/result.json"),
        dir.join("result.json"),
    )
    .expect("fixture copied");
    let out = common::hopscope(&["report", dir.to_str().expect("a UTF-8 path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = dir.join("report.html");

    let screenshot = dir.join("screenshot.png");
    headless(
        &browser,
        &page,
        &[format!("--screenshot={}", screenshot.display()), "--window-size=1280,2400".to_owned()],
    );
    let png = std::fs::read(&screenshot).expect("screenshot written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 50_000, "screenshot is suspiciously small: {} bytes", png.len());

    let dom = headless(&browser, &page, &["--dump-dom".to_owned()]);
    assert!(dom.contains("<html"), "no DOM came back");
    for chart in CHARTS {
        assert!(dom.contains(&format!("id=\"{chart}\"")), "chart {chart} missing from the DOM");
    }
    assert_eq!(dom.matches("<svg").count(), CHARTS.len(), "every chart is an inline SVG");
    assert!(dom.matches("<table").count() >= 5, "receipt tables missing");
    assert!(!dom.contains("<img"), "no image elements, so none can be broken");
    eprintln!("screenshot: {}", screenshot.display());
}

#[test]
fn report_refuses_a_missing_or_malformed_result() {
    let hopscope = |dir: &Path| common::hopscope(&["report", dir.to_str().expect("a UTF-8 path")]);
    let empty = temp_dir("empty");
    let out = hopscope(&empty);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("result.json") && stderr.trim_end().lines().count() == 1, "{stderr}");

    let malformed = temp_dir("malformed");
    std::fs::write(malformed.join("result.json"), "{ \"schema\": \"hopscope.decomposition/1\", \"lanes\": 7 }")
        .expect("write");
    let out = hopscope(&malformed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("result.json") && stderr.trim_end().lines().count() == 1, "{stderr}");

    std::fs::write(malformed.join("result.json"), "{ \"schema\": \"hopscope.decomposition/9\" }").expect("write");
    let out = hopscope(&malformed);
    assert!(String::from_utf8_lossy(&out.stderr).contains("decomposition/9"));
}

#[test]
fn an_exported_timeline_loads_in_a_static_page_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("{SKIPPED}");
        return;
    };
    let dir = temp_dir("timeline");
    let out = dir.to_str().expect("utf-8 path").to_owned();
    let args = ["traced-writer", "--out", &out, "--ops", "20", "--samples", "1", "--passes", "2", "--warmup", "1"];
    let harness = hopscope_harness::Harness::try_from_args("traced-writer", args).expect("flags").quiet();
    let trace = traced_writer::decompose::lanes(harness).run().expect("the example runs").trace;
    let out = common::hopscope(&["export", "--format", "chrome", trace.to_str().expect("a UTF-8 path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = String::from_utf8(out.stdout).expect("utf-8 JSON");
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let count = |ph: &str| parsed["traceEvents"].as_array().expect("events").iter().filter(|e| e["ph"] == ph).count();
    let flows = |key: &str| parsed["traceEvents"].as_array().expect("events").iter().filter(|e| e[key] == true).count();
    let expected = format!("loaded X={} out={} in={} bad=0", count("X"), flows("flow_out"), flows("flow_in"));

    // The page parses the timeline as a viewer would (JSON.parse of the
    // exported text) and checks every slice has a thread, a start and a
    // non-negative duration; the verdict lands in the DOM.
    let page = dir.join("timeline.html");
    let embedded = json.replace("</", "<\\/");
    std::fs::write(
        &page,
        format!(
            r#"<!doctype html><html><body><div id="verdict">not run</div>
<script type="application/json" id="trace">{embedded}</script>
<script>
const trace = JSON.parse(document.getElementById("trace").textContent);
const events = trace.traceEvents;
const by = ph => events.filter(e => e.ph === ph).length;
const flows = key => events.filter(e => e[key] === true).length;
const bad = events.filter(e => e.tid === undefined || (e.ph === "X" && !(Number.isFinite(e.ts) && e.dur >= 0 && e.pid !== undefined))).length;
document.getElementById("verdict").textContent = `loaded X=${{by("X")}} out=${{flows("flow_out")}} in=${{flows("flow_in")}} bad=${{bad}}`;
</script></body></html>"#
        ),
    )
    .expect("page written");
    let dom = headless(&browser, &page, &["--dump-dom".to_owned()]);
    assert!(
        dom.contains(&expected),
        "expected `{expected}` in the page, got: {}",
        dom.chars().take(400).collect::<String>()
    );
    // Two arrows per probed insert, both ends on slices.
    assert!(flows("flow_out") >= 40 * 2 && flows("flow_in") >= 40 * 2 && count("X") >= 40 * 5, "{expected}");
}

/// Markup that must stay text: each tries to become an element.
const HOSTILE: [&str; 3] =
    ["<img src=x onerror=alert(1)>", "\"><script>alert(2)</script>", "</table><iframe src=javascript:alert(3)>"];

/// The fixture's result.json with a hostile string in every field a trace
/// or result controls: lane names, thread roles, slice names, warnings,
/// the command line, the commit, the shape.
fn hostile_result() -> serde_json::Value {
    use serde_json::{Map, Value};
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/tests/fixtures/result.json"))
            .expect("fixture");
    let mut d: Value = serde_json::from_str(&text).expect("json");
    let lanes: Vec<String> = d["lanes"].as_object().expect("lanes").keys().cloned().collect();
    let name = |lane: &str| {
        let i = lanes.iter().position(|l| l == lane).unwrap_or(0);
        format!("{} {lane}", HOSTILE[i % HOSTILE.len()])
    };
    for key in ["lanes", "cpu_us_per_op", "ctx_switches_per_op"] {
        let renamed: Map<String, Value> =
            d[key].as_object().cloned().unwrap_or_default().into_iter().map(|(k, v)| (name(&k), v)).collect();
        d[key] = Value::Object(renamed);
    }
    if let Some(roles) = d["derived"]["lanes"].as_object_mut() {
        for lane in roles.values_mut() {
            *lane = Value::String(name(lane.as_str().unwrap_or("")));
        }
    }
    d["insitu_lane"] = Value::String(name(d["insitu_lane"].as_str().unwrap_or("")));
    // The peers' tables and chart name lanes and slices.
    for peer in d["peer_slices"].as_array_mut().expect("the fixture has probed peers") {
        peer["lane"] = Value::String(name(peer["lane"].as_str().unwrap_or("")));
        if let Some(hop) = peer.get_mut("hop").and_then(Value::as_object_mut) {
            hop["baseline"] = Value::String(name(hop["baseline"].as_str().unwrap_or("")));
            for clean in hop["clean"].as_array_mut().into_iter().flatten() {
                *clean = Value::String(name(clean.as_str().unwrap_or("")));
            }
        }
        let paired = peer.get_mut("versus_reference").and_then(Value::as_array_mut);
        for (i, slice) in paired.into_iter().flatten().enumerate() {
            slice["name"] = Value::String(format!("{}→{}", HOSTILE[(i + 1) % 3], HOSTILE[(i + 2) % 3]));
        }
    }
    for (i, slice) in d["slices"].as_array_mut().expect("slices").iter_mut().enumerate() {
        slice["name"] = Value::String(format!("{}→{}", HOSTILE[i % 3], HOSTILE[(i + 1) % 3]));
    }
    // The cold-start section names lanes too.
    let difference = serde_json::json!({"median": 1.5, "ci95": [1.0, 2.0], "rounds": 40});
    let cold_lane = |lane: &str| serde_json::json!({"lane": name(lane), "first_us": 35.0, "median_us": 17.0, "excess_us": difference});
    d["cold_start"] = serde_json::json!({
        "lanes": [cold_lane("floor-probed"), cold_lane("writer-probed")],
        "compared": [name("writer-probed"), name("floor-probed")],
        "library_first_op_us": difference,
        "ops_per_block": 20.0,
        "library_steady_us": difference,
    });
    // The hook's cost names the statement it timed.
    d["statement_hook"]["sql"] = Value::String(HOSTILE.join(" "));
    d["warnings"] = HOSTILE.iter().map(|h| Value::String(format!("lane {h} was noisy"))).collect();
    for key in ["command", "commit", "shape"] {
        d["run"]["meta"][key] = Value::String(HOSTILE.join(" "));
    }
    d
}

#[test]
fn hostile_strings_stay_text_in_the_report_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("{SKIPPED}");
        return;
    };
    let dir = temp_dir("hostile");
    let json = serde_json::to_string_pretty(&hostile_result()).expect("json");
    std::fs::write(dir.join("result.json"), json).expect("write");
    let out = common::hopscope(&["report", dir.to_str().expect("a UTF-8 path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = dir.join("report.html");
    let dom = headless(&browser, &page, &["--dump-dom".to_owned()]);
    assert!(dom.contains("<html"), "no DOM came back");
    assert!(dom.contains("Cold start") && dom.contains("The library once warm"), "the cold-start section rendered");
    // The browser built no element from the data...
    for tag in ["<img", "<script", "<iframe"] {
        assert!(!dom.contains(tag), "{tag} became an element");
    }
    // ...and every string is there as text.
    for hostile in HOSTILE {
        let as_text = hostile.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        assert!(dom.contains(&as_text), "`{hostile}` is not in the page as text");
    }
    let screenshot = dir.join("hostile.png");
    headless(
        &browser,
        &page,
        &[format!("--screenshot={}", screenshot.display()), "--window-size=1280,1600".to_owned()],
    );
    assert!(std::fs::read(&screenshot).expect("screenshot").starts_with(b"\x89PNG"));
    eprintln!("screenshot: {}", screenshot.display());
}

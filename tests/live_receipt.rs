//! A live capture's receipt, as a user reads it: `Capture::live` around a
//! program that times its own operations, then `hopscope analyze`. The
//! receipt says what a capture is and none of what only lanes give (lane
//! arithmetic, a clean build, cold starts, lanes taking turns), and the
//! latency quantiles it states are the program's own. Two captures of a
//! program before and after a change compare by what one operation waited,
//! with the slices that moved.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use hopscope_probe::{Capture, Hop, OpId, local};

const OPS: usize = 3_000;

/// One live capture at a time in a process: the tests take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A writer that spins a known time per operation (`spin_us`, one in ten
/// five times that), and a caller that times each operation around its
/// first and last marks. Returns the caller's own latencies, µs.
fn program(spin_us: u64) -> Vec<f64> {
    let spin = move |i: usize, _| {
        let spin = Duration::from_micros(if i % 10 == 9 { 5 * spin_us } else { spin_us });
        let start = Instant::now();
        while start.elapsed() < spin {
            std::hint::spin_loop();
        }
    };
    program_until(spin, |i, _| i < OPS)
}

/// [`program`] with the writer's work (`work(operation's number, time
/// since the program started)`) given, going on while `more(operations
/// done, that time)`.
fn program_until(
    work: impl Fn(usize, Duration) + Send + 'static,
    more: impl Fn(usize, Duration) -> bool + Send + 'static,
) -> Vec<f64> {
    let started = Instant::now();
    let (tx, rx) = crossbeam_channel::bounded::<(OpId, usize)>(1);
    let (reply_tx, reply_rx) = crossbeam_channel::bounded::<()>(1);
    let writer = std::thread::Builder::new()
        .name("writer".to_owned())
        .spawn(move || {
            for (op, i) in rx {
                local::record(op, Hop::WOKE);
                work(i, started.elapsed());
                local::record(op, Hop::EXECUTED);
                reply_tx.send(()).expect("the caller waits");
            }
        })
        .expect("spawn the writer");
    let own = std::thread::Builder::new()
        .name("caller".to_owned())
        .spawn(move || {
            (0..)
                .take_while(|&i| more(i, started.elapsed()))
                .map(|i| {
                    let op = local::next_op();
                    let start = Instant::now();
                    local::record(op, Hop::ENTER);
                    tx.send((op, i)).expect("the writer runs");
                    reply_rx.recv().expect("the writer replies");
                    local::record(op, Hop::DONE);
                    start.elapsed().as_secs_f64() * 1e6
                })
                .collect::<Vec<f64>>()
        })
        .expect("spawn the caller")
        .join()
        .expect("the caller");
    writer.join().expect("the writer");
    own
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn a_captures_receipt_says_what_a_capture_is_and_its_quantiles_are_the_programs_own() {
    let _turn = turn();
    let dir = std::env::temp_dir().join(format!("hopscope-live-receipt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path: PathBuf = dir.join("program.hop");
    let capture = Capture::live(&path).callers(1).settle(Duration::from_millis(20)).start().expect("start");
    let mut own = program(8);
    let summary = capture.finish().expect("finish");
    assert_eq!((summary.operations, summary.dropped), (OPS as u64, 0), "{summary}");

    let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .arg("analyze")
        .arg(&path)
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("analyze runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let terminal = String::from_utf8_lossy(&out.stdout).into_owned();
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt.md");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).expect("result.json")).expect("json");
    let _ = std::fs::remove_dir_all(&dir);

    // The quantiles the receipt states are the program's own timing: the
    // caller's clock around its first and last marks, within the sketch's
    // accuracy and a mark's cost, and within a few operations' rank (a
    // tail is sparse: in 3,000 operations the p99 is the 30th slowest, and
    // the 29th can be 10 % away).
    own.sort_by(f64::total_cmp);
    let lane = &result["lanes"]["capture"];
    let stated = lane["op_latency_quantiles_us"].as_array().expect("quantiles");
    for q in [50u8, 90, 99] {
        let theirs = stated[usize::from(q)].as_f64().expect("a figure");
        let q = f64::from(q) / 100.0;
        let (low, high) = (quantile(&own, q - 0.002), quantile(&own, q + 0.002));
        assert!(
            theirs >= low * 0.97 - 1.0 && theirs <= high * 1.03 + 1.0,
            "p{q}: receipt {theirs:.2} µs, the program's own {low:.2}–{high:.2}"
        );
    }
    let p999 = lane["op_latency_p999_us"].as_f64().expect("p99.9");
    assert!(p999 >= stated[99].as_f64().expect("p99") * 0.99, "p99.9 {p999} below p99");
    assert_eq!(result["drops"]["incomplete_ops"]["capture"], 0, "every operation joined");

    // What a capture is, said; what only lanes give, not.
    for said in ["## The capture", "| p50 | p90 | p99 | p99.9 |", "Every operation was kept", "No mark was dropped"] {
        assert!(receipt.contains(said), "the receipt should say {said:?}:\n{receipt}");
    }
    for lane_only in [
        "lane arithmetic",
        "baseline",
        "probed build",
        "clean build",
        "Cold start",
        "take turns",
        "No lane declared a thread",
        "the kernel keeps none",
        "the subject",
        "max CV per pass",
        "between marks",
        "--counters",
    ] {
        assert!(!receipt.contains(lane_only), "a capture's receipt says {lane_only:?}:\n{receipt}");
        assert!(!terminal.contains(lane_only), "a capture's terminal says {lane_only:?}:\n{terminal}");
    }
    assert!(receipt.contains("One operation took"), "the headline gives the latency:\n{receipt}");
    assert!(terminal.contains("latency µs") && terminal.contains("p99.9"), "{terminal}");
}

/// A capture of [`program`] with `spin_us` into `path`.
fn captured(path: &std::path::Path, spin_us: u64) {
    let capture = Capture::live(path).callers(1).settle(Duration::from_millis(20)).start().expect("start");
    program(spin_us);
    capture.finish().expect("finish");
}

#[test]
fn two_captures_compare_by_what_one_operation_waited_with_the_slices_that_moved() {
    let _turn = turn();
    let dir = std::env::temp_dir().join(format!("hopscope-live-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (before, after) = (dir.join("before.hop"), dir.join("after.hop"));
    // The writer's own work from 200 µs to 70 (one in ten five times
    // that), with the hand-offs around it: about −55 % of the operation.
    captured(&before, 200);
    captured(&after, 70);
    let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .args(["compare", "--fail-on", "any"])
        .arg(&before)
        .arg(&after)
        .output()
        .expect("compare runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(4),
        "an improvement exits 4 with --fail-on any:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let headline = text.lines().next().unwrap_or_default();
    assert!(
        headline.starts_with("# hopscope change: improvement: `capture` median latency per operation -"),
        "{headline}"
    );
    let share: f64 = headline
        .rsplit_once('(')
        .and_then(|(_, s)| s.trim_end_matches("%)").parse().ok())
        .unwrap_or_else(|| panic!("a share in {headline}"));
    assert!((-70.0..-40.0).contains(&share), "about −55 %: {share}");
    assert!(text.contains("Judged on `capture`'s median latency per operation"), "{text}");
    assert!(
        text.contains("| woke→executed | slice |") && text.contains("Slice woke→executed faster"),
        "the slice that moved: {text}"
    );
    assert!(!text.contains("wall time per operation"), "{text}");
}

/// One capture of a program whose writer's work (a sleep: the test holds
/// on a busy host) drops from 1 ms to 100 µs halfway: its windows show it,
/// and two runs of windows compare as two captures do.
#[test]
fn a_captures_windows_show_a_change_inside_it_and_compare_with_each_other() {
    let _turn = turn();
    let dir = std::env::temp_dir().join(format!("hopscope-live-windows-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("deploy.hop");
    let capture = Capture::live(&path)
        .callers(1)
        .window(Duration::from_millis(200))
        .settle(Duration::from_millis(20))
        .start()
        .expect("start");
    let deploy = Duration::from_millis(400);
    let work = move |_, t| std::thread::sleep(Duration::from_micros(if t < deploy { 1_000 } else { 100 }));
    program_until(work, move |_, t| t < 2 * deploy);
    let summary = capture.finish().expect("finish");
    assert_eq!(summary.dropped, 0, "{summary}");
    let hopscope = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hopscope"))
            .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
            .args(args)
            .output()
            .expect("hopscope runs")
    };
    let trace = path.display().to_string();
    let out = hopscope(&["analyze", &trace, "--out", &dir.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let terminal = String::from_utf8_lossy(&out.stdout).into_owned();
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt.md");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).expect("result.json")).expect("json");
    let compared = hopscope(&["compare", "--fail-on", "any", &format!("{trace}@1-2"), &format!("{trace}@3-4")]);
    let beyond = hopscope(&["compare", &format!("{trace}@1"), &format!("{trace}@9")]);
    // The whole capture ran two ways: no figure over all its blocks stands
    // for it, and no verdict is drawn from it.
    let whole = hopscope(&["compare", "--fail-on", "any", &trace, &format!("{trace}@3-4")]);
    let _ = std::fs::remove_dir_all(&dir);

    let windows = result["capture"]["windows"].as_array().expect("windows in result.json");
    assert!(windows.len() >= 4, "{windows:?}");
    let p50 = |w: usize| windows[w]["latency_us"][0].as_f64().expect("a p50");
    assert!(p50(0) > 2.0 * p50(3), "window 1 {} µs against window 4 {} µs\n{receipt}", p50(0), p50(3));
    assert_eq!(windows[0]["window"], 1, "numbered from 1");
    let ops: u64 = windows.iter().map(|w| w["operations"].as_u64().expect("operations")).sum();
    assert_eq!(ops, summary.operations, "every operation in one window");
    assert!(receipt.contains("### Window by window") && receipt.contains("| 4 | 0.6–0.8 |"), "{receipt}");
    assert!(terminal.contains("highest p99"), "{terminal}");
    // What the program and the host did with the CPUs, window by window.
    if cfg!(target_os = "linux") {
        let cpus = windows[0]["process_cpus"].as_f64().expect("the program's CPUs read");
        assert!(cpus > 0.0 && cpus < 64.0, "{cpus}");
        assert!(windows[0]["host_busy_cpus"].as_f64().is_some_and(|h| h >= 0.0), "{windows:?}");
        assert!(receipt.contains("| program CPUs | host busy CPUs |"), "{receipt}");
        assert!(receipt.contains("the program kept "), "{receipt}");
    }

    let text = String::from_utf8_lossy(&compared.stdout);
    assert_eq!(compared.status.code(), Some(4), "an improvement: {text}{}", String::from_utf8_lossy(&compared.stderr));
    assert!(text.starts_with("# hopscope change: improvement: `capture` median latency per operation -"), "{text}");
    assert!(text.contains(&format!("- A: `{trace}@1-2`")), "{text}");
    assert!(text.contains("Slice woke→executed faster"), "{text}");
    let text = String::from_utf8_lossy(&whole.stdout);
    assert_eq!(whole.status.code(), Some(5), "no verdict: {text}");
    assert!(text.contains("changed inside itself"), "{text}");
    let refused = String::from_utf8_lossy(&beyond.stderr);
    assert_eq!(beyond.status.code(), Some(1), "{refused}");
    assert!(refused.contains("no block in window 9 of the capture: it has "), "{refused}");
}

/// A capture saved as a baseline (`analyze --save-baseline`) gates a later
/// one (`analyze --baseline --fail-on`), its slices judged from the samples
/// its directory kept (the trace stays where it was); `compare` reads the
/// baseline by its name.
#[test]
fn a_capture_saved_as_a_baseline_gates_a_later_one() {
    let _turn = turn();
    let dir = std::env::temp_dir().join(format!("hopscope-live-baseline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (before, after) = (dir.join("before.hop"), dir.join("after.hop"));
    captured(&before, 200);
    captured(&after, 70);
    let runs = dir.join("runs");
    let hopscope = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_hopscope"))
            .env(hopscope_harness::rundir::RUNS_ENV, &runs)
            .args(args)
            .output()
            .expect("hopscope runs")
    };
    let saved = hopscope(&["analyze".as_ref(), before.as_os_str(), "--save-baseline".as_ref(), "before".as_ref()]);
    let judged = hopscope(&[
        "analyze".as_ref(),
        after.as_os_str(),
        "--baseline".as_ref(),
        "before".as_ref(),
        "--fail-on".as_ref(),
        "any".as_ref(),
    ]);
    // The trace the baseline was analysed from is gone: its samples stand.
    std::fs::remove_file(&before).expect("remove the first trace");
    let compared = hopscope(&["compare".as_ref(), "before".as_ref(), after.as_os_str()]);
    let _ = std::fs::remove_dir_all(&dir);

    let said = String::from_utf8_lossy(&saved.stdout);
    assert!(saved.status.success(), "{said}{}", String::from_utf8_lossy(&saved.stderr));
    assert!(said.contains("baseline: before = run #1"), "{said}");
    let text = String::from_utf8_lossy(&judged.stdout);
    assert_eq!(judged.status.code(), Some(4), "an improvement gated with --fail-on any:\n{text}");
    assert!(text.contains("change:  improvement against before (`capture` median latency per operation -"), "{text}");
    assert!(text.contains("Slice woke→executed faster"), "the slices, from the baseline's samples: {text}");
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(text.starts_with("# hopscope change: improvement: `capture` median latency per operation -"), "{text}");
    assert!(text.contains("| woke→executed | slice |"), "{text}");
}

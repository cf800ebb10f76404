//! A fuzz target that stays: mutated traces through the reader (strict and
//! salvaging), the join, every analysis and the timeline exporter, with no
//! panic, no hang and bounded memory allowed.
//!
//! Inputs start from a seed corpus of real traces (`tests/corpus/`: a
//! decomposition, a concurrent shape with counters, an A/B run, a merge with
//! its own hops, a harness program's tracing lanes, a trace written before
//! lane roles) and are mutated *structurally*: records are re-framed with a
//! correct CRC after their payload is changed, so inputs get past the
//! checksum into the decoder and the analyzer. Every file in
//! `tests/fuzz-regressions/` (crashes found before, crafted overflows) runs
//! first.
//!
//! `cargo test` runs 1,000 inputs of one fixed sequence in the test profile
//! (overflow checks on, the analyzer unoptimized: ~4 s here, the regressions
//! included). CI runs 20,000 more as a stage of its own (~65 s), seeded by
//! the commit, so each commit explores inputs no run before it did and any
//! failure is reproduced from the seed in its file name. On demand, with
//! overflow checks in an optimized build (~1,900 inputs a second here):
//!
//! ```sh
//! FUZZ_INPUTS=10000000 cargo test -p hopscope-analyze --profile fuzz --test fuzz -- --nocapture
//! ```
//!
//! (`FUZZ_SEED` picks another sequence.) An input that panics is written to
//! `target/fuzz-failures/`, its panic message is printed (`FUZZ_BACKTRACE=1`
//! adds the backtrace) and the run fails: copy it into
//! `tests/fuzz-regressions/` once fixed. The full analyses (bootstrap CIs
//! are their cost) run on one input in `ANALYZE_EVERY` (`FUZZ_ANALYZE_EVERY`
//! to change); the reader, join and export on all.

#[path = "common/rng.rs"]
mod rng;

use rng::Rng;
use std::io::Cursor;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hopscope_analyze::{ab, decompose_file, decompose_partial, experiment, join, lanes, merge, resolution, sweep};
use hopscope_probe::{Trace, TraceReader};
use hopscope_reports::receipt;
use hopscope_testkit::{Counting, peak_bytes, restart_peak};

/// Counts live heap bytes and their peak, to state each input's memory.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Run the full analyses on one input in this many by default
/// (`FUZZ_ANALYZE_EVERY` to change): in a debug build they take ~0.1 s
/// each, the reader, join and export microseconds.
const ANALYZE_EVERY: u64 = 512;
/// An input still running after this is a hang.
const HANG: Duration = Duration::from_secs(60);

/// A trace as its records: preamble, then (tag, payload) pairs.
struct Records {
    preamble: Vec<u8>,
    records: Vec<(u8, Vec<u8>)>,
}

impl Records {
    fn parse(bytes: &[u8]) -> Records {
        let mut records = Vec::new();
        let mut pos = 12.min(bytes.len());
        while pos + 5 <= bytes.len() {
            let len = u32::from_le_bytes([bytes[pos + 1], bytes[pos + 2], bytes[pos + 3], bytes[pos + 4]]) as usize;
            let end = (pos + 5).saturating_add(len);
            if end + 4 > bytes.len() {
                break;
            }
            records.push((bytes[pos], bytes[pos + 5..end].to_vec()));
            pos = end + 4;
        }
        Records { preamble: bytes[..12.min(bytes.len())].to_vec(), records }
    }

    /// Framed again, every CRC correct for what the record now holds (a
    /// version-3 header's covers the version too).
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.preamble.clone();
        let version = self.preamble.get(8..10).map_or(0, |v| u16::from_le_bytes([v[0], v[1]]));
        for (tag, payload) in &self.records {
            let mut hasher = crc32fast::Hasher::new();
            if *tag == b'H' && version >= 3 {
                hasher.update(&version.to_le_bytes());
            }
            hasher.update(&[*tag]);
            hasher.update(&(payload.len() as u32).to_le_bytes());
            hasher.update(payload);
            out.push(*tag);
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(payload);
            out.extend_from_slice(&hasher.finalize().to_le_bytes());
        }
        out
    }
}

/// Values that break arithmetic and bounds.
const INTERESTING: [u64; 10] = [0, 1, 2, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, 1 << 63, u64::MAX - 1, u64::MAX];

/// One mutation of `seed`.
fn mutate(seed: &[u8], corpus: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut t = Records::parse(seed);
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let n = t.records.len();
        match rng.below(12) {
            // A field of a record set to an interesting value, at any offset.
            0..=2 if n > 0 => {
                let (_, payload) = &mut t.records[rng.below(n)];
                let width = [2, 4, 8][rng.below(3)];
                if payload.len() >= width {
                    let at = rng.below(payload.len() - width + 1);
                    let value = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                    payload[at..at + width].copy_from_slice(&value[..width]);
                }
            }
            // Bits flipped inside a payload.
            3 | 4 if n > 0 => {
                let (_, payload) = &mut t.records[rng.below(n)];
                if !payload.is_empty() {
                    for _ in 0..1 + rng.below(4) {
                        let at = rng.below(payload.len());
                        payload[at] ^= 1 << rng.below(8);
                    }
                }
            }
            // A payload cut or grown.
            5 if n > 0 => {
                let (_, payload) = &mut t.records[rng.below(n)];
                if rng.below(2) == 0 {
                    let keep = rng.below(payload.len() + 1);
                    payload.truncate(keep);
                } else {
                    for _ in 0..1 + rng.below(32) {
                        payload.push(rng.next() as u8);
                    }
                }
            }
            // Records duplicated, dropped, swapped, or taken from another trace.
            6 if n > 0 => {
                let r = t.records[rng.below(n)].clone();
                t.records.insert(rng.below(n + 1), r);
            }
            7 if n > 1 => {
                t.records.remove(rng.below(n));
            }
            8 if n > 1 => {
                t.records.swap(rng.below(n), rng.below(n));
            }
            9 => {
                let other = Records::parse(&corpus[rng.below(corpus.len())]);
                if let Some(r) = other.records.get(rng.below(other.records.len().max(1))) {
                    t.records.insert(rng.below(n + 1), r.clone());
                }
            }
            // The header's JSON changed as data.
            10 => mutate_header(&mut t, rng),
            // The file itself cut anywhere (CRCs of what is left stay right).
            _ => {
                let mut bytes = t.bytes();
                let keep = rng.below(bytes.len() + 1);
                bytes.truncate(keep);
                return bytes;
            }
        }
    }
    t.bytes()
}

/// Change one value of the header's JSON: numbers to extremes, strings to
/// markup or nothing, lists emptied or doubled.
fn mutate_header(t: &mut Records, rng: &mut Rng) {
    let Some((_, payload)) = t.records.iter_mut().find(|(tag, _)| *tag == b'H') else { return };
    let Ok(mut header) = serde_json::from_slice::<serde_json::Value>(payload) else { return };
    let mut leaves = Vec::new();
    collect_paths(&header, String::new(), &mut leaves);
    if leaves.is_empty() {
        return;
    }
    let path = &leaves[rng.below(leaves.len())];
    if let Some(value) = header.pointer_mut(path) {
        let replacement = match rng.below(9) {
            0 => serde_json::json!(0),
            1 => serde_json::json!(-1),
            2 => serde_json::json!(u64::MAX),
            3 => serde_json::json!(1e300),
            4 => serde_json::json!(""),
            5 => serde_json::json!("<img src=x onerror=alert(1)>"),
            6 => serde_json::json!([]),
            7 => serde_json::Value::Null,
            _ => match &*value {
                serde_json::Value::Array(items) => {
                    let mut doubled = items.clone();
                    doubled.extend(items.iter().cloned());
                    serde_json::Value::Array(doubled)
                }
                other => other.clone(),
            },
        };
        *value = replacement;
    }
    if let Ok(bytes) = serde_json::to_vec(&header) {
        *payload = bytes;
    }
}

fn collect_paths(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                collect_paths(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_paths(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Everything a trace meets after `hopscope` reads it. Returns whether the
/// input was accepted (strictly or salvaged with blocks).
fn target(bytes: &[u8], analyze: bool) -> bool {
    let strict = Trace::from_bytes(bytes);
    // Salvaging, as `analyze` and `export` read files (the same blocks as
    // the strict reading when that succeeds).
    let mut salvaged = None;
    if strict.is_err()
        && let Ok(mut reader) = TraceReader::new(Cursor::new(bytes), Some(bytes.len() as u64))
    {
        let mut blocks = Vec::new();
        while let Ok(Some(block)) = reader.next_salvaged() {
            blocks.push(block);
        }
        salvaged = Some(Trace { header: reader.header().clone(), blocks });
    }
    let trace = match (strict, salvaged) {
        (Ok(trace), _) => trace,
        (Err(_), Some(trace)) if !trace.blocks.is_empty() => trace,
        _ => return false,
    };
    let _ = join::join(&trace);
    let _ = lanes::lane_blocks(&trace);
    let _ = hopscope_analyze::timeline::chrome_trace(&trace, hopscope_analyze::timeline::Cut::default());
    let _ = hopscope_analyze::timeline::perfetto_trace(&trace, hopscope_analyze::timeline::Cut::default());
    if analyze {
        let held = decompose_partial(&trace, None);
        if let Ok(d) = &held {
            let _ = receipt::markdown(d);
            let _ = serde_json::to_string(d);
            let _ = sweep::rows("fuzz", &trace, d);
        }
        // The streamed file gives the figures of the blocks held in memory.
        let path = std::env::temp_dir().join(format!("hopscope-fuzz-{}.hop", std::process::id()));
        if std::fs::write(&path, bytes).is_ok() {
            let streamed = decompose_file(&path);
            if let (Ok(held), Ok(streamed)) = (&held, &streamed) {
                let figures = |d: &hopscope_analyze::Decomposition| {
                    serde_json::to_string(&(&d.lanes, &d.slices, &d.derived, &d.drops)).unwrap_or_default()
                };
                assert_eq!(figures(held), figures(streamed), "streamed and held figures differ");
            }
            let _ = std::fs::remove_file(&path);
        }
        let e = experiment::judge(&trace, &resolution::detection_rule());
        let _ = receipt::experiment::markdown(&e);
        let _ = ab::pass_blocks(&trace);
        let held = hopscope_analyze::ab_trace::AbTrace::read(&mut { &trace }).expect("in memory");
        let _ = resolution::judge_repeat(&held, "built");
        let m = merge::analyze(&held, 1);
        let _ = receipt::merge::markdown(&m);
    }
    true
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "hop")).collect()
        })
        .unwrap_or_else(|_| Vec::new())
        .into_iter()
        .map(|p: PathBuf| {
            let bytes = std::fs::read(&p).expect("corpus file");
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn mutated_traces_never_panic_hang_or_balloon() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let corpus: Vec<Vec<u8>> = files(&root.join("corpus")).into_iter().map(|(_, b)| b).collect();
    assert!(corpus.len() >= 5, "the seed corpus is missing");
    let inputs: u64 = std::env::var("FUZZ_INPUTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .map(|v| v.parse().unwrap_or_else(|_| panic!("FUZZ_SEED={v}: not a whole number")))
        .unwrap_or(0x5eed);
    let every: u64 =
        std::env::var("FUZZ_ANALYZE_EVERY").ok().and_then(|v| v.parse().ok()).unwrap_or(ANALYZE_EVERY).max(1);
    let failures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");

    // A hung input cannot be interrupted from inside: a watchdog reports it.
    static CURRENT: AtomicU64 = AtomicU64::new(0);
    static STARTED_MS: AtomicU64 = AtomicU64::new(u64::MAX);
    static DONE: AtomicBool = AtomicBool::new(false);
    let epoch = Instant::now();
    std::thread::spawn(move || {
        while !DONE.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(500));
            let started = STARTED_MS.load(Ordering::Relaxed);
            let now = epoch.elapsed().as_millis() as u64;
            if started != u64::MAX && now.saturating_sub(started) > HANG.as_millis() as u64 {
                eprintln!("fuzz: input {} has run for over {HANG:?}: a hang", CURRENT.load(Ordering::Relaxed));
                std::process::abort();
            }
        }
    });
    // Panics are caught and counted; their messages would drown the output,
    // so the hook keeps the last one to report with the failing file.
    static LAST_PANIC: Mutex<String> = Mutex::new(String::new());
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = if std::env::var_os("FUZZ_BACKTRACE").is_some() {
                format!("{info}\n{}", std::backtrace::Backtrace::force_capture())
            } else {
                info.to_string()
            };
        }
    }));

    let mut panics = Vec::new();
    let (mut accepted, mut peak, mut peak_input, mut slowest) = (0u64, 0usize, 0usize, Duration::ZERO);
    let mut check = |label: &str, bytes: &[u8], analyze: bool, index: u64| {
        CURRENT.store(index, Ordering::Relaxed);
        let base = restart_peak();
        let start = Instant::now();
        STARTED_MS.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        let result = panic::catch_unwind(AssertUnwindSafe(|| target(bytes, analyze)));
        STARTED_MS.store(u64::MAX, Ordering::Relaxed);
        slowest = slowest.max(start.elapsed());
        let used = peak_bytes().saturating_sub(base);
        if used > peak {
            (peak, peak_input) = (used, bytes.len());
        }
        match result {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(_) => {
                let _ = std::fs::create_dir_all(&failures);
                let path = failures.join(format!("{label}.hop"));
                let _ = std::fs::write(&path, bytes);
                let message = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                eprintln!("fuzz: {} panicked: {message}", path.display());
                panics.push(path);
            }
        }
    };
    let regressions = files(&root.join("fuzz-regressions"));
    for (path, bytes) in &regressions {
        let label = path.file_stem().map_or("regression".into(), |s| s.to_string_lossy().into_owned());
        check(&label, bytes, true, 0);
    }
    for (i, bytes) in corpus.iter().enumerate() {
        check(&format!("corpus-{i}"), bytes, true, 0);
    }
    let mut rng = Rng(seed);
    let started = Instant::now();
    for i in 0..inputs {
        let input = mutate(&corpus[rng.below(corpus.len())], &corpus, &mut rng);
        let analyze = i % every == 0;
        check(&format!("seed{seed}-input{i}"), &input, analyze, i);
    }
    DONE.store(true, Ordering::Relaxed);
    panic::set_hook(previous);
    eprintln!(
        "fuzz: {inputs} inputs (seed {seed}, full analyses on 1 in {every}) and {} regression files in {:.1} s: \
         {accepted} accepted, {} panics, slowest input {:.1} ms, peak heap of one input {} KiB (input of {} bytes)",
        regressions.len(),
        started.elapsed().as_secs_f64(),
        panics.len(),
        slowest.as_secs_f64() * 1e3,
        peak / 1024,
        peak_input
    );
    assert!(panics.is_empty(), "inputs that panicked, written to: {panics:?}");
}

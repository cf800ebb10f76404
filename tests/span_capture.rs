//! The one-call span capture, as a user runs it: `HopLayer::capture` gives a
//! layer and a guard; a program whose caller and writer threads carry spans
//! (the writer thread spawned by the program, never touched by hopscope)
//! runs; finishing writes a trace that `hopscope analyze` decomposes into
//! the spans' own slices, every operation joined, with the span machinery
//! stated, and the path the spans took named (Registry + HopLayer, or the
//! profiling HopSubscriber). A capture that cannot write its file, or a bad
//! layer, is refused at set-up.

use std::path::{Path, PathBuf};
use std::process::Command;

use hopscope_probe::{HopLayer, SpanPath, Trace, TraceError};
use tracing_subscriber::layer::SubscriberExt;

const OPS: u64 = 2_000;

/// The program: a caller thread and the program's own writer thread,
/// each under `dispatch` as `init()` would make it, `OPS` writes.
fn program(dispatch: &tracing::Dispatch) {
    let (tx, rx) = crossbeam_channel::unbounded::<(u64, crossbeam_channel::Sender<()>)>();
    let writer = {
        let dispatch = dispatch.clone();
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                for (op, reply) in rx {
                    tracing::info_span!("execute", op).in_scope(|| std::hint::black_box(op * 3));
                    let _ = reply.send(());
                }
            });
        })
    };
    tracing::dispatcher::with_default(dispatch, || {
        for op in 0..OPS {
            let _write = tracing::info_span!("write", op).entered();
            let (reply, done) = crossbeam_channel::bounded(1);
            tx.send((op, reply)).expect("send");
            done.recv().expect("reply");
        }
    });
    drop(tx);
    writer.join().expect("writer");
}

/// `hopscope analyze` of the trace at `path`: every operation joined into
/// the spans' three slices, the inside one with machinery stated. Returns
/// the receipt.
fn decomposed(path: &Path) -> String {
    let trace = Trace::read(path).expect("the trace reads back");
    assert!(trace.header.span_machinery.is_some());
    assert_eq!(trace.blocks.iter().map(|b| b.op_count).sum::<u64>(), OPS, "every operation in one block");
    assert_eq!(trace.header.threads.len(), 2, "two marking threads: {:?}", trace.header.threads);
    let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .arg("analyze")
        .arg(path)
        .output()
        .expect("analyze runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = path.parent().expect("a directory");
    let result = std::fs::read(dir.join("result.json")).expect("result.json beside the trace");
    let result: serde_json::Value = serde_json::from_slice(&result).expect("json");
    assert_eq!(result["drops"]["complete_ops"]["capture"], OPS);
    assert_eq!(result["drops"]["incomplete_ops"]["capture"], 0);
    let slices: Vec<&str> =
        result["slices"].as_array().expect("slices").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(slices, ["write.enter→execute.enter", "execute.enter→execute.exit", "execute.exit→write.exit"]);
    let inside = &result["slices"][1];
    assert_eq!(inside["span_kind"], "inside");
    assert!(inside["machinery_us"].as_f64().is_some_and(|m| m > 0.0));
    std::fs::read_to_string(dir.join("receipt.md")).expect("receipt.md beside the trace")
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-span-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

#[test]
fn a_captured_program_is_decomposed_into_its_spans_slices() {
    let dir = fresh_dir("registry");
    let path = dir.join("app.hop");
    let (layer, capture) = HopLayer::new().caller("write").writer("execute").capture(&path).expect("capture");
    program(&tracing::Dispatch::new(tracing_subscriber::registry().with(layer)));
    assert_eq!(capture.finish().expect("finish").path, path);
    let receipt = decomposed(&path);
    assert!(receipt.contains("The spans took the Registry + HopLayer path"), "{receipt}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_profiling_path_is_captured_decomposed_and_named() {
    let dir = fresh_dir("profiling");
    let path = dir.join("app.hop");
    let (subscriber, capture) =
        HopLayer::new().caller("write").writer("execute").capture_profiling(&path).expect("capture");
    program(&tracing::Dispatch::new(subscriber));
    assert_eq!(capture.finish().expect("finish").path, path);
    let machinery = Trace::read(&path).expect("trace").header.span_machinery.expect("measured");
    assert_eq!(machinery.path, SpanPath::Subscriber, "measured through the path the program took");
    let receipt = decomposed(&path);
    assert!(receipt.contains("The spans took the HopSubscriber path"), "{receipt}");
    assert!(receipt.contains("took ") && receipt.contains(" ns through HopSubscriber ("), "{receipt}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_capture_it_cannot_write_or_a_bad_layer_is_refused_at_set_up() {
    let missing = std::env::temp_dir().join("hopscope-no-such-dir").join("deeper").join("app.hop");
    assert!(matches!(HopLayer::new().caller("write").capture(&missing), Err(TraceError::Io(_))));
    let bad = HopLayer::new().ring_marks(0).capture(std::env::temp_dir().join("hopscope-bad-layer.hop"));
    assert!(matches!(bad, Err(TraceError::Unwritable { reason }) if reason.contains("ring")));
}

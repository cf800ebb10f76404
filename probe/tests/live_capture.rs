//! Live captures of a running program (`Capture::live`): its own hops,
//! every operation whole in one block, sampling that keeps whole
//! operations and whole batches, bursts and short programs that lose
//! nothing or say so, and a trace cut short that still reads.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hopscope_probe::{Capture, Hop, HopTable, LiveFact, OpId, RunFact, RunFacts, Side, Trace, local};

/// One live capture at a time in a process: the tests take turns.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hopscope-live-{name}-{}.hop", std::process::id()))
}

/// Per op, the blocks its marks are in and its hops.
fn operations(trace: &Trace) -> HashMap<u64, (Vec<usize>, Vec<Hop>)> {
    let mut ops: HashMap<u64, (Vec<usize>, Vec<Hop>)> = HashMap::new();
    for (b, block) in trace.blocks.iter().enumerate() {
        for mark in block.streams.iter().flat_map(|s| &s.marks).filter(|m| !m.is_link()) {
            let entry = ops.entry(mark.op.0).or_default();
            if !entry.0.contains(&b) {
                entry.0.push(b);
            }
            entry.1.push(mark.hop);
        }
    }
    ops
}

/// A caller and a writer thread: the caller marks enter, sent, received,
/// done; the writer woke, `apply` (the program's own hop) and replied.
fn run_writer(ops: u64, apply: Hop) {
    let (tx, rx) = mpsc::sync_channel::<OpId>(1);
    let (reply_tx, reply_rx) = mpsc::sync_channel::<()>(1);
    let writer = std::thread::Builder::new()
        .name("writer".to_owned())
        .spawn(move || {
            for op in rx {
                local::record(op, Hop::WOKE);
                local::record(op, apply);
                local::record(op, Hop::REPLIED);
                reply_tx.send(()).expect("caller waits");
            }
        })
        .expect("spawn");
    let caller = std::thread::Builder::new()
        .name("caller".to_owned())
        .spawn(move || {
            for _ in 0..ops {
                let op = local::next_op();
                local::record(op, Hop::ENTER);
                local::record(op, Hop::SENT);
                tx.send(op).expect("writer runs");
                reply_rx.recv().expect("writer replies");
                local::record(op, Hop::RECEIVED);
                local::record(op, Hop::DONE);
            }
        })
        .expect("spawn");
    caller.join().expect("caller");
    writer.join().expect("writer");
}

fn program_hops() -> (HopTable, Hop) {
    let mut hops = HopTable::standard();
    let apply = hops.add("applied", Side::Writer);
    (hops, apply)
}

#[test]
fn a_live_capture_writes_every_operation_whole_with_the_programs_hops() {
    let _turn = turn();
    let path = scratch("whole");
    let (hops, apply) = program_hops();
    let capture = Capture::live(&path)
        .hops(hops)
        .callers(1)
        .window(Duration::from_millis(200))
        .settle(Duration::from_millis(20))
        .start()
        .expect("start");
    run_writer(20_000, apply);
    let summary = capture.finish().expect("finish");
    let trace = Trace::read(&path).expect("the trace reads");
    let _ = std::fs::remove_file(&path);

    assert_eq!((summary.operations, summary.dropped, summary.cut), (20_000, 0, 0), "{summary}");
    assert_eq!(summary.marks, 20_000 * 7);
    assert_eq!(trace.header.threads, ["caller", "writer"], "roles named after the threads, in order of first mark");
    assert_eq!(trace.header.hops.find("applied"), Some(apply), "the program's own hop table");
    assert_eq!(trace.blocks.iter().map(|b| b.op_count).sum::<u64>(), 20_000);
    assert!(trace.blocks.len() >= 40, "{} blocks", trace.blocks.len());
    let ops = operations(&trace);
    assert_eq!(ops.len(), 20_000);
    for (op, (blocks, hops)) in &ops {
        assert_eq!(blocks.len(), 1, "op {op} in blocks {blocks:?}");
        assert_eq!(hops.len(), 7, "op {op}: {hops:?}");
    }
    let run = &trace.header.run;
    assert_eq!(run.fact(&RunFact::Capture), Some("hopscope_probe::Capture::live"));
    assert_eq!(run.fact(&RunFact::Live(LiveFact::Operations)), Some("20000"));
    assert_eq!(run.fact(&RunFact::Live(LiveFact::Dropped)), Some("0"));
    assert_eq!(run.fact(&RunFact::Lane("capture".into(), hopscope_probe::LaneFact::Callers)), Some("1"));
    // Windows are the blocks' passes, in time order.
    let passes: Vec<u32> = trace.blocks.iter().map(|b| b.pass).collect();
    assert!(passes.windows(2).all(|w| w[0] <= w[1]), "{passes:?}");
}

/// A program that spawns a caller and a writer per task, hundreds of
/// times, with room for four roles: a thread that exited hands its role
/// to a later one of its name, so nothing is dropped and the header holds
/// two names. Marks from threads that find every role held are counted
/// under their own line.
#[test]
fn threads_spawned_per_task_take_the_roles_of_those_that_ended() {
    let _turn = turn();
    let path = scratch("per-task");
    let (hops, apply) = program_hops();
    let capture =
        Capture::live(&path).hops(hops).max_threads(4).settle(Duration::from_millis(5)).start().expect("start");
    for _ in 0..300 {
        run_writer(20, apply);
    }
    // Three threads of a new name marking at once, with two roles never
    // taken: one is left out, and said to be.
    let held = std::sync::Arc::new(std::sync::Barrier::new(3));
    let busy: Vec<_> = (0..3)
        .map(|i| {
            let held = held.clone();
            std::thread::Builder::new()
                .name(format!("busy-{i}"))
                .spawn(move || {
                    local::record(local::next_op(), Hop::ENTER);
                    held.wait();
                })
                .expect("spawn")
        })
        .collect();
    busy.into_iter().for_each(|t| t.join().expect("busy"));
    let summary = capture.finish().expect("finish");
    let trace = Trace::read(&path).expect("the trace reads");
    let _ = std::fs::remove_file(&path);

    assert_eq!(summary.operations, 300 * 20 + 2, "{summary}");
    assert_eq!(summary.marks, 300 * 20 * 7 + 2, "{summary}");
    assert_eq!(trace.header.threads[..2], ["caller", "writer"], "{:?}", trace.header.threads);
    assert_eq!(summary.threads, 4, "{summary}");
    assert_eq!(summary.dropped, 1, "{summary}");
    let past = summary.dropped_by_thread.iter().find(|d| d.thread == "(threads past the 4 roles)");
    assert_eq!(past.map(|d| d.dropped), Some(1), "{summary}");
}

#[test]
fn sampling_keeps_whole_operations_and_whole_batches() {
    let _turn = turn();
    let path = scratch("sampled");
    let capture = Capture::live(&path).sample_every(16).settle(Duration::from_millis(20)).start().expect("start");
    let members = 8u64;
    let batches = 4_000u64;
    std::thread::spawn(move || {
        for _ in 0..batches {
            let ops: Vec<OpId> = (0..members).map(|_| local::next_op()).collect();
            let txn = local::next_op();
            for &op in &ops {
                local::record(op, Hop::ENTER);
                local::serves(txn, op);
            }
            local::record(txn, Hop::WOKE);
            local::record(txn, Hop::EXECUTED);
            for &op in &ops {
                local::record(op, Hop::DONE);
            }
        }
    })
    .join()
    .expect("marking thread");
    let summary = capture.finish().expect("finish");
    let trace = Trace::read(&path).expect("the trace reads");
    let _ = std::fs::remove_file(&path);

    let total = members * batches;
    let expected = total as f64 / 16.0;
    let kept = summary.operations as f64;
    assert!((kept - expected).abs() < 5.0 * expected.sqrt(), "{kept} of {total} kept at 1 in 16");
    // Per kept batch, its sampled members and all its members.
    let mut links: HashMap<u64, (Vec<u64>, usize)> = HashMap::new();
    for mark in trace.blocks.iter().flat_map(|b| b.streams.iter().flat_map(|s| &s.marks)).filter(|m| m.is_link()) {
        let batch = links.entry(mark.ticks.0).or_default();
        batch.1 += 1;
        if !mark.is_unsampled_link() {
            batch.0.push(mark.op.0);
        }
    }
    let ops = operations(&trace);
    for (op, (_, hops)) in &ops {
        let whole = if links.contains_key(op) { [Hop::WOKE, Hop::EXECUTED] } else { [Hop::ENTER, Hop::DONE] };
        let mut hops = hops.clone();
        hops.sort();
        assert_eq!(hops, whole, "op {op} kept whole");
    }
    for (txn, (sampled, all)) in &links {
        assert!(ops.contains_key(txn), "a batch that serves a kept operation is kept");
        assert!(!sampled.is_empty(), "a batch of left-out operations only is left out");
        assert!(sampled.iter().all(|m| ops.contains_key(m)), "a sampled member is kept");
        assert_eq!(*all, members as usize, "the batch's size is known: its left-out members are linked too");
    }
    assert_eq!(ops.len() - links.len(), summary.operations as usize, "batches are no operations");
    assert_eq!(trace.header.run.fact(&RunFact::SampleEvery), Some("16"));
}

/// Marks as fast as one thread can for `how_long`, beside a second thread
/// that only burns CPU; returns (marks made, summary).
fn burst(path: &std::path::Path, how_long: Duration, ring: usize) -> (u64, hopscope_probe::CaptureSummary) {
    let options =
        Capture::live(path).ring_marks(ring).ring_cap(1 << 22).held_marks(1 << 22).settle(Duration::from_millis(5));
    burst_with(options, how_long)
}

/// [`burst`] with the capture's options given.
fn burst_with(options: hopscope_probe::LiveOptions, how_long: Duration) -> (u64, hopscope_probe::CaptureSummary) {
    let capture = options.start().expect("start");
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let burner = {
        let busy = busy.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while busy.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        })
    };
    let made = std::thread::spawn(move || {
        let start = Instant::now();
        let mut made = 0u64;
        while start.elapsed() < how_long {
            for _ in 0..256 {
                let op = local::next_op();
                local::record(op, Hop::ENTER);
                local::record(op, Hop::DONE);
                made += 2;
            }
        }
        made
    })
    .join()
    .expect("marker");
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    burner.join().expect("burner");
    (made, capture.finish().expect("finish"))
}

#[test]
fn a_burst_and_a_short_program_keep_every_mark_or_count_it() {
    let _turn = turn();
    for (name, how_long, ring) in
        [("burst-10ms", Duration::from_millis(10), 1 << 12), ("burst-100ms", Duration::from_millis(100), 1 << 12)]
    {
        let path = scratch(name);
        let (made, summary) = burst(&path, how_long, ring);
        let trace = Trace::read(&path).expect("the trace reads");
        let _ = std::fs::remove_file(&path);
        let written: u64 = trace.blocks.iter().flat_map(|b| &b.streams).map(|s| s.marks.len() as u64).sum();
        let dropped: u64 = trace.blocks.iter().map(|b| b.dropped()).sum();
        assert_eq!(written + dropped, made, "{name}: every mark written or counted ({summary})");
        assert_eq!((written, dropped), (summary.marks, summary.dropped));
        assert_eq!(dropped, 0, "{name}: the rings grew within their cap ({summary})");
    }
}

/// Ten seconds of marks as fast as one thread can make them, beside a
/// busy core, with the options a user gets (`cargo test --release -p
/// hopscope-probe --test live_capture -- --ignored`; it writes gigabytes):
/// every mark written or counted dropped, and any drop said in the summary.
#[test]
#[ignore = "ten seconds and gigabytes: run by hand, in release"]
fn a_ten_second_burst_keeps_every_mark_or_says_what_it_dropped() {
    let _turn = turn();
    for every in [1u32, 16] {
        let path = scratch(&format!("burst-10s-{every}"));
        let started = Instant::now();
        let (made, summary) = burst_with(Capture::live(&path).sample_every(every), Duration::from_secs(10));
        let finished = started.elapsed();
        let mut reader = hopscope_probe::TraceReader::open(&path).expect("the trace reads");
        let (mut written, mut dropped) = (0u64, 0u64);
        while let Some(block) = reader.next_block().expect("a block") {
            written += block.streams.iter().map(|s| s.marks.len() as u64).sum::<u64>();
            dropped += block.dropped();
        }
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        let _ = std::fs::remove_file(&path);
        println!(
            "1 in {every}: made {made}, written {written}, dropped {dropped}, {bytes} bytes, {finished:?}; {summary}"
        );
        assert_eq!((written, dropped), (summary.marks, summary.dropped));
        if every == 1 {
            assert_eq!(written + dropped, made, "every mark written or counted ({summary})");
        }
        assert_eq!(summary.dropped > 0, summary.to_string().contains("DROPPED"), "{summary}");
    }
}

#[test]
fn a_second_live_capture_and_bad_options_are_refused_before_anything_runs() {
    let _turn = turn();
    let path = scratch("first");
    let first = Capture::live(&path).start().expect("start");
    let second = Capture::live(scratch("second")).start();
    assert!(second.is_err_and(|e| e.to_string().contains("another live capture")));
    first.finish().expect("finish");
    let _ = std::fs::remove_file(&path);
    for (options, says) in [
        (Capture::live(scratch("bad")).sample_every(0), "sampling one in 0"),
        (Capture::live(scratch("bad")).window(Duration::from_millis(1)), "window"),
        (Capture::live(scratch("bad")).ring_marks(1 << 12).ring_cap(16), "ring cap"),
        (Capture::live(scratch("bad")).max_threads(0), "threads"),
    ] {
        let refused = options.start().expect_err("refused");
        assert!(refused.to_string().contains(says), "{refused}");
    }
    let nowhere = std::env::temp_dir().join("hopscope-no-such-dir").join("x.hop");
    let refused = Capture::live(&nowhere).start().expect_err("no such directory");
    assert!(refused.to_string().contains(&nowhere.display().to_string()), "the path is named: {refused}");
    // A refused capture leaves no capture installed: the next one starts.
    let path = scratch("after");
    Capture::live(&path).start().expect("start").finish().expect("finish");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_capture_cut_short_reads_back_its_written_blocks() {
    let _turn = turn();
    let path = scratch("cut");
    let (hops, apply) = program_hops();
    let capture = Capture::live(&path)
        .hops(hops)
        .window(Duration::from_millis(100))
        .settle(Duration::from_millis(5))
        .start()
        .expect("start");
    let deadline = Instant::now() + Duration::from_millis(600);
    while Instant::now() < deadline {
        run_writer(200, apply);
    }
    // The blocks of windows that closed are on disk while it runs.
    let (cut, why) = Trace::salvage(&path).expect("salvage");
    assert!(why.is_some(), "no end record yet");
    assert!(!cut.blocks.is_empty(), "closed windows are written as the capture runs: {why:?}");
    assert!(cut.header.threads.iter().any(|t| t == "caller"), "{:?}", cut.header.threads);
    // A mark of a hop the table does not declare is left out and counted;
    // the capture goes on.
    std::thread::spawn(|| local::record(local::next_op(), hopscope_probe::Hop(400))).join().expect("thread");
    let summary = capture.finish().expect("finish");
    assert_eq!(summary.undeclared_hops, 1, "{summary}");
    assert!(summary.to_string().contains("1 marks of hops the table does not declare LEFT OUT"), "{summary}");
    Trace::read(&path).expect("the finished trace reads");
    let _ = std::fs::remove_file(&path);
}

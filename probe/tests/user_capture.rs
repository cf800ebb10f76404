//! The path of a user's crate: `hop!` marks in their code (recording only
//! when their own feature turns on `hopscope-probe/enabled`), a [`Capture`]
//! around the run, and a `.hop` trace that reads back with every
//! operation's marks from both threads.

use hopscope_probe::{Capture, ENABLED, Hop, OpId, Trace, hop, local};

#[test]
fn hop_marks_from_two_threads_land_in_a_captured_trace() {
    let path = std::env::temp_dir().join(format!("hopscope-user-capture-{}.hop", std::process::id()));
    let mut capture = Capture::create(&path, "my-app", &["caller", "writer"]).expect("capture");
    let session = capture.session();
    let writer_role = capture.thread("writer").expect("writer role");
    let (tx, rx) = std::sync::mpsc::channel::<Option<u64>>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let writer = {
        let session = session.clone();
        std::thread::spawn(move || {
            local::attach(1024);
            while let Ok(message) = rx.recv() {
                match message {
                    Some(op) => {
                        hop!(OpId(op), Hop::WOKE);
                        hop!(OpId(op), Hop::EXECUTED);
                    }
                    // A block boundary: hand this thread's marks in.
                    None => session.collect(writer_role),
                }
                let _ = done_tx.send(());
            }
        })
    };
    local::attach(1024);
    for block in 0..3u64 {
        capture.begin_block();
        for op in block * 100..block * 100 + 100 {
            hop!(OpId(op), Hop::ENTER);
            tx.send(Some(op)).expect("writer alive");
            done_rx.recv().expect("writer answers");
            hop!(OpId(op), Hop::DONE);
        }
        tx.send(None).expect("writer alive");
        done_rx.recv().expect("writer collected");
        session.collect(0);
        capture.end_block(100).expect("block");
    }
    drop(tx);
    writer.join().expect("writer thread");
    let trace = Trace::read(&capture.finish().expect("finish")).expect("trace reads back");
    let _ = std::fs::remove_file(&path);

    assert_eq!(trace.blocks.len(), 3);
    for (b, block) in trace.blocks.iter().enumerate() {
        let marks: Vec<usize> = block.streams.iter().map(|s| s.marks.len()).collect();
        if ENABLED {
            assert_eq!(marks, [200, 200], "block {b}: enter+done on the caller, woke+executed on the writer");
            let caller = &block.streams[0].marks;
            let writer = &block.streams[1].marks;
            for (i, pair) in writer.chunks(2).enumerate() {
                let (enter, done) = (&caller[2 * i], &caller[2 * i + 1]);
                assert!(enter.op == pair[0].op && pair[0].op == pair[1].op && done.op == enter.op);
                assert!(enter.ticks <= pair[0].ticks && pair[1].ticks <= done.ticks, "the hops in time order");
            }
        } else {
            assert!(marks.iter().all(|&n| n == 0), "without the feature, hop! records nothing");
        }
    }
}

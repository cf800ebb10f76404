//! Capture: a `.hop` trace from any program, for `hopscope analyze`.
//!
//! hopscope's own runner alternates lanes in blocks; a user's program has
//! one lane (itself) and decides where its blocks begin and end. A
//! [`Capture`] writes the header when it is created, one block per
//! [`Capture::end_block`], and the end record on [`Capture::finish`]:
//!
//! ```no_run
//! use hopscope_probe::{Capture, Hop, OpId, local};
//!
//! # fn main() -> Result<(), hopscope_probe::TraceError> {
//! let mut capture = Capture::create("app.hop".as_ref(), "my-writer", &["caller", "writer"])?;
//! let session = capture.session();
//! local::attach(1 << 16); // on every thread that marks, before it marks
//! capture.begin_block();
//! for op in 0..1000 {
//!     local::record(OpId(op), Hop::ENTER);
//!     // ... the write, with marks on the writer thread too ...
//!     local::record(OpId(op), Hop::DONE);
//! }
//! // Each thread hands in its own marks (the writer thread from its loop).
//! session.collect(capture.thread("caller").unwrap_or(0));
//! capture.end_block(1000)?;
//! capture.finish()?;
//! # Ok(())
//! # }
//! ```
//!
//! Marks live in per-thread buffers without locks, so only the thread that
//! made them can drain them: before [`Capture::end_block`], every marking
//! thread calls [`Session::collect`] with its role index. Marks collected
//! late land in the next block; an operation split across two blocks is
//! reported as incomplete by the analyzer, never joined wrongly.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::clock::{self, Ticks};
use crate::role::LaneInfo;
use crate::session::Session;
use crate::trace::{Block, TraceError, TraceHeader, TraceWriter};

/// A trace being written by the program it measures.
#[derive(Debug)]
pub struct Capture {
    path: PathBuf,
    writer: TraceWriter<BufWriter<File>>,
    session: Session,
    started: Option<Ticks>,
    blocks: u32,
}

impl Capture {
    /// Create (or replace) the trace at `path`: one lane called `lane`, and
    /// the thread roles `threads` (indexed in that order by
    /// [`Session::collect`]). The command line goes into the header.
    pub fn create(path: &Path, lane: &str, threads: &[&str]) -> Result<Capture, TraceError> {
        if threads.is_empty() || threads.len() > usize::from(u16::MAX) {
            return Err(TraceError::Unwritable { reason: format!("{} thread roles (1 to 65535)", threads.len()) });
        }
        let mut header = TraceHeader::for_this_host(&[lane], threads);
        // The program is the code under study; whether it marks, the
        // trace itself shows.
        header.lane_info = vec![LaneInfo::program(lane)];
        crate::RunFacts::record(
            &mut header.run,
            crate::RunFact::Command,
            std::env::args().collect::<Vec<_>>().join(" "),
        );
        crate::RunFacts::record(&mut header.run, crate::RunFact::Capture, "hopscope_probe::Capture");
        let writer = TraceWriter::create(path, header)?;
        Ok(Capture { path: path.to_owned(), writer, session: Session::new(), started: None, blocks: 0 })
    }

    /// The session the program's threads hand their marks to; clone it into
    /// each thread.
    pub fn session(&self) -> Session {
        self.session.clone()
    }

    /// The index of thread role `role`, as given to [`Capture::create`].
    pub fn thread(&self, role: &str) -> Option<u16> {
        self.writer.header().thread(role)
    }

    /// Start a block: its wall time runs from here to [`Capture::end_block`].
    pub fn begin_block(&mut self) {
        self.started = Some(clock::now());
    }

    /// End the block begun last with `ops` operations, and write it with the
    /// marks the threads have collected since the previous block. Without a
    /// [`Capture::begin_block`], the block starts where the last one ended.
    pub fn end_block(&mut self, ops: u64) -> Result<(), TraceError> {
        let end = clock::now();
        let start = self.started.take().unwrap_or(end);
        let block = Block {
            lane: 0,
            pass: 0,
            sample: self.blocks,
            op_count: ops,
            start,
            end,
            streams: self.session.take(),
            readings: Vec::new(),
        };
        self.writer.write_block(&block)?;
        self.blocks += 1;
        self.started = Some(end);
        Ok(())
    }

    /// Write the end record and flush; returns the trace's path.
    pub fn finish(self) -> Result<PathBuf, TraceError> {
        self.writer.finish()?;
        Ok(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::{Hop, OpId};
    use crate::local;
    use crate::trace::Trace;

    #[test]
    fn blocks_carry_each_threads_marks_and_the_trace_reads_back() {
        let path = std::env::temp_dir().join(format!("hopscope-capture-{}.hop", std::process::id()));
        let mut capture = Capture::create(&path, "app", &["caller", "writer"]).expect("create");
        let session = capture.session();
        let writer_role = capture.thread("writer").expect("writer role");
        local::attach(64);
        for block in 0..2u64 {
            capture.begin_block();
            let ops: Vec<u64> = (block * 10..block * 10 + 10).collect();
            for &op in &ops {
                local::record(OpId(op), Hop::ENTER);
            }
            let writer_session = session.clone();
            let writer_ops = ops.clone();
            std::thread::spawn(move || {
                local::attach(64);
                for op in writer_ops {
                    local::record(OpId(op), Hop::WOKE);
                }
                writer_session.collect(writer_role);
            })
            .join()
            .expect("writer thread");
            for &op in &ops {
                local::record(OpId(op), Hop::DONE);
            }
            session.collect(0);
            capture.end_block(ops.len() as u64).expect("block");
        }
        let path = capture.finish().expect("finish");
        let trace = Trace::read(&path).expect("trace reads back");
        let _ = std::fs::remove_file(&path);
        assert_eq!(trace.header.lanes, ["app"]);
        assert_eq!(trace.blocks.len(), 2);
        for block in &trace.blocks {
            assert_eq!(block.op_count, 10);
            assert!(block.end.0 >= block.start.0);
            let marks: Vec<usize> = block.streams.iter().map(|s| s.marks.len()).collect();
            assert_eq!(marks, [20, 10], "caller: enter+done, writer: woke");
        }
    }

    #[test]
    fn a_capture_without_thread_roles_is_refused() {
        let path = std::env::temp_dir().join(format!("hopscope-capture-none-{}.hop", std::process::id()));
        assert!(matches!(Capture::create(&path, "app", &[]), Err(TraceError::Unwritable { .. })));
    }
}

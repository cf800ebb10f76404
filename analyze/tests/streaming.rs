//! The streamed decomposition of a trace file (two reads, one block held
//! at a time) gives the figures of the in-memory one, salvages a cut file
//! as the in-memory salvage does, and refuses a file that changes between
//! its two reads.

use std::path::PathBuf;

use hopscope_analyze::source::{BlockSource, TraceFile};
use hopscope_analyze::{AnalyzeError, PartialCause, decompose_file, decompose_partial, decompose_source};
use hopscope_probe::{Block, Trace};

mod common;

use common::corpus;

fn scratch(name: &str) -> PathBuf {
    common::scratch_trace("streaming", name)
}

#[test]
fn a_streamed_file_decomposes_as_the_trace_in_memory() {
    for name in ["decompose.hop", "concurrent-counters.hop", "traced-writer.hop", "legacy.hop"] {
        let path = corpus(name);
        let streamed = decompose_file(&path).expect("streamed");
        let held = decompose_partial(&Trace::read(&path).expect("trace"), None).expect("in memory");
        assert_eq!(streamed, held, "{name}");
        assert!(streamed.partial.is_none(), "{name}: a complete trace is not partial");
    }
}

#[test]
fn a_cut_file_is_salvaged_as_in_memory_and_marked_partial() {
    let whole = std::fs::read(corpus("decompose.hop")).expect("corpus");
    let path = scratch("cut");
    // Cut two thirds in: mid-block, as a killed run leaves it.
    std::fs::write(&path, &whole[..whole.len() * 2 / 3]).expect("write");
    let streamed = decompose_file(&path).expect("salvaged");
    let (trace, salvage) = Trace::salvage(&path).expect("salvage");
    let salvage = salvage.expect("cut");
    let held = decompose_partial(&trace, Some((&salvage).into())).expect("in memory");
    assert_eq!(streamed, held);
    let partial = streamed.partial.as_ref().expect("partial");
    assert_eq!(partial.blocks_kept, trace.blocks.len() as u64);
    assert!(
        partial.bytes_dropped > 0 && partial.reader_detail().is_some_and(|d| d.contains("truncated")),
        "{partial:?}"
    );
    assert!(matches!(partial.reason.typed(), Some(PartialCause::TraceCut { .. })), "{partial:?}");
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

#[test]
fn a_file_with_no_complete_block_says_what_stopped_it() {
    let whole = std::fs::read(corpus("decompose.hop")).expect("corpus");
    let header_end = {
        // Preamble (12 bytes), then the header record: tag, length, payload, CRC.
        let len = u32::from_le_bytes(whole[13..17].try_into().expect("4 bytes")) as usize;
        12 + 5 + len + 4
    };
    let path = scratch("empty");
    std::fs::write(&path, &whole[..header_end + 3]).expect("write");
    match decompose_file(&path) {
        Err(AnalyzeError::NothingSalvaged { detail }) => assert!(detail.contains("truncated"), "{detail}"),
        other => panic!("expected NothingSalvaged, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

/// A source that cuts the file between its first and second read.
struct Shrinking {
    file: TraceFile,
    path: PathBuf,
    reads: usize,
}

impl BlockSource for Shrinking {
    fn header(&self) -> &hopscope_probe::TraceHeader {
        self.file.header()
    }

    fn replay(&mut self, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError> {
        if self.reads == 1 {
            let bytes = std::fs::read(&self.path).expect("read");
            std::fs::write(&self.path, &bytes[..bytes.len() / 2]).expect("cut");
        }
        self.reads += 1;
        self.file.replay(visit)
    }
}

#[test]
fn a_file_that_changes_between_reads_is_refused() {
    let path = scratch("changing");
    std::fs::copy(corpus("decompose.hop"), &path).expect("copy");
    let mut source = Shrinking { file: TraceFile::open(&path).expect("open"), path: path.clone(), reads: 0 };
    match decompose_source(&mut source, None) {
        Err(e @ AnalyzeError::Changed { .. }) => {
            assert!(e.to_string().contains("changed while it was analyzed"), "{e}")
        }
        other => panic!("expected Changed, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

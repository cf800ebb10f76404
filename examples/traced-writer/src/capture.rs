//! The writer under hopscope: the spans of [`crate::Writer`] become hop
//! marks through `HopLayer`, and a `Capture` writes them to a `.hop` trace
//! that `hopscope analyze` and `hopscope report` decompose like any other.
//!
//! All of it sits behind this crate's `hopscope` feature; the library code
//! itself only has its `tracing` spans.

use std::path::{Path, PathBuf};

use hopscope_probe::{Capture, Hop, HopLayer, local};
use tracing_subscriber::layer::SubscriberExt;

use crate::{Error, Writer};

/// Marks per thread buffer: enough for the largest block this driver runs.
const BUFFER_MARKS: usize = 1 << 20;

/// Which hop each span's enter and exit stands for.
pub fn layer() -> HopLayer {
    HopLayer::new()
        .span("write", Hop::ENTER, Some(Hop::DONE))
        .span("send", Hop::BUILT, Some(Hop::SENT))
        .span("execute", Hop::WOKE, Some(Hop::EXECUTED))
        .span_exit("reply", Hop::REPLIED)
        .span_exit("wait", Hop::RECEIVED)
}

/// A capture run: where the database and the trace go, and its size.
#[derive(Debug, Clone)]
pub struct Run {
    /// The SQLite database file.
    pub db: PathBuf,
    /// The `.hop` trace to write.
    pub trace: PathBuf,
    /// Blocks (the analyzer's unit of repetition).
    pub blocks: u32,
    /// Inserts per block.
    pub ops_per_block: u32,
}

/// Open the writer on `run.db`, insert `blocks × ops_per_block` notes with
/// the layer installed for this thread and the writer thread, and write the
/// trace. Returns the trace's path.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer()));
    let writer = Writer::open(&run.db)?;
    let mut capture = Capture::create(&run.trace, "traced-writer", &["caller", "writer"])?;
    let session = capture.session();
    let writer_role = capture.thread("writer").unwrap_or(1);
    {
        // The writer thread marks under the same dispatcher and into its own
        // buffer; `set_default` lasts for the thread's life.
        let dispatch = dispatch.clone();
        writer.on_writer_thread(move || {
            std::mem::forget(tracing::dispatcher::set_default(&dispatch));
            local::attach(BUFFER_MARKS);
        })?;
    }
    let _guard = tracing::dispatcher::set_default(&dispatch);
    local::attach(BUFFER_MARKS);
    let mut key = 0i64;
    for _ in 0..run.blocks {
        // Build every input before the block so it is not measured.
        let bodies: Vec<String> = (0..run.ops_per_block).map(|i| format!("note {i}")).collect();
        capture.begin_block();
        for body in bodies {
            key += 1;
            writer.insert(key, body)?;
        }
        let writer_session = session.clone();
        writer.on_writer_thread(move || writer_session.collect(writer_role))?;
        session.collect(0);
        capture.end_block(u64::from(run.ops_per_block))?;
    }
    drop(writer);
    Ok(capture.finish()?)
}

/// Rows in the notes table of `db` (for checking a run wrote what it says).
pub fn count_rows(db: &Path) -> Result<u64, Error> {
    let conn = rusqlite::Connection::open(db).map_err(Error::Sqlite)?;
    conn.query_row("SELECT count(*) FROM notes", [], |row| row.get(0)).map_err(Error::Sqlite)
}

//! The writer under hopscope's harness: an inline baseline (the same insert
//! on the calling thread, same pragmas) beside the traced writer, clean (no
//! span created) and probed (its spans turned into hop marks by `HopLayer`,
//! on the caller and on the writer thread alike: the harness drains both,
//! nothing here runs on the writer thread for it).
//! The harness alternates them, checks every block's rows, and writes
//! `result.json`, the receipt, the report and charts with hop, the observer
//! effect and the slices.
//!
//! All of it sits behind this crate's `hopscope` feature; the library code
//! itself only has its `tracing` spans.

use std::path::{Path, PathBuf};

use hopscope_harness::{BoxError, Harness, Lane};
use hopscope_probe::{Hop, HopLayer};
use rusqlite::Connection;

use crate::{Writer, insert_on, note, open_db};

/// Which hop each span's enter and exit stands for. `sent` and `replied`
/// are marked before their send, as hopscope's hops define them: a send
/// may wake the other thread at once (on a shared core, before the sender
/// runs again), so a mark after it could land after the woken side's
/// first mark and the send's own cost would be counted on the wrong side
/// of the boundary. So the `send` and `reply` spans' *enters* are the
/// marks; the `reply` span's exit closes the writer's cycle (`idle`).
pub fn layer() -> HopLayer {
    HopLayer::new()
        .span("write", Hop::ENTER, Some(Hop::DONE))
        .span("send", Hop::SENT, None)
        .span("execute", Hop::WOKE, Some(Hop::EXECUTED))
        .span("reply", Hop::REPLIED, Some(Hop::IDLE))
        .span_exit("wait", Hop::RECEIVED)
}

/// The writer and its database file (for the row checks, on a connection
/// of their own).
struct Traced {
    writer: Writer,
    db: PathBuf,
}

/// Rows in the notes table of `db`.
fn rows(db: &Path) -> Result<u64, BoxError> {
    Ok(Connection::open(db)?.query_row("SELECT count(*) FROM notes", [], |row| row.get(0))?)
}

fn empty(db: &Path) -> Result<(), BoxError> {
    Ok(Connection::open(db)?.execute_batch("DELETE FROM notes")?)
}

/// `harness` with the inline baseline and the traced writer declared.
pub fn lanes(harness: Harness) -> Harness {
    let inline = Lane::baseline(
        "inline",
        |s| Ok::<_, BoxError>(open_db(&s.path("notes.db"))?),
        |db: &mut Connection, op| insert_on(db, op.index() as i64, &note(op.index())).map(drop),
    )
    .reset(|db| db.execute_batch("DELETE FROM notes"))
    .count(|db| db.query_row("SELECT count(*) FROM notes", [], |row| row.get::<_, u64>(0)))
    .describe("the same insert on the calling thread (rusqlite, WAL, synchronous=NORMAL)");
    let traced = Lane::subject(
        "traced-writer",
        |s| {
            let db = s.path("notes.db");
            Ok::<_, BoxError>(Traced { writer: Writer::open(&db)?, db })
        },
        |t: &mut Traced, op| t.writer.insert(op.index() as i64, note(op.index())).map(drop),
    )
    .reset(|t| empty(&t.db))
    .count(|t| rows(&t.db))
    .describe("crossbeam channel to a rusqlite thread, one-shot replies, tracing spans")
    .probed_by_spans(layer());
    harness.lane(inline).lane(traced)
}

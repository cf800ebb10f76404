//! The writer thread and the producers' handle.

use std::path::Path;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};
use rusqlite::Connection;

use crate::request::{Outcomes, Request, Road, insert};

/// What the writer thread is sent: an event, or a job to run on it
/// between batches (a measuring harness's hand-in of its marks).
enum Message {
    Event(Request),
    Job(Box<dyn FnOnce() + Send>),
}

/// A producer's handle on the writer, shared by reference.
pub struct Ingest {
    tx: Option<Sender<Message>>,
    road: Road,
    writer: Option<JoinHandle<()>>,
}

impl Ingest {
    /// Open the database at `path` and start a writer that runs up to
    /// `max_batch` events per transaction, marked by `road`; `setup` runs
    /// first on the writer's thread with its connection (a probe's attach,
    /// a mark buffer).
    pub fn open(
        path: &Path,
        max_batch: usize,
        road: Road,
        setup: impl FnOnce(&Connection) + Send + 'static,
    ) -> rusqlite::Result<Ingest> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
        )?;
        let (tx, rx) = bounded::<Message>(4096);
        let writer = std::thread::spawn(move || {
            setup(&conn);
            serve(&conn, &rx, max_batch.max(1), road);
        });
        Ok(Ingest { tx: Some(tx), road, writer: Some(writer) })
    }

    /// Insert `event` as operation `op`: its row id once its batch commits.
    pub fn insert(&self, op: u64, event: &str) -> Result<i64, String> {
        let _insert = (self.road == Road::Spans).then(|| tracing::info_span!("insert", op).entered());
        crate::marks::caller(self.road, op, true);
        let (reply, answer) = bounded(1);
        let tx = self.tx.as_ref().ok_or("the writer is gone")?;
        tx.send(Message::Event(Request { op, event: event.to_owned(), reply })).map_err(|_| "the writer is gone")?;
        let outcome = answer.recv().map_err(|_| "the writer is gone".to_owned()).and_then(|r| r);
        crate::marks::caller(self.road, op, false);
        outcome
    }

    /// Run `job` on the writer's thread between two batches, and wait for
    /// it.
    pub fn on_writer(&self, job: Box<dyn FnOnce() + Send>) -> Result<(), String> {
        let (done, finished) = bounded(1);
        let job: Box<dyn FnOnce() + Send> = Box::new(move || {
            job();
            let _ = done.send(());
        });
        let tx = self.tx.as_ref().ok_or("the writer is gone")?;
        tx.send(Message::Job(job)).map_err(|_| "the writer is gone")?;
        finished.recv().map_err(|_| "the writer is gone".to_owned())
    }

    /// Events in the table.
    pub fn count(path: &Path) -> rusqlite::Result<u64> {
        Connection::open(path)?.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
    }
}

impl Drop for Ingest {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer's loop: block for an event, take what else is queued (up to
/// `max`), run them in one transaction, reply to each.
fn serve(conn: &Connection, rx: &Receiver<Message>, max: usize, road: Road) {
    let mut batch = Vec::with_capacity(max);
    while let Ok(first) = rx.recv() {
        let mut job = match first {
            Message::Event(request) => {
                batch.push(request);
                None
            }
            Message::Job(job) => Some(job),
        };
        while job.is_none() && !batch.is_empty() && batch.len() < max {
            match rx.try_recv() {
                Ok(Message::Event(request)) => batch.push(request),
                Ok(Message::Job(next)) => job = Some(next),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            commit_and_reply(conn, &mut batch, road);
        }
        if let Some(job) = job {
            job();
        }
    }
}

/// Run `batch` in one transaction and reply to each event.
fn commit_and_reply(conn: &Connection, batch: &mut Vec<Request>, road: Road) {
    let outcomes = match road {
        Road::Plain => transaction(conn, batch),
        other => crate::marks::transaction(conn, batch, other),
    };
    if outcomes.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for (i, request) in batch.drain(..).enumerate() {
        crate::marks::replied(road, request.op);
        let outcome = match &outcomes {
            Ok(ids) => ids[i].as_ref().map(|id| *id).map_err(ToString::to_string),
            Err(e) => Err(e.to_string()),
        };
        let _ = request.reply.send(outcome);
    }
}

/// The batch in one transaction, unmarked.
fn transaction(conn: &Connection, batch: &[Request]) -> Outcomes {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let ids = batch.iter().map(|r| insert(conn, r)).collect();
    conn.execute_batch("COMMIT")?;
    Ok(ids)
}

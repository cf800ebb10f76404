//! The floor writer: a writer thread with none of the reference writer's
//! machinery, pricing the thread boundary alone.
//!
//! Each client sends its parameters on a crossbeam channel, the thread runs
//! one fixed cached statement and sends back the number of rows it changed
//! (an integer) into the client's own reply mailbox, the same park-at-once
//! reply the reference writer uses (see [`crate::mailbox`]), so the two
//! differ in machinery, not in how a caller waits. No mutex, no request
//! object beyond the parameters, no SQL on the wire, no harvest, no
//! per-call allocation of its own.

use std::path::Path;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::mailbox::{self, Mailbox};
use hopscope_harness::HandIn;
use hopscope_probe::{Hop, OpId, Probe, local};
use rusqlite::Connection;

use crate::channel;
use crate::db::{self, DbConfig};
use crate::error::WriteError;
use crate::knobs::Wait;
use crate::receive::Disconnected;
use crate::value::Value;
use crate::worker::{WORKER_MARK_CAPACITY, WRITER_ROLE};
use hopscope_harness::placement;

/// What the floor thread can be sent.
enum FloorMessage {
    /// Register a client's reply mailbox; its index is the client id.
    Register(mailbox::Sender<i64>),
    /// Execute the statement with these parameters for client `client`.
    Execute { client: u32, op: OpId, params: Vec<Value> },
    /// Hand the thread's marks and CPU time in, and answer when done.
    HandIn { hand_in: HandIn, done: Sender<()> },
}

/// Reply value that means "the statement failed" (the floor sends integers only).
const FAILED: i64 = -1;

/// How the floor's threads wait and where its thread runs. The floor
/// borrows the waiting strategy of the writer it is compared with, so the
/// comparison isolates machinery, not waiting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloorOptions {
    /// Core to pin the floor thread to.
    pub pin: Option<usize>,
    /// How the floor thread waits for requests.
    pub floor_wait: Wait,
    /// How clients wait for replies.
    pub client_wait: Wait,
}

/// A running floor writer thread.
#[derive(Debug)]
pub struct Floor<P: Probe> {
    tx: Option<Sender<FloorMessage>>,
    thread: Option<JoinHandle<()>>,
    probe: P,
    client_wait: Wait,
}

/// One caller's connection to the floor thread. Not shared: each caller
/// thread makes its own with [`Floor::client`].
#[derive(Debug)]
pub struct FloorClient<P: Probe> {
    tx: Sender<FloorMessage>,
    replies: Mailbox<i64>,
    id: u32,
    probe: P,
    wait: Wait,
}

impl<P: Probe> Floor<P> {
    /// Open `path`, create the schema, and start the thread that runs `sql`.
    pub fn open(path: &Path, config: DbConfig, sql: &'static str, probe: P) -> Result<Floor<P>, rusqlite::Error> {
        Floor::open_with(path, config, sql, probe, FloorOptions::default())
    }

    /// [`Floor::open`] with placement and waiting options.
    pub fn open_with(
        path: &Path,
        config: DbConfig,
        sql: &'static str,
        probe: P,
        options: FloorOptions,
    ) -> Result<Floor<P>, rusqlite::Error> {
        let conn = db::open(path, config)?;
        db::create_schema(&conn)?;
        // Fail here, not on the first write, if the statement is invalid.
        conn.prepare_cached(sql)?;
        Ok(Floor::spawn(conn, sql, probe, options))
    }

    /// Start the floor thread on `conn`.
    pub fn spawn(conn: Connection, sql: &'static str, probe: P, options: FloorOptions) -> Floor<P> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("hopscope-floor".to_owned())
            .spawn(move || {
                placement::place_worker(options.pin);
                serve(&conn, sql, &rx, probe, options.floor_wait);
            })
            .ok();
        Floor { tx: Some(tx), thread, probe, client_wait: options.client_wait }
    }

    /// A client for the calling thread.
    pub fn client(&self) -> Result<FloorClient<P>, WriteError> {
        let tx = self.tx.clone().ok_or(WriteError::WriterStopped)?;
        let (reply_tx, replies) = mailbox::mailbox();
        tx.send(FloorMessage::Register(reply_tx)).map_err(|_| WriteError::WriterStopped)?;
        // The thread answers a registration with the client id, in the new
        // mailbox itself.
        let id = replies.recv(Wait::Park).map_err(|_| WriteError::WriterStopped)?;
        Ok(FloorClient { tx, replies, id: id as u32, probe: self.probe, wait: self.client_wait })
    }

    /// Have the floor thread hand its marks and CPU time in, as
    /// [`crate::WRITER_ROLE`]. Call between blocks.
    pub fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let tx = self.tx.as_ref().ok_or(WriteError::WriterStopped)?;
        let (done, answered) = crossbeam_channel::bounded(1);
        tx.send(FloorMessage::HandIn { hand_in: hand_in.clone(), done }).map_err(|_| WriteError::WriterStopped)?;
        answered.recv().map_err(|_| WriteError::WriterStopped)
    }
}

impl<P: Probe> Drop for Floor<P> {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl<P: Probe> FloorClient<P> {
    /// Run the floor's statement with `params`; returns the rows it changed.
    #[inline]
    pub fn execute(&self, params: Vec<Value>) -> Result<u64, WriteError> {
        let op = if P::RECORDS { local::next_op() } else { OpId(0) };
        self.probe.mark_on_cpu(op, Hop::ENTER);
        self.probe.mark(op, Hop::SENT);
        self.tx.send(FloorMessage::Execute { client: self.id, op, params }).map_err(|_| WriteError::WriterStopped)?;
        let changes = self.replies.recv(self.wait).map_err(|_| WriteError::WriterStopped)?;
        self.probe.mark_on_cpu(op, Hop::RECEIVED);
        self.probe.mark(op, Hop::DONE);
        u64::try_from(changes).map_err(|_| WriteError::FloorFailed)
    }
}

fn serve<P: Probe>(conn: &Connection, sql: &'static str, rx: &Receiver<FloorMessage>, probe: P, wait: Wait) {
    if P::RECORDS {
        local::attach(WORKER_MARK_CAPACITY);
    }
    let mut clients: Vec<mailbox::Sender<i64>> = Vec::new();
    let next = || channel::wait_for(wait, || channel::try_crossbeam(rx), || rx.recv().map_err(|_| Disconnected));
    while let Ok(message) = next() {
        match message {
            FloorMessage::Register(reply) => {
                let id = clients.len() as i64;
                reply.send(id);
                clients.push(reply);
            }
            FloorMessage::Execute { client, op, params } => {
                probe.mark_on_cpu(op, Hop::WOKE);
                let changes = conn
                    .prepare_cached(sql)
                    .and_then(|mut s| s.execute(rusqlite::params_from_iter(params.iter())))
                    .map_or(FAILED, |n| n as i64);
                probe.mark(op, Hop::EXECUTED);
                probe.mark(op, Hop::REPLIED);
                if let Some(reply) = clients.get(client as usize) {
                    reply.send(changes);
                }
                drop(params);
                probe.mark(op, Hop::IDLE);
            }
            FloorMessage::HandIn { hand_in, done } => {
                hand_in.collect(WRITER_ROLE);
                let _ = done.send(());
            }
        }
    }
}

//! The reference writer: the "library" hopscope takes apart.
//!
//! A [`Writer`] hands each write to a dedicated thread that owns a rusqlite
//! connection. The caller path, with the hop marked at each step:
//!
//! ```text
//! enter → lock writer mutex → locked → build request → built
//!       → send on the channel → sent → (writer thread) woke → executed
//!       → harvested → replied → (caller) received → done
//! ```
//!
//! Every knob of [`Knobs`] is chosen when the writer is opened, so two
//! writers with different settings can alternate in one process. The writer
//! is generic over [`Probe`]: `Writer<Recording>` marks every hop,
//! `Writer<NoProbe>` is the same code with the marks compiled out.

mod clients;
mod fifo;
mod group;
pub(crate) mod harvest;
mod hops;
mod request;
pub(crate) mod spin;
mod thread;

use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use hopscope_harness::{HandIn, Pin};
use hopscope_probe::{Hop, OpId, Probe, local};
use rusqlite::Connection;

use crate::channel::{self, Rx};
use crate::db::{self, DbConfig};
use crate::error::WriteError;
use crate::knobs::{Knobs, ReplyMode, ResultSlot};
use crate::mailbox::Mailbox;
use crate::value::{Sql, Value, ValueRef};

pub use harvest::Tables;
pub use hops::{GroupHops, writer_hops};
pub use request::WriteOutcome;

use clients::Gate;
use fifo::{Fifo, Slot};
use request::{Done, Message, Reply, ReplyTo, Request, Work};
use spin::Delay;
use thread::{Shared, WriterThread};

/// SQLite's default limit on parameters per statement; a request with more
/// is refused before it is sent.
pub const MAX_PARAMS: usize = 32_766;

/// A handle to a writer thread. Share it between caller threads by
/// reference (it is `Sync`); dropping it lets the thread finish what is
/// queued, then joins it.
#[derive(Debug)]
pub struct Writer<P: Probe> {
    /// The writer mutex: held from `locked` to `sent`, so requests enter the
    /// channel (and the FIFO queue) in one order.
    gate: Arc<Mutex<Gate>>,
    /// This writer's key in callers' per-thread reply registries.
    id: u64,
    fifo: Option<Fifo>,
    shared: Arc<Shared>,
    knobs: Knobs,
    delay: Delay,
    probe: P,
    thread: Option<JoinHandle<()>>,
}

impl<P: Probe> Writer<P> {
    /// Open the database at `path` with `config`, create the schema, and
    /// start the writer thread on it.
    pub fn open(path: &Path, config: DbConfig, knobs: Knobs, probe: P) -> Result<Writer<P>, rusqlite::Error> {
        let conn = db::open(path, config)?;
        db::create_schema(&conn)?;
        Ok(Writer::spawn(conn, knobs, probe))
    }

    /// Start a writer thread that owns `conn`.
    pub fn spawn(conn: Connection, knobs: Knobs, probe: P) -> Writer<P> {
        // Never spin where the two threads can share a core.
        let knobs = Knobs {
            writer_wait: knobs.writer_wait.on(knobs.placement),
            caller_wait: knobs.caller_wait.on(knobs.placement),
            ..knobs
        };
        let (tx, rx) = channel::unbounded(knobs.channel);
        let (fifo_tx, fifo) = match knobs.reply {
            ReplyMode::Oneshot => (None, None),
            ReplyMode::Persistent => {
                let (tx, rx) = channel::unbounded(knobs.channel);
                (Some(tx), Some(Fifo::new(rx)))
            }
        };
        let shared = Arc::new(Shared::default());
        let delay = Delay::new(knobs.delay);
        let writer_thread = WriterThread {
            conn,
            harvest: Default::default(),
            rx,
            fifo: fifo_tx,
            knobs,
            delay: delay.clone(),
            probe,
            shared: Arc::clone(&shared),
            clients: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("hopscope-writer".to_owned())
            .spawn(move || {
                knobs.placement.place_worker();
                writer_thread.run();
            })
            .ok();
        // If the thread could not be spawned, the channel's receiver is
        // already dropped: every call reports `WriterStopped`.
        let gate = Arc::new(Mutex::new(Gate::new(tx)));
        Writer { gate, id: clients::next_writer_id(), fifo, shared, knobs, delay, probe, thread }
    }

    /// Before a measured block of pass `pass` (`None`: a warm-up block):
    /// switch an injected delay on or off as its schedule says.
    pub(crate) fn before_block(&self, pass: Option<u32>) {
        self.delay.before_block(pass);
    }

    /// The knobs this writer runs with.
    pub fn knobs(&self) -> Knobs {
        self.knobs
    }

    /// Execute one statement, copying borrowed parameters into the request.
    pub fn execute(&self, sql: impl Into<Sql>, params: &[ValueRef<'_>]) -> Result<WriteOutcome, WriteError> {
        let sql = sql.into();
        self.call(|| {
            if params.len() > MAX_PARAMS {
                return Err(too_many_params(params.len()));
            }
            Ok(Work::Execute { sql, params: params.iter().map(|p| p.to_owned_value()).collect() })
        })
        .and_then(one)
    }

    /// Execute one statement, moving owned parameters into the request (no
    /// copy of blob bytes; a [`Value::SharedBlob`] only bumps a count).
    pub fn execute_owned(&self, sql: impl Into<Sql>, params: Vec<Value>) -> Result<WriteOutcome, WriteError> {
        let sql = sql.into();
        self.call(|| {
            if params.len() > MAX_PARAMS {
                return Err(too_many_params(params.len()));
            }
            Ok(Work::Execute { sql, params })
        })
        .and_then(one)
    }

    /// Execute statements in one transaction on the writer thread; if any
    /// fails, none is applied and its error is returned.
    pub fn batch(&self, statements: Vec<(Sql, Vec<Value>)>) -> Result<Vec<WriteOutcome>, WriteError> {
        self.call(|| {
            if let Some((_, params)) = statements.iter().find(|(_, p)| p.len() > MAX_PARAMS) {
                return Err(too_many_params(params.len()));
            }
            Ok(Work::Batch(statements))
        })
        .map(|done| match done {
            Done::Batch(outcomes) => outcomes,
            Done::One(outcome) => vec![outcome],
        })
    }

    /// Have the writer thread hand its marks and CPU time in, as
    /// [`crate::WRITER_ROLE`]. Call between blocks.
    pub fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let (done_tx, done_rx) = channel::oneshot(self.knobs.channel);
        self.send(Message::HandIn { hand_in: hand_in.clone(), done: done_tx })?;
        done_rx.recv().map_err(|_| self.shared.stopped_error())
    }

    /// Make the writer thread panic while serving a request, as a bug would
    /// (fault injection for tests). Returns the error that request received.
    pub fn inject_panic(&self) -> WriteError {
        match self.call(|| Ok(Work::Panic)) {
            Err(err) => err,
            Ok(_) => WriteError::WriterStopped,
        }
    }

    /// The caller path shared by every write: lock, build, send, wait.
    fn call(&self, build: impl FnOnce() -> Result<Work, WriteError>) -> Result<Done, WriteError> {
        let probe = self.probe;
        let op = if P::RECORDS { local::next_op() } else { OpId(0) };
        probe.mark_on_cpu(op, Hop::ENTER);
        let mut gate = self.gate.lock().unwrap_or_else(PoisonError::into_inner);
        self.delay.before(Hop::LOCKED);
        probe.mark(op, Hop::LOCKED);
        if gate.tx.is_none() {
            return Err(self.shared.stopped_error());
        }
        // A build failure returns here, before anything is registered or
        // sent: FIFO completion cannot be desynchronised by it.
        let work = build()?;
        let Some((reply, waiter)) = self.reply_path(&mut gate) else {
            return Err(self.shared.stopped_error());
        };
        let request = Request { op, work, reply };
        self.delay.before(Hop::BUILT);
        probe.mark(op, Hop::BUILT);
        if let (Some(fifo), Waiter::Fifo(slot)) = (&self.fifo, &waiter) {
            fifo.register(Arc::clone(slot));
        }
        self.delay.before(Hop::SENT);
        probe.mark(op, Hop::SENT);
        let sent = gate.tx.as_ref().is_some_and(|tx| tx.send(Message::Write(request)).is_ok());
        if !sent {
            if let Some(fifo) = &self.fifo {
                fifo.unregister_last();
            }
            return Err(self.shared.stopped_error());
        }
        drop(gate);
        let reply = self.wait(waiter);
        self.delay.before(Hop::RECEIVED);
        probe.mark_on_cpu(op, Hop::RECEIVED);
        // Completion: the reply is the call's result as it stands.
        self.delay.before(Hop::DONE);
        probe.mark(op, Hop::DONE);
        reply.map_err(|failed| *failed.0)
    }

    /// Where this call's reply will arrive, per the reply and slot knobs;
    /// `None` if the writer is closing. Call with the gate held.
    fn reply_path(&self, gate: &mut Gate) -> Option<(ReplyTo, Waiter)> {
        Some(match (self.knobs.reply, self.knobs.result_slot) {
            (ReplyMode::Oneshot, ResultSlot::Allocate) => {
                let (tx, rx) = channel::oneshot(self.knobs.channel);
                (ReplyTo::Oneshot(Some(tx)), Waiter::Oneshot(rx))
            }
            (ReplyMode::Oneshot, ResultSlot::Reuse) => {
                let (client, replies) = clients::client(self.id, &self.gate, gate)?;
                (ReplyTo::Client(client), Waiter::Client(replies))
            }
            (ReplyMode::Persistent, ResultSlot::Allocate) => (ReplyTo::Fifo, Waiter::Fifo(Arc::new(Slot::default()))),
            (ReplyMode::Persistent, ResultSlot::Reuse) => (ReplyTo::Fifo, Waiter::Fifo(fifo::cached_slot())),
        })
    }

    fn wait(&self, waiter: Waiter) -> Reply {
        let wait = self.knobs.caller_wait;
        match waiter {
            Waiter::Oneshot(rx) => rx.recv_with(wait).unwrap_or_else(|_| Err(self.shared.stopped_error().into())),
            // The writer thread holds the sending side until it exits,
            // answering every request it took; once it is gone, the channel
            // reports the disconnection instead of hanging.
            Waiter::Client(replies) => replies.recv(wait).unwrap_or_else(|_| Err(self.shared.stopped_error().into())),
            Waiter::Fifo(slot) => match &self.fifo {
                Some(fifo) => fifo.wait(&slot, wait, &self.shared),
                None => Err(WriteError::WriterStopped.into()),
            },
        }
    }

    fn send(&self, message: Message) -> Result<(), WriteError> {
        let gate = self.gate.lock().unwrap_or_else(PoisonError::into_inner);
        match gate.tx.as_ref() {
            Some(tx) => tx.send(message).map_err(|_| self.shared.stopped_error()),
            None => Err(self.shared.stopped_error()),
        }
    }
}

impl<P: Probe> Drop for Writer<P> {
    fn drop(&mut self) {
        // Closing the channel lets the thread serve what is queued and exit.
        self.gate.lock().unwrap_or_else(PoisonError::into_inner).tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How the caller waits for this call's reply.
enum Waiter {
    Oneshot(Rx<Reply>),
    /// This thread's registered reply channel.
    Client(Rc<Mailbox<Reply>>),
    Fifo(Arc<Slot>),
}

fn one(done: Done) -> Result<WriteOutcome, WriteError> {
    match done {
        Done::One(outcome) => Ok(outcome),
        Done::Batch(mut outcomes) => Ok(outcomes.pop().unwrap_or_default()),
    }
}

#[cold]
fn too_many_params(n: usize) -> WriteError {
    WriteError::Build { reason: format!("{n} parameters exceed SQLite's limit of {MAX_PARAMS}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopscope_probe::NoProbe;

    const INSERT: &str = "INSERT INTO items (k, v) VALUES (?1, ?2)";

    fn writer() -> Writer<NoProbe> {
        let conn = Connection::open_in_memory().expect("in-memory db");
        db::create_schema(&conn).expect("schema");
        Writer::spawn(conn, Knobs::default(), NoProbe)
    }

    fn insert(writer: &Writer<NoProbe>, k: i64) -> WriteOutcome {
        writer.execute_owned(INSERT, vec![Value::Integer(k), Value::Text("v".into())]).expect("insert")
    }

    #[test]
    fn exited_caller_threads_give_their_reply_channel_back() {
        let writer = writer();
        let mut rowids = Vec::new();
        for k in 0..50 {
            let outcome = std::thread::scope(|s| s.spawn(|| insert(&writer, k)).join().expect("caller"));
            rowids.push(outcome.last_insert_rowid);
            // The thread is gone; its unregistration is queued before any
            // later registration, so ids are reused, not grown.
            assert!(writer.gate.lock().expect("gate").live_clients() <= 1);
        }
        assert_eq!(rowids, (1..=50).collect::<Vec<i64>>());
    }

    #[test]
    fn one_thread_outlives_a_writer_and_registers_with_the_next() {
        for round in 0..3 {
            let writer = writer();
            for k in 0..5 {
                assert_eq!(insert(&writer, k).last_insert_rowid, k + 1, "round {round}");
            }
            // Dropping the writer closes this thread's reply channel with it;
            // the next writer must not find or reuse it.
        }
    }
}

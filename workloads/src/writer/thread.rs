//! The writer thread: owns the connection, serves requests in arrival order.
//!
//! Per request: mark `woke` when it is in hand, execute with a cached
//! prepared statement (`executed`), collect the changed tables (`harvested`),
//! send the reply (`replied`), drop the request and go back to waiting
//! (`idle`). Each request runs under `catch_unwind`: a panic
//! answers that request with the panic message, fails everything queued
//! behind it, and stops the thread, so no caller waits forever.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use hopscope_probe::{Hop, Probe, local};
use rusqlite::Connection;

use crate::channel::{Rx, Tx};
use crate::error::WriteError;
use crate::knobs::{Knobs, Wait};
use crate::receive::TryRecv;
use crate::value::Sql;
use crate::worker::{WORKER_MARK_CAPACITY, WRITER_ROLE};
use crate::writer::harvest;
use crate::writer::request::{Done, Failed, Message, Reply, ReplyTo, Request, Work, WriteOutcome};
use crate::writer::spin::Delay;

/// State shared between the handle and the writer thread.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set once if the writer thread panicked.
    pub(crate) panic: OnceLock<String>,
}

impl Shared {
    /// The error a caller gets when the writer thread is gone.
    #[cold]
    pub(crate) fn stopped_error(&self) -> WriteError {
        match self.panic.get() {
            Some(message) => WriteError::WriterPanicked { message: message.clone() },
            None => WriteError::WriterStopped,
        }
    }
}

pub(crate) struct WriterThread<P: Probe> {
    // Declared before `harvest`: closing the connection removes the update
    // hook before the state it writes into is dropped.
    pub(crate) conn: Connection,
    pub(crate) harvest: harvest::Harvest,
    pub(crate) rx: Rx<Message>,
    /// The persistent reply channel (FIFO reply mode only).
    pub(crate) fifo: Option<Tx<Reply>>,
    pub(crate) knobs: Knobs,
    pub(crate) delay: Delay,
    pub(crate) probe: P,
    pub(crate) shared: Arc<Shared>,
    /// Registered callers' reply mailboxes, by client index. Dropped with
    /// the thread, which wakes every registered caller.
    pub(crate) clients: Vec<Option<crate::mailbox::Sender<Reply>>>,
}

impl<P: Probe> WriterThread<P> {
    pub(crate) fn run(mut self) {
        if P::RECORDS {
            local::attach(WORKER_MARK_CAPACITY);
        }
        if self.knobs.harvest {
            self.harvest.install(&self.conn);
        }
        // With `Wait::Park` the blocking receive takes a queued request
        // without parking, which is the same drain as coalescing; polling
        // first would only add a second look at an empty channel.
        let drain = self.knobs.coalesce && self.knobs.writer_wait != Wait::Park;
        while let Ok(first) = self.rx.recv_with(self.knobs.writer_wait) {
            if self.knobs.group_commit.is_on() {
                if let Err(panic) = self.serve_grouped(first) {
                    self.fail_queued(&panic);
                    return;
                }
                continue;
            }
            let mut next = Some(first);
            while let Some(message) = next.take() {
                if let Err(panic) = self.serve(message) {
                    // Poisoned: answer what is left, then stop.
                    self.fail_queued(&panic);
                    return;
                }
                if drain && let TryRecv::Got(queued) = self.rx.try_recv() {
                    // Serve everything already queued in this one wake; each
                    // request is still its own autocommit statement.
                    next = Some(queued);
                }
            }
        }
    }

    /// Serve one message; `Err` carries the panic message if it panicked.
    #[inline]
    pub(crate) fn serve(&mut self, message: Message) -> Result<(), String> {
        match message {
            Message::Write(request) => self.serve_write(request),
            control => {
                self.serve_control(control);
                Ok(())
            }
        }
    }

    /// Everything but a write: rare, kept off the write path's code.
    #[cold]
    fn serve_control(&mut self, message: Message) {
        match message {
            Message::Write(_) => {}
            Message::HandIn { hand_in, done } => {
                hand_in.collect(WRITER_ROLE);
                let _ = done.send(());
            }
            Message::Register { client, reply } => {
                let index = client as usize;
                if self.clients.len() <= index {
                    self.clients.resize_with(index + 1, || None);
                }
                self.clients[index] = Some(reply);
            }
            Message::Unregister { client } => {
                if let Some(slot) = self.clients.get_mut(client as usize) {
                    *slot = None;
                }
            }
        }
    }

    /// Send `reply` where `to` (and the request's own sender, if it had one) says.
    pub(crate) fn answer(&self, to: &ReplyTo, oneshot: Option<Tx<Reply>>, reply: Reply) {
        // The caller may be gone; nothing else to do then.
        match (to, &oneshot) {
            (ReplyTo::Client(client), _) => {
                if let Some(mailbox) = self.clients.get(*client as usize).and_then(Option::as_ref) {
                    mailbox.send(reply);
                }
            }
            (ReplyTo::Oneshot(_), Some(tx)) => {
                let _ = tx.send(reply);
            }
            _ => {
                if let Some(fifo) = &self.fifo {
                    let _ = fifo.send(reply);
                }
            }
        }
    }

    fn serve_write(&mut self, mut request: Request) -> Result<(), String> {
        let op = request.op;
        self.delay.before(Hop::WOKE);
        self.probe.mark_on_cpu(op, Hop::WOKE);
        // The reply sender stays outside `catch_unwind`, so a panic can still
        // be answered with its message.
        let oneshot = request.reply.take();
        let outcome = catch_unwind(AssertUnwindSafe(|| self.perform(op, &request.work)));
        let (reply, poisoned) = match outcome {
            Ok(reply) => (reply, None),
            Err(payload) => self.poisoned(payload.as_ref()),
        };
        self.delay.before(Hop::REPLIED);
        self.probe.mark(op, Hop::REPLIED);
        self.answer(&request.reply, oneshot, reply);
        // The request's destructor is this operation's work too: the mark
        // that closes the writer's cycle comes after it, just before the
        // wait for the next request.
        drop(request);
        self.delay.before(Hop::IDLE);
        self.probe.mark(op, Hop::IDLE);
        poisoned.map_or(Ok(()), Err)
    }

    fn perform(&mut self, op: hopscope_probe::OpId, work: &Work) -> Reply {
        match work {
            Work::Execute { sql, params } => {
                let result = execute(&self.conn, sql, params);
                self.delay.before(Hop::EXECUTED);
                self.probe.mark(op, Hop::EXECUTED);
                let outcome = self.outcome(result);
                self.delay.before(Hop::HARVESTED);
                self.probe.mark(op, Hop::HARVESTED);
                outcome.map(Done::One).map_err(Failed::from)
            }
            Work::Batch(statements) => {
                let result = self.batch(statements);
                // An injected delay is honoured on every shape: a batch's
                // `executed` and `harvested` marks wait like a single's.
                self.delay.before(Hop::EXECUTED);
                self.probe.mark(op, Hop::EXECUTED);
                self.delay.before(Hop::HARVESTED);
                self.probe.mark(op, Hop::HARVESTED);
                result.map(Done::Batch).map_err(Failed::from)
            }
            Work::Panic => panic!("injected fault: writer thread panic"),
        }
    }

    /// A statement's outcome with the tables it changed. A failed
    /// statement's tables (rows it changed before it failed, rolled back)
    /// are taken too and dropped, so the next statement starts empty.
    pub(crate) fn outcome(&self, result: Result<(u64, i64), WriteError>) -> Result<WriteOutcome, WriteError> {
        let tables = if self.knobs.harvest { self.harvest.take() } else { harvest::Tables::default() };
        result.map(|(changes, last_insert_rowid)| WriteOutcome { changes, last_insert_rowid, tables })
    }

    /// All statements in one transaction; any failure rolls back all of them.
    fn batch(&self, statements: &[(Sql, Vec<crate::value::Value>)]) -> Result<Vec<WriteOutcome>, WriteError> {
        let begin: Sql = "BEGIN IMMEDIATE".into();
        self.conn.execute_batch(begin.as_str()).map_err(|source| WriteError::Sqlite { sql: begin, source })?;
        let mut outcomes = Vec::with_capacity(statements.len());
        for (sql, params) in statements {
            match self.outcome(execute(&self.conn, sql, params)) {
                Ok(outcome) => outcomes.push(outcome),
                Err(err) => {
                    // The rollback error, if any, is less useful than the
                    // statement's own error.
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(err);
                }
            }
        }
        let commit: Sql = "COMMIT".into();
        if let Err(source) = self.conn.execute_batch(commit.as_str()) {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(WriteError::Sqlite { sql: commit, source });
        }
        Ok(outcomes)
    }

    /// A request panicked: remember why, and answer it with the panic.
    #[cold]
    pub(crate) fn poisoned(&self, payload: &(dyn std::any::Any + Send)) -> (Reply, Option<String>) {
        let message = panic_message(payload);
        let _ = self.shared.panic.set(message.clone());
        (Err(WriteError::WriterPanicked { message: message.clone() }.into()), Some(message))
    }

    /// After a panic: answer every request still queued with the panic.
    #[cold]
    fn fail_queued(&mut self, message: &str) {
        while let TryRecv::Got(queued) = self.rx.try_recv() {
            let error = || WriteError::WriterPanicked { message: message.to_owned() };
            match queued {
                Message::Write(mut request) => {
                    let oneshot = request.reply.take();
                    self.answer(&request.reply, oneshot, Err(error().into()));
                }
                // A caller registering now must still hear back.
                control @ Message::Register { .. } => self.serve_control(control),
                _ => {}
            }
        }
    }
}

/// Execute one statement with a cached prepared statement.
#[inline]
pub(crate) fn execute(conn: &Connection, sql: &Sql, params: &[crate::value::Value]) -> Result<(u64, i64), WriteError> {
    let run = || -> rusqlite::Result<(u64, i64)> {
        let mut statement = conn.prepare_cached(sql.as_str())?;
        let changes = statement.execute(rusqlite::params_from_iter(params.iter()))?;
        Ok((changes as u64, conn.last_insert_rowid()))
    };
    run().map_err(|source| WriteError::Sqlite { sql: sql.clone(), source })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

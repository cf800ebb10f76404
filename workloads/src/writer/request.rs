//! What travels between caller and writer thread.

use hopscope_harness::HandIn;
use hopscope_probe::OpId;

use crate::channel::Tx;
use crate::error::WriteError;
use crate::value::{Sql, Value};
use crate::writer::harvest::Tables;

/// What one successful statement did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteOutcome {
    /// Rows changed (SQLite's `changes()`).
    pub changes: u64,
    /// `last_insert_rowid()` after the statement.
    pub last_insert_rowid: i64,
    /// Tables the statement changed (empty when harvest is off).
    pub tables: Tables,
}

/// A reply: one outcome, the outcomes of a batch, or the error.
pub(crate) type Reply = Result<Done, Failed>;

/// A reply's error, boxed: errors are rare, and a reply that carries a bare
/// [`WriteError`] (88 bytes) is moved through the writer's answer, the
/// mailbox and the caller's return at twice the size of an outcome.
#[derive(Debug)]
pub(crate) struct Failed(pub(crate) Box<WriteError>);

impl From<WriteError> for Failed {
    #[cold]
    fn from(error: WriteError) -> Failed {
        Failed(Box::new(error))
    }
}

/// The successful half of a [`Reply`].
#[derive(Debug)]
pub(crate) enum Done {
    One(WriteOutcome),
    Batch(Vec<WriteOutcome>),
}

/// The work a request asks for.
#[derive(Debug)]
pub(crate) enum Work {
    Execute {
        sql: Sql,
        params: Vec<Value>,
    },
    Batch(Vec<(Sql, Vec<Value>)>),
    /// Panic on the writer thread (fault injection for tests).
    Panic,
}

/// A write request.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) op: OpId,
    pub(crate) work: Work,
    pub(crate) reply: ReplyTo,
}

/// Where the writer sends a request's reply.
#[derive(Debug)]
pub(crate) enum ReplyTo {
    /// The request's own channel. If the request is dropped unanswered (the
    /// writer panicked or stopped with it queued), the drop sends an error,
    /// so its caller never waits forever.
    Oneshot(Option<Tx<Reply>>),
    /// The calling thread's registered reply channel, by client index.
    Client(u32),
    /// The writer's persistent reply channel, in FIFO order.
    Fifo,
}

impl ReplyTo {
    /// Take the one-shot sender, leaving nothing for `Drop` to answer.
    pub(crate) fn take(&mut self) -> Option<Tx<Reply>> {
        match self {
            ReplyTo::Oneshot(tx) => tx.take(),
            ReplyTo::Client(_) | ReplyTo::Fifo => None,
        }
    }
}

impl Drop for ReplyTo {
    fn drop(&mut self) {
        if let ReplyTo::Oneshot(Some(tx)) = self {
            let error = if std::thread::panicking() {
                WriteError::WriterPanicked { message: "panicked while holding this request".to_owned() }
            } else {
                WriteError::WriterStopped
            };
            // The caller may be gone too; nothing else to do then.
            let _ = tx.send(Err(error.into()));
        }
    }
}

/// Everything the writer thread can be sent.
#[derive(Debug)]
pub(crate) enum Message {
    Write(Request),
    /// A caller thread's reply channel, to be answered on as `client`.
    Register {
        client: u32,
        reply: crate::mailbox::Sender<Reply>,
    },
    /// The caller thread behind `client` has exited.
    Unregister {
        client: u32,
    },
    /// Hand the writer thread's marks and CPU time in (as
    /// [`crate::WRITER_ROLE`]), and answer when done.
    HandIn {
        hand_in: HandIn,
        done: Tx<()>,
    },
}

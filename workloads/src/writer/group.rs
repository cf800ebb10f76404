//! Group commit: the writer runs the requests queued behind the one that
//! woke it in one transaction, and replies to each.
//!
//! Per group, with the hop marked at each step (`*`: marked once, under the
//! group's own id, linked to every request it serves):
//!
//! ```text
//! woke (each request as it is taken) → begin* → BEGIN IMMEDIATE → began*
//!   → per request: executing → statement → executed → harvested
//!   → commit* → COMMIT → committed* → per request: replied → idle*
//! ```
//!
//! Only single statements share a transaction: a multi-statement request
//! (which has its own) or a control message ends the group, and is served
//! after it on its own.

use std::panic::{AssertUnwindSafe, catch_unwind};

use hopscope_probe::{Hop, OpId, Probe, local};

use crate::error::WriteError;
use crate::receive::TryRecv;
use crate::value::Sql;
use crate::writer::hops::GroupHops;
use crate::writer::request::{Done, Message, Reply, Request, Work};
use crate::writer::thread::{WriterThread, execute};

/// A request taken into the group, with what it has got so far.
pub(crate) struct Member {
    request: Request,
    /// Its reply: its statement's outcome, or why it failed.
    reply: Option<Reply>,
}

impl<P: Probe> WriterThread<P> {
    /// Serve `first` and everything queued behind it, in groups of up to
    /// the knob's size; `Err` carries a panic's message.
    pub(crate) fn serve_grouped(&mut self, first: Message) -> Result<(), String> {
        let mut next = Some(first);
        while let Some(message) = next.take() {
            let (mut group, rest) = self.gather(message);
            if !group.is_empty() {
                self.run_group(&mut group)?;
            }
            if let Some(message) = rest {
                self.serve(message)?;
                if let TryRecv::Got(queued) = self.rx.try_recv() {
                    next = Some(queued);
                }
            }
        }
        Ok(())
    }

    /// Take single statements, `first` and the ones queued behind it, up to
    /// the group's size; the group and the message that ended it, if any.
    fn gather(&mut self, first: Message) -> (Vec<Member>, Option<Message>) {
        let mut group = Vec::with_capacity(self.knobs.group_commit.size());
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Write(request) if matches!(request.work, Work::Execute { .. }) => {
                    self.delay.before(Hop::WOKE);
                    self.probe.mark_on_cpu(request.op, Hop::WOKE);
                    group.push(Member { request, reply: None });
                    if group.len() < self.knobs.group_commit.size()
                        && let TryRecv::Got(queued) = self.rx.try_recv()
                    {
                        next = Some(queued);
                    }
                }
                other => return (group, Some(other)),
            }
        }
        (group, None)
    }

    /// Run `group` in one transaction and reply to each member; `Err`
    /// carries a panic's message (every member answered with it).
    fn run_group(&mut self, group: &mut Vec<Member>) -> Result<(), String> {
        let batch = if P::RECORDS { local::next_op() } else { OpId(0) };
        for member in group.iter() {
            self.probe.serves(batch, member.request.op);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| self.transact(batch, group)));
        let poisoned = match outcome {
            Ok(()) => None,
            Err(payload) => {
                let (reply, message) = self.poisoned(payload.as_ref());
                let error = match reply {
                    Err(failed) => *failed.0,
                    Ok(_) => WriteError::WriterPanicked { message: message.clone().unwrap_or_default() },
                };
                for member in group.iter_mut() {
                    member.reply = Some(Err(clone_error(&error).into()));
                }
                message
            }
        };
        for member in group.iter_mut() {
            let reply = member.reply.take().unwrap_or_else(|| Err(WriteError::WriterStopped.into()));
            let oneshot = member.request.reply.take();
            self.delay.before(Hop::REPLIED);
            self.probe.mark(member.request.op, Hop::REPLIED);
            self.answer(&member.request.reply, oneshot, reply);
        }
        group.clear();
        self.delay.before(Hop::IDLE);
        self.probe.mark(batch, Hop::IDLE);
        poisoned.map_or(Ok(()), Err)
    }

    /// BEGIN, each member's statement, COMMIT: each member's reply set.
    fn transact(&mut self, batch: OpId, group: &mut [Member]) {
        self.delay.before(GroupHops::BEGIN);
        self.probe.mark(batch, GroupHops::BEGIN);
        let begun = self.conn.execute_batch("BEGIN IMMEDIATE");
        self.delay.before(GroupHops::BEGAN);
        self.probe.mark(batch, GroupHops::BEGAN);
        if let Err(source) = begun {
            let error = WriteError::Sqlite { sql: Sql::from("BEGIN IMMEDIATE"), source };
            for member in group.iter_mut() {
                member.reply = Some(Err(clone_error(&error).into()));
            }
            return;
        }
        for member in group.iter_mut() {
            let op = member.request.op;
            self.delay.before(GroupHops::EXECUTING);
            self.probe.mark(op, GroupHops::EXECUTING);
            let Work::Execute { sql, params } = &member.request.work else { continue };
            let result = execute(&self.conn, sql, params);
            self.delay.before(Hop::EXECUTED);
            self.probe.mark(op, Hop::EXECUTED);
            let outcome = self.outcome(result);
            self.delay.before(Hop::HARVESTED);
            self.probe.mark(op, Hop::HARVESTED);
            member.reply = Some(outcome.map(Done::One).map_err(Into::into));
        }
        self.delay.before(GroupHops::COMMIT);
        self.probe.mark(batch, GroupHops::COMMIT);
        let committed = self.conn.execute_batch("COMMIT");
        self.delay.before(GroupHops::COMMITTED);
        self.probe.mark(batch, GroupHops::COMMITTED);
        if let Err(source) = committed {
            // Nothing of the group was applied: every member hears why.
            let _ = self.conn.execute_batch("ROLLBACK");
            let error = WriteError::Sqlite { sql: Sql::from("COMMIT"), source };
            for member in group.iter_mut() {
                member.reply = Some(Err(clone_error(&error).into()));
            }
        }
    }
}

/// One error for several callers: its message and kind, as each needs its
/// own copy (rusqlite's error is not `Clone`).
fn clone_error(error: &WriteError) -> WriteError {
    match error {
        WriteError::WriterPanicked { message } => WriteError::WriterPanicked { message: message.clone() },
        WriteError::WriterStopped => WriteError::WriterStopped,
        other => WriteError::Group { reason: other.to_string() },
    }
}

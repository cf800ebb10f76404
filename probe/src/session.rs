//! Sessions: where each thread's drained marks are gathered between blocks.
//!
//! Each participating thread drains its own buffer into the session at a
//! block boundary ([`Session::collect`], which takes a lock: never call it
//! inside a measured region). The runner then takes the gathered streams
//! ([`Session::take`]) and writes them into one trace block.

use std::sync::{Arc, Mutex, PoisonError};

use crate::hop::Mark;
use crate::local;
use crate::trace::Stream;

/// A cloneable handle shared by the threads of one run.
#[derive(Debug, Clone, Default)]
pub struct Session {
    pending: Arc<Mutex<Vec<Stream>>>,
}

impl Session {
    /// A session with nothing gathered yet.
    pub fn new() -> Session {
        Session::default()
    }

    /// Give the current thread a buffer of `capacity` marks; see
    /// [`local::attach`].
    pub fn attach(&self, capacity: usize) {
        local::attach(capacity);
    }

    /// Drain the current thread's buffer into the session as the stream of
    /// `thread` (an index into the trace header's thread names). Marks from
    /// several collects of the same thread are appended to one stream.
    pub fn collect(&self, thread: u16) {
        let mut marks: Vec<Mark> = Vec::new();
        let dropped = local::drain_into(&mut marks);
        self.give(thread, marks, dropped);
    }

    /// Add `marks` made elsewhere (drained from a [`crate::collector::Collector`],
    /// on a thread that runs none of hopscope's code) to the stream of
    /// `thread`, with `dropped` marks lost on the way.
    pub fn give(&self, thread: u16, mut marks: Vec<Mark>, dropped: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match pending.iter_mut().find(|s| s.thread == thread) {
            Some(stream) => {
                stream.marks.append(&mut marks);
                stream.dropped += dropped;
            }
            None => pending.push(Stream { thread, dropped, marks }),
        }
    }

    /// Take every stream gathered since the last take, ordered by thread.
    pub fn take(&self) -> Vec<Stream> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let mut streams = std::mem::take(&mut *pending);
        streams.sort_by_key(|s| s.thread);
        streams
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::{Hop, OpId};
    use crate::probe::{Probe, Recording};

    #[test]
    fn marks_from_two_threads_gather_into_two_streams() {
        let session = Session::new();
        let writer = {
            let session = session.clone();
            std::thread::spawn(move || {
                session.attach(8);
                Recording.mark(OpId(7), Hop::WOKE);
                Recording.mark(OpId(7), Hop::REPLIED);
                session.collect(1);
            })
        };
        session.attach(8);
        Recording.mark(OpId(7), Hop::SENT);
        writer.join().expect("writer thread");
        Recording.mark(OpId(7), Hop::RECEIVED);
        session.collect(0);

        let streams = session.take();
        assert_eq!(streams.len(), 2);
        assert_eq!(streams[0].thread, 0);
        assert_eq!(streams[0].marks.len(), 2);
        assert_eq!(streams[1].thread, 1);
        assert!(streams.iter().flat_map(|s| &s.marks).all(|m| m.op == OpId(7)));
        assert!(session.take().is_empty());
    }
}

//! What a receive can return: a message, nothing queued yet, or the end.
//! The channels, the request queue and the reply mailbox all answer in
//! these words, so none of them needs another's.

/// The receiving side is gone; nothing sent will ever be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Disconnected;

/// Outcome of a non-blocking receive.
#[derive(Debug)]
pub(crate) enum TryRecv<T> {
    /// A message.
    Got(T),
    /// Nothing queued right now.
    Empty,
    /// Every sender is gone and the queue is empty.
    Closed,
}

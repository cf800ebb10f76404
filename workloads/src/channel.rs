//! The three channel implementations behind one type, and keep-warm waiting.
//!
//! Dispatch is an enum match: one predictable branch per send or receive,
//! cheaper than a trait object and the same for every knob setting.

use std::sync::mpsc;

use crate::knobs::{ChannelKind, Wait};
use crate::queue::{self, QueueRx, QueueTx};
use crate::receive::{Disconnected, TryRecv};

/// Sending half of a channel of either kind.
#[derive(Debug)]
pub(crate) enum Tx<T> {
    /// `std::sync::mpsc`.
    Std(mpsc::Sender<T>),
    /// `crossbeam-channel`.
    Crossbeam(crossbeam_channel::Sender<T>),
    /// A queue whose receiver parks at once ([`crate::queue`]).
    Parking(QueueTx<T>),
}

/// Receiving half of a channel of either kind.
#[derive(Debug)]
pub(crate) enum Rx<T> {
    /// `std::sync::mpsc`.
    Std(mpsc::Receiver<T>),
    /// `crossbeam-channel`.
    Crossbeam(crossbeam_channel::Receiver<T>),
    /// A queue whose receiver parks at once ([`crate::queue`]).
    Parking(QueueRx<T>),
}

impl<T> Clone for Tx<T> {
    fn clone(&self) -> Self {
        match self {
            Tx::Std(tx) => Tx::Std(tx.clone()),
            Tx::Crossbeam(tx) => Tx::Crossbeam(tx.clone()),
            Tx::Parking(tx) => Tx::Parking(tx.clone()),
        }
    }
}

/// An unbounded channel of the given kind.
pub(crate) fn unbounded<T>(kind: ChannelKind) -> (Tx<T>, Rx<T>) {
    match kind {
        ChannelKind::Std => {
            let (tx, rx) = mpsc::channel();
            (Tx::Std(tx), Rx::Std(rx))
        }
        ChannelKind::Crossbeam => {
            let (tx, rx) = crossbeam_channel::unbounded();
            (Tx::Crossbeam(tx), Rx::Crossbeam(rx))
        }
        ChannelKind::Parking => parking(),
    }
}

/// A channel for exactly one message (a per-call reply).
pub(crate) fn oneshot<T>(kind: ChannelKind) -> (Tx<T>, Rx<T>) {
    match kind {
        ChannelKind::Std => {
            let (tx, rx) = mpsc::channel();
            (Tx::Std(tx), Rx::Std(rx))
        }
        ChannelKind::Crossbeam => {
            let (tx, rx) = crossbeam_channel::bounded(1);
            (Tx::Crossbeam(tx), Rx::Crossbeam(rx))
        }
        ChannelKind::Parking => parking(),
    }
}

fn parking<T>() -> (Tx<T>, Rx<T>) {
    let (tx, rx) = queue::queue();
    (Tx::Parking(tx), Rx::Parking(rx))
}

impl<T> Tx<T> {
    /// Send without blocking (both kinds are unbounded or sized for one).
    #[inline]
    pub(crate) fn send(&self, value: T) -> Result<(), Disconnected> {
        match self {
            Tx::Std(tx) => tx.send(value).map_err(|_| Disconnected),
            Tx::Crossbeam(tx) => tx.send(value).map_err(|_| Disconnected),
            Tx::Parking(tx) => tx.send(value),
        }
    }
}

impl<T> Rx<T> {
    /// Take a queued message if there is one.
    #[inline]
    pub(crate) fn try_recv(&self) -> TryRecv<T> {
        match self {
            Rx::Std(rx) => match rx.try_recv() {
                Ok(v) => TryRecv::Got(v),
                Err(mpsc::TryRecvError::Empty) => TryRecv::Empty,
                Err(mpsc::TryRecvError::Disconnected) => TryRecv::Closed,
            },
            Rx::Crossbeam(rx) => try_crossbeam(rx),
            Rx::Parking(rx) => rx.try_recv(),
        }
    }

    /// Block until a message arrives.
    #[inline]
    pub(crate) fn recv(&self) -> Result<T, Disconnected> {
        match self {
            Rx::Std(rx) => rx.recv().map_err(|_| Disconnected),
            Rx::Crossbeam(rx) => rx.recv().map_err(|_| Disconnected),
            Rx::Parking(rx) => rx.recv(),
        }
    }

    /// Wait for a message the way `wait` says: park at once, or poll
    /// (spinning or yielding) for a window before parking.
    #[inline]
    pub(crate) fn recv_with(&self, wait: Wait) -> Result<T, Disconnected> {
        wait_for(wait, || self.try_recv(), || self.recv())
    }
}

/// Keep-warm waiting over any channel: `try_recv` polls, `recv` parks
/// (see [`crate::wait`]).
#[inline]
pub(crate) fn wait_for<T>(
    wait: Wait,
    try_recv: impl Fn() -> TryRecv<T>,
    recv: impl FnOnce() -> Result<T, Disconnected>,
) -> Result<T, Disconnected> {
    let poll = || match try_recv() {
        TryRecv::Got(v) => Some(Ok(v)),
        TryRecv::Closed => Some(Err(Disconnected)),
        TryRecv::Empty => None,
    };
    crate::wait::wait(wait, poll, recv)
}

/// Poll a crossbeam receiver in the [`TryRecv`] vocabulary.
#[inline]
pub(crate) fn try_crossbeam<T>(rx: &crossbeam_channel::Receiver<T>) -> TryRecv<T> {
    match rx.try_recv() {
        Ok(v) => TryRecv::Got(v),
        Err(crossbeam_channel::TryRecvError::Empty) => TryRecv::Empty,
        Err(crossbeam_channel::TryRecvError::Disconnected) => TryRecv::Closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_kind_and_wait_delivers_in_order_and_reports_closure() {
        for kind in [ChannelKind::Std, ChannelKind::Crossbeam, ChannelKind::Parking] {
            for wait in [
                Wait::Park,
                Wait::Spin(Duration::from_micros(50)),
                Wait::Yield(Duration::from_micros(50)),
                Wait::Tick(Duration::from_micros(50)),
                Wait::Adaptive(Duration::from_micros(50), None),
            ] {
                let (tx, rx) = unbounded::<u32>(kind);
                let producer = std::thread::spawn(move || {
                    for i in 0..100 {
                        tx.send(i).expect("receiver alive");
                    }
                });
                let got: Vec<u32> = (0..100).map(|_| rx.recv_with(wait).expect("message")).collect();
                producer.join().expect("producer");
                assert_eq!(got, (0..100).collect::<Vec<_>>());
                assert_eq!(rx.recv_with(wait), Err(Disconnected));
            }
        }
    }
}

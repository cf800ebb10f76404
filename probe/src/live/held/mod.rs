//! Marks a live capture holds until their operation is done.
//!
//! A block must hold each operation whole: the analyzer joins an
//! operation's marks within one block and reports one split across two as
//! incomplete. A running program never says when an operation is done, so
//! an operation counts as done once no mark of it has arrived for the
//! capture's settle time. A shared interval and the operations it serves
//! (its links) are one group and are done together, so a batch and its
//! members always land in the same block.
//!
//! Cost: one hash look-up per mark on arrival and one per mark per sweep;
//! a sweep runs about twice per settle time, so a mark is looked up about
//! three times.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::clock::Ticks;
use crate::hop::{Hop, Mark, OpId};

/// One operation's place in its group, and, for a group's root, the
/// group's figures.
#[derive(Debug, Clone, Copy)]
struct Op {
    /// The op its group is rooted at (itself for a root).
    root: u64,
    /// A root's: when a mark of the group last arrived (the engine's clock,
    /// ns since the capture started).
    last_arrival: u64,
    /// A root's: the group's earliest mark, ticks.
    first_tick: u64,
    /// Whether a link names this op as a shared interval.
    shared: bool,
    /// Whether this op has marks of hops of its own (not only links: a
    /// member a sampling capture left out has none).
    own: bool,
    /// A root's: whether any op of the group has marks of hops. A group of
    /// links only (an interval left out, serving left-out members) is
    /// dropped whole.
    marked: bool,
}

/// A mark held for its operation, with the thread role that made it:
/// the mark's fields laid out beside the role (24 bytes, where a `Mark`
/// and a role beside it take 32), since the drain holds hundreds of
/// thousands.
#[derive(Debug, Clone, Copy)]
pub(super) struct HeldMark {
    op: u64,
    ticks: u64,
    hop: u16,
    cpu: u16,
    thread: u16,
}

impl HeldMark {
    pub(super) fn new(thread: u16, mark: Mark) -> HeldMark {
        HeldMark { op: mark.op.0, ticks: mark.ticks.0, hop: mark.hop.0, cpu: mark.cpu, thread }
    }

    /// The mark as made.
    pub(super) fn mark(&self) -> Mark {
        Mark { op: OpId(self.op), hop: Hop(self.hop), cpu: self.cpu, ticks: Ticks(self.ticks) }
    }

    /// The thread role that made it.
    pub(super) fn thread(&self) -> u16 {
        self.thread
    }
}

/// Which operations a sweep hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sweep {
    /// Those that have settled.
    Settled,
    /// All: the held marks reached their cap (those not settled are cut).
    AtCap,
    /// All: the capture ends, every mark is in.
    AtEnd,
}

/// The held marks and their operations.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Marks by the drain that brought them (its arrival time), oldest
    /// first: a sweep looks only at those old enough to be done.
    arrived: VecDeque<(u64, Vec<HeldMark>)>,
    /// Marks of operations still open when their drain's marks aged: a
    /// long operation's, looked at again each sweep.
    waiting: Vec<HeldMark>,
    ops: FxHashMap<u64, Op>,
    /// Marks held now.
    len: usize,
    /// The most marks held at once.
    pub(super) peak: usize,
}

/// How many parent steps a look-up follows before it stops: groups are a
/// root and its members, so two is the most a real one needs.
const MAX_DEPTH: usize = 64;

impl Held {
    /// Marks held now.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Hold `marks`, made by thread role `thread`, arrived at `now`.
    pub(super) fn add(&mut self, thread: u16, marks: &[Mark], now: u64) {
        // The interval the last left-out member's link named: a batch's
        // links come together, and a second one of an interval at the same
        // `now` changes nothing, so only the first is looked up.
        let mut last_interval = None;
        // The last operation marked and its group's root, while no link
        // that could join groups has come since (a left-out member's link
        // only touches its interval's group).
        let mut last_touched: Option<(u64, u64)> = None;
        for &mark in marks {
            if mark.is_unsampled_link() {
                // A left-out member is no operation of the capture: its
                // link belongs to its interval's group alone (one entry
                // per batch, not one per operation the sampling left out).
                if last_interval != Some(mark.ticks.0) {
                    self.shared(mark.ticks.0, now);
                    last_interval = Some(mark.ticks.0);
                }
            } else if mark.is_link() {
                // A link can join two groups: the root known may change.
                self.link(mark.ticks.0, mark.op.0, now);
                last_touched = None;
            } else if let Some(root) = last_touched.filter(|&(op, _)| op == mark.op.0).map(|(_, root)| root) {
                // The same operation's next mark (a thread marks one
                // operation's hops back to back): its group is known.
                self.touch_root(root, mark.ticks.0, now);
            } else {
                let root = self.touch(mark.op.0, Some(mark.ticks.0), now);
                last_touched = Some((mark.op.0, root));
            }
        }
        let batch = match self.arrived.back_mut() {
            Some((arrival, batch)) if *arrival == now => batch,
            _ => {
                self.arrived.push_back((now, Vec::with_capacity(marks.len())));
                &mut self.arrived.back_mut().expect("just pushed").1
            }
        };
        batch.extend(marks.iter().map(|&mark| HeldMark::new(thread, mark)));
        self.len += marks.len();
        self.peak = self.peak.max(self.len);
    }

    /// The root of `op`'s group, adding `op` as a root of its own if new.
    fn root(&mut self, op: u64, now: u64) -> u64 {
        let mut at = op;
        for _ in 0..MAX_DEPTH {
            match self.ops.get(&at) {
                Some(state) if state.root == at => return at,
                Some(state) => at = state.root,
                None => {
                    let op = Op {
                        root: at,
                        last_arrival: now,
                        first_tick: u64::MAX,
                        shared: false,
                        own: false,
                        marked: false,
                    };
                    self.ops.insert(at, op);
                    return at;
                }
            }
        }
        at
    }

    /// A mark of `op` arrived at `now`, made at `tick` (none for a link).
    /// Returns its group's root.
    fn touch(&mut self, op: u64, tick: Option<u64>, now: u64) -> u64 {
        let root = self.root(op, now);
        if tick.is_some()
            && let Some(state) = self.ops.get_mut(&op)
        {
            state.own = true;
        }
        match tick {
            Some(tick) => self.touch_root(root, tick, now),
            None => {
                if let Some(state) = self.ops.get_mut(&root) {
                    state.last_arrival = state.last_arrival.max(now);
                }
            }
        }
        root
    }

    /// A mark made at `tick` arrived at `now` for the group rooted at
    /// `root`.
    fn touch_root(&mut self, root: u64, tick: u64, now: u64) {
        if let Some(state) = self.ops.get_mut(&root) {
            state.last_arrival = state.last_arrival.max(now);
            state.first_tick = state.first_tick.min(tick);
            state.marked = true;
        }
    }

    /// A link from a left-out member arrived for `shared` at `now`.
    fn shared(&mut self, shared: u64, now: u64) {
        self.touch(shared, None, now);
        if let Some(state) = self.ops.get_mut(&shared) {
            state.shared = true;
        }
    }

    /// A link: `member` is served by `shared`; their groups become one.
    fn link(&mut self, shared: u64, member: u64, now: u64) {
        let (a, b) = (self.root(shared, now), self.root(member, now));
        if let Some(state) = self.ops.get_mut(&shared) {
            state.shared = true;
        }
        if a == b {
            self.touch(a, None, now);
            return;
        }
        let (Some(&sa), Some(&sb)) = (self.ops.get(&a), self.ops.get(&b)) else { return };
        if let Some(state) = self.ops.get_mut(&a) {
            state.last_arrival = sa.last_arrival.max(sb.last_arrival).max(now);
            state.first_tick = sa.first_tick.min(sb.first_tick);
            state.marked = sa.marked || sb.marked;
        }
        if let Some(state) = self.ops.get_mut(&b) {
            state.root = a;
        }
    }

    /// Hand on to `sink` every operation whose group has had no mark since
    /// `now - settle` (every one, when the sweep is not [`Sweep::Settled`]),
    /// and forget them; returns how many were cut (handed on unsettled at
    /// the cap). Only marks that arrived before `now - settle` can be done,
    /// so only those are looked at: a mark is looked up about once.
    pub(super) fn sweep(&mut self, now: u64, settle: u64, mode: Sweep, sink: &mut impl Sink) -> u64 {
        let all = mode != Sweep::Settled;
        let done_at = |op: &Op| all || op.last_arrival.saturating_add(settle) <= now;
        // The marks still waiting, then each drain's old enough to be
        // done, looked at where they lie (not copied into one list).
        let mut candidates = vec![std::mem::take(&mut self.waiting)];
        while let Some((arrival, _)) = self.arrived.front() {
            if !all && arrival.saturating_add(settle) > now {
                break;
            }
            let (_, batch) = self.arrived.pop_front().expect("looked at");
            candidates.push(batch);
        }
        // Each done mark's op, with its group's first tick.
        let mut done: Vec<(u64, u64)> = Vec::new();
        // The last key looked up and what its group said: an operation's
        // marks, and a batch's links, come together, and nothing changes
        // the groups until the loop ends.
        let mut last: Option<(u64, Found)> = None;
        for held in candidates.into_iter().flatten() {
            let key = group_key(&held.mark());
            let found = match last {
                Some((k, found)) if k == key => found,
                _ => {
                    let found = match find(&self.ops, key) {
                        Some(group) if done_at(group) => {
                            Found::Done { first_tick: group.first_tick, marked: group.marked }
                        }
                        Some(_) => Found::Open,
                        None => Found::TooDeep,
                    };
                    if matches!(found, Found::Done { .. }) {
                        done.push((key, found.first_tick()));
                    }
                    last = Some((key, found));
                    found
                }
            };
            match found {
                Found::Done { first_tick, marked } => {
                    // A group of links only has nothing to analyse.
                    if marked {
                        sink.mark(held, first_tick);
                    }
                    self.len -= 1;
                }
                Found::Open => self.waiting.push(held),
                // Only a group deeper than any real one: hand it on.
                Found::TooDeep => {
                    sink.mark(held, u64::MAX);
                    self.len -= 1;
                }
            }
        }
        self.forget(done, now, settle, mode == Sweep::AtCap, sink)
    }

    /// Forget the done operations `done` (op, group's first tick) and their
    /// groups' roots (a shared interval linked to but never marked has no
    /// mark of its own); hand each with marks of its own that is no shared
    /// interval to `sink`.
    /// Returns the roots cut: not settled at `now`, when `counts_cut`.
    fn forget(
        &mut self,
        mut done: Vec<(u64, u64)>,
        now: u64,
        settle: u64,
        counts_cut: bool,
        sink: &mut impl Sink,
    ) -> u64 {
        let mut cut = 0;
        while let Some((id, first_tick)) = done.pop() {
            // A second mark of one op finds it gone.
            let Some(op) = self.ops.remove(&id) else { continue };
            if op.root != id {
                done.push((op.root, first_tick));
            } else if counts_cut && op.last_arrival.saturating_add(settle) > now {
                cut += 1;
            }
            if op.own && !op.shared {
                sink.operation(first_tick);
            }
        }
        cut
    }
}

/// What a sweep found of a held mark's group.
#[derive(Debug, Clone, Copy)]
enum Found {
    /// Settled (or the sweep takes all): its first tick, and whether any
    /// of it has marks of hops.
    Done { first_tick: u64, marked: bool },
    /// Not settled yet.
    Open,
    /// Deeper than any real group.
    TooDeep,
}

impl Found {
    fn first_tick(self) -> u64 {
        match self {
            Found::Done { first_tick, .. } => first_tick,
            Found::Open | Found::TooDeep => u64::MAX,
        }
    }
}

/// Where a sweep hands done operations: each mark with its group's first
/// tick, then each operation (no shared interval) by its group's first
/// tick.
pub(super) trait Sink {
    /// A mark of a done operation.
    fn mark(&mut self, held: HeldMark, first_tick: u64);
    /// A done operation.
    fn operation(&mut self, first_tick: u64);
}

/// The op whose group a mark belongs to: its own, or for a left-out
/// member's link, its interval's.
fn group_key(mark: &Mark) -> u64 {
    if mark.is_unsampled_link() { mark.ticks.0 } else { mark.op.0 }
}

/// The group root of `op` in `ops`, without adding anything.
fn find(ops: &FxHashMap<u64, Op>, op: u64) -> Option<&Op> {
    let mut at = op;
    for _ in 0..MAX_DEPTH {
        let state = ops.get(&at)?;
        if state.root == at {
            return Some(state);
        }
        at = state.root;
    }
    None
}

/// What a sweep handed on, gathered (the tests' sink).
#[cfg(test)]
#[derive(Debug, Default)]
pub(super) struct Done {
    /// Marks of done operations, each with its group's first tick.
    pub(super) marks: Vec<(HeldMark, u64)>,
    /// Done operations' first ticks.
    pub(super) ops: Vec<u64>,
    /// Operations cut.
    pub(super) cut: u64,
}

#[cfg(test)]
impl Sink for Done {
    fn mark(&mut self, held: HeldMark, first_tick: u64) {
        self.marks.push((held, first_tick));
    }

    fn operation(&mut self, first_tick: u64) {
        self.ops.push(first_tick);
    }
}

#[cfg(test)]
mod tests;

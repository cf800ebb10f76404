//! Done operations into blocks, one stretch of time at a time.
//!
//! A window is the capture's unit of comparison (every K seconds): its
//! blocks carry the window's index as their pass, so a capture of an hour
//! is analysed, and compared, window by window. Within a window, blocks
//! are a twentieth of it each (the analyzer's confidence intervals are over
//! blocks). An operation belongs to the block of its group's first mark.
//! A block is written once its stretch has ended and its operations have
//! had time to settle, or sooner when it holds a block's worth of marks.
//! A capture too short for [`MIN_BLOCKS`] blocks has its last ones cut by
//! operation count at the end, as a capture held whole would be.

use std::collections::BTreeMap;

use super::held::{HeldMark, Sink};
use crate::clock::Ticks;
use crate::trace::{Block, Stream};

/// Blocks each window is cut into: half a second each in a window of ten.
const BLOCKS_PER_WINDOW: u64 = 20;

/// Blocks a capture ends with at least, when it has the operations for
/// them: enough for the analyzer's confidence intervals.
pub(super) const MIN_BLOCKS: usize = 40;

/// One block being filled: its marks, each with its group's first tick.
#[derive(Debug, Default)]
struct Filling {
    marks: Vec<(u64, HeldMark)>,
    /// Its operations' first ticks.
    ops: Vec<u64>,
    /// Marks dropped, per thread role.
    dropped: Vec<(u16, u64)>,
}

/// The blocks being filled, by the stretch of time they cover.
#[derive(Debug)]
pub(super) struct Windows {
    /// Ticks at the capture's start: window 0 begins here.
    start: u64,
    /// Ticks per block's stretch.
    stretch: u64,
    /// Marks a block holds before it is written early.
    block_marks: usize,
    open: BTreeMap<u64, Filling>,
    /// Blocks written so far: the next block's sample number.
    written: u32,
    /// The last window any block was written for.
    last_window: Option<u32>,
    /// Operations handed in so far.
    operations: u64,
}

/// A sweep's done operations, each to its stretch.
impl Sink for Windows {
    fn mark(&mut self, held: HeldMark, first_tick: u64) {
        let at = self.stretch_of(first_tick);
        self.open.entry(at).or_default().marks.push((first_tick, held));
    }

    fn operation(&mut self, first_tick: u64) {
        let at = self.stretch_of(first_tick);
        self.open.entry(at).or_default().ops.push(first_tick);
        self.operations += 1;
    }
}

impl Windows {
    /// Windows of `window` ticks from `start`, blocks of at most about
    /// `block_marks` marks.
    pub(super) fn new(start: u64, window: u64, block_marks: usize) -> Windows {
        let stretch = (window / BLOCKS_PER_WINDOW).max(1);
        Windows { start, stretch, block_marks, open: BTreeMap::new(), written: 0, last_window: None, operations: 0 }
    }

    /// The stretch `tick` falls in (before the start: the first).
    fn stretch_of(&self, tick: u64) -> u64 {
        tick.saturating_sub(self.start) / self.stretch
    }

    /// The window `tick` falls in.
    pub(super) fn window_of(&self, tick: u64) -> u32 {
        u32::try_from(self.stretch_of(tick) / BLOCKS_PER_WINDOW).unwrap_or(u32::MAX)
    }

    /// Blocks written so far.
    pub(super) fn written(&self) -> u32 {
        self.written
    }

    /// Windows the blocks written so far span.
    pub(super) fn windows(&self) -> u32 {
        self.last_window.map_or(0, |w| w.saturating_add(1))
    }

    /// Operations handed in so far.
    pub(super) fn operations(&self) -> u64 {
        self.operations
    }

    /// Count `dropped` marks of thread role `thread` at `tick`: a drop is
    /// known only when a drain finds it.
    pub(super) fn add_dropped(&mut self, thread: u16, dropped: u64, tick: u64) {
        if dropped > 0 {
            let at = self.stretch_of(tick);
            self.open.entry(at).or_default().dropped.push((thread, dropped));
        }
    }

    /// The blocks ready to write: stretches that ended before `settled`
    /// (ticks: every operation that began in them has settled), and any
    /// holding a block's worth of marks.
    pub(super) fn ready(&mut self, settled: u64) -> Vec<Block> {
        let due: Vec<u64> = self
            .open
            .iter()
            .filter(|&(&at, filling)| {
                let ends = self.start.saturating_add(self.stretch.saturating_mul(at + 1));
                ends <= settled || filling.marks.len() >= self.block_marks
            })
            .map(|(&at, _)| at)
            .collect();
        due.into_iter().filter_map(|at| self.open.remove(&at).map(|f| self.block(at, f))).collect()
    }

    /// Every block left, the last stretches cut by operation count when the
    /// capture would otherwise end with fewer than [`MIN_BLOCKS`]. A window
    /// the capture's last moments opened (its first stretch unfinished)
    /// joins the one before: a window of a few operations has no figure
    /// worth a row.
    pub(super) fn rest(&mut self) -> Vec<Block> {
        let open = std::mem::take(&mut self.open);
        let short = MIN_BLOCKS.saturating_sub(self.written as usize);
        let ops: usize = open.values().map(|f| f.ops.len()).sum();
        let last = open.keys().next_back().copied();
        let mut blocks = Vec::new();
        for (at, filling) in open {
            // Each stretch gets its share of the blocks missing, by its
            // share of the operations.
            let parts = if ops == 0 { 1 } else { (short * filling.ops.len()).div_ceil(ops).max(1) };
            let opened_at_the_end = Some(at) == last && at > 0 && at.is_multiple_of(BLOCKS_PER_WINDOW);
            let stretch = if opened_at_the_end { at - 1 } else { at };
            for part in split(filling, parts) {
                blocks.push(self.block(stretch, part));
            }
        }
        blocks
    }

    fn block(&mut self, stretch: u64, filling: Filling) -> Block {
        let window = u32::try_from(stretch / BLOCKS_PER_WINDOW).unwrap_or(u32::MAX);
        let mut streams: Vec<Stream> = Vec::new();
        let (mut start, mut end) = (u64::MAX, 0);
        for (first, held) in filling.marks {
            let mark = held.mark();
            if !mark.is_link() {
                start = start.min(first).min(mark.ticks.0);
                end = end.max(mark.ticks.0);
            }
            stream(&mut streams, held.thread()).marks.push(mark);
        }
        for (thread, dropped) in filling.dropped {
            stream(&mut streams, thread).dropped += dropped;
        }
        streams.sort_by_key(|s| s.thread);
        for stream in &mut streams {
            // A long operation's marks were handed on after later ones
            // of its thread: each stream in time order again (links carry
            // an id, not a time; a stream with links keeps its order).
            if stream.marks.iter().all(|m| !m.is_link()) {
                stream.marks.sort_by_key(|m| m.ticks);
            }
        }
        let start = if start == u64::MAX { end } else { start };
        let sample = self.written;
        self.written += 1;
        self.last_window = Some(self.last_window.map_or(window, |w| w.max(window)));
        Block {
            lane: 0,
            pass: window,
            sample,
            op_count: filling.ops.len() as u64,
            start: Ticks(start),
            end: Ticks(end.max(start)),
            streams,
            readings: Vec::new(),
        }
    }
}

/// The stream of `thread`, added empty if new.
fn stream(streams: &mut Vec<Stream>, thread: u16) -> &mut Stream {
    let at = match streams.iter().position(|s| s.thread == thread) {
        Some(at) => at,
        None => {
            streams.push(Stream { thread, dropped: 0, marks: Vec::new() });
            streams.len() - 1
        }
    };
    &mut streams[at]
}

/// `filling` cut into up to `parts` of about equal operation counts, each
/// operation (each group: one first tick) whole in one; drops go with the
/// first.
fn split(mut filling: Filling, parts: usize) -> Vec<Filling> {
    if parts <= 1 || filling.ops.len() < 2 {
        return vec![filling];
    }
    filling.ops.sort_unstable();
    let per = filling.ops.len().div_ceil(parts);
    // The first tick each part after the first begins at: never inside a
    // group, whose operations share one first tick.
    let mut bounds: Vec<u64> = filling.ops.chunks(per).skip(1).map(|c| c[0]).collect();
    bounds.dedup();
    let part_of = |first: u64| bounds.partition_point(|&b| b <= first);
    let mut out: Vec<Filling> = (0..=bounds.len()).map(|_| Filling::default()).collect();
    for first in filling.ops {
        out[part_of(first)].ops.push(first);
    }
    for (first, held) in filling.marks {
        out[part_of(first)].marks.push((first, held));
    }
    out[0].dropped = filling.dropped;
    out.retain(|f| !f.marks.is_empty() || !f.dropped.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::{Hop, Mark, OpId};
    use crate::live::held::Done;

    fn done(ops: &[(u64, u64)]) -> Done {
        Done {
            marks: ops
                .iter()
                .map(|&(op, tick)| (HeldMark::new(0, Mark::new(OpId(op), Hop::ENTER, Ticks(tick))), tick))
                .collect(),
            ops: ops.iter().map(|&(_, tick)| tick).collect(),
            cut: 0,
        }
    }

    impl Windows {
        fn add(&mut self, done: &Done) {
            for &(held, first) in &done.marks {
                self.mark(held, first);
            }
            for &first in &done.ops {
                self.operation(first);
            }
        }
    }

    #[test]
    fn operations_go_to_the_stretch_they_began_in() {
        // Windows of 2,000 ticks: stretches of 100.
        let mut windows = Windows::new(1_000, 2_000, 1_000);
        windows.add(&done(&[(1, 1_010), (2, 1_150), (3, 1_199), (4, 3_220)]));
        assert!(windows.ready(1_099).is_empty(), "the first stretch ends at 1,100");
        let first = windows.ready(1_200);
        let summary: Vec<(u32, u32, u64)> = first.iter().map(|b| (b.pass, b.sample, b.op_count)).collect();
        assert_eq!(summary, [(0, 0, 1), (0, 1, 2)]);
        assert_eq!((first[1].start, first[1].end), (Ticks(1_150), Ticks(1_199)));
        let rest = windows.rest();
        assert_eq!((rest[0].pass, rest[0].op_count), (1, 1), "tick 3,220 is in the second window");
        assert_eq!(windows.windows(), 2);
    }

    #[test]
    fn a_window_the_last_moments_opened_joins_the_one_before() {
        // Windows of 2,000 ticks from 1,000: tick 3,010 is in the first
        // stretch of the second window, and the capture ends there.
        let mut windows = Windows::new(1_000, 2_000, 1_000);
        windows.add(&done(&[(1, 1_010), (2, 2_950), (3, 3_010)]));
        let blocks = windows.rest();
        assert!(blocks.iter().all(|b| b.pass == 0), "{:?}", blocks.iter().map(|b| b.pass).collect::<Vec<_>>());
        assert_eq!(windows.windows(), 1);
    }

    #[test]
    fn a_full_stretch_is_written_early_and_keeps_filling() {
        let mut windows = Windows::new(0, 10_000, 2);
        windows.add(&done(&[(1, 10), (2, 20)]));
        windows.add_dropped(3, 5, 30);
        let early = windows.ready(0);
        assert_eq!(early.len(), 1);
        assert_eq!(early[0].streams.iter().map(|s| s.dropped).sum::<u64>(), 5);
        windows.add(&done(&[(3, 40)]));
        let rest = windows.rest();
        assert_eq!((rest[0].pass, rest[0].sample), (0, 1), "the same window, the next block");
    }

    #[test]
    fn a_short_capture_ends_in_enough_blocks_each_operation_whole() {
        let mut windows = Windows::new(0, 1_000_000, 1 << 20);
        // 400 operations of two marks each, in one stretch.
        let mut ops: Vec<(u64, u64)> = (0..400).map(|i| (i, 10 + i)).collect();
        ops.extend((0..400).map(|i| (i, 10 + i)));
        let mut d = done(&ops);
        d.ops.truncate(400);
        windows.add(&d);
        let blocks = windows.rest();
        assert_eq!(blocks.len(), MIN_BLOCKS);
        assert!(blocks.iter().all(|b| b.op_count == 10 && b.streams[0].marks.len() == 20));
        let samples: Vec<u32> = blocks.iter().map(|b| b.sample).collect();
        assert_eq!(samples, (0..MIN_BLOCKS as u32).collect::<Vec<_>>());
    }
}

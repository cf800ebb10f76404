//! The timeline's model: a block's marks laid out as slices on its
//! threads' tracks, with flow arrows between threads ([`Timeline`] turns
//! one block at a time into a [`BlockTimeline`]). The writers (Chrome
//! JSON, Perfetto protobuf) read it; it reads none of them.

use std::collections::BTreeMap;

use hopscope_probe::{Block, Hop, Mark, TraceHeader};
use rustc_hash::FxHashMap;

use crate::join::{HopScan, LaneHops};

/// What of a trace goes on the timeline: a careful run holds millions of
/// operations, more than a viewer loads or a person reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cut {
    /// At most this many operations of each lane (the first ones, in
    /// trace order; a lane that marks nothing counts the operations its
    /// blocks ran); `None` keeps every operation.
    pub ops_per_lane: Option<u64>,
    /// Only these lanes (indices into the header's lanes); `None` keeps
    /// every lane.
    pub lanes: Option<Vec<u16>>,
}

/// What a timeline slice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceKind {
    /// A slice of the operation as the analyzer has it.
    Step,
    /// An interval between two of a thread's marks while another thread
    /// ran the operation's work (e.g. the caller's wait for the reply).
    Gap,
    /// A zero-length slice at a mark, carrying a flow end.
    Anchor,
}

impl SliceKind {
    /// The category a viewer shows and filters by.
    pub fn category(self) -> &'static str {
        match self {
            SliceKind::Step => "slice",
            SliceKind::Gap => "gap",
            SliceKind::Anchor => "hop",
        }
    }
}

/// A flow arrow's end on a slice. A slice that both receives one arrow and
/// sends the next (a thread's only slice of an operation) carries both
/// under one id: viewers read that as a step of one chained flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEnd {
    /// Flow id, unique in the timeline.
    pub id: u64,
    /// An arrow arrives at this slice.
    pub incoming: bool,
    /// An arrow leaves this slice.
    pub outgoing: bool,
}

/// One slice on one thread's track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineSlice {
    /// Lane (process).
    pub lane: u16,
    /// Thread (index into the header's threads).
    pub thread: u16,
    /// The operation.
    pub op: u64,
    /// `from→to`, or the hop's name for an anchor.
    pub name: String,
    /// What the slice is.
    pub kind: SliceKind,
    /// Start, ns from the timeline's origin.
    pub start_ns: i64,
    /// End, ns from the origin (`start_ns` for an anchor).
    pub end_ns: i64,
    /// The flow end it carries, if any.
    pub flow: Option<FlowEnd>,
}

/// One block's part of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockTimeline {
    /// Lane (process).
    pub lane: u16,
    /// The block's start, ns from the origin.
    pub start_ns: i64,
    /// The thread the block's readings are attached to: its first
    /// stream's, or thread 0 for a lane that marks nothing (a clean lane's
    /// readings are all a timeline shows of it).
    pub thread: u16,
    /// The block's readings by name.
    pub readings: Vec<(String, u64)>,
    /// Slices in the order a viewer must read them: by start, a parent
    /// before the slices it contains.
    pub slices: Vec<TimelineSlice>,
    /// Slices that overlapped another operation's slice on the same thread
    /// without nesting (a viewer cannot draw them on one track); their flow
    /// ends moved to anchors.
    pub overlapping: u64,
}

/// Turns a trace's blocks into timeline slices and flows.
#[derive(Debug, Clone)]
pub struct Timeline {
    header: TraceHeader,
    origin: u64,
    lanes: Vec<LaneShape>,
    cut: Cut,
    /// Per lane, the operations already put on the timeline.
    kept: Vec<u64>,
    next_flow: u64,
}

/// A lane's path and tails, as hop pairs for lookup.
#[derive(Debug, Clone, Default)]
struct LaneShape {
    hops: LaneHops,
    steps: Vec<(Hop, Hop)>,
}

impl Timeline {
    /// A timeline of a trace with `header` whose first pass `scan` saw
    /// every block; times are ns from tick `origin` (the earliest block's
    /// start).
    pub fn new(header: &TraceHeader, scan: &HopScan, origin: u64, cut: Cut) -> Timeline {
        let lanes = (0..header.lanes.len())
            .map(|lane| {
                let hops = scan.lane_hops(u16::try_from(lane).unwrap_or(u16::MAX));
                let steps = hops.path.windows(2).map(|w| (w[0], w[1])).chain(hops.tails.iter().copied()).collect();
                LaneShape { hops, steps }
            })
            .collect();
        Timeline { header: header.clone(), origin, lanes, cut, kept: vec![0; header.lanes.len()], next_flow: 1 }
    }

    /// The trace's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Whether `lane` is on the timeline at all.
    pub fn shows_lane(&self, lane: u16) -> bool {
        usize::from(lane) < self.header.lanes.len() && self.cut.lanes.as_ref().is_none_or(|l| l.contains(&lane))
    }

    fn ns(&self, ticks: u64) -> i64 {
        let ticks = i128::from(ticks) - i128::from(self.origin);
        // A float-to-int cast saturates (and maps NaN to 0): a hostile
        // header's clock cannot overflow it.
        (ticks as f64 * self.header.clock.ns_per_tick).round() as i64
    }

    fn hop_name(&self, hop: Hop) -> String {
        self.header.hops.get(hop).map_or_else(|| format!("hop{}", hop.0), |d| d.name.clone())
    }

    /// `block`'s slices and flows, `None` when the cut leaves nothing of it.
    pub fn block(&mut self, block: &Block) -> Option<BlockTimeline> {
        if !self.shows_lane(block.lane) {
            return None;
        }
        let lane = usize::from(block.lane);
        let (mut ops, shared) = by_operation(block);
        let budget = self.cut.ops_per_lane.map_or(u64::MAX, |n| n.saturating_sub(self.kept[lane]));
        if budget == 0 {
            return None;
        }
        let mut slices = Vec::new();
        if ops.is_empty() {
            // A lane that marks nothing (a clean lane) spends its budget
            // on the operations it ran, so a cut shows its readings over
            // the same stretch of the run as the probed lanes'.
            self.kept[lane] += block.op_count.min(budget);
        }
        // Shared intervals are no operations: each is drawn once, with the
        // operations it serves that the cut keeps.
        let intervals: BTreeMap<u64, Vec<(u16, Mark)>> =
            shared.keys().filter_map(|id| ops.remove(id).map(|marks| (*id, marks))).collect();
        let mut served: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (op, marks) in ops.into_iter().take(usize::try_from(budget).unwrap_or(usize::MAX)) {
            self.kept[lane] += 1;
            // Every interval that serves it: a batch's BEGIN and its COMMIT
            // are two, each drawn with an arrow from each of its operations.
            let by: Vec<(u64, &Vec<(u16, Mark)>)> = shared
                .iter()
                .filter(|(_, members)| members.contains(&op))
                .filter_map(|(id, _)| Some((*id, intervals.get(id)?)))
                .collect();
            let mut threads: Vec<u16> = by.iter().flat_map(|(_, m)| threads_of(m)).collect();
            threads.sort_unstable();
            threads.dedup();
            for (id, _) in &by {
                served.entry(*id).or_default().push(op);
            }
            self.operation(block.lane, op, marks.clone(), &threads, &mut slices);
            for (_, interval) in by {
                self.serves(block.lane, (op, &marks), interval, &mut slices);
            }
        }
        for (id, marks) in intervals.into_iter().filter(|(id, _)| served.contains_key(id)) {
            self.operation(block.lane, id, marks, &[], &mut slices);
        }
        let overlapping = nest(&mut slices);
        let readings = block
            .readings
            .iter()
            .filter_map(|r| self.header.readings.get(usize::from(r.key)).map(|k| (k.clone(), r.value)))
            .collect();
        Some(BlockTimeline {
            lane: block.lane,
            start_ns: self.ns(block.start.0),
            thread: block.streams.first().map_or(0, |s| s.thread),
            readings,
            slices,
            overlapping,
        })
    }

    /// Flow arrows from operation `op` (its `marks`) into the shared
    /// interval that serves it (`interval`'s marks): from the operation's
    /// last mark before the interval starts, on the interval's thread when
    /// it has one there (the wake), else on any (a span road's writer
    /// marks nothing of a request before the batch's BEGIN: the arrow
    /// leaves its caller), to an anchor of its own at the interval's first
    /// mark, so each operation's arrow reaches the interval (many into
    /// one).
    fn serves(
        &mut self,
        lane: u16,
        (op, marks): (u64, &[(u16, Mark)]),
        interval: &[(u16, Mark)],
        out: &mut Vec<TimelineSlice>,
    ) {
        let Some(&(thread, first)) = interval.iter().min_by_key(|(_, m)| m.ticks) else { return };
        let earlier = || marks.iter().filter(|(_, m)| m.ticks <= first.ticks);
        let before = earlier().filter(|(t, _)| *t == thread).max_by_key(|(_, m)| m.ticks);
        let Some(&(from_thread, from)) = before.or_else(|| earlier().max_by_key(|(_, m)| m.ticks)) else { return };
        let id = self.next_flow;
        self.next_flow += 1;
        let mut anchors = FxHashMap::default();
        let source = self.anchor(out, &mut anchors, (lane, from_thread, op), from.hop, from.ticks.0);
        out[source].flow = Some(FlowEnd { id, incoming: false, outgoing: true });
        let target = self.anchor(out, &mut anchors, (lane, thread, first.op.0), first.hop, first.ticks.0);
        out[target].flow = Some(FlowEnd { id, incoming: true, outgoing: false });
    }

    /// One operation's slices, flows and anchors, appended to `out`. On
    /// the threads in `shared` (those of a shared interval that serves it)
    /// only its own steps are drawn: its gaps there hold the other
    /// operations' work, drawn as theirs.
    fn operation(&mut self, lane: u16, op: u64, marks: Vec<(u16, Mark)>, shared: &[u16], out: &mut Vec<TimelineSlice>) {
        let mut threads: BTreeMap<u16, Vec<Mark>> = BTreeMap::new();
        for (thread, mark) in marks {
            threads.entry(thread).or_default().push(mark);
        }
        // Where each hop first falls, and which slice ends or starts there.
        let mut at: FxHashMap<Hop, (u16, u64)> = FxHashMap::default();
        // Zero-length slices made to carry flow ends, by (thread, hop).
        let mut anchors: FxHashMap<(u16, Hop), usize> = FxHashMap::default();
        let mut ends: FxHashMap<(u16, Hop), usize> = FxHashMap::default();
        let mut starts: FxHashMap<(u16, Hop), usize> = FxHashMap::default();
        for (&thread, marks) in &mut threads {
            marks.sort_by_key(|m| (m.ticks, m.hop));
            for mark in marks.iter() {
                let earliest = at.get(&mark.hop).is_none_or(|&(_, t)| mark.ticks.0 < t);
                if earliest {
                    at.insert(mark.hop, (thread, mark.ticks.0));
                }
            }
            for pair in marks.windows(2) {
                let (from, to) = (pair[0], pair[1]);
                let step = self.lanes[usize::from(lane)].steps.contains(&(from.hop, to.hop));
                if !step && shared.contains(&thread) {
                    continue;
                }
                ends.entry((thread, to.hop)).or_insert(out.len());
                starts.entry((thread, from.hop)).or_insert(out.len());
                out.push(TimelineSlice {
                    lane,
                    thread,
                    op,
                    name: hopscope_probe::SliceName::new(self.hop_name(from.hop), self.hop_name(to.hop)).to_string(),
                    kind: if step { SliceKind::Step } else { SliceKind::Gap },
                    start_ns: self.ns(from.ticks.0),
                    end_ns: self.ns(to.ticks.0),
                    flow: None,
                });
            }
        }
        let shape = &self.lanes[usize::from(lane)];
        let crossings: Vec<(Hop, Hop)> = shape
            .hops
            .path
            .windows(2)
            .map(|w| (w[0], w[1]))
            .chain(shape.hops.tails.iter().copied())
            .filter(|(a, b)| matches!((at.get(a), at.get(b)), (Some(x), Some(y)) if x.0 != y.0))
            .collect();
        for (a, b) in crossings {
            let ((from_thread, from_ticks), (to_thread, to_ticks)) = (at[&a], at[&b]);
            let leaves = |i: &usize| out[*i].flow.is_none_or(|f| !f.outgoing);
            let source = ends.get(&(from_thread, a)).or(anchors.get(&(from_thread, a))).copied().filter(leaves);
            let source =
                source.unwrap_or_else(|| self.anchor(out, &mut anchors, (lane, from_thread, op), a, from_ticks));
            let id = match out[source].flow {
                Some(f) => f.id,
                None => {
                    self.next_flow += 1;
                    self.next_flow - 1
                }
            };
            // The arrival: the slice that starts at the second mark, unless
            // it already carries another flow (then an anchor does).
            let free = |i: &usize| out[*i].flow.is_none_or(|f| f.id == id && !f.incoming);
            let target = starts.get(&(to_thread, b)).or(anchors.get(&(to_thread, b))).copied().filter(free);
            let target = target.unwrap_or_else(|| self.anchor(out, &mut anchors, (lane, to_thread, op), b, to_ticks));
            let arrived = out[source].flow.is_some_and(|f| f.incoming);
            out[source].flow = Some(FlowEnd { id, incoming: arrived, outgoing: true });
            let leaves = out[target].flow.is_some_and(|f| f.outgoing);
            out[target].flow = Some(FlowEnd { id, incoming: true, outgoing: leaves });
        }
    }

    /// A zero-length slice at `hop`'s mark on `thread` of operation `op` in
    /// `lane`; its index in `out`, also kept in `anchors`.
    fn anchor(
        &self,
        out: &mut Vec<TimelineSlice>,
        anchors: &mut FxHashMap<(u16, Hop), usize>,
        (lane, thread, op): (u16, u16, u64),
        hop: Hop,
        ticks: u64,
    ) -> usize {
        anchors.insert((thread, hop), out.len());
        let at = self.ns(ticks);
        out.push(TimelineSlice {
            lane,
            thread,
            op,
            name: self.hop_name(hop),
            kind: SliceKind::Anchor,
            start_ns: at,
            end_ns: at,
            flow: None,
        });
        out.len() - 1
    }
}

/// `block`'s marks by operation, and the shared intervals its links name,
/// each with the operations it serves.
type ByOperation = (BTreeMap<u64, Vec<(u16, Mark)>>, BTreeMap<u64, Vec<u64>>);

/// Split `block`'s marks by operation, links apart ([`ByOperation`]).
fn by_operation(block: &Block) -> ByOperation {
    let mut ops: BTreeMap<u64, Vec<(u16, Mark)>> = BTreeMap::new();
    let mut shared: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for stream in &block.streams {
        for mark in &stream.marks {
            match mark.link() {
                Some(interval) => shared.entry(interval.0).or_default().push(mark.op.0),
                None => ops.entry(mark.op.0).or_default().push((stream.thread, *mark)),
            }
        }
    }
    (ops, shared)
}

/// The threads `marks` were made on.
fn threads_of(marks: &[(u16, Mark)]) -> Vec<u16> {
    let mut threads: Vec<u16> = marks.iter().map(|(t, _)| *t).collect();
    threads.sort_unstable();
    threads.dedup();
    threads
}

/// Order `slices` as a viewer reads them (by start, longer first) and make
/// them nest on each thread as Perfetto's importer nests them: a slice
/// ending at or before the next one's start is closed by it, and a slice
/// that overlaps an open one without fitting inside it cannot be drawn on
/// the same track. Such a slice is dropped; a flow end it carried moves to
/// an anchor at its mark (the end for an arrow leaving, else the start).
/// Returns how many were dropped.
fn nest(slices: &mut Vec<TimelineSlice>) -> u64 {
    let mut dropped = 0;
    loop {
        slices.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.end_ns), s.thread));
        let mut open: FxHashMap<u16, Vec<i64>> = FxHashMap::default();
        let mut moved = false;
        let mut keep = vec![true; slices.len()];
        for (slice, keep) in slices.iter_mut().zip(&mut keep) {
            let stack = open.entry(slice.thread).or_default();
            while stack.last().is_some_and(|&end| end <= slice.start_ns) {
                stack.pop();
            }
            if stack.last().is_some_and(|&end| slice.end_ns > end) {
                dropped += 1;
                moved = true;
                match slice.flow {
                    Some(flow) => {
                        let at = if flow.outgoing && !flow.incoming { slice.end_ns } else { slice.start_ns };
                        slice.kind = SliceKind::Anchor;
                        slice.start_ns = at;
                        slice.end_ns = at;
                    }
                    None => *keep = false,
                }
                continue;
            }
            stack.push(slice.end_ns);
        }
        let mut keep = keep.into_iter();
        slices.retain(|_| keep.next().unwrap_or(true));
        // Anchors have no length and always nest: a second pass settles.
        if !moved {
            return dropped;
        }
    }
}

/// Process and thread ids for a viewer. Viewers take thread ids as
/// system-wide (Perfetto moves a thread id seen under a second process to
/// that process), so each lane's threads get ids of their own, distinct
/// from every process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    lanes: u32,
    threads: u32,
}

impl Ids {
    /// The ids of a trace with `header`'s lanes and threads; an error when
    /// they do not fit the 31 bits viewers keep for an id.
    pub fn new(header: &TraceHeader) -> std::io::Result<Ids> {
        let (lanes, threads) = (header.lanes.len() as u64, header.threads.len().max(1) as u64);
        let last = lanes.checked_mul(threads).and_then(|n| n.checked_add(lanes + 1));
        match last {
            Some(last) if last <= i32::MAX as u64 => Ok(Ids { lanes: lanes as u32, threads: threads as u32 }),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{lanes} lanes × {threads} threads do not fit a timeline's 31-bit thread ids"),
            )),
        }
    }

    /// `lane`'s process id (1-based).
    pub fn process(&self, lane: u16) -> i32 {
        i32::from(lane) + 1
    }

    /// The thread id of `thread` in `lane`: after every process id.
    pub fn thread(&self, lane: u16, thread: u16) -> i32 {
        // Fits: `new` checked lanes × threads + lanes + 1 against i32::MAX.
        (self.lanes + 1 + u32::from(lane) * self.threads + u32::from(thread)) as i32
    }
}

/// The tick a timeline counts from: the earliest block start or mark of
/// `block` (fold it over every block).
pub fn origin_of(block: &Block) -> u64 {
    // A link's ticks field holds an interval's id, not a time.
    let marks = block.streams.iter().flat_map(|s| &s.marks).filter(|m| !m.is_link()).map(|m| m.ticks.0);
    marks.fold(block.start.0, u64::min)
}

//! Perfetto's importer, replayed: how its trace processor turns a timeline
//! file into slices and flows, reduced to the rules that decide which slice
//! each flow end binds to. A test that checks a timeline through this
//! module checks what a user will see, not what the writer meant.
//!
//! The rules (Perfetto's `json_trace_parser`, `track_event_parser`,
//! `slice_tracker`, `flow_tracker`):
//! - events are read in timestamp order, ties in file order; a JSON
//!   timestamp is `µs × 1000` truncated to whole ns;
//! - a thread id is system-wide: the track is the thread, whatever the
//!   process; an event without `tid` lands on a thread numbered like its
//!   process;
//! - before a slice opens on a track, open slices there that end at or
//!   before its start close (and only then: until another slice opens, an
//!   ended slice is still the one a flow event binds to); a slice that
//!   outlives the one it opens inside is misnested;
//! - JSON: `bind_id` binds to the slice it rides on (`flow_out` begins,
//!   `flow_in` ends, both step); `ph: s` binds to the innermost open slice
//!   on its thread, `ph: f` with `bp: e` likewise, without it to the next
//!   slice that opens there;
//! - protobuf: a slice begin's `flow_ids` begin a flow (or step one that is
//!   active), its `terminating_flow_ids` end an active one.

use std::collections::BTreeMap;

use serde_json::Value;

pub use super::track_events::TrackEventRow;

/// A thread as the importer keys it: (process id, thread id).
pub type Thread = (i64, i64);

/// A slice as the importer stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedSlice {
    /// Its thread.
    pub thread: Thread,
    /// Start, ns.
    pub ts: i64,
    /// Duration, ns.
    pub dur: i64,
    /// Name.
    pub name: String,
    /// The `op` argument, if it has one.
    pub op: Option<u64>,
    /// Nesting depth on its track.
    pub depth: usize,
}

/// What the importer made of a timeline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// Slices in import order.
    pub slices: Vec<ImportedSlice>,
    /// Flows as (outgoing slice, incoming slice) indices into `slices`.
    pub flows: Vec<(usize, usize)>,
    /// What the importer would count as an error or drop, one line each.
    pub problems: Vec<String>,
}

#[derive(Debug, Default)]
struct Importer {
    out: Imported,
    /// Per thread, the open slices (index, end).
    stacks: BTreeMap<Thread, Vec<(usize, i64)>>,
    /// Active flows: id → the slice the next arrow leaves from.
    active: BTreeMap<u64, usize>,
    /// Per thread, flows waiting for the next slice to open there.
    pending: BTreeMap<Thread, Vec<u64>>,
}

impl Importer {
    fn open(&mut self, thread: Thread, ts: i64, end: Option<i64>, name: String, op: Option<u64>) -> usize {
        let stack = self.stacks.entry(thread).or_default();
        while stack.last().is_some_and(|&(_, e)| e <= ts) {
            stack.pop();
        }
        if let (Some(end), Some(&(parent, parent_end))) = (end, stack.last())
            && end > parent_end
        {
            let parent = &self.out.slices[parent].name;
            self.out.problems.push(format!("{name} at {ts} ns outlives {parent}, which it opens inside"));
        }
        let index = self.out.slices.len();
        let depth = stack.len();
        stack.push((index, end.unwrap_or(i64::MAX)));
        self.out.slices.push(ImportedSlice { thread, ts, dur: end.map_or(0, |e| e - ts), name, op, depth });
        for id in self.pending.remove(&thread).unwrap_or_default() {
            match self.active.get(&id) {
                Some(&from) => self.out.flows.push((from, index)),
                None => self.out.problems.push(format!("flow {id} ends without a start")),
            }
        }
        index
    }

    /// The slice a flow event binds to: the top of the thread's stack. A
    /// slice leaves the stack only when another opens after its end, so
    /// one that has ended is still "open" to a flow event until then.
    fn innermost(&self, thread: Thread) -> Option<usize> {
        self.stacks.get(&thread).and_then(|stack| stack.last()).map(|&(i, _)| i)
    }

    fn begin(&mut self, id: u64, slice: usize) {
        if self.active.insert(id, slice).is_some() {
            self.out.problems.push(format!("flow {id} begins twice"));
        }
    }

    fn step(&mut self, id: u64, slice: usize) {
        match self.active.insert(id, slice) {
            Some(from) => self.out.flows.push((from, slice)),
            None => self.out.problems.push(format!("flow {id} steps without a start")),
        }
    }

    fn end(&mut self, id: u64, slice: usize, close: bool) {
        match self.active.get(&id).copied() {
            Some(from) => {
                self.out.flows.push((from, slice));
                if close {
                    self.active.remove(&id);
                }
            }
            None => self.out.problems.push(format!("flow {id} ends without a start")),
        }
    }
}

/// JSON timestamp → ns, as Perfetto converts it (truncating).
fn json_ns(value: &Value) -> Option<i64> {
    value.as_f64().map(|us| (us * 1000.0) as i64)
}

/// Replay Perfetto's JSON importer over a Chrome Trace Event document.
pub fn import_chrome(document: &Value) -> Imported {
    let mut importer = Importer::default();
    let Some(events) = document["traceEvents"].as_array() else {
        importer.out.problems.push("no traceEvents array".into());
        return importer.out;
    };
    let mut order: Vec<(i64, usize)> =
        events.iter().enumerate().map(|(i, e)| (json_ns(&e["ts"]).unwrap_or(0), i)).collect();
    order.sort_by_key(|&(ts, i)| (ts, i));
    let mut process_of: BTreeMap<i64, i64> = BTreeMap::new();
    for (ts, i) in order {
        let event = &events[i];
        let ph = event["ph"].as_str().unwrap_or_default();
        let pid = event["pid"].as_i64().unwrap_or(0);
        let Some(tid) = event["tid"].as_i64() else {
            importer
                .out
                .problems
                .push(format!("a {ph} event of process {pid} has no tid: the viewer makes thread {pid}"));
            continue;
        };
        if let Some(other) = process_of.insert(tid, pid).filter(|&p| p != pid) {
            importer.out.problems.push(format!("thread {tid} appears in processes {other} and {pid}"));
        }
        let thread = (pid, tid);
        let name = event["name"].as_str().unwrap_or_default().to_owned();
        let op = event["args"]["op"].as_u64();
        let id = |key: &str| event[key].as_u64();
        match ph {
            "X" => {
                let Some(dur) = json_ns(&event["dur"]) else { continue };
                let slice = importer.open(thread, ts, Some(ts + dur), name, op);
                if let Some(id) = id("bind_id") {
                    let (into, out) = (event["flow_in"] == true, event["flow_out"] == true);
                    match (into, out) {
                        (true, true) => importer.step(id, slice),
                        (false, true) => importer.begin(id, slice),
                        (true, false) => importer.end(id, slice, false),
                        (false, false) => importer.out.problems.push(format!("flow {id} has no direction")),
                    }
                }
            }
            "s" | "f" => {
                let Some(id) = id("id") else { continue };
                let enclosing = ph == "s" || event["bp"] == "e";
                if !enclosing {
                    importer.pending.entry(thread).or_default().push(id);
                    continue;
                }
                match importer.innermost(thread) {
                    Some(slice) if ph == "s" => importer.begin(id, slice),
                    Some(slice) => importer.end(id, slice, false),
                    None => importer.out.problems.push(format!("flow {id} has no enclosing slice at {ts} ns")),
                }
            }
            _ => {}
        }
    }
    importer.out
}

/// Replay Perfetto's protobuf importer over decoded track events (in file
/// order).
pub fn import_track_events(rows: &[TrackEventRow]) -> Imported {
    let mut importer = Importer::default();
    let threads: BTreeMap<u64, Thread> = rows
        .iter()
        .filter_map(|r| match r {
            TrackEventRow::Thread { uuid, pid, tid } => Some((*uuid, (*pid, *tid))),
            _ => None,
        })
        .collect();
    let at = |r: &TrackEventRow| match r {
        TrackEventRow::Begin { ts, .. } | TrackEventRow::End { ts, .. } | TrackEventRow::Counter { ts, .. } => *ts,
        TrackEventRow::Thread { .. } => i64::MIN,
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| (at(&rows[i]), i));
    for i in order {
        match &rows[i] {
            // Counters bind no flow and open no slice.
            TrackEventRow::Thread { .. } | TrackEventRow::Counter { .. } => {}
            TrackEventRow::Begin { ts, track, name, op, flow_ids, terminating_flow_ids } => {
                let Some(&thread) = threads.get(track) else {
                    importer.out.problems.push(format!("{name} is on track {track}, which no thread describes"));
                    continue;
                };
                let slice = importer.open(thread, *ts, None, name.clone(), *op);
                for &id in flow_ids {
                    if importer.active.contains_key(&id) {
                        importer.step(id, slice);
                    } else {
                        importer.begin(id, slice);
                    }
                }
                for &id in terminating_flow_ids {
                    if importer.active.contains_key(&id) {
                        importer.end(id, slice, true);
                    }
                }
            }
            TrackEventRow::End { ts, track } => {
                let Some(&thread) = threads.get(track) else { continue };
                let stack = importer.stacks.entry(thread).or_default();
                match stack.pop() {
                    Some((index, _)) => {
                        let slice = &mut importer.out.slices[index];
                        slice.dur = ts - slice.ts;
                    }
                    None => importer.out.problems.push(format!("an end at {ts} ns on a track with nothing open")),
                }
            }
        }
    }
    importer.out
}

/// A flow a timeline of a trace must show: from one thread's mark to
/// another's, within one operation (times in ns from the origin).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arrow {
    /// The operation.
    pub op: u64,
    /// Thread of the first mark.
    pub from: Thread,
    /// Time of the first mark.
    pub from_ns: i64,
    /// Thread of the second mark.
    pub to: Thread,
    /// Time of the second mark.
    pub to_ns: i64,
    /// The operation the second mark is of: the same, or the shared
    /// interval that serves it (an arrow into a batch's BEGIN).
    pub to_op: u64,
}

/// Every arrow a timeline of `trace` under `cut` must show, read from the
/// marks themselves: each of a lane's path slices (and tails) whose marks
/// are on two threads, and for an operation a shared interval serves, one
/// from its last mark before the interval, on the interval's thread, to the
/// interval's first mark.
pub fn arrows(trace: &hopscope_probe::Trace, cut: &super::Cut) -> std::io::Result<Vec<Arrow>> {
    let ids = super::Ids::new(&trace.header)?;
    let (scan, origin) = super::first_pass(trace);
    let ns =
        |ticks: u64| ((i128::from(ticks) - i128::from(origin)) as f64 * trace.header.clock.ns_per_tick).round() as i64;
    let mut kept = vec![0u64; trace.header.lanes.len()];
    let mut out = Vec::new();
    for block in &trace.blocks {
        let lane = block.lane;
        if cut.lanes.as_ref().is_some_and(|l| !l.contains(&lane)) || usize::from(lane) >= kept.len() {
            continue;
        }
        let hops = scan.lane_hops(lane);
        let pairs: Vec<_> = hops.path.windows(2).map(|w| (w[0], w[1])).chain(hops.tails.iter().copied()).collect();
        let mut ops: BTreeMap<u64, BTreeMap<hopscope_probe::Hop, (u16, u64)>> = BTreeMap::new();
        let mut own: BTreeMap<u64, Vec<(u16, u64)>> = BTreeMap::new();
        let mut links: BTreeMap<u64, u64> = BTreeMap::new();
        for stream in &block.streams {
            for mark in &stream.marks {
                if let Some(interval) = mark.link() {
                    links.entry(mark.op.0).or_insert(interval.0);
                    continue;
                }
                own.entry(mark.op.0).or_default().push((stream.thread, mark.ticks.0));
                let at = ops.entry(mark.op.0).or_default().entry(mark.hop).or_insert((stream.thread, mark.ticks.0));
                if mark.ticks.0 < at.1 {
                    *at = (stream.thread, mark.ticks.0);
                }
            }
        }
        let thread = |t: u16| (i64::from(ids.process(lane)), i64::from(ids.thread(lane, t)));
        // A shared interval is no operation of the cut.
        let intervals: std::collections::BTreeSet<u64> = links.values().copied().collect();
        for (op, at) in ops.iter().filter(|(op, _)| !intervals.contains(op)) {
            if cut.ops_per_lane.is_some_and(|n| kept[usize::from(lane)] >= n) {
                break;
            }
            kept[usize::from(lane)] += 1;
            for (a, b) in &pairs {
                let (Some(&(ta, a_ticks)), Some(&(tb, b_ticks))) = (at.get(a), at.get(b)) else { continue };
                if ta != tb {
                    let (from, to) = (thread(ta), thread(tb));
                    out.push(Arrow { op: *op, from, from_ns: ns(a_ticks), to, to_ns: ns(b_ticks), to_op: *op });
                }
            }
            // Into the shared interval that serves it.
            let first = links.get(op).and_then(|i| Some((*i, own.get(i)?.iter().min_by_key(|(_, t)| *t)?)));
            if let Some((interval, &(t, first))) = first {
                let before = own[op].iter().filter(|(th, ticks)| *th == t && *ticks <= first).map(|(_, ticks)| *ticks);
                if let Some(from) = before.max() {
                    let at = thread(t);
                    out.push(Arrow { op: *op, from: at, from_ns: ns(from), to: at, to_ns: ns(first), to_op: interval });
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What is wrong with `imported`'s flows against the `expected` arrows,
/// one line each (empty when every arrow is bound to the slices of its own
/// operation on the right threads, at its marks, and nothing else is).
pub fn misbound(imported: &Imported, expected: &[Arrow]) -> Vec<String> {
    let mut lines = imported.problems.clone();
    let mut seen: Vec<Arrow> = Vec::new();
    for &(from, to) in &imported.flows {
        let (a, b) = (&imported.slices[from], &imported.slices[to]);
        let (Some(op), Some(to_op)) = (a.op, b.op) else {
            lines.push(format!("a flow joins {} of op {:?} to {} of op {:?}", a.name, a.op, b.name, b.op));
            continue;
        };
        // Into another operation only where a shared interval serves it:
        // the expected arrows say which.
        if op != to_op && !expected.iter().any(|e| e.op == op && e.to_op == to_op) {
            lines.push(format!("a flow joins {} of op {:?} to {} of op {:?}", a.name, a.op, b.name, b.op));
            continue;
        }
        seen.push(Arrow { op, from: a.thread, from_ns: a.ts + a.dur, to: b.thread, to_ns: b.ts, to_op });
    }
    seen.sort();
    let (mut i, mut j) = (0, 0);
    while i < expected.len() || j < seen.len() {
        match (expected.get(i), seen.get(j)) {
            (Some(e), Some(s)) if e == s => {
                i += 1;
                j += 1;
            }
            (Some(e), Some(s)) if s < e => {
                lines.push(format!("a flow no mark explains: {s:?}"));
                j += 1;
            }
            (Some(e), _) => {
                lines.push(format!("no flow for {e:?}"));
                i += 1;
            }
            (None, Some(s)) => {
                lines.push(format!("a flow no mark explains: {s:?}"));
                j += 1;
            }
            (None, None) => break,
        }
    }
    lines
}

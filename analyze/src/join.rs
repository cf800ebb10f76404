//! Join: marks from every thread of a block → per-operation slices.
//!
//! For each lane, the hops it marks are found from the trace itself; an
//! operation is *complete* when it has each of those hops exactly once.
//! Incomplete operations (a mark dropped, a hop missing, a hop twice) are
//! counted and excluded, never mixed into the figures. Slices are the
//! intervals between consecutive hops in time order; a slice whose two marks
//! are on different sides is a cross-thread slice.
//!
//! Cost: one hash lookup and one store per mark (FxHash on the op id), then
//! one pass per complete operation.

use hopscope_probe::{Block, Hop, Mark, Side, Trace};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Which thread(s) a slice runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceSide {
    /// Both marks on the caller thread.
    Caller,
    /// Both marks on the writer thread.
    Writer,
    /// From one thread to the other: a wake or transport cost.
    Cross,
}

/// One slice of a lane's operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SliceDef {
    /// `from→to`, e.g. `sent→woke`.
    pub name: String,
    /// The hop that opens the slice.
    #[serde(skip)]
    pub from: Hop,
    /// The hop that closes the slice.
    #[serde(skip)]
    pub to: Hop,
    /// Where it runs.
    pub side: SliceSide,
}

/// The joined operations of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockOps {
    /// Index of the block in the trace.
    pub block: usize,
    /// Pass of the block.
    pub pass: u32,
    /// Sample of the block.
    pub sample: u32,
    /// Per slice (in [`LaneOps::slices`] order), each complete operation's
    /// duration in ns. Cross-thread slices may be slightly negative if the
    /// cores' clocks disagree.
    pub slice_ns: Vec<Vec<f64>>,
    /// Each complete operation's first-to-last-mark duration, ns.
    pub total_ns: Vec<f64>,
    /// Per complete operation, how many consecutive CPU-sampled marks (in
    /// hop order) were taken on different CPUs; empty when no mark carries
    /// a CPU.
    pub cpu_changes: Vec<u8>,
}

/// Every operation of one lane, joined.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneOps {
    /// Lane index in the trace header.
    pub lane: u16,
    /// Hops this lane marks, in time order (empty for a clean lane).
    pub hops: Vec<Hop>,
    /// Consecutive hop pairs.
    pub slices: Vec<SliceDef>,
    /// Blocks of this lane that carry marks.
    pub blocks: Vec<BlockOps>,
    /// Operations with every hop exactly once.
    pub complete: u64,
    /// Operations excluded for a missing or repeated hop.
    pub incomplete: u64,
}

/// Join the marks of every lane of `trace`.
pub fn join(trace: &Trace) -> Vec<LaneOps> {
    (0..trace.header.lanes.len() as u16).map(|lane| join_lane(trace, lane)).collect()
}

/// Sentinel for "hop not seen" in the per-op tick table.
const MISSING: u64 = u64::MAX;
/// Sentinel for "hop not marked by this lane" in the hop → column map.
const NO_COLUMN: usize = usize::MAX;

fn join_lane(trace: &Trace, lane: u16) -> LaneOps {
    let blocks: Vec<(usize, &Block)> = trace.blocks.iter().enumerate().filter(|(_, b)| b.lane == lane).collect();
    let hop_count = trace.header.hops.len();
    let mut present = vec![false; hop_count];
    for (_, block) in &blocks {
        for stream in &block.streams {
            for mark in &stream.marks {
                present[usize::from(mark.hop.0)] = true;
            }
        }
    }
    let mut hops: Vec<Hop> = (0..hop_count).filter(|&h| present[h]).map(|h| Hop(h as u16)).collect();
    let mut out =
        LaneOps { lane, hops: Vec::new(), slices: Vec::new(), blocks: Vec::new(), complete: 0, incomplete: 0 };
    if hops.len() < 2 {
        return out;
    }

    // First pass: tick tables in hop-id order.
    let mut tables: Vec<(usize, &Block, Table)> =
        blocks.iter().map(|(i, b)| (*i, *b, Table::build(b, &hops, hop_count))).collect();

    // Time order of the hops: by mean offset from each complete op's first mark.
    let order = time_order(&tables, &hops);
    hops = order.iter().map(|&c| hops[c]).collect();
    for (_, _, table) in tables.iter_mut() {
        table.reorder(&order);
    }
    out.slices = hops
        .windows(2)
        .map(|pair| {
            let side = |h: Hop| trace.header.hops.get(h).map_or(Side::Caller, |d| d.side);
            let name = |h: Hop| trace.header.hops.get(h).map_or_else(|| format!("hop{}", h.0), |d| d.name.clone());
            SliceDef {
                name: format!("{}→{}", name(pair[0]), name(pair[1])),
                from: pair[0],
                to: pair[1],
                side: match (side(pair[0]), side(pair[1])) {
                    (Side::Caller, Side::Caller) => SliceSide::Caller,
                    (Side::Writer, Side::Writer) => SliceSide::Writer,
                    _ => SliceSide::Cross,
                },
            }
        })
        .collect();

    let ns_per_tick = trace.header.clock.ns_per_tick;
    for (index, block, table) in &tables {
        let mut ops = BlockOps {
            block: *index,
            pass: block.pass,
            sample: block.sample,
            slice_ns: vec![Vec::with_capacity(table.rows); out.slices.len()],
            total_ns: Vec::with_capacity(table.rows),
            cpu_changes: Vec::new(),
        };
        for row in 0..table.rows {
            let Some(ticks) = table.complete_row(row) else {
                out.incomplete += 1;
                continue;
            };
            out.complete += 1;
            for (s, pair) in ticks.windows(2).enumerate() {
                ops.slice_ns[s].push(signed_ticks(pair[0], pair[1]) * ns_per_tick);
            }
            ops.total_ns.push(signed_ticks(ticks[0], ticks[ticks.len() - 1]) * ns_per_tick);
            let known: Vec<u16> = table.row_cpus(row).iter().copied().filter(|c| *c != Mark::UNKNOWN_CPU).collect();
            if !known.is_empty() {
                ops.cpu_changes.push(known.windows(2).filter(|w| w[0] != w[1]).count() as u8);
            }
        }
        out.blocks.push(ops);
    }
    out.hops = hops;
    out
}

fn signed_ticks(from: u64, to: u64) -> f64 {
    (i128::from(to) - i128::from(from)) as f64
}

/// Per-op ticks of one block: `rows × columns`, one column per lane hop.
struct Table {
    columns: usize,
    rows: usize,
    ticks: Vec<u64>,
    cpus: Vec<u16>,
    repeated: Vec<bool>,
}

impl Table {
    fn build(block: &Block, hops: &[Hop], hop_count: usize) -> Table {
        let mut column = vec![NO_COLUMN; hop_count];
        for (c, h) in hops.iter().enumerate() {
            column[usize::from(h.0)] = c;
        }
        let columns = hops.len();
        let marks: usize = block.streams.iter().map(|s| s.marks.len()).sum();
        let expected_rows = marks / columns + 1;
        let mut index: FxHashMap<u64, u32> = FxHashMap::default();
        index.reserve(expected_rows);
        let mut ticks: Vec<u64> = Vec::with_capacity(expected_rows * columns);
        let mut cpus: Vec<u16> = Vec::with_capacity(expected_rows * columns);
        let mut repeated: Vec<bool> = Vec::with_capacity(expected_rows);
        for stream in &block.streams {
            for mark in &stream.marks {
                let c = column[usize::from(mark.hop.0)];
                let rows = repeated.len() as u32;
                let row = *index.entry(mark.op.0).or_insert(rows) as usize;
                if row == repeated.len() {
                    ticks.resize(ticks.len() + columns, MISSING);
                    cpus.resize(cpus.len() + columns, Mark::UNKNOWN_CPU);
                    repeated.push(false);
                }
                let cell = &mut ticks[row * columns + c];
                if *cell == MISSING {
                    *cell = mark.ticks.0;
                    cpus[row * columns + c] = mark.cpu;
                } else {
                    repeated[row] = true;
                }
            }
        }
        Table { columns, rows: repeated.len(), ticks, cpus, repeated }
    }

    fn row_cpus(&self, row: usize) -> &[u16] {
        &self.cpus[row * self.columns..(row + 1) * self.columns]
    }

    fn complete_row(&self, row: usize) -> Option<&[u64]> {
        let ticks = &self.ticks[row * self.columns..(row + 1) * self.columns];
        (!self.repeated[row] && !ticks.contains(&MISSING)).then_some(ticks)
    }

    fn reorder(&mut self, order: &[usize]) {
        if order.iter().enumerate().all(|(i, &c)| i == c) {
            return;
        }
        let mut row = vec![0u64; self.columns];
        let mut cpu_row = vec![0u16; self.columns];
        for r in 0..self.rows {
            let cells = &mut self.ticks[r * self.columns..(r + 1) * self.columns];
            let cpu_cells = &mut self.cpus[r * self.columns..(r + 1) * self.columns];
            for (i, &c) in order.iter().enumerate() {
                row[i] = cells[c];
                cpu_row[i] = cpu_cells[c];
            }
            cells.copy_from_slice(&row);
            cpu_cells.copy_from_slice(&cpu_row);
        }
    }
}

/// Column order: the standard hops keep their documented order (so every
/// receipt lists the same slices, even when a mark like `replied`, taken
/// after a send returns, lands after the caller has already woken); extra
/// hops a workload declares are placed by their mean offset from each
/// complete op's earliest mark, over up to `SAMPLE_OPS` complete ops.
fn time_order(tables: &[(usize, &Block, Table)], hops: &[Hop]) -> Vec<usize> {
    const SAMPLE_OPS: usize = 10_000;
    let columns = hops.len();
    let mut sums = vec![0f64; columns];
    let mut seen = 0usize;
    'blocks: for (_, _, table) in tables {
        for row in 0..table.rows {
            if let Some(ticks) = table.complete_row(row) {
                let first = ticks.iter().copied().min().unwrap_or(0);
                for (c, t) in ticks.iter().enumerate() {
                    sums[c] += (t - first) as f64;
                }
                seen += 1;
                if seen >= SAMPLE_OPS {
                    break 'blocks;
                }
            }
        }
    }
    let standard = |c: usize| usize::from(hops[c].0) < Hop::STANDARD.len();
    let mut order: Vec<usize> = (0..columns).filter(|&c| standard(c)).collect();
    let mut extras: Vec<usize> = (0..columns).filter(|&c| !standard(c)).collect();
    extras.sort_by(|&a, &b| sums[a].total_cmp(&sums[b]).then(a.cmp(&b)));
    for extra in extras {
        // Before the first standard hop that comes later on average.
        let at = order.iter().position(|&c| standard(c) && sums[c] > sums[extra]).unwrap_or(order.len());
        order.insert(at, extra);
    }
    order
}

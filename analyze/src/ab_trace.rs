//! An A/B trace as its verdicts read it: two streaming passes over the
//! blocks (a scan, then the join), keeping per block only what a verdict
//! needs — its arm, round and figure — so a long experiment's memory
//! grows with its number of blocks, never with their marks, and no more
//! than one block is held at a time (`hopscope ab`, `resolve` and an
//! `--ab` run all read their traces this way).

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_probe::{Block, RunFacts, Trace, TraceHeader};

use crate::ab::{Arms, PassBlocks};
use crate::contention::{self, Contention, Rounds};
use crate::decomposition::AnalyzeError;
use crate::join::{HopScan, Join, LaneOps};
use crate::lanes;
use crate::source::{BlockSource, TraceFile};

/// One measured block, as a verdict needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmBlock {
    /// Its index in the trace (the join's key for it).
    pub index: usize,
    /// Its lane.
    pub lane: u16,
    /// Its pass.
    pub pass: u32,
    /// Its sample (round) within the pass.
    pub sample: u32,
    /// Wall time per operation, µs.
    pub wall_us: f64,
}

/// What the verdicts of an A/B run read from its trace.
#[derive(Debug, Clone)]
pub struct AbTrace {
    /// The trace's header.
    pub header: TraceHeader,
    /// Every block with operations, in trace order.
    pub blocks: Vec<ArmBlock>,
    /// Every lane's joined operations (slices per block).
    pub joined: Vec<LaneOps>,
    /// Every lane's block figures (wall time and readings per block).
    pub lanes: Vec<lanes::LaneBlocks>,
    /// Marks the probes dropped, over the run.
    pub marks_dropped: u64,
    /// The lanes' waits for a CPU, and whether another process held the
    /// run's CPUs.
    pub contention: Option<Contention>,
}

/// The first pass: what a verdict keeps of each block.
struct FirstPass {
    header: TraceHeader,
    hops: HopScan,
    blocks: Vec<ArmBlock>,
    rounds: Rounds,
    lanes: Vec<lanes::LaneBlocks>,
    marks_dropped: u64,
}

impl FirstPass {
    fn new(header: &TraceHeader) -> FirstPass {
        FirstPass {
            header: header.clone(),
            hops: HopScan::new(header),
            blocks: Vec::new(),
            rounds: Rounds::default(),
            lanes: lanes::empty_lanes(header),
            marks_dropped: 0,
        }
    }

    fn add(&mut self, index: usize, block: &Block) {
        let header = &self.header;
        self.hops.add(block);
        self.rounds.add(header, block);
        lanes::add_block(&mut self.lanes, header, block);
        self.marks_dropped = self.marks_dropped.saturating_add(block.dropped());
        if block.op_count > 0 {
            let wall_ns = block.end.since(block.start) as f64 * header.clock.ns_per_tick;
            self.blocks.push(ArmBlock {
                index,
                lane: block.lane,
                pass: block.pass,
                sample: block.sample,
                wall_us: wall_ns / block.op_count as f64 / 1_000.0,
            });
        }
    }

    fn finish(self, join: Join) -> AbTrace {
        AbTrace {
            contention: contention::of(&self.header, &self.lanes, &self.rounds),
            header: self.header,
            blocks: self.blocks,
            joined: join.finish(),
            lanes: self.lanes,
            marks_dropped: self.marks_dropped,
        }
    }
}

impl AbTrace {
    /// Read `source` in two passes.
    pub fn read(source: &mut impl BlockSource) -> Result<AbTrace, AnalyzeError> {
        let mut first = FirstPass::new(source.header());
        source.replay(&mut |index, block: &Block| first.add(index, block))?;
        let mut join = Join::new(&first.header, &first.hops);
        source.replay(&mut |index, block: &Block| join.add(index, block))?;
        Ok(first.finish(join))
    }

    /// Read a trace held in memory (tests, benchmarks, a caller that has
    /// one already).
    pub fn of(trace: &Trace) -> AbTrace {
        let mut first = FirstPass::new(&trace.header);
        for (index, block) in trace.blocks.iter().enumerate() {
            first.add(index, block);
        }
        let mut join = Join::new(&first.header, &first.hops);
        for (index, block) in trace.blocks.iter().enumerate() {
            join.add(index, block);
        }
        first.finish(join)
    }

    /// Read the trace file at `path`, streamed (a file cut short is read
    /// up to its last whole block, as [`TraceFile`] salvages it).
    pub fn read_file(path: &Path) -> Result<AbTrace, AnalyzeError> {
        AbTrace::read(&mut TraceFile::open(path)?)
    }

    /// The run's arms, when it has arm A and arm B.
    pub fn arms(&self) -> Option<Arms> {
        Arms::of(&self.header)
    }

    /// The per-pass blocks of the arms (lanes `a`, `b`, `control`). A pass
    /// is `b→a` when `b`'s first block in it precedes `a`'s.
    ///
    /// A block's figure is the median per-operation latency (first to last
    /// mark) when its lane was probed — robust to the rare slow operation,
    /// such as a WAL checkpoint — and its wall time per operation
    /// otherwise.
    pub fn pass_blocks(&self) -> Vec<PassBlocks> {
        let Some(Arms { a, b, control }) = self.arms() else { return Vec::new() };
        let op_medians: BTreeMap<usize, f64> = self
            .joined
            .iter()
            .flat_map(|ops| ops.blocks.iter())
            .filter_map(|b| Some((b.block, b.total_median_ns? / 1_000.0)))
            .collect();
        let mut passes: BTreeMap<u32, PassBlocks> = BTreeMap::new();
        let mut first_seen: BTreeMap<u32, u16> = BTreeMap::new();
        for block in &self.blocks {
            let us = op_medians.get(&block.index).copied().unwrap_or(block.wall_us);
            let entry =
                passes.entry(block.pass).or_insert_with(|| PassBlocks { pass: block.pass, ..PassBlocks::default() });
            if block.lane == a || block.lane == b {
                first_seen.entry(block.pass).or_insert(block.lane);
            }
            if block.lane == a {
                entry.a.insert(block.sample, us);
            } else if block.lane == b {
                entry.b.insert(block.sample, us);
            } else if Some(block.lane) == control {
                entry.control.insert(block.sample, us);
            }
        }
        for (pass, first) in first_seen {
            if let Some(p) = passes.get_mut(&pass) {
                p.b_first = first == b;
            }
        }
        passes.into_values().collect()
    }

    /// The figure [`AbTrace::pass_blocks`] gives each block: the median
    /// latency when both arms were probed, wall time per operation
    /// otherwise; with arm A's callers.
    pub fn figure(&self) -> Option<crate::ab::AbFigure> {
        let arms = self.arms()?;
        let kind = if self.arm_ops().is_some() {
            crate::ab::FigureKind::LatencyMedian
        } else {
            crate::ab::FigureKind::WallPerOp
        };
        let name = self.header.lanes.get(usize::from(arms.a))?;
        let callers = self
            .header
            .run
            .parsed::<u32>(&hopscope_probe::RunFact::Lane(name.clone(), hopscope_probe::LaneFact::Callers))
            .unwrap_or(1)
            .max(1);
        Some(crate::ab::AbFigure { kind, callers })
    }

    /// The joined operations of arm `a` and arm `b`, when both measured any.
    pub fn arm_ops(&self) -> Option<(&LaneOps, &LaneOps)> {
        let arms = self.arms()?;
        let ops = |lane: u16| self.joined.iter().find(|o| o.lane == lane && o.complete > 0);
        Some((ops(arms.a)?, ops(arms.b)?))
    }

    /// Whether another process held the run's CPUs.
    pub fn contended(&self) -> bool {
        self.contention.as_ref().is_some_and(|c| c.contended)
    }
}

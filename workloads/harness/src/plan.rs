//! What a run is: block sizes, rounds, passes, warm-up, lane order, thread
//! placement and the per-block deadline.

use std::time::Duration;

use hopscope_probe::HopTable;

use crate::placement::Placement;

/// The sizes and rules of a run (the lanes are declared beside it).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Operations per block.
    pub ops_per_block: u64,
    /// Blocks per lane per pass.
    pub samples: u32,
    /// Passes over all samples.
    pub passes: u32,
    /// Unrecorded blocks per lane before the first pass.
    pub warmup_blocks: u32,
    /// How the lanes of a round are ordered.
    pub order: Order,
    /// Busy work of the caller before each operation, ns (0: back to back).
    pub caller_gap_ns: u64,
    /// Open perf-event counters on every marking thread. Off by default:
    /// on VMs each open counter costs µs per context switch of its thread;
    /// context switches come from `getrusage` either way.
    pub perf_counters: bool,
    /// Where lanes' threads run unless a lane says otherwise.
    pub placement: Placement,
    /// Longest a block (or any other call into a lane's code) may take; a
    /// lane that blocks past it stops the run, keeping what was measured.
    pub block_deadline: Duration,
    /// How long the harness idles before each block, so the threads of the
    /// lane before it go quiet first: a crossbeam receiver yields a few
    /// times before it parks, a keep-warm thread spins out its window, and
    /// on a shared core each of those steals from the next block. Give it
    /// the longest keep-warm window a run's lanes use, plus a margin.
    pub settle: Duration,
    /// Marks each marking thread can hold per operation (its buffer is this
    /// × the block's operations); beyond it marks are dropped and counted.
    pub marks_per_op: usize,
    /// The hops the lanes mark: the standard and closing hops, then any a run adds
    /// (`HopTable::add`), recorded in the trace header.
    pub hops: HopTable,
    /// With several callers at once, each of a lane's blocks gives every
    /// caller at least this many operations (the block grows to `callers ×`
    /// this when `ops_per_block` is smaller): a block's start, when the
    /// callers fill the writer's queue, and its end, when they drain it,
    /// are then a small part of it (eight callers in blocks of 20 ran a
    /// batching writer at 19.3 µs per write, in blocks of 1,600 at 12.7).
    /// `None`: every block is exactly `ops_per_block` (an explicit `--ops`,
    /// a spec's pre-registered size), and the receipt warns of a block that
    /// gave a caller fewer.
    pub ops_per_caller: Option<u64>,
    /// Whether `samples` stands whatever the lanes' blocks grow to (a number
    /// asked for: `--samples`). Otherwise, when blocks grow to give several
    /// callers their share ([`Plan::ops_per_caller`]), each pass takes that
    /// many times fewer samples, at least [`MIN_SCALED_SAMPLES`]: the
    /// careful plan's 500 samples of 20 operations, run as 500 of 600 for
    /// six callers, had taken three minutes and an 860 MB trace where one
    /// caller's takes ten seconds ([`Plan::scaled_for`]).
    pub fixed_samples: bool,
}

/// The fewest samples a pass keeps when its blocks grew for several callers
/// ([`Plan::fixed_samples`]): with four passes, 100 rounds.
pub const MIN_SCALED_SAMPLES: u32 = 25;

/// Operations per caller a block of several callers runs at least, by
/// default ([`Plan::ops_per_caller`]).
pub const MIN_OPS_PER_CALLER: u64 = hopscope_analyze::warning::LEAST_OPS_PER_CALLER;

/// Operations in a block of `ops_per_block`, for a lane of `callers`
/// callers, each given at least `ops_per_caller` when set
/// ([`Plan::ops_for`]).
pub(crate) fn block_ops(ops_per_block: u64, ops_per_caller: Option<u64>, callers: usize) -> u64 {
    match ops_per_caller {
        Some(each) if callers > 1 => ops_per_block.max(each.saturating_mul(callers as u64)).min(MAX_OPS_PER_BLOCK),
        _ => ops_per_block,
    }
}

/// Deadline of a block by default: far beyond any sane block (a careful
/// block takes milliseconds), short enough that a hung lane is noticed.
pub const DEFAULT_BLOCK_DEADLINE: Duration = Duration::from_secs(60);

/// Idle time before each block by default: long enough for a crossbeam
/// receiver's backoff to end in a park (a few µs of spins and yields), and
/// ~1 s over a careful run's 12,000 blocks.
pub const DEFAULT_SETTLE: Duration = Duration::from_micros(100);

/// Longest idle time before each block a plan may ask for.
pub const MAX_SETTLE: Duration = Duration::from_secs(1);

/// Marks per operation per thread by default: the twelve standard and closing hops with
/// room to spare.
pub const DEFAULT_MARKS_PER_OP: usize = 16;

/// Most marks one thread's buffer holds (96 MiB): a block larger than this
/// at `marks_per_op` drops the rest, counted, rather than allocating more.
pub const MAX_BUFFER_MARKS: usize = 1 << 22;

/// Most operations in one block: a block's inputs and marks live in
/// memory (a million single inserts are ~100 MB of inputs).
pub const MAX_OPS_PER_BLOCK: u64 = 1_000_000;

/// Most blocks per lane in a run (passes × samples + warm-up).
pub const MAX_BLOCKS_PER_LANE: u64 = 1_000_000;

impl Plan {
    /// The careful defaults: 20 ops per block, 500 samples, 4 passes, 5
    /// warm-up blocks per lane, lanes in a balanced order with 100 µs of
    /// settling before each block, same-core placement. Many
    /// short blocks rather than a few long ones: a block median shrugs off
    /// the rare WAL checkpoint that a long block would average in, and a
    /// host-speed episode (which scales every slice of a block) covers both
    /// blocks of a short pair far more often. On a 2-vCPU VM the paired
    /// `writer − floor` CI narrowed from ±0.2 µs (200 × 50) to ±0.03 µs for
    /// the same operations, in ~8 s.
    pub fn careful() -> Plan {
        Plan {
            ops_per_block: 20,
            samples: 500,
            passes: 4,
            warmup_blocks: 5,
            order: Order::Balanced,
            caller_gap_ns: 0,
            perf_counters: false,
            placement: Placement::SameCore,
            block_deadline: DEFAULT_BLOCK_DEADLINE,
            settle: DEFAULT_SETTLE,
            marks_per_op: DEFAULT_MARKS_PER_OP,
            hops: HopTable::standard(),
            ops_per_caller: Some(MIN_OPS_PER_CALLER),
            fixed_samples: false,
        }
    }

    /// The plan for lanes of `callers` callers at most: its samples divided
    /// by how much their blocks grew beyond `ops_per_block`
    /// ([`Plan::ops_for`]), never below [`MIN_SCALED_SAMPLES`] nor above
    /// the plan's own, unless `fixed_samples`. A lane then runs about the
    /// operations the plan meant, in fewer, longer blocks.
    pub fn scaled_for(&self, callers: usize) -> Plan {
        let grown = self.ops_for(callers);
        if self.fixed_samples || grown <= self.ops_per_block || self.ops_per_block == 0 {
            return self.clone();
        }
        let scaled = u64::from(self.samples).saturating_mul(self.ops_per_block).div_ceil(grown);
        let floor = self.samples.min(MIN_SCALED_SAMPLES);
        let samples = u32::try_from(scaled).unwrap_or(self.samples).clamp(floor, self.samples);
        Plan { samples, ..self.clone() }
    }

    /// Operations in each block of a lane of `callers` callers: at least
    /// [`Plan::ops_per_caller`] each, when the plan asks for it, within
    /// [`MAX_OPS_PER_BLOCK`].
    pub fn ops_for(&self, callers: usize) -> u64 {
        block_ops(self.ops_per_block, self.ops_per_caller, callers)
    }

    /// A short plan (seconds): 100 ops, 20 samples, 2 passes, 2 warm-ups.
    pub fn quick() -> Plan {
        Plan { ops_per_block: 100, samples: 20, passes: 2, warmup_blocks: 2, ..Plan::careful() }
    }

    /// Refuse sizes the run cannot carry out, before anything is created.
    pub fn validate(&self) -> Result<(), crate::RunError> {
        self.check().map_err(crate::RunError::Plan)
    }

    /// Refuse sizes the run cannot carry out.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.ops_per_block == 0 || self.samples == 0 || self.passes == 0 {
            return Err("ops per block, samples and passes must all be at least 1".to_owned());
        }
        if self.ops_per_block > MAX_OPS_PER_BLOCK {
            return Err(format!("{} ops per block (at most {MAX_OPS_PER_BLOCK})", self.ops_per_block));
        }
        let blocks = u64::from(self.passes) * u64::from(self.samples) + u64::from(self.warmup_blocks);
        if blocks > MAX_BLOCKS_PER_LANE {
            return Err(format!("{blocks} blocks per lane (at most {MAX_BLOCKS_PER_LANE})"));
        }
        if self.block_deadline.is_zero() {
            return Err("the block deadline must be longer than 0".to_owned());
        }
        if self.settle > MAX_SETTLE {
            return Err(format!("{:?} of settling before each block (at most {MAX_SETTLE:?})", self.settle));
        }
        if let Order::Phases { groups, rounds } = &self.order
            && (groups.is_empty() || groups.iter().any(Vec::is_empty) || *rounds == 0)
        {
            return Err("a phased order needs non-empty groups and at least one round per phase".to_owned());
        }
        if self.marks_per_op == 0 || self.marks_per_op > 1 << 16 {
            return Err(format!("{} marks per operation (1 to 65536)", self.marks_per_op));
        }
        Ok(())
    }

    /// Marks one thread's buffer holds: a block's worth for a lane of
    /// `callers` callers ([`Plan::ops_for`]), at most [`MAX_BUFFER_MARKS`].
    pub(crate) fn marks_per_block(&self, callers: usize) -> usize {
        let marks = usize::try_from(self.ops_for(callers)).unwrap_or(usize::MAX).saturating_mul(self.marks_per_op);
        marks.clamp(1024, MAX_BUFFER_MARKS)
    }
}

impl Default for Plan {
    fn default() -> Plan {
        Plan::careful()
    }
}

/// How the lanes of one round are ordered.
///
/// A lane's block starts while the lane before it may still be settling:
/// its threads finishing a backoff (crossbeam's receive yields a few times
/// before it parks), its pages being written back. That *carryover* lands
/// on whichever lane comes next, so an order in which a lane always follows
/// the same lane bills it for that neighbour. [`Order::Balanced`] gives
/// every lane every other lane as its predecessor equally often.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Order {
    /// A Williams design, its rows drawn in a new order every cycle: over
    /// each `n` rounds (`2n` for an odd number of lanes) every lane goes
    /// first once (twice) and follows every other lane exactly as often
    /// inside the rounds; the seams between rounds pair lanes at random. So
    /// carryover from a neighbour falls on every lane alike and cancels in
    /// lane differences.
    #[default]
    Balanced,
    /// Rotate by one lane every round, so no lane always goes first; but
    /// each lane always follows the same one (the one declared before it),
    /// and pays for that lane's carryover.
    Rotate,
    /// Plan order in even passes, the first two lanes swapped in odd passes:
    /// the `a→b` / `b→a` passes of an A/B experiment.
    FlipEachPass,
    /// A permutation drawn per round from its number (reproducible): no lane
    /// always follows the same one, as a fixed rotation would have it.
    Shuffle,
    /// Lanes in groups that take turns: `rounds` rounds run only the first
    /// group's lanes, the next `rounds` only the second's, and so on,
    /// cycling; each round's lanes in an order drawn as [`Order::Shuffle`]
    /// draws it, from the round's number within its group. For lanes that
    /// must not interleave with each other (the cold imports of every arm,
    /// then their re-imports); lanes in no group never run.
    Phases {
        /// Lane indices of each group.
        groups: Vec<Vec<usize>>,
        /// Consecutive rounds of one group.
        rounds: u32,
    },
}

impl Order {
    /// The lane indices of round (`pass`, `sample`) for `lanes` lanes.
    pub fn round(&self, pass: u32, sample: u32, lanes: usize) -> Vec<usize> {
        match self {
            Order::Balanced => {
                // The design's rows in an order drawn per cycle: the seam
                // between two rounds (one's last lane before the next's
                // first) is then a different pair each cycle, where a fixed
                // row order would repeat one pair per lane and double it.
                let rows = williams_rows(lanes);
                let round = (sample as usize).wrapping_add(pass as usize);
                let cycle = (round / rows.max(1)) as u64;
                let row = shuffled(rows, cycle).get(round % rows.max(1)).copied().unwrap_or(0);
                williams_row(lanes, row)
            }
            Order::Rotate => {
                let rotation = (sample as usize).wrapping_add(pass as usize) % lanes.max(1);
                (0..lanes).map(|offset| (rotation + offset) % lanes).collect()
            }
            Order::FlipEachPass => {
                let mut order: Vec<usize> = (0..lanes).collect();
                if pass % 2 == 1 && lanes >= 2 {
                    order.swap(0, 1);
                }
                order
            }
            Order::Shuffle => shuffled(lanes, (u64::from(pass) << 32) | u64::from(sample)),
            Order::Phases { groups, rounds } => {
                let (rounds, cycle_len) = (u64::from(*rounds).max(1), groups.len().max(1) as u64);
                let sample = u64::from(sample);
                let (cycle, within) = (sample / (rounds * cycle_len), sample % (rounds * cycle_len));
                let Some(group) = groups.get((within / rounds) as usize) else { return Vec::new() };
                let seed = (u64::from(pass) << 32) | (cycle * rounds + within % rounds);
                shuffled(group.len(), seed)
                    .into_iter()
                    .filter_map(|i| group.get(i).copied())
                    .filter(|&l| l < lanes)
                    .collect()
            }
        }
    }
}

/// Row `row` (cycling) of a Williams design for `n` lanes: row 0 is
/// `0, 1, n−1, 2, n−2, …`, row `i < n` adds `i` to every entry mod `n`, and
/// for odd `n` rows `n..2n` are rows `0..n` reversed. In the `n` rows (`2n`
/// for odd `n`) every ordered pair of distinct lanes stands side by side
/// equally often: a first-order carryover design.
fn williams_row(n: usize, row: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let row = row % williams_rows(n);
    let first = (0..n).map(|j| if j % 2 == 1 { j.div_ceil(2) } else { (n - j / 2) % n });
    let mut order: Vec<usize> = first.map(|lane| (lane + row % n) % n).collect();
    if row >= n {
        order.reverse();
    }
    order
}

/// Rows in a Williams design for `n` lanes: `n`, or `2n` for odd `n`.
fn williams_rows(n: usize) -> usize {
    if n.is_multiple_of(2) { n } else { 2 * n }
}

/// A permutation of `0..n` drawn from `seed` (Fisher–Yates over SplitMix64).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    for i in (1..n).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_runs_every_lane_once_per_round() {
        for order in [Order::Balanced, Order::Rotate, Order::FlipEachPass, Order::Shuffle] {
            for (pass, sample) in [(0, 0), (1, 3), (3, 17)] {
                let mut round = order.round(pass, sample, 5);
                round.sort_unstable();
                assert_eq!(round, [0, 1, 2, 3, 4], "{order:?}");
            }
        }
        assert_eq!(Order::FlipEachPass.round(1, 0, 3), [1, 0, 2]);
        // Two groups taking turns every 2 rounds.
        let phases = Order::Phases { groups: vec![vec![0, 2], vec![1, 3]], rounds: 2 };
        let groups: Vec<Vec<usize>> = (0..8)
            .map(|s| {
                let mut r = phases.round(0, s, 4);
                r.sort_unstable();
                r
            })
            .collect();
        assert_eq!(
            groups,
            [vec![0, 2], vec![0, 2], vec![1, 3], vec![1, 3], vec![0, 2], vec![0, 2], vec![1, 3], vec![1, 3]]
        );
        assert_eq!(Order::Rotate.round(0, 1, 3), [1, 2, 0]);
        assert_ne!(Order::Shuffle.round(0, 1, 6), Order::Shuffle.round(0, 2, 6));
    }

    #[test]
    fn the_balanced_order_gives_every_lane_every_predecessor_equally_often() {
        assert_eq!(williams_row(6, 0), [0, 1, 5, 2, 4, 3]);
        assert!(Order::Balanced.round(0, 0, 0).is_empty());
        for n in 1..=9usize {
            let rows = if n.is_multiple_of(2) { n } else { 2 * n };
            let mut first = vec![0usize; n];
            let mut follows = vec![vec![0usize; n]; n];
            for sample in 0..rows as u32 {
                let round = Order::Balanced.round(0, sample, n);
                let mut sorted = round.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n={n} row {sample}");
                first[round[0]] += 1;
                for pair in round.windows(2) {
                    follows[pair[1]][pair[0]] += 1;
                }
            }
            assert!(first.iter().all(|&f| f == rows / n), "n={n}: {first:?}");
            for (lane, before) in follows.iter().enumerate() {
                for (other, &times) in before.iter().enumerate() {
                    let expected = if lane == other { 0 } else { rows / n };
                    assert_eq!(times, expected, "n={n}: lane {lane} after lane {other}");
                }
            }
        }
        // A rotation always puts the same lane before another.
        let before_4: Vec<usize> = (0..6)
            .map(|s| Order::Rotate.round(0, s, 6))
            .filter_map(|r| r.windows(2).find(|pair| pair[1] == 4).map(|pair| pair[0]))
            .collect();
        assert_eq!(before_4, [3; 5]);
    }

    #[test]
    fn plans_past_their_caps_are_refused() {
        assert!(Plan::quick().check().is_ok());
        assert!(Plan { ops_per_block: 0, ..Plan::quick() }.check().is_err());
        assert!(Plan { ops_per_block: MAX_OPS_PER_BLOCK + 1, ..Plan::quick() }.check().is_err());
        assert!(Plan { samples: u32::MAX, passes: u32::MAX, ..Plan::quick() }.check().is_err());
        assert!(Plan { block_deadline: Duration::ZERO, ..Plan::quick() }.check().is_err());
        assert!(Plan { settle: MAX_SETTLE + Duration::from_nanos(1), ..Plan::quick() }.check().is_err());
        assert!(Plan { settle: Duration::ZERO, ..Plan::quick() }.check().is_ok());
        let huge = Plan { ops_per_block: MAX_OPS_PER_BLOCK, marks_per_op: 1 << 16, ..Plan::quick() };
        assert_eq!(huge.marks_per_block(1), MAX_BUFFER_MARKS, "a thread's buffer is capped");
    }

    #[test]
    fn blocks_grown_for_several_callers_take_fewer_samples_unless_told_how_many() {
        let careful = Plan::careful();
        assert_eq!(careful.scaled_for(1), careful, "one caller: as planned");
        // Six callers: blocks of 600, not 20, so a thirtieth of the samples,
        // kept at 25 a pass.
        assert_eq!(careful.scaled_for(6).samples, MIN_SCALED_SAMPLES);
        assert_eq!(careful.scaled_for(2).samples, 50, "blocks of 200: a tenth");
        let quick = Plan::quick();
        assert_eq!(quick.scaled_for(8).samples, 20, "never below the floor, nor the plan's own");
        let told = Plan { fixed_samples: true, ..careful.clone() };
        assert_eq!(told.scaled_for(6).samples, 500);
        let exact = Plan { ops_per_caller: None, ..careful.clone() };
        assert_eq!(exact.scaled_for(6).samples, 500, "blocks that do not grow keep their samples");
    }

    #[test]
    fn a_lane_of_several_callers_gets_blocks_of_its_share_each_unless_told_a_size() {
        let careful = Plan::careful();
        assert_eq!((careful.ops_for(1), careful.ops_for(8)), (20, 8 * MIN_OPS_PER_CALLER));
        let told = Plan { ops_per_caller: None, ..careful.clone() };
        assert_eq!(told.ops_for(8), 20, "an explicit size stands (and is warned of)");
        let big = Plan { ops_per_block: 5_000, ..careful };
        assert_eq!(big.ops_for(8), 5_000, "never smaller than asked");
        assert_eq!(Plan { ops_per_block: MAX_OPS_PER_BLOCK, ..big }.ops_for(256), MAX_OPS_PER_BLOCK);
        assert_eq!(block_ops(20, Some(u64::MAX), 2), MAX_OPS_PER_BLOCK, "no overflow");
    }
}

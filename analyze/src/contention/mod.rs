//! Whether the machine, not the write path, set a run's figures: how long
//! each lane's threads waited runnable for a CPU that something else held
//! (run-queue delay, per block, from the kernel's scheduler statistics),
//! and a verdict under a rule fixed before any run.
//!
//! A lane's own threads wait for each other too: on one core the writer
//! is runnable while the caller finishes its turn, and back. On a quiet
//! 2-vCPU VM kv-writer's two threads on one core waited 4.2 µs of every
//! 17.5 µs write (24%); with a CPU hog on that core a write's figures grew
//! to 128–392 µs, nearly all of it waiting. A thread of a quiet lane waits
//! only while another of the lane's threads runs, so the lane's waits
//! stay near its process's CPU at most unless three of its threads wait
//! at once; a caller that yields on the writer's core makes the writer
//! wait its whole turn and itself wait the writer's, and that is the
//! lane's own doing (the reference writer's `persistent` reply, debug
//! build, one core: 30.5 µs of waits per write while the process ran
//! 26.1, 1.17×). Beside a CPU hog the same lanes waited 5–8× what their
//! process ran. Several callers at once wait for each other as well, up
//! to that many times what the process ran. So the rule
//! ([`waited_for_another`]) calls a block contended when its threads
//! waited at least [`CONTENDED_SHARE`] of its wall time *and* more than
//! [`CONTENDED_OVER_CPU`] times what the process ran, times the lane's
//! callers, *and* at least [`CONTENDED_MIN_WAIT_NS`] in all: a wait
//! shorter than a scheduler tick is an interrupt or a kernel thread's
//! turn, which every machine has (a quick run's 50 µs handoff block once
//! waited 30 µs so), while a process that holds the CPU takes whole time
//! slices (beside a hog, a quick run's writer block waited 5.8 ms). A round (one block of every lane, back to back) is
//! contended when any of its blocks is; a run is when half its rounds or
//! more are. Fewer, and those rounds are left out of every figure
//! ([`Contention::dropped_rounds`]).

pub mod slices;
mod waits;

pub use waits::{DRIVER_RUN_QUEUE, LaneWaits, PROCESS_RUN_QUEUE};
use waits::{is_role_run_queue, lane_run_queue, lane_waits};

use std::collections::BTreeMap;

use hopscope_probe::{Block, LaneFact, ReadingKey, RunFact, RunFacts, ThreadFigure, ThreadRole, TraceHeader};
use serde::{Deserialize, Serialize};

use crate::lanes::LaneBlocks;
use crate::stats::median_of_unsorted;

/// A block is contended when its threads waited runnable, summed, for at
/// least this share of its wall time (and [`CONTENDED_OVER_CPU`] times
/// what its process ran).
pub const CONTENDED_SHARE: f64 = 0.5;

/// A block is contended when its threads' waits are more than this many
/// times what its process ran (and [`CONTENDED_SHARE`] of its wall time):
/// a lane's own threads, taking turns on one core, wait about what the
/// process ran at most (module docs).
pub const CONTENDED_OVER_CPU: f64 = 1.5;

/// The reading of the whole process's CPU over a block.
pub const PROCESS_CPU: ReadingKey = ReadingKey::Thread(ThreadRole::Process, ThreadFigure::CpuNs);

/// A block is contended only when its threads waited at least this long
/// in all, ns: one tick of a 1000 Hz scheduler clock.
pub const CONTENDED_MIN_WAIT_NS: f64 = 1_000_000.0;

/// Whether a block whose threads waited `run_queue_ns` for a CPU, of
/// `wall_ns`, while the process ran `cpu_ns` (unknown: `None`), all
/// block totals, waited for another process (the module's rule), for a
/// lane driven by `callers` callers at once.
///
/// Several callers and the writer can all be runnable on one core: while
/// one of them runs, each of the others may wait, so a quiet lane's own
/// waits reach `callers` times what the process ran (three callers on one
/// core, a user's program: 1.24× the wall time in the median block, 1.8×
/// what the process ran in its slowest 5%), and the allowance grows with
/// them. A process holding the CPU makes every one of those threads wait
/// its time slices, so its waits grow with them too.
pub fn waited_for_another(run_queue_ns: f64, wall_ns: f64, cpu_ns: Option<f64>, callers: u32) -> bool {
    let own = CONTENDED_OVER_CPU * f64::from(callers.max(1));
    wall_ns > 0.0
        && run_queue_ns >= CONTENDED_MIN_WAIT_NS
        && run_queue_ns >= CONTENDED_SHARE * wall_ns
        && cpu_ns.is_none_or(|cpu| run_queue_ns > own * cpu)
}

/// How many callers drove `lane` at once (`lane.<n>.callers`; 1 in a trace
/// written before it was recorded, or for a lane it does not name).
pub fn lane_callers(header: &TraceHeader, lane: &str) -> u32 {
    header.run.parsed::<u32>(&RunFact::Lane(lane.to_owned(), LaneFact::Callers)).unwrap_or(1).max(1)
}

/// The same rule on one block of a trace; `None` when the block carries
/// no run-queue reading.
pub fn block_contended(header: &TraceHeader, block: &Block) -> Option<bool> {
    let keys: Vec<ReadingKey> = header.readings.iter().map(|name| ReadingKey::named(name)).collect();
    let reading = |wanted: &ReadingKey| {
        let key = keys.iter().position(|k| k == wanted)?;
        block.readings.iter().find(|r| usize::from(r.key) == key).map(|r| r.value as f64)
    };
    let roles: Vec<f64> = keys.iter().filter(|key| is_role_run_queue(key)).filter_map(reading).collect();
    let run_queue = lane_waits(reading(&PROCESS_RUN_QUEUE), reading(&DRIVER_RUN_QUEUE), &roles)?;
    let wall = block.end.since(block.start) as f64 * header.clock.ns_per_tick;
    let callers = header.lanes.get(usize::from(block.lane)).map_or(1, |lane| lane_callers(header, lane));
    Some(waited_for_another(run_queue, wall, reading(&PROCESS_CPU), callers))
}

/// The run's waits and the verdict on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    /// [`CONTENDED_SHARE`], as the run was judged.
    pub threshold_share: f64,
    /// Per lane.
    pub lanes: BTreeMap<String, LaneWaits>,
    /// Rounds with a run-queue reading.
    #[serde(default)]
    pub rounds: usize,
    /// Of those, rounds where some lane's block waited for another process.
    #[serde(default)]
    pub contended_rounds: usize,
    /// Whether those rounds were left out of every figure (fewer than half
    /// the rounds were contended, so enough clean ones remained).
    #[serde(default)]
    pub dropped_rounds: bool,
    /// Whether another process held the run's CPUs beyond the rule: half
    /// the rounds or more were contended. No verdict is drawn from such a
    /// run, and it is not saved as a baseline.
    pub contended: bool,
    /// Per probed lane, the slices its waits showed in ([`slices`]); empty
    /// where the blocks' waits were too even to tell.
    #[serde(default)]
    pub in_slices: BTreeMap<String, Vec<slices::SliceWaits>>,
}

impl Contention {
    /// How many rounds were left out of every figure (0 unless
    /// [`Contention::dropped_rounds`]).
    pub fn rounds_left_out(&self) -> u32 {
        if self.dropped_rounds { u32::try_from(self.contended_rounds).unwrap_or(u32::MAX) } else { 0 }
    }

    /// What the headline's verdict says when the run was contended: the
    /// lane with the most contended blocks, and its waits in those blocks
    /// (its median block may have waited little: a run is contended by its
    /// rounds, not by its lanes' medians).
    pub fn verdict(&self) -> Option<ContendedRun> {
        if !self.contended {
            return None;
        }
        let (lane, w) = self
            .lanes
            .iter()
            .max_by(|a, b| a.1.contended_blocks.cmp(&b.1.contended_blocks).then(a.1.share.total_cmp(&b.1.share)))?;
        let (waits_us, wall_us) = w.in_contended.unwrap_or((w.run_queue_us_per_op, w.run_queue_us_per_op / w.share));
        // Where the marks place the waits, from the probed lane that waited
        // most often.
        let placed = self
            .in_slices
            .iter()
            .filter_map(|(l, found)| Some((l, found.first()?, self.lanes.get(l).map_or(0, |w| w.contended_blocks))))
            .max_by_key(|(_, _, blocks)| *blocks)
            .map(|(l, top, _)| PlacedWaits {
                lane: l.clone(),
                slice: top.slice.clone(),
                per_us_waited: top.per_us_waited,
            });
        Some(ContendedRun {
            rounds: self.rounds,
            contended_rounds: self.contended_rounds,
            lane: lane.clone(),
            contended_blocks: w.contended_blocks,
            blocks: w.blocks,
            waits_us,
            wall_us,
            share: w.share,
            placed,
        })
    }

    /// Which rounds were left out of every figure, when some were.
    pub fn dropped(&self) -> Option<DroppedRounds> {
        if !self.dropped_rounds {
            return None;
        }
        let lanes = self
            .lanes
            .iter()
            .filter(|(_, w)| w.contended_blocks > 0)
            .map(|(lane, w)| (lane.clone(), w.contended_blocks, w.blocks))
            .collect();
        Some(DroppedRounds { rounds: self.rounds, contended_rounds: self.contended_rounds, lanes })
    }
}

/// What a contended run's verdict rests on (the reports say it in words).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContendedRun {
    /// Rounds with a run-queue reading.
    pub rounds: usize,
    /// Of those, rounds that waited for another process.
    pub contended_rounds: usize,
    /// The lane with the most contended blocks.
    pub lane: String,
    /// Its contended blocks.
    pub contended_blocks: usize,
    /// Its blocks with a run-queue reading.
    pub blocks: usize,
    /// Its threads' waits for a CPU in the contended blocks, µs per write
    /// (summed over its threads).
    pub waits_us: f64,
    /// Its wall time in those blocks, µs per write.
    pub wall_us: f64,
    /// Its waits' share of its wall time in its median block.
    pub share: f64,
    /// Where the marks place the waits, when a probed lane shows it.
    pub placed: Option<PlacedWaits>,
}

/// The slice a probed lane's waits showed most in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedWaits {
    /// The probed lane.
    pub lane: String,
    /// The slice.
    pub slice: String,
    /// µs of the slice per µs waited.
    pub per_us_waited: f64,
}

/// The rounds left out of every figure because they waited for another
/// process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedRounds {
    /// Rounds with a run-queue reading.
    pub rounds: usize,
    /// Of those, the rounds left out.
    pub contended_rounds: usize,
    /// Each lane with contended blocks: its name, those blocks, its blocks.
    pub lanes: Vec<(String, usize, usize)>,
}

/// Which rounds of a run waited for another process, gathered block by
/// block as a trace is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rounds {
    /// `(pass, sample)` of every round with a run-queue reading.
    pub read: std::collections::BTreeSet<(u32, u32)>,
    /// Those where some block waited for another process.
    pub contended: std::collections::BTreeSet<(u32, u32)>,
}

impl Rounds {
    /// Count `block`.
    pub fn add(&mut self, header: &TraceHeader, block: &Block) {
        if block.op_count == 0 {
            return;
        }
        if let Some(contended) = block_contended(header, block) {
            self.read.insert((block.pass, block.sample));
            if contended {
                self.contended.insert((block.pass, block.sample));
            }
        }
    }

    /// Whether the run is contended: half its rounds or more.
    pub fn run_contended(&self) -> bool {
        !self.contended.is_empty() && self.contended.len() * 2 >= self.read.len()
    }

    /// The rounds to leave out of the figures: the contended ones, when
    /// the run is not.
    pub fn to_drop(&self) -> Option<&std::collections::BTreeSet<(u32, u32)>> {
        (!self.contended.is_empty() && !self.run_contended()).then_some(&self.contended)
    }
}

/// The run's waits from its lanes' blocks (all of them, before any round
/// is left out) and its `rounds`; `None` when no block carries a run-queue
/// reading (a kernel without scheduler statistics, or a trace written
/// before they were read).
pub fn of(header: &TraceHeader, lanes: &[LaneBlocks], rounds: &Rounds) -> Option<Contention> {
    let mut out = BTreeMap::new();
    for lane in lanes {
        let callers = lane_callers(header, &lane.name);
        let Some(rq) = lane_run_queue(lane) else { continue };
        let rq = &rq;
        let walls = &lane.wall_ns_per_op;
        if rq.len() != walls.len() || rq.is_empty() {
            continue;
        }
        let cpu = lane.cpu_ns_per_op.get(&PROCESS_CPU).filter(|c| c.len() == rq.len());
        // Every block of a lane has the same number of operations.
        let ops = lane.ops as f64 / rq.len() as f64;
        let mut shares: Vec<f64> = rq.iter().zip(walls).map(|(r, w)| if *w > 0.0 { r / w } else { 0.0 }).collect();
        // The figures are per operation; the rule reads block totals.
        let contended: Vec<usize> = (0..rq.len())
            .filter(|&i| waited_for_another(rq[i] * ops, walls[i] * ops, cpu.map(|c| c[i] * ops), callers))
            .collect();
        let median_of = |values: &[f64]| median_of_unsorted(&mut values.to_vec());
        let in_contended = (!contended.is_empty()).then(|| {
            let waits: Vec<f64> = contended.iter().map(|&i| rq[i] / 1_000.0).collect();
            let walls: Vec<f64> = contended.iter().map(|&i| walls[i] / 1_000.0).collect();
            (median_of(&waits), median_of(&walls))
        });
        let per_role = |wanted: ThreadFigure, keep: &dyn Fn(&ThreadRole) -> bool| -> BTreeMap<String, f64> {
            lane.cpu_ns_per_op
                .iter()
                .filter_map(|(key, v)| match key {
                    ReadingKey::Thread(role, figure) if *figure == wanted && keep(role) => {
                        Some((role.to_string(), median_of(v)))
                    }
                    _ => None,
                })
                .collect()
        };
        let lane_threads = |role: &ThreadRole| !matches!(role, ThreadRole::Process | ThreadRole::Driver);
        let by_role = per_role(ThreadFigure::RunQueueNs, &lane_threads)
            .into_iter()
            .map(|(role, ns)| (role, ns / 1_000.0))
            .collect();
        out.insert(
            lane.name.clone(),
            LaneWaits {
                run_queue_us_per_op: median_of(rq) / 1_000.0,
                share: median_of_unsorted(&mut shares),
                by_role,
                involuntary_per_op: per_role(ThreadFigure::InvoluntarySwitches, &|_| true),
                contended_blocks: contended.len(),
                blocks: rq.len(),
                in_contended,
            },
        );
    }
    if out.is_empty() {
        return None;
    }
    Some(Contention {
        threshold_share: CONTENDED_SHARE,
        lanes: out,
        rounds: rounds.read.len(),
        contended_rounds: rounds.contended.len(),
        dropped_rounds: rounds.to_drop().is_some(),
        contended: rounds.run_contended(),
        in_slices: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane of `rq_ns.len()` blocks of `wall_ns` per op whose process ran
    /// `cpu_ns` per op and whose threads waited `rq_ns` (a quarter the
    /// caller's, the rest the writer's); the process's own sum holds as
    /// much again (the driver and idle lanes, which the rule must not read).
    fn lane(name: &str, wall_ns: f64, cpu_ns: f64, rq_ns: &[f64]) -> LaneBlocks {
        LaneBlocks {
            name: name.to_owned(),
            us_per_op: rq_ns.iter().enumerate().map(|(i, _)| ((0, i as u32), wall_ns / 1_000.0)).collect(),
            wall_ns_per_op: vec![wall_ns; rq_ns.len()],
            ops: 20 * rq_ns.len() as u64,
            cpu_ns_per_op: BTreeMap::from([
                (PROCESS_RUN_QUEUE.to_owned(), rq_ns.iter().map(|r| 2.0 * r).collect()),
                (PROCESS_CPU.to_owned(), vec![cpu_ns; rq_ns.len()]),
                (ReadingKey::named("caller.run_queue_ns"), rq_ns.iter().map(|r| r / 4.0).collect()),
                (ReadingKey::named("writer.run_queue_ns"), rq_ns.iter().map(|r| 3.0 * r / 4.0).collect()),
            ]),
            ..LaneBlocks::default()
        }
    }

    /// A header naming `lanes`, each recorded as driven by `callers`.
    fn header(lanes: &[LaneBlocks], callers: u32) -> TraceHeader {
        let names: Vec<&str> = lanes.iter().map(|l| l.name.as_str()).collect();
        let mut header = TraceHeader::for_this_host(&names, &["caller"]);
        for name in names {
            header.run.record(RunFact::Lane(name.to_owned(), LaneFact::Callers), callers.to_string());
        }
        header
    }

    /// The rounds the lanes' blocks make, block `i` in round `(0, i)`.
    fn rounds(header: &TraceHeader, lanes: &[LaneBlocks]) -> Rounds {
        let mut r = Rounds::default();
        for l in lanes {
            let (rq, cpu) = (lane_run_queue(l).expect("waits"), &l.cpu_ns_per_op[&PROCESS_CPU]);
            let callers = lane_callers(header, &l.name);
            for i in 0..rq.len() {
                r.read.insert((0, i as u32));
                let ops = l.ops as f64 / rq.len() as f64;
                if waited_for_another(rq[i] * ops, l.wall_ns_per_op[i] * ops, Some(cpu[i] * ops), callers) {
                    r.contended.insert((0, i as u32));
                }
            }
        }
        r
    }

    fn judged(lanes: &[LaneBlocks]) -> Contention {
        judged_with(lanes, 1)
    }

    fn judged_with(lanes: &[LaneBlocks], callers: u32) -> Contention {
        let header = header(lanes, callers);
        of(&header, lanes, &rounds(&header, lanes)).expect("waits")
    }

    #[test]
    fn several_callers_may_wait_for_each_other_and_still_see_a_hog() {
        // Three callers and a writer on one core, quiet: a slow block's
        // threads waited 53 µs per 30 µs write while the process ran 29.
        let queued = [lane("three-callers", 30_000.0, 29_000.0, &[53_000.0; 9])];
        assert!(judged_with(&queued, 1).contended, "one caller could not wait so long for itself");
        let own = judged_with(&queued, 3);
        assert!(!own.contended && own.dropped().is_none(), "{own:?}");
        // Beside a hog each of the four waits its time slices: far beyond.
        let hogged = [lane("three-callers", 300_000.0, 29_000.0, &[270_000.0; 9])];
        assert!(judged_with(&hogged, 3).contended);
        assert_eq!(lane_callers(&header(&queued, 3), "three-callers"), 3);
        assert_eq!(lane_callers(&TraceHeader::for_this_host(&["old"], &["caller"]), "old"), 1, "older traces");
    }

    #[test]
    fn a_lane_that_waits_for_its_own_threads_is_not_contended() {
        // kv-writer on one core, quiet: 4.2 µs of 17.5 waiting.
        let c = judged(&[lane("kv-writer", 17_500.0, 17_000.0, &[4_200.0; 9])]);
        assert!(!c.contended && c.verdict().is_none() && c.dropped().is_none(), "{c:?}");
        let w = &c.lanes["kv-writer"];
        assert!((w.run_queue_us_per_op - 4.2).abs() < 1e-9 && (w.by_role["caller"] - 1.05).abs() < 1e-9, "{w:?}");
        // A caller spinning on the writer's core keeps it waiting most of
        // the write: the lane's own doing, as long as the waits stay
        // within what the process ran.
        let c = judged(&[lane("spinning", 20_000.0, 19_800.0, &[14_000.0; 9])]);
        assert!(!c.contended && c.lanes["spinning"].contended_blocks == 0, "{c:?}");
        // Its process's sum (28 µs, past the 19.8 it ran) holds the
        // driver's waits too, which are not the lane's and not another
        // process's.
        assert!((c.lanes["spinning"].run_queue_us_per_op - 14.0).abs() < 1e-9, "{c:?}");
        // A caller yielding on the writer's core: each thread waits the
        // other's turn, a little past what the process ran in all.
        let c = judged(&[lane("yielding", 25_900.0, 26_100.0, &[30_500.0; 9])]);
        assert!(!c.contended && c.lanes["yielding"].contended_blocks == 0, "{c:?}");
        // A 2.5 µs handoff whose block of 20 waited 30 µs for a kernel
        // thread: far past its share and its CPU, but shorter than a tick.
        let mut rq = vec![100.0; 8];
        rq.push(1_500.0);
        let c = judged(&[lane("handoff", 2_500.0, 900.0, &rq)]);
        assert!(!c.contended && c.lanes["handoff"].contended_blocks == 0, "{c:?}");
        assert!(
            !waited_for_another(30_000.0, 50_000.0, Some(18_000.0), 1) && waited_for_another(2e6, 3e6, Some(1e6), 1)
        );
    }

    #[test]
    fn the_driver_is_taken_off_the_process_and_a_programs_own_thread_counts() {
        // A span lane: its writer thread is the program's, with no role
        // reading; the process's waits less the driver's are the lane's.
        let mut l = lane("store", 20_000.0, 19_800.0, &[6_000.0; 4]);
        l.cpu_ns_per_op.retain(|key, _| !is_role_run_queue(key));
        l.cpu_ns_per_op.insert(DRIVER_RUN_QUEUE.to_owned(), vec![5_000.0; 4]);
        let c = judged(&[l]);
        assert!((c.lanes["store"].run_queue_us_per_op - 7.0).abs() < 1e-9, "12 − 5: {c:?}");
        assert!(!c.lanes["store"].by_role.contains_key("driver"));
    }

    #[test]
    fn a_lane_without_readings_of_its_own_threads_is_read_from_its_process() {
        let mut l = lane("old", 20_000.0, 19_800.0, &[6_000.0; 4]);
        l.cpu_ns_per_op.retain(|key, _| !is_role_run_queue(key));
        let c = judged(&[l]);
        assert!((c.lanes["old"].run_queue_us_per_op - 12.0).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn a_lane_that_waits_for_another_process_is_named() {
        let mut rq = vec![110_000.0; 7];
        rq.extend([3_000.0, 3_000.0]);
        let c = judged(&[lane("floor", 128_000.0, 18_000.0, &rq), lane("inline", 17_600.0, 17_600.0, &[0.0; 9])]);
        assert!(c.contended && !c.dropped_rounds, "{c:?}");
        let v = c.verdict().expect("a verdict");
        assert_eq!(
            (v.lane.as_str(), v.contended_rounds, v.rounds, v.contended_blocks, v.blocks),
            ("floor", 7, 9, 7, 9)
        );
        assert!((v.waits_us - 110.0).abs() < 1e-9 && (v.wall_us - 128.0).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn a_few_contended_rounds_are_left_out_and_said() {
        let mut rq = vec![3_000.0; 7];
        rq.extend([110_000.0, 110_000.0]);
        let c = judged(&[lane("floor", 20_000.0, 18_000.0, &rq)]);
        assert!(!c.contended && c.dropped_rounds && c.contended_rounds == 2 && c.rounds == 9, "{c:?}");
        let dropped = c.dropped().expect("said");
        assert_eq!((dropped.contended_rounds, dropped.rounds), (2, 9));
        assert_eq!(dropped.lanes, [("floor".to_owned(), 2, 9)]);
        // Half or more contended: nothing is left out, the run is contended.
        let r = Rounds { read: (0..4).map(|i| (0, i)).collect(), contended: [(0, 0), (0, 1)].into_iter().collect() };
        assert!(r.run_contended() && r.to_drop().is_none());
    }

    #[test]
    fn no_reading_no_verdict() {
        let mut l = lane("inline", 17_600.0, 17_600.0, &[0.0; 3]);
        l.cpu_ns_per_op.clear();
        assert!(of(&header(std::slice::from_ref(&l), 1), &[l.clone()], &Rounds::default()).is_none());
    }
}

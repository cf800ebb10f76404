//! The order lanes run in, as a reader of the trace sees it: with the
//! default plan, every lane's block follows every other lane's equally
//! often, and every lane goes first equally often, so a lane that leaves
//! work behind (a thread still settling) delays every other lane alike.

use std::collections::BTreeMap;

use hopscope_harness::{BoxError, Harness, Lane, Plan};
use hopscope_probe::Trace;

#[test]
fn by_default_every_lane_follows_every_other_lane_equally_often() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-order-{}", std::process::id()));
    let lanes = [
        Lane::baseline("inline", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(())),
        Lane::floor("floor", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(())),
        Lane::subject("subject", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(())),
        Lane::peer("peer", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(())),
    ];
    let n = lanes.len();
    // Four lanes: a Williams design has four rows; three cycles of it.
    let plan = Plan { ops_per_block: 2, samples: 12, passes: 1, warmup_blocks: 0, ..Plan::quick() };
    let mut harness = Harness::new("order").plan(plan).out(&dir).quiet();
    for lane in lanes {
        harness = harness.lane(lane);
    }
    let outcome = harness.run().expect("run");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let trace = Trace::read(&outcome.trace).expect("trace");
    let _ = std::fs::remove_dir_all(&dir);

    // Blocks in the order they ran, grouped by round.
    let mut rounds: BTreeMap<(u32, u32), Vec<u16>> = BTreeMap::new();
    for block in &trace.blocks {
        rounds.entry((block.pass, block.sample)).or_default().push(block.lane);
    }
    assert_eq!(rounds.len(), 12);
    let mut first = vec![0; n];
    let mut after: BTreeMap<(u16, u16), u32> = BTreeMap::new();
    for lanes in rounds.values() {
        assert_eq!(lanes.len(), n, "every lane once per round: {lanes:?}");
        first[usize::from(lanes[0])] += 1;
        for pair in lanes.windows(2) {
            *after.entry((pair[0], pair[1])).or_default() += 1;
        }
    }
    assert_eq!(first, vec![3; n], "each lane first equally often");
    // Every ordered pair of distinct lanes side by side, three times each.
    assert_eq!(after.len(), n * (n - 1), "{after:?}");
    assert!(after.values().all(|&times| times == 3), "{after:?}");
}

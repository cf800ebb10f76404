//! The held marks' tests: operations handed on once settled and whole,
//! batches with their members, left-out members, forced sweeps.

use super::*;

impl Held {
    /// A sweep gathered.
    fn swept(&mut self, now: u64, settle: u64, mode: Sweep) -> Done {
        let mut done = Done::default();
        done.cut = self.sweep(now, settle, mode, &mut done);
        done
    }
}

fn mark(op: u64, tick: u64) -> Mark {
    Mark::new(OpId(op), Hop::ENTER, Ticks(tick))
}

#[test]
fn a_held_mark_is_a_marks_size_and_gives_it_back() {
    assert_eq!(std::mem::size_of::<HeldMark>(), std::mem::size_of::<Mark>());
    let mark = Mark { op: OpId(7), hop: Hop(3), cpu: 5, ticks: Ticks(11) };
    let held = HeldMark::new(9, mark);
    assert_eq!((held.mark(), held.thread()), (mark, 9));
}

#[test]
fn an_operation_is_handed_on_once_it_settles_and_whole() {
    let mut held = Held::default();
    held.add(0, &[mark(1, 100), mark(2, 110)], 0);
    held.add(1, &[mark(1, 120)], 5);
    let early = held.swept(8, 10, Sweep::Settled);
    assert!(early.marks.is_empty() && early.ops.is_empty(), "nothing has settled at 8");
    held.add(1, &[mark(2, 130)], 12);
    let first = held.swept(15, 10, Sweep::Settled);
    let ops: Vec<u64> = first.marks.iter().map(|(h, _)| h.mark().op.0).collect();
    assert_eq!(ops, [1, 1], "op 1 (last mark at 5) settled by 15; op 2 (at 12) not");
    assert_eq!(first.ops, [100]);
    let rest = held.swept(40, 10, Sweep::Settled);
    assert_eq!(rest.marks.len(), 2);
    assert_eq!(rest.ops, [110]);
    assert_eq!(held.len(), 0);
    assert_eq!(rest.cut, 0);
}

#[test]
fn a_shared_interval_and_its_members_go_together() {
    let mut held = Held::default();
    let txn = 1_000;
    held.add(1, &[Mark::serves(OpId(txn), OpId(7)), Mark::serves(OpId(txn), OpId(8))], 0);
    held.add(0, &[mark(7, 50), mark(8, 60)], 0);
    held.add(1, &[mark(txn, 70)], 0);
    // Member 8 marks again late: the whole batch waits for it.
    held.add(0, &[mark(8, 90)], 20);
    assert!(held.swept(25, 10, Sweep::Settled).marks.is_empty(), "op 8 has not settled, so neither has its batch");
    let done = held.swept(30, 10, Sweep::Settled);
    assert_eq!(done.marks.len(), 6);
    assert!(done.marks.iter().all(|&(_, first)| first == 50), "one group, first tick 50");
    let mut ops = done.ops.clone();
    ops.sort_unstable();
    assert_eq!(ops, [50, 50], "two operations; the interval is no operation");
}

#[test]
fn left_out_members_count_in_their_batch_and_a_batch_of_links_only_is_dropped() {
    let mut held = Held::default();
    // Batch 1000 serves 7 (sampled) and 8 (left out); batch 2000 serves
    // only 9, left out, and was not marked.
    held.add(
        1,
        &[
            Mark::serves(OpId(1_000), OpId(7)),
            Mark::serves_unsampled(OpId(1_000), OpId(8)),
            Mark::serves_unsampled(OpId(2_000), OpId(9)),
        ],
        0,
    );
    held.add(0, &[mark(7, 50), mark(7, 80)], 0);
    held.add(1, &[mark(1_000, 60)], 0);
    let done = held.swept(100, 10, Sweep::Settled);
    assert_eq!(done.marks.len(), 5, "batch 1000's marks and links; batch 2000 dropped");
    assert!(done.marks.iter().all(|(h, _)| h.mark().op.0 != 9));
    assert_eq!(done.ops, [50], "one operation: the left-out member is none");
    assert_eq!(held.len(), 0);
    assert!(held.ops.is_empty(), "every group forgotten");
}

#[test]
fn a_forced_sweep_hands_on_everything_and_counts_the_unsettled() {
    let mut held = Held::default();
    held.add(0, &[mark(1, 10), mark(2, 20)], 0);
    held.add(0, &[mark(2, 30)], 9);
    let done = held.swept(10, 5, Sweep::AtCap);
    assert_eq!((done.marks.len(), done.ops.len(), done.cut), (3, 2, 1), "op 2 had not settled");
    held.add(0, &[mark(3, 40)], 10);
    let end = held.swept(11, 5, Sweep::AtEnd);
    assert_eq!((end.marks.len(), end.cut), (1, 0), "at the end nothing is cut: every mark is in");
    assert_eq!(held.peak, 3);
}

#[test]
fn an_operations_marks_around_a_link_in_one_drain_join_its_batch() {
    let mut held = Held::default();
    let txn = 1_000;
    // Op 7's marks, its link to the batch, more of its marks, the batch's:
    // one drain's worth, so each comes with the same arrival.
    // (Its mark after the link is its earliest: the group's first tick
    // must see it, so that mark must reach the batch's root.)
    held.add(0, &[mark(7, 50), mark(7, 60), Mark::serves(OpId(txn), OpId(7)), mark(7, 30), mark(7, 75)], 0);
    held.add(1, &[mark(txn, 40)], 0);
    // The batch marks again late: op 7 waits with it, whichever of its
    // marks came after the link.
    held.add(1, &[mark(txn, 90)], 20);
    assert!(held.swept(25, 10, Sweep::Settled).marks.is_empty(), "the batch has not settled, so neither has op 7");
    let done = held.swept(30, 10, Sweep::Settled);
    assert_eq!(done.marks.len(), 7);
    assert!(done.marks.iter().all(|&(_, first)| first == 30), "one group, first tick 30");
    assert_eq!(done.ops, [30], "one operation");
}

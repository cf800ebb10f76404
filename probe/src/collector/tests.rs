//! The collector's tests: drains from threads that never hand in, full
//! rings, closes tallied per thread, growth and sampling.

use super::*;
use crate::hop::{Hop, OpId};

fn mark(op: u64) -> Mark {
    Mark::new(OpId(op), Hop::SENT, crate::clock::Ticks(op))
}

#[cfg(feature = "tracing")]
#[test]
fn closes_are_tallied_per_thread_and_kept_when_a_thread_is_gone() {
    let collector = Collector::new(1_024);
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let collector = collector.clone();
            std::thread::spawn(move || {
                for i in 0..1_000 {
                    collector.close(5, 2, &[mark(t * 10_000 + i)], true);
                    collector.close(5, 0, &[], false);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    // Exact, though three threads closed spans of one watch at once.
    assert_eq!(collector.tally(5), [3_000, 6_000, 3_000]);
    assert_eq!(collector.tally(4), [0; 3]);
    // The threads are gone: their rings are emptied and forgotten,
    // their tallies kept.
    assert_eq!(collector.drain().marks(), 3_000);
    assert_eq!(collector.threads(), 0);
    assert_eq!(collector.tally(5), [3_000, 6_000, 3_000]);
}

#[test]
fn marks_from_threads_that_never_hand_in_reach_the_drain() {
    let collector = Collector::new(64);
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let collector = collector.clone();
            std::thread::Builder::new()
                .name(format!("marker-{t}"))
                .spawn(move || {
                    for i in 0..10 {
                        collector.push(mark(t * 100 + i));
                    }
                })
                .expect("spawn")
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let drained = collector.drain();
    assert_eq!(drained.marks(), 30);
    assert_eq!(drained.dropped(), 0);
    let mut names: Vec<_> = drained.threads.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["marker-0", "marker-1", "marker-2"]);
    for t in &drained.threads {
        let base = t.marks[0].op.0;
        let ops: Vec<u64> = t.marks.iter().map(|m| m.op.0).collect();
        assert_eq!(ops, (base..base + 10).collect::<Vec<_>>(), "each thread's marks in its order");
    }
    assert_eq!(collector.threads(), 0, "rings of exited threads are forgotten once empty");
    assert_eq!(collector.drain(), Drained::default());
}

#[test]
fn a_full_ring_counts_every_drop_and_a_drain_makes_room() {
    let collector = Collector::new(8);
    for i in 0..13 {
        collector.push(mark(i));
    }
    let first = collector.drain();
    assert_eq!((first.marks(), first.dropped()), (8, 5));
    let ops: Vec<u64> = first.threads[0].marks.iter().map(|m| m.op.0).collect();
    assert_eq!(ops, (0..8).collect::<Vec<_>>(), "the first marks are kept");
    for i in 0..8 {
        collector.push(mark(i));
    }
    let second = collector.drain();
    assert_eq!((second.marks(), second.dropped()), (8, 0), "drops are counted once");
}

#[test]
fn a_drain_while_a_thread_marks_loses_nothing() {
    let collector = Collector::new(1 << 10);
    let marker = {
        let collector = collector.clone();
        std::thread::spawn(move || {
            for i in 0..200_000u64 {
                collector.push(mark(i));
                if i % 512 == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    let mut seen = 0u64;
    let mut dropped = 0u64;
    while !marker.is_finished() {
        let d = collector.drain();
        seen += d.marks() as u64;
        dropped += d.dropped();
    }
    marker.join().expect("marker");
    let d = collector.drain();
    seen += d.marks() as u64;
    dropped += d.dropped();
    assert_eq!(seen + dropped, 200_000, "every mark is either drained or counted");
}

#[test]
fn two_collectors_on_one_thread_keep_their_marks_apart() {
    let (a, b) = (Collector::new(4), Collector::new(4));
    a.push(mark(1));
    b.push(mark(2));
    b.push(mark(3));
    assert_eq!(a.drain().marks(), 1);
    assert_eq!(b.drain().marks(), 2);
}

#[test]
fn a_full_ring_grows_within_its_cap_and_the_drain_reads_the_rings_in_order() {
    let collector = Collector::growing(8, 64, Sampling::ALL);
    let marked = std::thread::spawn({
        let collector = collector.clone();
        move || {
            // 8 + 16 + 32 fill three rings, the fourth (64) takes the rest.
            for i in 0..100 {
                collector.push(mark(i));
            }
            collector.ring_sizes()
        }
    })
    .join()
    .expect("thread");
    assert_eq!(marked[0].1, 64, "the ring grew to its cap");
    let drained = collector.drain();
    assert_eq!(drained.threads.len(), 1, "one thread, however many rings");
    let ops: Vec<u64> = drained.threads[0].marks.iter().map(|m| m.op.0).collect();
    assert_eq!(ops, (0..100).collect::<Vec<_>>(), "every mark, in order");
    assert_eq!(drained.dropped(), 0);
    assert_eq!(collector.threads(), 0, "the thread is gone and its rings forgotten");

    let capped = Collector::growing(8, 16, Sampling::ALL);
    for i in 0..30 {
        capped.push(mark(i));
    }
    let drained = capped.drain();
    assert_eq!((drained.marks(), drained.dropped()), (24, 6), "past the cap, drops are counted");
}

#[test]
fn a_sampling_collector_keeps_whole_operations_only() {
    let sampling = Sampling::one_in(4).expect("in range");
    let collector = Collector::growing(1 << 12, 1 << 12, sampling);
    for op in 0..1_000u64 {
        collector.push(Mark::new(OpId(op), Hop::ENTER, crate::clock::Ticks(op)));
        collector.offer(OpId(op), Hop::DONE);
    }
    let drained = collector.drain();
    let mut per_op: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for m in &drained.threads[0].marks {
        *per_op.entry(m.op.0).or_default() += 1;
    }
    assert!(per_op.values().all(|&n| n == 2), "both hops of a kept operation");
    assert!(per_op.keys().all(|&op| sampling.keeps(OpId(op))));
    assert!((180..320).contains(&per_op.len()), "{} of 1,000 kept at 1 in 4", per_op.len());
}

#[test]
fn a_batch_no_sampled_member_links_to_leaves_no_mark_and_a_kept_one_all_its_links() {
    let sampling = Sampling::one_in(16).expect("in range");
    let collector = Collector::growing(1 << 14, 1 << 14, sampling);
    let sampled: Vec<u64> = (1..).filter(|&op| sampling.keeps(OpId(op))).take(40).collect();
    let unsampled: Vec<u64> = (1..).filter(|&op| !sampling.keeps(OpId(op))).take(400).collect();
    // Interval ids no sampling would keep by their own id.
    let mut txns = (1u64 << 50..).filter(|&id| !sampling.keeps(OpId(id)));
    let link = |txn: u64, op: u64| collector.push(Mark::serves(OpId(txn), OpId(op)));
    let hop = |txn: u64| collector.offer(OpId(txn), Hop::WOKE);
    // Batch a: left-out members only, links before the interval's hop.
    let a = txns.next().expect("id");
    unsampled[..3].iter().for_each(|&op| link(a, op));
    hop(a);
    // Batch b: two left out, then a sampled one, then one more left out.
    let b = txns.next().expect("id");
    unsampled[3..5].iter().for_each(|&op| link(b, op));
    link(b, sampled[0]);
    link(b, unsampled[5]);
    hop(b);
    // Batch c: its hop first, then its links (decided by its own id):
    // its links are stored when the next batch's come, as before.
    let c = txns.next().expect("id");
    hop(c);
    unsampled[6..8].iter().for_each(|&op| link(c, op));
    // Batch d: more left-out members than a thread holds back.
    let d = txns.next().expect("id");
    unsampled[8..8 + pending::HELD_LINKS + 3].iter().for_each(|&op| link(d, op));
    hop(d);
    let drained = collector.drain();
    let links_of = |txn: u64| drained.threads[0].marks.iter().filter(|m| m.is_link() && m.ticks.0 == txn).count();
    assert_eq!(links_of(a), 0, "a batch of left-out members only leaves no link");
    assert_eq!(links_of(b), 4, "a kept batch keeps every member's link");
    assert_eq!(links_of(c), 2, "links after the interval's hop are stored");
    assert_eq!(links_of(d), pending::HELD_LINKS, "past the room, the held links are stored; the rest let go");
    assert!(drained.threads[0].marks.iter().any(|m| m.op.0 == b && !m.is_link()), "batch b's hop kept");
}

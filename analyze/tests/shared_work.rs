//! Shared work: a batch's BEGIN and COMMIT, marked once and linked to the
//! requests they serve, joined into each request's path (the latency view)
//! and divided among them (the cost view), with every length known.

mod common;

#[path = "common/batched.rs"]
mod batched;

use batched::Steps;
use hopscope_analyze::join::{self, LaneOps, Sharing};
use hopscope_probe::{Block, Mark, OpId, Trace};

fn trace(blocks: Vec<Block>) -> Trace {
    let threads = batched::threads();
    let threads: Vec<&str> = threads.iter().map(String::as_str).collect();
    let header = batched::with_hops(common::header(&["batched-probed"], &threads));
    Trace { header, blocks }
}

fn joined(blocks: Vec<Block>) -> LaneOps {
    join::join(&trace(blocks)).remove(0)
}

/// Slice `name`'s index in `lane`.
fn slice(lane: &LaneOps, name: &str) -> usize {
    let names: Vec<&str> = lane.slices.iter().map(|s| s.name.as_str()).collect();
    lane.slices.iter().position(|s| s.name == name).unwrap_or_else(|| panic!("no slice {name} in {names:?}"))
}

#[test]
fn each_request_of_a_batch_waits_for_the_whole_commit_and_pays_its_share() {
    let steps = Steps::KNOWN;
    for size in [1usize, 8, 64] {
        let lane = joined(vec![batched::block(0, 0, &steps, size, 5, 1_000)]);
        assert_eq!((lane.complete, lane.incomplete), (5 * size as u64, 0), "batch of {size}");
        assert_eq!(lane.batch_sizes.counts, [(size as u64, 5)], "batch sizes exact");
        assert_eq!(lane.batches.mean(), Some(size as f64));
        assert_eq!(lane.batches.operations, 5 * size as u64, "each request counted once");
        let block = &lane.blocks[0];
        let mean = |name: &str| block.slice_mean_ns[slice(&lane, name)].expect("mean");
        let cost = |name: &str| block.slice_cost_mean_ns[slice(&lane, name)].expect("cost");
        let k = size as f64;
        // The shared intervals: all of them in each request's path, a
        // k-th of them in its cost.
        assert_eq!(mean("commit→committed"), steps.commit as f64);
        assert_eq!(cost("commit→committed"), steps.commit as f64 / k);
        assert_eq!(mean("begin→began"), steps.begin as f64);
        assert_eq!(cost("begin→began"), steps.begin as f64 / k);
        // Its own statement: the same in both views.
        assert_eq!(mean("executing→executed"), steps.statement as f64);
        assert_eq!(cost("executing→executed"), steps.statement as f64);
        // The statements before its own: on average half the others'.
        let before = (k - 1.0) / 2.0 * (steps.bind + steps.statement) as f64 + steps.bind as f64;
        assert!((mean("began→executing") - before).abs() < 1e-6, "{} vs {before}", mean("began→executing"));
        // Of the writer serving the others, a request pays its own last
        // step (binding its statement, handing its reply over) or its share
        // of the batch's (opening it, closing it).
        assert_eq!(cost("began→executing"), steps.bind as f64, "others' statements cost this request nothing");
        assert_eq!(cost("committed→replied"), steps.reply as f64);
        assert_eq!(cost("woke→begin"), steps.open as f64 / k);
        assert_eq!(cost("executed→commit"), steps.close as f64 / k);
        let kinds: Vec<(&str, Sharing)> = lane.slices.iter().map(|s| (s.name.as_str(), s.sharing)).collect();
        for (name, sharing) in [
            ("begin→began", Sharing::Shared),
            ("commit→committed", Sharing::Shared),
            ("began→executing", Sharing::Siblings),
            ("executed→commit", Sharing::Siblings),
            ("committed→replied", Sharing::Siblings),
            ("woke→begin", Sharing::Siblings),
            ("replied→idle", Sharing::Siblings),
            ("executing→executed", Sharing::Own),
            ("sent→woke", Sharing::Own),
        ] {
            assert!(kinds.contains(&(name, sharing)), "{name} should be {sharing:?}: {kinds:?}");
        }
        // The writer's costs add up to its time per request: each step of a
        // batch counted once (the drain of the queue is in `sent→woke`, the
        // request's own wait for the writer).
        let writer_cost: f64 = lane
            .slices
            .iter()
            .enumerate()
            .filter(|(_, s)| s.side == hopscope_analyze::join::SliceSide::Writer)
            .map(|(i, _)| block.slice_cost_mean_ns[i].expect("cost"))
            .sum();
        let s = steps;
        let batch = s.open + s.begin + s.close + s.commit + s.settle + size as u64 * (s.bind + s.statement + s.reply);
        assert!(
            (writer_cost - batch as f64 / k).abs() < 1e-6,
            "batch of {size}: {writer_cost} vs {}",
            batch as f64 / k
        );
        // The path's slices add up to each request's whole time.
        let path: f64 = (0..lane.path_len - 1).map(|s| block.slice_mean_ns[s].expect("mean")).sum();
        let total = block.total_mean_ns.expect("total");
        assert!((path - total).abs() < 1e-6, "batch of {size}: path {path} vs total {total}");
    }
}

#[test]
fn a_request_whose_batch_was_not_marked_is_incomplete_and_nothing_else_moves() {
    let steps = Steps::KNOWN;
    let mut block = batched::block(0, 0, &steps, 8, 3, 1_000);
    // The first batch's own marks (BEGIN, COMMIT, idle) lost: its eight
    // requests cannot be whole; the other two batches join as before.
    let first_batch = block.streams[1].marks.iter().find_map(Mark::link).expect("a link");
    block.streams[1].marks.retain(|m| m.op != first_batch);
    let lane = joined(vec![block]);
    assert_eq!((lane.complete, lane.incomplete), (16, 8));
    assert_eq!(lane.batch_sizes.counts, [(8, 2)]);
}

#[test]
fn members_a_sampling_capture_left_out_size_their_batch_and_are_no_operation() {
    let steps = Steps::KNOWN;
    let mut block = batched::block(0, 0, &steps, 8, 5, 1_000);
    // Keep the first request of each batch (as a capture sampling one in
    // eight might): the others' marks gone, their links flagged.
    let mut first_of: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for link in block.streams.iter().flat_map(|s| &s.marks).filter(|m| m.is_link()) {
        first_of.entry(link.ticks.0).or_insert(link.op.0);
    }
    let kept: Vec<u64> = first_of.values().copied().collect();
    for stream in &mut block.streams {
        stream.marks = stream
            .marks
            .iter()
            .filter_map(|m| match m.link() {
                Some(batch) if !kept.contains(&m.op.0) => Some(Mark::serves_unsampled(batch, m.op)),
                Some(_) => Some(*m),
                None if first_of.contains_key(&m.op.0) || kept.contains(&m.op.0) => Some(*m),
                None => None,
            })
            .collect();
    }
    let lane = joined(vec![block]);
    assert_eq!((lane.complete, lane.incomplete), (5, 0), "a left-out member is neither joined nor incomplete");
    assert_eq!(lane.batch_sizes.counts, [(8, 5)], "each batch's size counts its left-out members");
    let block = &lane.blocks[0];
    let commit = slice(&lane, "commit→committed");
    assert_eq!(block.slice_mean_ns[commit], Some(steps.commit as f64), "each kept request waits for all of it");
    assert_eq!(block.slice_cost_mean_ns[commit], Some(steps.commit as f64 / 8.0), "and pays an eighth");
}

#[test]
fn a_batch_that_marks_begin_and_commit_apart_counts_each_request_once() {
    let steps = Steps::KNOWN;
    let mut block = batched::block(0, 0, &steps, 8, 3, 1_000);
    // BEGIN's two marks under an id of their own, linked to the same
    // requests: two shared intervals per batch (a `begin` span and a
    // `commit` span, each recording the requests it serves).
    let hops = batched::hops();
    let begin_hops = [hops.find("begin").expect("begin"), hops.find("began").expect("began")];
    let apart = |id: OpId| OpId(id.0 | 1 << 40);
    let writer = &mut block.streams[1].marks;
    let links: Vec<Mark> =
        writer.iter().filter_map(|m| m.link().map(|shared| Mark::serves(apart(shared), m.op))).collect();
    for mark in writer.iter_mut().filter(|m| begin_hops.contains(&m.hop)) {
        mark.op = apart(mark.op);
    }
    writer.extend(links);
    let lane = joined(vec![block]);
    assert_eq!((lane.complete, lane.incomplete), (24, 0));
    assert_eq!(lane.batches.intervals, 6, "three batches, two intervals each");
    assert_eq!(lane.batches.served, 48, "each interval served its batch's eight");
    assert_eq!(lane.batches.operations, 24, "yet 24 requests were served");
    assert_eq!(lane.batches.mean(), Some(8.0));
    let cost = |name: &str| lane.blocks[0].slice_cost_mean_ns[slice(&lane, name)].expect("cost");
    assert_eq!(cost("begin→began"), steps.begin as f64 / 8.0);
    assert_eq!(cost("commit→committed"), steps.commit as f64 / 8.0);
}

#[test]
fn a_lane_s_cost_view_is_its_mean_over_operations_a_slow_commit_in_one_block_included() {
    use hopscope_analyze::slices::{Owner, slice_figures};
    let steps = Steps::KNOWN;
    // Three blocks of batches of 8, the last with a COMMIT ten times as
    // long (a WAL checkpoint in it): a median over blocks would drop it.
    let slow = Steps { commit: steps.commit * 10, ..steps };
    let blocks = vec![
        batched::block(0, 0, &steps, 8, 4, 1_000),
        batched::block(0, 1, &steps, 8, 4, 1_000),
        batched::block(0, 2, &slow, 8, 4, 1_000),
    ];
    let lane = joined(blocks);
    let figures = slice_figures(&lane, 7);
    let figure = |name: &str| figures.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"));
    let commit = figure("commit→committed").cost_us.expect("a cost");
    let expected = (2.0 * steps.commit as f64 + slow.commit as f64) / 3.0 / 8.0 / 1_000.0;
    assert!((commit - expected).abs() < 1e-9, "{commit} vs {expected}");
    // A wait across threads is no thread's work: no cost.
    assert_eq!(figure("sent→woke").cost_us, None);
    assert_eq!(figure("idle→received").cost_us, None);
    // The statements of the batch's others, waited through: a wait, not
    // the writer's own code; the shared COMMIT stays SQLite's.
    assert_eq!(figure("began→executing").owner, Owner::Wait);
    assert!(!figure("began→executing").library);
    assert_eq!(figure("commit→committed").owner, Owner::Sqlite);
    assert_eq!(figure("executing→executed").cost_us.map(|c| (c * 1e3).round()), Some(steps.statement as f64));
}

#[test]
fn a_trace_without_links_joins_as_before_with_cost_equal_to_latency() {
    let steps = Steps::KNOWN;
    let mut block = batched::block(0, 0, &steps, 1, 4, 1_000);
    // Every request its own interval, marked under its own id: no links.
    let links: Vec<(OpId, OpId)> =
        block.streams[1].marks.iter().filter_map(|m| m.link().map(|shared| (shared, m.op))).collect();
    for stream in &mut block.streams {
        stream.marks.retain(|m| !m.is_link());
        for mark in &mut stream.marks {
            if let Some((_, op)) = links.iter().find(|(shared, _)| *shared == mark.op) {
                mark.op = *op;
            }
        }
    }
    let lane = joined(vec![block]);
    assert_eq!((lane.complete, lane.incomplete), (4, 0));
    assert!(!lane.shares_work());
    assert!(lane.slices.iter().all(|s| s.sharing == Sharing::Own));
    let block = &lane.blocks[0];
    assert_eq!(block.slice_cost_mean_ns, block.slice_mean_ns);
    assert_eq!(block.slice_mean_ns[slice(&lane, "commit→committed")], Some(steps.commit as f64));
}

#[test]
fn a_timeline_draws_each_batch_once_with_an_arrow_from_every_request_it_serves() {
    use hopscope_analyze::timeline::{self, Cut, SliceKind};
    let steps = Steps::KNOWN;
    let t = trace(vec![batched::block(0, 0, &steps, 8, 2, 1_000)]);
    let blocks = timeline::blocks(&t, Cut::default());
    let block = &blocks[0];
    assert_eq!(block.overlapping, 0, "every slice nests on its track");
    let begin = t.header.hops.find("begin").expect("hop");
    let commit = t.header.hops.find("commit").expect("hop");
    let commits: Vec<_> = block.slices.iter().filter(|s| s.name == "commit→committed").collect();
    assert_eq!(commits.len(), 2, "one COMMIT slice per batch, not one per request");
    assert!(commits.iter().all(|s| s.end_ns - s.start_ns == steps.commit as i64));
    // Into each batch's BEGIN: an arrow from each of its eight requests.
    let begin_name = t.header.hops.get(begin).map(|d| d.name.clone()).expect("name");
    let arrivals = block
        .slices
        .iter()
        .filter(|s| s.kind == SliceKind::Anchor && s.name == begin_name && s.flow.is_some_and(|f| f.incoming))
        .count();
    assert_eq!(arrivals, 16);
    // Times are times: nothing past the block (a link's id is no tick).
    let end = block.slices.iter().map(|s| s.end_ns).max().expect("slices");
    assert!(end < 10_000_000, "{end} ns");
    let _ = commit;
}

#[test]
fn a_timeline_draws_a_begin_and_a_commit_of_their_own_each_with_its_arrows() {
    use hopscope_analyze::timeline::{self, Cut, SliceKind};
    // A span road's batch: BEGIN and COMMIT are two shared spans, each of
    // its own id linked to every request, and the writer marks nothing of
    // a request before the BEGIN (no wake mark).
    let mut block = batched::block(0, 0, &Steps::KNOWN, 8, 2, 1_000);
    let t0 = trace(Vec::new());
    let (commit, committed) =
        (t0.header.hops.find("commit").expect("hop"), t0.header.hops.find("committed").expect("hop"));
    let second = |id: OpId| OpId(id.0 ^ (1 << 61));
    for stream in &mut block.streams {
        let mut links = Vec::new();
        for mark in &mut stream.marks {
            if let Some(interval) = mark.link() {
                links.push(Mark::serves(second(interval), mark.op));
            } else if mark.hop == commit || mark.hop == committed {
                mark.op = second(mark.op);
            }
        }
        stream.marks.retain(|m| m.hop != hopscope_probe::Hop::WOKE || m.is_link());
        stream.marks.extend(links);
    }
    let t = trace(vec![block]);
    let blocks = timeline::blocks(&t, Cut::default());
    let slices = &blocks[0].slices;
    let count = |name: &str| slices.iter().filter(|s| s.name == name && s.kind == SliceKind::Step).count();
    assert_eq!((count("begin→began"), count("commit→committed")), (2, 2), "each interval once per batch");
    let arrivals = |hop: &str| {
        slices
            .iter()
            .filter(|s| s.kind == SliceKind::Anchor && s.name == hop && s.flow.is_some_and(|f| f.incoming))
            .count()
    };
    assert_eq!((arrivals("begin"), arrivals("commit")), (16, 16), "an arrow from every request into each");
}

#[test]
fn shared_intervals_linked_to_no_operation_leave_every_one_incomplete_and_say_so() {
    // The road dropped every link (a span switch that did not pass
    // `follows_from` on): no request has the batch's BEGIN or COMMIT.
    let mut block = batched::block(0, 0, &Steps::KNOWN, 8, 5, 1_000);
    for stream in &mut block.streams {
        stream.marks.retain(|m| m.link().is_none());
    }
    let t = trace(vec![block]);
    let lane = join::join(&t).remove(0);
    // The 40 requests, and the 5 batches now read as operations of their own.
    assert_eq!((lane.complete, lane.incomplete), (0, 45));
    let d = hopscope_analyze::decompose(&t).expect("decomposes");
    let said = d.warnings.iter().filter_map(|w| w.typed()).find_map(|w| match w {
        hopscope_analyze::warning::Warning::IncompleteOps { lane, incomplete, complete } => {
            Some((lane.clone(), *incomplete, *complete))
        }
        _ => None,
    });
    assert_eq!(said, Some(("batched-probed".to_owned(), 45, 0)), "{:#?}", d.warnings);
}

/// A trace long enough to be joined on several threads (past 64 blocks)
/// joins as one thread joins it: the same blocks in the same order, the
/// same counts, batch sizes and pooled quantiles.
#[test]
fn a_long_trace_joined_on_every_core_is_joined_as_on_one() {
    let steps = Steps::KNOWN;
    let blocks: Vec<Block> =
        (0..96u32).map(|i| batched::block(0, i, &steps, 1 + (i as usize % 7), 20, 1_000 + u64::from(i))).collect();
    let trace = trace(blocks);
    let one = join::join(&trace);
    let path = common::scratch_trace("shared-work", "parallel");
    let mut writer = hopscope_probe::TraceWriter::create(&path, trace.header.clone()).expect("trace");
    for block in &trace.blocks {
        writer.write_block(block).expect("block");
    }
    writer.finish().expect("finish");
    let (_, every_core) = hopscope_analyze::join_file(&path).expect("joined");
    let _ = std::fs::remove_dir_all(path.parent().expect("its directory"));
    let (one, every_core) = (&one[0], &every_core[0]);
    assert_eq!(every_core.blocks.len(), 96);
    assert_eq!((every_core.complete, every_core.incomplete), (one.complete, one.incomplete));
    assert_eq!(every_core.batch_sizes, one.batch_sizes);
    assert_eq!(every_core.batches, one.batches);
    assert_eq!(every_core.core_changes, one.core_changes);
    assert_eq!(every_core.total_ns, one.total_ns, "pooled latency, every percentile");
    assert_eq!(every_core.slice_ns, one.slice_ns, "pooled slices, every percentile");
    for (a, b) in every_core.blocks.iter().zip(&one.blocks) {
        assert_eq!((a.block, a.complete, &a.slice_median_ns), (b.block, b.complete, &b.slice_median_ns));
    }
}

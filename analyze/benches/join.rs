//! Join throughput: marks per second turned into per-operation slices.
//!
//! A synthetic trace of 10 million marks (1 million writes × 10 hops, in 200
//! blocks, caller and writer streams interleaved as a real run writes them),
//! joined as held in memory (`10M_marks`), and the same blocks streamed ten
//! times through the two passes as `analyze` streams a file
//! (`100M_marks_streamed`: 10^8 marks, one block's table resident at a
//! time). Target: at least 50 million marks per second on one core. Run
//! with `cargo bench -p hopscope-analyze --bench join`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hopscope_analyze::join;
use hopscope_probe::{Block, Hop, HostInfo, Mark, OpId, Side, Stream, Ticks, Trace, TraceHeader};

const BLOCKS: u64 = 200;
const OPS_PER_BLOCK: u64 = 5_000;

fn synthetic() -> Trace {
    let mut header = TraceHeader::for_this_host(&["writer-probed"], &["caller", "writer"]);
    header.host = HostInfo { hostname: "bench".into(), ..header.host };
    header.run = BTreeMap::new();
    let mut blocks = Vec::new();
    let mut t = 0u64;
    for b in 0..BLOCKS {
        let mut caller = Vec::with_capacity((OPS_PER_BLOCK * 6) as usize);
        let mut writer = Vec::with_capacity((OPS_PER_BLOCK * 4) as usize);
        let start = t;
        for i in 0..OPS_PER_BLOCK {
            let op = OpId((1 << 40) | (b * OPS_PER_BLOCK + i));
            for (hop, _, side) in Hop::STANDARD {
                t += 100 + (i % 7) * 10;
                let mark = Mark { op, hop, cpu: side as u16, ticks: Ticks(t) };
                match side {
                    Side::Caller => caller.push(mark),
                    Side::Writer => writer.push(mark),
                }
            }
        }
        blocks.push(Block {
            lane: 0,
            pass: 0,
            sample: b as u32,
            op_count: OPS_PER_BLOCK,
            start: Ticks(start),
            end: Ticks(t),
            streams: vec![
                Stream { thread: 0, dropped: 0, marks: caller },
                Stream { thread: 1, dropped: 0, marks: writer },
            ],
            readings: Vec::new(),
        });
    }
    Trace { header, blocks }
}

fn join_marks(c: &mut Criterion) {
    let trace = synthetic();
    let marks: u64 = trace.blocks.iter().flat_map(|b| &b.streams).map(|s| s.marks.len() as u64).sum();
    let mut group = c.benchmark_group("join");
    group.throughput(Throughput::Elements(marks));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("10M_marks", |b| b.iter(|| black_box(join::join(black_box(&trace)))));
    group.throughput(Throughput::Elements(marks * STREAMED_ROUNDS));
    group.bench_function("100M_marks_streamed", |b| b.iter(|| black_box(streamed(black_box(&trace)))));
    group.finish();
}

/// How many times the streamed join reads the trace's blocks.
const STREAMED_ROUNDS: u64 = 10;

/// The trace's blocks [`STREAMED_ROUNDS`] times over, through a scan and a
/// join fed one block at a time, as a file is read.
fn streamed(trace: &Trace) -> Vec<join::LaneOps> {
    let mut scan = join::HopScan::new(&trace.header);
    for _ in 0..STREAMED_ROUNDS {
        trace.blocks.iter().for_each(|b| scan.add(b));
    }
    let mut joined = join::Join::new(&trace.header, &scan);
    for round in 0..STREAMED_ROUNDS as usize {
        for (i, block) in trace.blocks.iter().enumerate() {
            joined.add(round * trace.blocks.len() + i, block);
        }
    }
    joined.finish()
}

criterion_group!(benches, join_marks);
criterion_main!(benches);

//! Memory and time on a large trace (`cargo bench -p hopscope-analyze
//! --bench large_trace`): a trace of ~1 GB is generated (streamed, never
//! whole in memory), then read block by block, exported as a timeline,
//! decomposed streaming (as `hopscope analyze` does), read whole and
//! decomposed held in memory; a file that is not a trace (`/dev/zero`, a 2 GB sparse file)
//! is refused. Each phase prints its wall time and the peak of heap bytes
//! it allocated (a counting allocator), next to the size of one block on
//! disk and as timeline JSON. `HOPSCOPE_LARGE_TRACE_MB` changes the size.
//!
//! `HOPSCOPE_GROW_TRACES=a.hop,b.hop` adds real traces (a careful `ab`
//! run, a `merge` run, a `resolve` repeat): each is grown
//! `HOPSCOPE_GROW` times (100 by default; its passes repeated, streamed)
//! and read as `ab`, `resolve` and `merge` read theirs, streamed, then
//! held whole for contrast. A live capture grown so (its windows repeated)
//! is decomposed as `hopscope analyze` does, with its marks per second.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use hopscope_analyze::timeline::chrome::ChromeWriter;
use hopscope_analyze::timeline::{Cut, Timeline};
use hopscope_probe::{Block, Hop, Mark, OpId, Stream, Ticks, Trace, TraceHeader, TraceReader, TraceWriter};
use hopscope_testkit::{Counting, peak_bytes, restart_peak};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Operations per block; ten marks each, so a block is ~2 MB on disk.
const OPS_PER_BLOCK: u64 = 10_000;

/// Run `f`, printing its time and the heap it needed beyond what was live.
fn phase<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let base = restart_peak();
    let start = Instant::now();
    let out = f();
    let peak = peak_bytes().saturating_sub(base);
    println!(
        "{name:<46} {:>9.2} s   peak heap {:>9.1} MiB",
        start.elapsed().as_secs_f64(),
        peak as f64 / (1 << 20) as f64
    );
    out
}

fn block(lane: u16, sample: u32) -> Block {
    let first = u64::from(sample) * OPS_PER_BLOCK;
    let mut caller = Vec::with_capacity(OPS_PER_BLOCK as usize * 6);
    let mut writer = Vec::with_capacity(OPS_PER_BLOCK as usize * 4);
    for i in 0..OPS_PER_BLOCK {
        let (op, t) = (OpId(first + i), 1_000_000 + (first + i) * 20_000);
        for (k, (hop, _, side)) in Hop::STANDARD.iter().enumerate() {
            let mark = Mark::new(op, *hop, Ticks(t + k as u64 * 1_000));
            match side {
                hopscope_probe::Side::Caller => caller.push(mark),
                hopscope_probe::Side::Writer => writer.push(mark),
            }
        }
    }
    Block {
        lane,
        pass: 0,
        sample,
        op_count: OPS_PER_BLOCK,
        start: Ticks(1_000_000 + first * 20_000),
        end: Ticks(1_000_000 + (first + OPS_PER_BLOCK) * 20_000),
        streams: vec![Stream { thread: 0, dropped: 0, marks: caller }, Stream { thread: 1, dropped: 0, marks: writer }],
        readings: Vec::new(),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mb: u64 = std::env::var("HOPSCOPE_LARGE_TRACE_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("hopscope-large-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("large.hop");
    let header = TraceHeader::for_this_host(&["inline", "writer-probed"], &["caller", "writer"]);

    // One block on disk and as timeline JSON, for scale.
    let one = block(1, 0);
    let mut one_json = Vec::new();
    let mut scan = hopscope_analyze::join::HopScan::new(&header);
    scan.add(&one);
    let mut timeline = Timeline::new(&header, &scan, 0, Cut::default());
    let mut w = ChromeWriter::start(&mut one_json, &header).expect("json");
    if let Some(part) = timeline.block(&one) {
        w.block(&part).expect("json");
    }
    w.finish(None).expect("json");
    let mut one_disk = TraceWriter::new(Vec::new(), header.clone()).expect("header");
    let header_bytes = one_disk.header().lanes.len();
    one_disk.write_block(&one).expect("block");
    let one_disk = one_disk.finish().expect("end").len() - header_bytes;
    println!(
        "one block: {OPS_PER_BLOCK} operations, ~{:.1} MiB on disk, {:.1} MiB as timeline JSON",
        one_disk as f64 / (1 << 20) as f64,
        one_json.len() as f64 / (1 << 20) as f64
    );
    drop((one, one_json));

    let blocks = phase(&format!("write a {mb} MiB trace, block by block"), || {
        let mut writer = TraceWriter::create(&path, header.clone()).expect("trace");
        let mut written = 0u32;
        while std::fs::metadata(&path).map_or(0, |m| m.len()) < mb << 20 {
            writer.write_block(&block(1, written)).expect("block");
            written += 1;
        }
        writer.finish().expect("end");
        written
    });
    let size = std::fs::metadata(&path).expect("size").len();
    println!("trace: {blocks} blocks, {:.0} MiB", size as f64 / (1 << 20) as f64);

    phase("read it block by block (TraceReader)", || {
        let mut reader = TraceReader::open(&path).expect("open");
        let mut marks = 0usize;
        while let Some(b) = reader.next_block().expect("block") {
            marks += b.streams.iter().map(|s| s.marks.len()).sum::<usize>();
        }
        marks
    });
    phase("export it as a timeline, streaming (to a sink)", || {
        let mut reader = TraceReader::open(&path).expect("open");
        let header = reader.header().clone();
        let mut scan = hopscope_analyze::join::HopScan::new(&header);
        while let Some(b) = reader.next_block().expect("block") {
            scan.add(&b);
        }
        let mut timeline = Timeline::new(&header, &scan, 0, Cut::default());
        let mut reader = TraceReader::open(&path).expect("open");
        let mut writer = ChromeWriter::start(std::io::sink(), &header).expect("start");
        while let Some(b) = reader.next_block().expect("block") {
            if let Some(part) = timeline.block(&b) {
                writer.block(&part).expect("events");
            }
        }
        writer.finish(None).expect("finish");
    });
    phase("read it whole (Trace::read)", || Trace::read(&path).expect("trace").blocks.len());
    phase("decompose it, streaming (analyze)", || {
        hopscope_analyze::decompose_file(&path).expect("decomposes").slices.len()
    });
    phase("decompose it held in memory", || {
        let trace = Trace::read(&path).expect("trace");
        hopscope_analyze::decompose(&trace).expect("decomposes").slices.len()
    });

    let grow: u32 = std::env::var("HOPSCOPE_GROW").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    for real in std::env::var("HOPSCOPE_GROW_TRACES").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
        grown(Path::new(real), &dir.join("grown.hop"), grow);
    }

    phase("refuse /dev/zero", || Trace::read(Path::new("/dev/zero")).is_err());
    let sparse = dir.join("sparse.hop");
    let file = std::fs::File::create(&sparse).expect("sparse");
    file.set_len(2 << 30).expect("2 GB sparse");
    phase("refuse a 2 GB sparse file of zeros", || Trace::read(&sparse).is_err());
    let mut cut = std::fs::File::create(dir.join("claims.hop")).expect("claims");
    // A header record that claims 4 GB: refused from its length field.
    cut.write_all(b"HOPSCOPE\x02\x00\x00\x00H\xff\xff\xff\xff").expect("write");
    phase("refuse a record claiming 4 GB", || Trace::read(&dir.join("claims.hop")).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Grow the trace at `real` `times` times into `path` (its passes
/// repeated, renumbered after the last), streamed, then read it as the
/// A/B, resolve and merge analyses do: streamed, and held whole.
fn grown(real: &Path, path: &Path, times: u32) {
    use hopscope_analyze::ab_trace::AbTrace;
    use hopscope_analyze::{experiment, merge, resolution};
    let (blocks, largest) = phase(&format!("grow {} {times}×", real.display()), || {
        let mut reader = TraceReader::open(real).expect("a trace");
        let mut writer = TraceWriter::create(path, reader.header().clone()).expect("grown");
        let (mut passes, mut largest, mut blocks) = (1u32, 0usize, 0u64);
        while let Some(b) = reader.next_block().expect("block") {
            largest = largest.max(b.streams.iter().map(|s| s.marks.len()).sum::<usize>());
            passes = passes.max(b.pass + 1);
            blocks += 1;
        }
        for k in 0..times {
            let mut reader = TraceReader::open(real).expect("a trace");
            while let Some(mut b) = reader.next_block().expect("block") {
                b.pass += k * passes;
                writer.write_block(&b).expect("block");
            }
        }
        writer.finish().expect("end");
        (blocks * u64::from(times), largest)
    });
    let size = std::fs::metadata(path).expect("size").len();
    println!(
        "  grown: {blocks} blocks, {:.0} MiB; its largest block {largest} marks (~{:.2} MiB held)",
        size as f64 / (1 << 20) as f64,
        (largest * std::mem::size_of::<Mark>()) as f64 / (1 << 20) as f64
    );
    if hopscope_analyze::capture::is_capture(&TraceReader::open(path).expect("grown").header().clone()) {
        // A capture: analysed as `hopscope analyze` does, its windows the
        // grown passes. Marks per second over the whole analysis.
        let marks = size / 20;
        let start = Instant::now();
        let d = phase("  capture: decomposed streamed (hopscope analyze)", || {
            hopscope_analyze::decompose_file(path).expect("decomposed")
        });
        let seconds = start.elapsed().as_secs_f64();
        let windows = d.capture.as_ref().map_or(0, |c| c.windows.len());
        let ops = d.lanes.values().next().map_or(0, |l| l.ops);
        println!(
            "  {ops} operations, {windows} windows: ~{:.1} M marks/s (~{marks} marks, 20 bytes each)",
            marks as f64 / seconds / 1e6
        );
        let _ = std::fs::remove_file(path);
        return;
    }
    let rule = resolution::detection_rule();
    phase("  ab: judged streamed (AbTrace::read_file)", || {
        experiment::judge_file(path, &rule).expect("judged").outcome.passes.len()
    });
    phase("  resolve: a repeat judged streamed", || {
        resolution::judge_repeat(&AbTrace::read_file(path).expect("read"), "built").estimated_ns
    });
    phase("  merge: analysed streamed", || merge::analyze(&AbTrace::read_file(path).expect("read"), 1).slices.len());
    phase("  ab: judged held whole (Trace::read)", || {
        experiment::judge(&Trace::read(path).expect("trace"), &rule).outcome.passes.len()
    });
    let _ = std::fs::remove_file(path);
}

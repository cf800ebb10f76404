//! The library's own cost: `writer − floor` per sequential insert, paired.
//!
//! Criterion times one function after another, so host drift lands on whole
//! rows and a difference of two rows can be off by more than it measures.
//! This bench instead runs the inline lane, the floor and the reference
//! writer (clean build, no marks) in short alternating blocks, changing the
//! order every round, and reports the median of the per-round differences
//! with a bootstrap 95% confidence interval. Every lane sees the same
//! interleaving: the rounds follow the harness's balanced order, so each
//! lane's block follows each other lane's equally often.
//!
//! Two set-ups:
//! - `memory · 2 cores · spin`: in-memory databases, caller and worker on
//!   different cores, both spinning: no wakes, little SQLite work, so the
//!   difference is the machinery alone.
//! - `WAL file · 1 core · park`: disk-backed WAL databases, both threads on
//!   one core, parking: the path `hopscope decompose` measures by default.
//!
//! Run with `cargo bench -p hopscope-workloads --bench library_cost`
//! (`-- --quick` for a short run).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hopscope_analyze::stats::{BOOTSTRAP_RESAMPLES, Samples, bootstrap_ci95, median_of_unsorted};
use hopscope_harness::Order;
use hopscope_probe::NoProbe;
use hopscope_workloads::knobs::{Placement, Wait};
use hopscope_workloads::{DbConfig, Floor, FloorClient, FloorOptions, Inline, Knobs, Value, Writer};
use rusqlite::Connection;

const INSERT: &str = "INSERT INTO items (k, v) VALUES (?1, ?2)";
const LANES: [&str; 4] = ["inline", "floor", "writer", "writer-no-harvest"];
const SEED: u64 = 0x11b_c057;

/// One set-up: where the databases live and how the threads wait and sit.
struct Setup {
    name: &'static str,
    file_backed: bool,
    placement: Placement,
    wait: Wait,
    ops_per_block: usize,
    rounds: usize,
}

/// The three lanes of one set-up, each on its own database.
struct Lanes {
    inline: Inline<NoProbe>,
    // Declared before `floor` so the client's channel closes first.
    client: FloorClient<NoProbe>,
    _floor: Floor<NoProbe>,
    writer: Writer<NoProbe>,
    /// The same writer without the dirty-table harvest (no update hook).
    bare_writer: Writer<NoProbe>,
    /// Connections that empty each file-backed table between blocks, so the
    /// table does not grow through the run.
    admins: Vec<Connection>,
    _dir: Option<TempDir>,
}

impl Lanes {
    fn open(setup: &Setup) -> Lanes {
        let db = DbConfig::default();
        let dir = setup.file_backed.then(TempDir::new);
        let path = |lane: &str| match &dir {
            Some(dir) => dir.0.join(format!("{lane}.db")),
            None => PathBuf::from(":memory:"),
        };
        let worker_core = match setup.placement {
            Placement::DifferentCores => 1,
            _ => 0,
        };
        hopscope_harness::placement::pin_current(0);
        let inline = Inline::open(&path("inline"), db, INSERT, NoProbe).expect("inline lane");
        let options = FloorOptions { pin: Some(worker_core), floor_wait: setup.wait, client_wait: setup.wait };
        let floor = Floor::open_with(&path("floor"), db, INSERT, NoProbe, options).expect("floor lane");
        let client = floor.client().expect("floor client");
        let knobs =
            Knobs { writer_wait: setup.wait, caller_wait: setup.wait, placement: setup.placement, ..Knobs::default() };
        let writer = Writer::open(&path("writer"), db, knobs, NoProbe).expect("writer lane");
        let bare_writer = Writer::open(&path("writer-no-harvest"), db, Knobs { harvest: false, ..knobs }, NoProbe)
            .expect("writer lane");
        let admins = match &dir {
            Some(_) => LANES.iter().map(|lane| Connection::open(path(lane)).expect("admin connection")).collect(),
            None => Vec::new(),
        };
        Lanes { inline, client, _floor: floor, writer, bare_writer, admins, _dir: dir }
    }

    /// Run `inputs` through lane `lane`; nanoseconds per operation.
    fn block(&self, lane: usize, inputs: Vec<Vec<Value>>) -> f64 {
        if let Some(admin) = self.admins.get(lane) {
            admin.execute_batch("DELETE FROM items").expect("empty the table");
        }
        let n = inputs.len();
        let start = Instant::now();
        for params in inputs {
            match lane {
                0 => black_box(self.inline.execute(&params).expect("inline insert")),
                1 => black_box(self.client.execute(params).expect("floor insert")),
                2 => black_box(self.writer.execute_owned(INSERT, params).expect("writer insert").changes),
                _ => black_box(self.bare_writer.execute_owned(INSERT, params).expect("writer insert").changes),
            };
        }
        start.elapsed().as_nanos() as f64 / n as f64
    }
}

/// A directory removed when the bench ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("hopscope-library-cost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("bench directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Per-block ns/op of each lane, in round order.
fn measure(setup: &Setup) -> [Vec<f64>; 4] {
    let lanes = Lanes::open(setup);
    let mut key = 0i64;
    let mut inputs = |n: usize| -> Vec<Vec<Value>> {
        (0..n)
            .map(|_| {
                key += 1;
                vec![Value::Integer(key), Value::Text("value".to_owned())]
            })
            .collect()
    };
    // Warm-up rounds settle the page cache, the statement caches and the
    // reply registrations; they are not recorded.
    let warmup = (setup.rounds / 10).max(3);
    let mut blocks: [Vec<f64>; 4] = Default::default();
    for round in 0..warmup + setup.rounds {
        // The harness's balanced order: each lane follows every other lane
        // equally often, so a lane whose threads are still settling (a
        // crossbeam receiver yielding before it parks) delays every lane
        // alike instead of always the one after it.
        for lane in Order::Balanced.round(0, round as u32, LANES.len()) {
            let ns = lanes.block(lane, inputs(setup.ops_per_block));
            if round >= warmup {
                blocks[lane].push(ns);
            }
            // A spinning thread keeps its core busy for its window after the
            // block's last reply; let it park before the next lane starts, or
            // that lane shares its core with a spinner.
            if let Wait::Spin(window) | Wait::Yield(window) = setup.wait {
                std::thread::sleep(window + Duration::from_millis(1));
            } else {
                // As the harness does: let a crossbeam receiver's backoff
                // end in a park before the next lane's block.
                std::thread::sleep(hopscope_harness::DEFAULT_SETTLE);
            }
        }
    }
    blocks
}

/// Median and bootstrap 95% CI of `values`, in µs.
fn summary(values: &[f64]) -> (f64, f64, f64) {
    let samples = Samples::new(values.to_vec()).expect("finite samples");
    let (lo, hi) = samples.median_ci95(BOOTSTRAP_RESAMPLES, SEED);
    (samples.median() / 1e3, lo / 1e3, hi / 1e3)
}

/// Median of the per-round differences `a − b` and its bootstrap 95% CI, in µs.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let differences: Vec<f64> = a.iter().zip(b).map(|(a, b)| a - b).collect();
    let (lo, hi) = bootstrap_ci95(&differences, BOOTSTRAP_RESAMPLES, SEED, median_of_unsorted);
    (median_of_unsorted(&mut differences.clone()) / 1e3, lo / 1e3, hi / 1e3)
}

fn report(setup: &Setup, blocks: &[Vec<f64>; 4]) {
    println!("{}", setup.name);
    for (lane, values) in LANES.iter().zip(blocks) {
        let (m, lo, hi) = summary(values);
        println!("  {lane:<20} {m:9.3} µs  ({lo:.3}–{hi:.3})");
    }
    let floor = &blocks[1];
    for (lane, values) in LANES.iter().zip(blocks).skip(2) {
        let (d, lo, hi) = paired(values, floor);
        let ratio = summary(values).0 / summary(floor).0;
        println!("  {lane} − floor {d:+9.3} µs  ({lo:+.3}…{hi:+.3})  ×{ratio:.3}");
    }
    let (d, lo, hi) = paired(&blocks[2], &blocks[3]);
    println!("  harvest (writer − writer-no-harvest) {d:+.3} µs  ({lo:+.3}…{hi:+.3})");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = |careful: usize| if quick { careful / 5 } else { careful };
    let setups = [
        Setup {
            name: "memory · 2 cores · spin",
            file_backed: false,
            placement: Placement::DifferentCores,
            wait: Wait::Spin(Duration::from_micros(500)),
            ops_per_block: 500,
            rounds: rounds(300),
        },
        Setup {
            name: "WAL file · 1 core · park",
            file_backed: true,
            placement: Placement::SameCore,
            wait: Wait::Park,
            ops_per_block: 200,
            rounds: rounds(1000),
        },
    ];
    println!("µs per sequential insert: median of blocks (95% CI); differences paired by round");
    for setup in &setups {
        let blocks = measure(setup);
        report(setup, &blocks);
    }
}

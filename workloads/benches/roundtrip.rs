//! The writer's own cost, without SQLite's and the wakes' noise: one insert
//! into an in-memory database through the floor writer and through the
//! reference writer (clean build), side by side in one group. Both keep
//! their threads warm (spin windows) on different cores, so neither pays a
//! futex wake; what differs is the library's machinery.
//!
//! Run with `cargo bench -p hopscope-workloads --bench roundtrip`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hopscope_probe::NoProbe;
use hopscope_workloads::knobs::{Placement, Wait};
use hopscope_workloads::{DbConfig, Floor, FloorOptions, Inline, Knobs, Value, Writer};

const INSERT: &str = "INSERT INTO items (k, v) VALUES (?1, ?2)";
const WINDOW: Duration = Duration::from_millis(2);

fn params(i: i64) -> Vec<Value> {
    vec![Value::Integer(i), Value::Text("value".to_owned())]
}

fn roundtrip(c: &mut Criterion) {
    let memory = Path::new(":memory:");
    let db = DbConfig::default();
    hopscope_workloads::cpu::pin_current(0);
    let inline = Inline::open(memory, db, INSERT, NoProbe).expect("inline");
    let options = FloorOptions { pin: Some(1), floor_wait: Wait::Spin(WINDOW), client_wait: Wait::Spin(WINDOW) };
    let floor = Floor::open_with(memory, db, INSERT, NoProbe, options).expect("floor");
    let client = floor.client().expect("client");
    let knobs = Knobs {
        writer_wait: Wait::Spin(WINDOW),
        caller_wait: Wait::Spin(WINDOW),
        placement: Placement::DifferentCores,
        ..Knobs::default()
    };
    let writer = Writer::open(memory, db, knobs, NoProbe).expect("writer");
    let lean = Writer::open(memory, db, Knobs { harvest: false, coalesce: false, ..knobs }, NoProbe).expect("lean");

    let mut group = c.benchmark_group("roundtrip");
    let mut i = 0i64;
    let mut next = move || {
        i += 1;
        params(i)
    };
    group.bench_function("inline", |b| b.iter(|| black_box(inline.execute(&next()).expect("insert"))));
    group.bench_function("floor", |b| b.iter(|| black_box(client.execute(next()).expect("insert"))));
    group.bench_function("writer", |b| b.iter(|| black_box(writer.execute_owned(INSERT, next()).expect("insert"))));
    group.bench_function("writer_no_harvest_no_coalesce", |b| {
        b.iter(|| black_box(lean.execute_owned(INSERT, next()).expect("insert")))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = roundtrip
}
criterion_main!(benches);

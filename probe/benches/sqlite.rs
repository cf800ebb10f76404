//! What the SQLite probe costs a statement, side by side and interleaved:
//! the same prepared statement on three in-memory connections, one bare,
//! one probed with an operation set (two callbacks, two marks, and the two
//! reads of SQLite's own clock its end report takes), one probed with no
//! operation set (the callbacks and SQLite's clock reads, no mark).
//!
//! The variants run in short alternating chunks, in an order rotated each
//! round (a criterion group times one function after another, and this
//! host drifts by more than the probe costs between them); each round's
//! paired difference `probed − bare` is the probe's cost per statement.
//!
//! Run with `cargo bench -p hopscope-probe --features sqlite --bench sqlite`.

use std::time::Instant;

use hopscope_probe::collector::Collector;
use hopscope_probe::sqlite::{SqliteProbe, set_op};
use hopscope_probe::{Hop, OpId};
use rusqlite::Connection;

/// Statements per timed chunk.
const CHUNK: u32 = 2_000;
/// Rounds of every variant.
const ROUNDS: usize = 200;
const VARIANTS: [&str; 3] = ["bare", "probed", "probed_no_op"];

fn connection(sql: &str) -> Connection {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)").expect("schema");
    conn.prepare_cached(sql).expect("prepare");
    conn
}

/// ns per statement of `CHUNK` runs of `sql` on `conn`.
fn chunk(conn: &Connection, sql: &str, next: &mut i64) -> f64 {
    let mut statement = conn.prepare_cached(sql).expect("cached");
    let start = Instant::now();
    for _ in 0..CHUNK {
        *next += 1;
        let mut rows = statement.query([*next]).expect("statement");
        while rows.next().expect("step").is_some() {}
    }
    start.elapsed().as_nanos() as f64 / f64::from(CHUNK)
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn run(label: &str, sql: &str) {
    let probe = SqliteProbe::new(Collector::new(1 << 14), Hop(20), Hop::EXECUTED);
    let conns = [connection(sql), connection(sql), connection(sql)];
    probe.attach(&conns[1]).expect("attach");
    probe.attach(&conns[2]).expect("attach");
    let mut next = [0i64; 3];
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut differences = Vec::new();
    for round in 0..ROUNDS {
        let mut this = [0.0; 3];
        for k in 0..3 {
            let v = (round + k) % 3;
            set_op(if v == 1 { Some(OpId(round as u64)) } else { None });
            this[v] = chunk(&conns[v], sql, &mut next[v]);
        }
        set_op(None);
        let _ = probe.collector().drain();
        for v in 0..3 {
            figures[v].push(this[v]);
        }
        differences.push(this[1] - this[0]);
    }
    let counts = probe.counts();
    assert_eq!(counts.starts, u64::from(CHUNK) * ROUNDS as u64, "every probed statement marked");
    println!("{label}: {sql}");
    for (v, name) in VARIANTS.iter().enumerate() {
        let f = &mut figures[v];
        println!(
            "  {name:<14} median {:>7.1} ns/statement  (p10 {:.1}, p90 {:.1})",
            quantile(f, 0.5),
            quantile(f, 0.1),
            quantile(f, 0.9)
        );
    }
    let d = &mut differences;
    println!(
        "  probed − bare  median {:>+7.1} ns/statement  (p10 {:+.1}, p90 {:+.1}, paired over {ROUNDS} rounds)",
        quantile(d, 0.5),
        quantile(d, 0.1),
        quantile(d, 0.9)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--quick` is ignored.
    run("a trivial statement", "SELECT ?1");
    run("an insert (autocommit)", "INSERT INTO t (v) VALUES (?1)");
    println!(
        "SQLite's own clock read (default VFS): median {:.1} ns",
        hopscope_probe::sqlite::cost::sqlite_clock_read(ROUNDS as u32, CHUNK)
    );
    // What a run measures before it starts and states in its receipt.
    let cost = hopscope_probe::sqlite::cost::measure(40, 500).expect("measured");
    println!(
        "as a run measures it ({} rounds of {}): {:+.1} ns/statement (quartiles {:+.1}…{:+.1}), bare {:.1} ns",
        cost.rounds, cost.chunk, cost.ns_per_statement, cost.quartiles_ns[0], cost.quartiles_ns[1], cost.bare_ns
    );
}

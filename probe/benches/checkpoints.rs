//! What the checkpoint-recording VFS costs a write: the same single-row
//! INSERT (its own autocommit, WAL mode, `synchronous=NORMAL`) on two file
//! databases, one opened through SQLite's own `unix` VFS and one through
//! the forwarding VFS (the default once `checkpoints::record` ran),
//! interleaved in short chunks with the order flipped every round; each
//! round's paired difference is the forwarding's cost per write.
//!
//! Run with `cargo bench -p hopscope-probe --features sqlite --bench checkpoints`.

use std::time::Instant;

use hopscope_probe::sqlite::checkpoints;
use rusqlite::{Connection, OpenFlags};

/// Writes per timed chunk.
const CHUNK: u32 = 500;
/// Rounds.
const ROUNDS: usize = 200;

fn open(path: &std::path::Path, vfs: Option<&str>) -> Connection {
    let flags = OpenFlags::default();
    let conn = match vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
        None => Connection::open_with_flags(path, flags),
    }
    .expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)",
    )
    .expect("schema");
    conn
}

/// ns per write of `CHUNK` inserts on `conn`.
fn chunk(conn: &Connection, next: &mut i64) -> f64 {
    let mut statement = conn.prepare_cached("INSERT INTO t (v) VALUES (?1)").expect("prepare");
    let start = Instant::now();
    for _ in 0..CHUNK {
        *next += 1;
        statement.execute([*next]).expect("insert");
    }
    start.elapsed().as_nanos() as f64 / f64::from(CHUNK)
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    checkpoints::record().expect("the VFS registers");
    let dir = std::env::temp_dir().join(format!("hopscope-bench-checkpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let conns = [open(&dir.join("unix.db"), Some("unix")), open(&dir.join("forwarded.db"), None)];
    let mut next = [0i64; 2];
    let (mut bare, mut forwarded, mut differences) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let mut this = [0.0; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            this[i] = chunk(&conns[i], &mut next[i]);
        }
        bare.push(this[0]);
        forwarded.push(this[1]);
        differences.push(this[1] - this[0]);
    }
    let seen = checkpoints::totals().expect("recording");
    println!(
        "write, unix VFS: {:.0} ns median · through the forwarding VFS: {:.0} ns · paired difference {:+.1} ns \
         (IQR {:+.1}…{:+.1}) over {ROUNDS} rounds of {CHUNK}; {} checkpoints seen",
        quantile(&mut bare, 0.5),
        quantile(&mut forwarded, 0.5),
        quantile(&mut differences.clone(), 0.5),
        quantile(&mut differences.clone(), 0.25),
        quantile(&mut differences, 0.75),
        seen.count
    );
    drop(conns);
    let _ = std::fs::remove_dir_all(&dir);
}

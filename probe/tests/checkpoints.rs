//! WAL checkpoints counted through the forwarding VFS, in a process of
//! their own (the totals are process-wide): every one a program asks for
//! is found, every automatic one too, and the database reads back whole.

#![cfg(feature = "sqlite")]

use hopscope_probe::sqlite::checkpoints::{self, CheckpointTotals};
use rusqlite::Connection;

fn since(before: CheckpointTotals) -> CheckpointTotals {
    let now = checkpoints::totals().expect("recording");
    CheckpointTotals { count: now.count - before.count, total_ns: now.total_ns - before.total_ns, ..now }
}

#[test]
fn every_checkpoint_is_counted_and_the_database_stays_whole() {
    assert_eq!(checkpoints::totals(), None, "nothing is recorded before `record`");
    checkpoints::record().expect("the VFS registers");
    checkpoints::record().expect("and again, idempotent");
    let dir = std::env::temp_dir().join(format!("hopscope-checkpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("db.sqlite");
    let conn = Connection::open(&path).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)",
    )
    .expect("schema");

    // Asked for: one every 50 writes, 400 writes, automatic ones off.
    let before = checkpoints::totals().expect("recording");
    for i in 0..400 {
        conn.execute("INSERT INTO t(v) VALUES (zeroblob(200))", []).expect("insert");
        if i % 50 == 49 {
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).expect("checkpoint");
        }
    }
    let asked = since(before);
    assert_eq!(asked.count, 8, "{asked:?}");
    assert!(asked.total_ns > 0 && asked.longest_ns > 0, "{asked:?}");

    // Automatic: every commit that leaves 20 or more pages in the log.
    conn.execute_batch("PRAGMA wal_autocheckpoint=20").expect("pragma");
    let before = checkpoints::totals().expect("recording");
    for _ in 0..400 {
        conn.execute("INSERT INTO t(v) VALUES (zeroblob(200))", []).expect("insert");
    }
    let automatic = since(before);
    assert!(automatic.count >= 5, "400 single-row commits over a 20-page limit: {automatic:?}");

    let rows: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).expect("count");
    assert_eq!(rows, 800);
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check");
    assert_eq!(check, "ok");
    drop(conn);
    // Another connection reads what the first wrote through the same VFS.
    let again = Connection::open(&path).expect("reopen");
    let rows: i64 = again.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).expect("count");
    assert_eq!(rows, 800);
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}

use std::time::{Duration, Instant};

use std::ffi::{c_int, c_uint, c_void};

use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, ffi};

use super::*;
use crate::ClockInfo;

const START: Hop = Hop(20);
const END: Hop = Hop::EXECUTED;

fn probe() -> SqliteProbe {
    SqliteProbe::new(Collector::new(1 << 12), START, END)
}

/// Every mark drained, over all threads, as (op, hop).
fn drained(probe: &SqliteProbe) -> Vec<(u64, Hop)> {
    let drained = probe.collector().drain();
    drained.threads.iter().flat_map(|t| t.marks.iter().map(|m| (m.op.0, m.hop))).collect()
}

fn table() -> Connection {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)").expect("schema");
    conn
}

#[test]
fn each_statement_marks_its_start_and_end_with_the_operation_of_its_thread() {
    let probe = probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    with_op(OpId(7), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    // No operation set: nothing marked, counted.
    conn.execute("INSERT INTO t VALUES (2, 'b')", []).expect("insert");
    assert_eq!(drained(&probe), [(7, START), (7, END)]);
    let counts = probe.counts();
    assert_eq!((counts.starts, counts.ends, counts.without_op), (1, 1, 2));
    // The operation set before `with_op` is back after it.
    set_op(Some(OpId(9)));
    with_op(OpId(8), || conn.execute("DELETE FROM t WHERE k = 2", [])).expect("delete");
    conn.execute("DELETE FROM t WHERE k = 1", []).expect("delete");
    set_op(None);
    assert_eq!(drained(&probe), [(8, START), (8, END), (9, START), (9, END)]);
}

#[test]
fn a_failing_statement_marks_both_ends_and_the_probe_goes_on() {
    let probe = probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    with_op(OpId(1), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    let failed = with_op(OpId(2), || conn.execute("INSERT INTO t VALUES (1, 'again')", []));
    assert!(failed.is_err(), "a duplicate key fails");
    with_op(OpId(3), || conn.execute("INSERT INTO t VALUES (2, 'b')", [])).expect("insert");
    let marks = drained(&probe);
    for op in 1..=3 {
        assert_eq!(
            marks.iter().filter(|(o, _)| *o == op).map(|(_, h)| *h).collect::<Vec<_>>(),
            [START, END],
            "op {op}"
        );
    }
}

#[test]
fn a_trigger_and_its_statements_are_counted_not_marked() {
    let probe = probe();
    let conn = table();
    conn.execute_batch(
        "CREATE TABLE log (k INTEGER);
         CREATE TRIGGER keep AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.k); END;",
    )
    .expect("trigger");
    probe.attach(&conn).expect("attach");
    with_op(OpId(4), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    assert_eq!(drained(&probe), [(4, START), (4, END)]);
    // The trigger, then the one statement of its body.
    assert_eq!(probe.counts().subprograms, 2);
}

#[test]
fn statements_mark_on_whatever_thread_runs_them() {
    let probe = probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    let conn = std::thread::Builder::new()
        .name("pool-worker".into())
        .spawn(move || {
            with_op(OpId(5), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
            conn
        })
        .expect("spawn")
        .join()
        .expect("worker");
    let drained = probe.collector().drain();
    assert_eq!(drained.threads.len(), 1);
    assert_eq!(drained.threads[0].name, "pool-worker");
    assert_eq!(drained.threads[0].marks.len(), 2);
    drop(conn);
}

#[test]
fn attaching_twice_detaching_and_closing_release_the_probe_once() {
    let probe = probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    probe.attach(&conn).expect("again: nothing changes");
    assert_eq!(Arc::strong_count(&probe.hook), 2, "one handle held for SQLite");
    probe.detach(&conn).expect("detach");
    assert_eq!(Arc::strong_count(&probe.hook), 1);
    assert_eq!(probe.detach(&conn), Err(SqliteProbeError::NotAttached));
    with_op(OpId(1), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    assert!(drained(&probe).is_empty(), "detached: nothing marked");

    // A connection closed while probed gives its handle back.
    probe.attach(&conn).expect("attach");
    assert_eq!(Arc::strong_count(&probe.hook), 2);
    drop(conn);
    assert_eq!(Arc::strong_count(&probe.hook), 1);

    // Another probe attached to the same connection replaces the first.
    let other = self::probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    other.attach(&conn).expect("replace");
    assert_eq!((Arc::strong_count(&probe.hook), Arc::strong_count(&other.hook)), (1, 2));
    assert_eq!(probe.detach(&conn), Err(SqliteProbeError::NotAttached));
    with_op(OpId(2), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    assert!(drained(&probe).is_empty());
    assert_eq!(drained(&other), [(2, START), (2, END)]);
}

fn busy(ns: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_nanos(ns) {}
}

/// Median of `end − start` of the statements marked for each op, by op parity.
fn median_ns(marks: &[(u64, Hop, u64)], clock: &ClockInfo, odd: bool) -> f64 {
    let mut spans: Vec<f64> = marks
        .chunks(2)
        .filter(|pair| pair.len() == 2 && (pair[0].0 % 2 == 1) == odd)
        .map(|pair| {
            assert_eq!((pair[0].1, pair[1].1, pair[0].0), (START, END, pair[1].0), "start then end of one op");
            clock.to_ns(pair[1].2 - pair[0].2)
        })
        .collect();
    spans.sort_by(f64::total_cmp);
    spans[spans.len() / 2]
}

#[test]
fn a_known_wait_inside_a_statement_is_recovered_between_its_marks() {
    const WAIT_NS: u64 = 2_000;
    let probe = SqliteProbe::new(Collector::new(1 << 14), START, END);
    let conn = Connection::open_in_memory().expect("open");
    conn.create_scalar_function("spin", 1, FunctionFlags::SQLITE_UTF8, |ctx| {
        let ns: i64 = ctx.get(0)?;
        busy(ns.max(0) as u64);
        Ok(ns)
    })
    .expect("function");
    probe.attach(&conn).expect("attach");
    let mut statement = conn.prepare("SELECT spin(?1)").expect("prepare");
    // Interleaved: odd operations wait, even ones do not; everything else
    // in the two statements (SQLite's work, the probe's) is the same.
    for op in 0..2_000u64 {
        let ns = if op % 2 == 1 { WAIT_NS } else { 0 };
        with_op(OpId(op), || statement.query_row([ns as i64], |row| row.get::<_, i64>(0))).expect("spin");
    }
    drop(statement);
    let drained = probe.collector().drain();
    let marks: Vec<(u64, Hop, u64)> =
        drained.threads.iter().flat_map(|t| t.marks.iter().map(|m| (m.op.0, m.hop, m.ticks.0))).collect();
    assert_eq!(marks.len(), 4_000, "every statement marked twice");
    let clock = ClockInfo::measure();
    let recovered = median_ns(&marks, &clock, true) - median_ns(&marks, &clock, false);
    println!("a {WAIT_NS} ns wait inside a statement read {recovered:.1} ns between its marks");
    // The spin loop overshoots by at most one `Instant` read (~30 ns here)
    // in both statements alike.
    assert!(
        (recovered - WAIT_NS as f64).abs() <= 50.0,
        "a {WAIT_NS} ns wait read {recovered:.1} ns between the statement's marks"
    );
}

#[test]
fn an_in_order_probe_names_statements_on_a_thread_of_nobody_s_code_by_the_announced_order() {
    let probe = SqliteProbe::in_order(Collector::new(1 << 12), START, END);
    let conn = table();
    probe.attach(&conn).expect("attach");
    // The caller announces, a worker it runs no code on runs the statements.
    for op in [11, 12] {
        probe.announce(OpId(op));
    }
    let conn = std::thread::spawn(move || {
        conn.execute("INSERT INTO t VALUES (1, 'a')", []).expect("insert");
        conn.execute("INSERT INTO t VALUES (2, 'b')", []).expect("insert");
        // Nothing announced: not marked, counted.
        conn.execute("INSERT INTO t VALUES (3, 'c')", []).expect("insert");
        // A thread's own operation comes first, and takes nothing announced.
        probe_thread_op(&conn);
        conn
    })
    .join()
    .expect("worker");
    assert_eq!(drained(&probe), [(11, START), (11, END), (12, START), (12, END), (13, START), (13, END)]);
    assert_eq!(probe.counts().without_op, 2);
    // A probe not made in order ignores announcements.
    let plain = self::probe();
    plain.attach(&conn).expect("attach");
    plain.announce(OpId(20));
    conn.execute("DELETE FROM t", []).expect("delete");
    assert!(drained(&plain).is_empty());
}

fn probe_thread_op(conn: &Connection) {
    with_op(OpId(13), || conn.execute("INSERT INTO t VALUES (4, 'd')", [])).expect("insert");
}

unsafe extern "C" fn someone_else_s(_: c_uint, _: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

unsafe extern "C" fn someone_else_s_profile(_: *mut c_void, _: *const std::ffi::c_char, _: u64) {}

#[test]
fn a_connection_with_someone_else_s_callback_is_refused_and_says_what_became_of_it() {
    let probe = probe();
    let conn = table();
    let mut theirs = 7u8;
    let arg = (&raw mut theirs).cast::<c_void>();
    // SAFETY: `conn` is open; the callback ignores its argument.
    unsafe { ffi::sqlite3_trace_v2(conn.handle(), ffi::SQLITE_TRACE_STMT, Some(someone_else_s), arg) };
    let refused = probe.attach(&conn).expect_err("someone else's trace callback");
    assert_eq!(refused, SqliteProbeError::Occupied("trace"));
    assert!(refused.to_string().contains("finding it removed it, and the probe is not attached"), "{refused}");
    assert_eq!(Arc::strong_count(&probe.hook), 1, "the probe holds nothing of the connection");
    with_op(OpId(1), || conn.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    assert!(drained(&probe).is_empty(), "not attached: nothing marked");
    // Removed by the look: attaching again finds nothing.
    probe.attach(&conn).expect("nothing there now");

    // The legacy profile callback is found the same way, and so is a
    // program's own callback set over the probe since it attached.
    let conn = table();
    // SAFETY: as above.
    unsafe { ffi::sqlite3_profile(conn.handle(), Some(someone_else_s_profile), arg) };
    assert_eq!(probe.attach(&conn), Err(SqliteProbeError::Occupied("profile")));
    probe.attach(&conn).expect("attach");
    // SAFETY: as above.
    unsafe { ffi::sqlite3_trace_v2(conn.handle(), ffi::SQLITE_TRACE_STMT, Some(someone_else_s), arg) };
    assert_eq!(probe.attach(&conn), Err(SqliteProbeError::Occupied("trace")));
    assert_eq!(Arc::strong_count(&probe.hook), 2, "the first connection's handle only");
}

#[test]
fn statements_that_do_not_pair_with_the_operations_are_named_by_how_they_missed() {
    // In order: a writer that runs two statements per operation.
    let probe = SqliteProbe::in_order(Collector::new(1 << 12), START, END);
    let conn = table();
    probe.attach(&conn).expect("attach");
    let before = probe.counts();
    probe.announce(OpId(1));
    conn.execute_batch("BEGIN; INSERT INTO t VALUES (1, 'a'); COMMIT").expect("batch");
    let missed = probe.unmatched(before).expect_err("two statements unmarked");
    assert_eq!(missed, Unpaired::InOrder { statements: 2, unclaimed: 0 });
    // ... and operations no statement took, forgotten for the next block.
    let before = probe.counts();
    probe.announce(OpId(2));
    probe.announce(OpId(3));
    conn.execute("INSERT INTO t VALUES (2, 'b')", []).expect("insert");
    assert_eq!(probe.unmatched(before), Err(Unpaired::InOrder { statements: 0, unclaimed: 1 }));
    let before = probe.counts();
    probe.announce(OpId(4));
    conn.execute("INSERT INTO t VALUES (3, 'c')", []).expect("insert");
    assert_eq!(probe.unmatched(before), Ok(()), "the next block starts even");
    let ops: Vec<u64> = drained(&probe).iter().map(|(op, _)| *op).collect();
    assert_eq!(ops, [1, 1, 2, 2, 4, 4], "operation 3 was forgotten, not given to a later statement");

    // Reading the thread's operation: set on the caller, run elsewhere.
    let probe = self::probe();
    let conn = table();
    probe.attach(&conn).expect("attach");
    let before = probe.counts();
    with_op(OpId(5), || probe.announce(OpId(5)));
    let conn = std::thread::spawn(move || {
        conn.execute("INSERT INTO t VALUES (1, 'a')", []).expect("insert");
        conn
    })
    .join()
    .expect("worker");
    let missed = probe.unmatched(before).expect_err("no statement marked");
    assert_eq!(missed, Unpaired::OtherThread { statements: 1 });
    assert!(missed.to_string().contains("inside the closure the writer runs on its own thread"), "{missed}");
    // A statement of the writer's own beside a marked one is no fault.
    let before = probe.counts();
    probe.announce(OpId(6));
    with_op(OpId(6), || conn.execute("INSERT INTO t VALUES (2, 'b')", [])).expect("insert");
    conn.execute("SELECT 1", []).ok();
    assert_eq!(probe.unmatched(before), Ok(()));
    // Operations ran, and the probe saw nothing: another connection.
    let other = table();
    let before = probe.counts();
    probe.announce(OpId(7));
    with_op(OpId(7), || other.execute("INSERT INTO t VALUES (1, 'a')", [])).expect("insert");
    assert_eq!(probe.unmatched(before), Err(Unpaired::Unseen { operations: 1 }));
    // A block that ran nothing is no fault either.
    assert_eq!(probe.unmatched(probe.counts()), Ok(()));

    // A trace callback of the program's own set after the probe replaces
    // it, and the block says the probe saw nothing; a legacy profile
    // callback set after runs beside it.
    let probe = SqliteProbe::in_order(Collector::new(1 << 12), START, END);
    let conn = table();
    probe.attach(&conn).expect("attach");
    let mut theirs = 7u8;
    let arg = (&raw mut theirs).cast::<c_void>();
    // SAFETY: `conn` is open; the callback ignores its arguments.
    unsafe { ffi::sqlite3_profile(conn.handle(), Some(someone_else_s_profile), arg) };
    let before = probe.counts();
    probe.announce(OpId(8));
    conn.execute("INSERT INTO t VALUES (1, 'a')", []).expect("insert");
    assert_eq!(probe.unmatched(before), Ok(()), "a profile callback beside the probe");
    // SAFETY: as above.
    unsafe { ffi::sqlite3_trace_v2(conn.handle(), ffi::SQLITE_TRACE_STMT, Some(someone_else_s), arg) };
    let before = probe.counts();
    probe.announce(OpId(9));
    conn.execute("INSERT INTO t VALUES (2, 'b')", []).expect("insert");
    let missed = probe.unmatched(before).expect_err("replaced");
    assert_eq!(missed, Unpaired::Unseen { operations: 1 });
    assert!(missed.to_string().contains("a trace callback set on the connection since the probe attached"));
}

#[test]
fn an_in_order_probe_keeps_at_most_its_cap_of_announced_operations() {
    let probe = SqliteProbe::in_order(Collector::new(1 << 4), START, END);
    for op in 0..(ANNOUNCED_CAP as u64 + 10) {
        probe.announce(OpId(op));
    }
    assert_eq!(probe.counts().unclaimed, 10, "the oldest pushed out, counted");
    let conn = table();
    probe.attach(&conn).expect("attach");
    conn.execute("INSERT INTO t VALUES (1, 'a')", []).expect("insert");
    assert_eq!(drained(&probe).first(), Some(&(10, START)), "the oldest kept goes first");
}

#[test]
fn a_transaction_is_one_shared_interval_linked_to_each_operation_inside_it() {
    let mut declared = crate::HopTable::standard();
    let hops = TransactionHops::declare(&mut declared);
    let probe = SqliteProbe::in_order(Collector::new(1 << 12), START, END).transactions(hops);
    let conn = table();
    probe.attach(&conn).expect("attach");
    // A batching writer the probe cannot edit: one BEGIN, a statement per
    // announced operation, one COMMIT.
    for op in [11, 12, 13] {
        probe.announce(OpId(op));
    }
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    for k in 1..=3 {
        conn.execute("INSERT INTO t VALUES (?1, 'x')", [k]).expect("insert");
    }
    conn.execute_batch("COMMIT").expect("commit");
    // A statement outside any transaction serves its operation alone.
    probe.announce(OpId(14));
    conn.execute("INSERT INTO t VALUES (4, 'y')", []).expect("insert");
    let marks: Vec<Mark> = probe.collector().drain().threads.iter().flat_map(|t| t.marks.clone()).collect();
    let transaction = marks.iter().find(|m| m.hop == hops.begin).expect("BEGIN marked").op;
    assert!(transaction.0 & TRANSACTION_ID_BIT != 0, "an id of its own: {:#x}", transaction.0);
    let shared: Vec<Hop> = marks.iter().filter(|m| m.op == transaction && !m.is_link()).map(|m| m.hop).collect();
    assert_eq!(shared, [hops.begin, hops.began, hops.commit, hops.committed]);
    let links: Vec<(u64, u64)> = marks.iter().filter_map(|m| m.link().map(|t| (m.op.0, t.0))).collect();
    assert_eq!(links, [(11, transaction.0), (12, transaction.0), (13, transaction.0)]);
    let ops: Vec<(u64, Hop)> =
        marks.iter().filter(|m| m.op != transaction && !m.is_link()).map(|m| (m.op.0, m.hop)).collect();
    assert_eq!(ops, [(11, START), (11, END), (12, START), (12, END), (13, START), (13, END), (14, START), (14, END)]);
    // Every announced operation went to a statement: the block pairs.
    assert_eq!(probe.unmatched(StatementCounts::default()), Ok(()));
}

#[test]
fn transaction_statements_are_told_by_their_first_words() {
    let kind = |sql: &str| {
        let text = std::ffi::CString::new(sql).expect("no NUL");
        // SAFETY: a NUL-terminated string.
        unsafe { statement_kind(text.as_ptr()) }
    };
    for sql in ["BEGIN", "  begin immediate;", "BEGIN TRANSACTION"] {
        assert_eq!(kind(sql), Statement::Begin, "{sql}");
    }
    for sql in ["COMMIT", "end transaction", "ROLLBACK", "rollback transaction"] {
        assert_eq!(kind(sql), Statement::Commit, "{sql}");
    }
    for sql in ["ROLLBACK TO sp", "rollback transaction to sp", "INSERT INTO t VALUES (1)", "", "BEGINNING"] {
        assert_eq!(kind(sql), Statement::Op, "{sql}");
    }
    // SAFETY: null is allowed.
    assert_eq!(unsafe { statement_kind(std::ptr::null()) }, Statement::Op);
}

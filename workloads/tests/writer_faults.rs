//! The reference writer under faults: failing statements, panics, build
//! failures and shutdown, for every reply path. None of these tests depends
//! on timing except a generous deadline that turns a hang into a failure.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use hopscope_probe::{NoProbe, Recording};
use hopscope_workloads::knobs::{ChannelKind, GroupCommit, ReplyMode, ResultSlot, Wait};
use hopscope_workloads::{DbConfig, Knobs, MAX_PARAMS, Value, ValueRef, WriteError, Writer};

/// Longest any test may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(60);

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("test.db")
}

/// Run `f` on a thread; fail the test if it does not finish by the deadline.
fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE).expect("test hung past its deadline")
}

/// Every reply path: reply mode × result slot × channel × coalescing, plus
/// one spinning configuration.
fn all_knobs() -> Vec<Knobs> {
    let mut all = Vec::new();
    for reply in [ReplyMode::Oneshot, ReplyMode::Persistent] {
        for result_slot in [ResultSlot::Allocate, ResultSlot::Reuse] {
            for channel in [ChannelKind::Std, ChannelKind::Crossbeam] {
                for coalesce in [true, false] {
                    all.push(Knobs { reply, result_slot, channel, coalesce, ..Knobs::default() });
                }
            }
        }
    }
    all.push(Knobs {
        writer_wait: Wait::Spin(Duration::from_micros(20)),
        caller_wait: Wait::Yield(Duration::from_micros(20)),
        reply: ReplyMode::Persistent,
        ..Knobs::default()
    });
    // Group commit: requests sharing transactions, on two reply paths.
    let group = GroupCommit::of(8).expect("a group size");
    all.push(Knobs { group_commit: group, ..Knobs::default() });
    all.push(Knobs {
        group_commit: group,
        reply: ReplyMode::Persistent,
        result_slot: ResultSlot::Allocate,
        channel: ChannelKind::Std,
        ..Knobs::default()
    });
    all
}

const INSERT: &str = "INSERT INTO items (k, v) VALUES (?1, ?2)";

#[test]
fn failing_statements_reach_their_caller_and_replies_never_cross() {
    for (n, knobs) in all_knobs().into_iter().enumerate() {
        within_deadline(move || {
            let path = temp_db(&format!("cross-{n}"));
            let writer = Writer::open(&path, DbConfig::default(), knobs, NoProbe).expect("writer opens");
            writer.execute("CREATE UNIQUE INDEX IF NOT EXISTS items_k ON items (k)", &[]).expect("index");
            let threads = 4i64;
            let per_thread = 60i64;
            std::thread::scope(|scope| {
                for t in 0..threads {
                    let writer = &writer;
                    let path = &path;
                    scope.spawn(move || {
                        for i in 0..per_thread {
                            let k = t * 1_000 + i;
                            match i % 4 {
                                // A syntax error.
                                1 => assert!(matches!(
                                    writer.execute("INSERT INTO items (k, v) VALUES (?1,", &[ValueRef::Integer(k)]),
                                    Err(WriteError::Sqlite { .. })
                                )),
                                // A constraint violation: k = t*1000 exists.
                                2 => assert!(matches!(
                                    writer.execute(INSERT, &[ValueRef::Integer(t * 1_000), ValueRef::Text("dup")]),
                                    Err(WriteError::Sqlite { .. })
                                )),
                                // Wrong parameter count.
                                3 => assert!(matches!(
                                    writer.execute(INSERT, &[ValueRef::Integer(k)]),
                                    Err(WriteError::Sqlite { .. })
                                )),
                                _ => {
                                    let outcome = writer
                                        .execute_owned(INSERT, vec![Value::Integer(k), Value::Text(format!("v{k}"))])
                                        .expect("valid insert succeeds");
                                    assert_eq!(outcome.changes, 1);
                                    // The rowid in our reply must be the row
                                    // holding our key, not another caller's.
                                    let found: i64 = rusqlite::Connection::open(path)
                                        .expect("reader")
                                        .query_row(
                                            "SELECT k FROM items WHERE id = ?1",
                                            [outcome.last_insert_rowid],
                                            |r| r.get(0),
                                        )
                                        .expect("row of the rowid");
                                    assert_eq!(found, k, "reply for key {k} carried another caller's rowid ({knobs})");
                                }
                            }
                        }
                    });
                }
            });
            drop(writer);
            let rows = hopscope_workloads::db::count_rows(&path, "items").expect("count");
            assert_eq!(rows, (threads * per_thread / 4) as u64, "{knobs}");
        });
    }
}

#[test]
fn a_writer_panic_fails_pending_and_later_calls_promptly() {
    for (n, knobs) in all_knobs().into_iter().enumerate() {
        within_deadline(move || {
            let path = temp_db(&format!("panic-{n}"));
            let writer = Writer::open(&path, DbConfig::default(), knobs, Recording).expect("writer opens");
            writer.execute_owned(INSERT, vec![Value::Integer(1), Value::Text("before".into())]).expect("first write");
            std::thread::scope(|scope| {
                // Callers keep writing while the writer dies under them:
                // each call must return (success before the panic, error after).
                let callers: Vec<_> = (0..3)
                    .map(|t| {
                        let writer = &writer;
                        scope.spawn(move || {
                            (0..200)
                                .map(|i| {
                                    writer.execute_owned(
                                        INSERT,
                                        vec![Value::Integer(10_000 * (t + 1) + i), Value::Text("x".into())],
                                    )
                                })
                                .filter(Result::is_err)
                                .count()
                        })
                    })
                    .collect();
                let error = writer.inject_panic();
                assert!(
                    matches!(&error, WriteError::WriterPanicked { message } if message.contains("injected")),
                    "{error}"
                );
                for caller in callers {
                    caller.join().expect("caller thread");
                }
            });
            let later = writer.execute_owned(INSERT, vec![Value::Integer(2), Value::Text("after".into())]);
            assert!(matches!(later, Err(WriteError::WriterPanicked { .. })), "{later:?}");
            // Dropping a dead writer must not hang either.
            drop(writer);
        });
    }
}

#[test]
fn a_request_that_fails_to_build_does_not_desynchronise_completion() {
    for (n, knobs) in all_knobs().into_iter().enumerate() {
        within_deadline(move || {
            let path = temp_db(&format!("build-{n}"));
            let writer = Writer::open(&path, DbConfig::default(), knobs, NoProbe).expect("writer opens");
            let too_many = vec![Value::Integer(0); MAX_PARAMS + 1];
            std::thread::scope(|scope| {
                for t in 0..3i64 {
                    let writer = &writer;
                    let path = &path;
                    let too_many = too_many.clone();
                    scope.spawn(move || {
                        for i in 0..50i64 {
                            let k = t * 1_000 + i;
                            if i % 5 == 0 {
                                let err = writer.execute_owned(INSERT, too_many.clone()).expect_err("must not build");
                                assert!(matches!(err, WriteError::Build { .. }), "{err}");
                            }
                            let outcome = writer
                                .execute_owned(INSERT, vec![Value::Integer(k), Value::Text("v".into())])
                                .expect("valid insert");
                            let found: i64 = rusqlite::Connection::open(path)
                                .expect("reader")
                                .query_row("SELECT k FROM items WHERE id = ?1", [outcome.last_insert_rowid], |r| {
                                    r.get(0)
                                })
                                .expect("row");
                            assert_eq!(found, k, "{knobs}");
                        }
                    });
                }
            });
        });
    }
}

#[test]
fn dropping_the_writer_keeps_every_acknowledged_write() {
    for (n, knobs) in all_knobs().into_iter().enumerate() {
        within_deadline(move || {
            let path = temp_db(&format!("drop-{n}"));
            let writer = Writer::open(&path, DbConfig::default(), knobs, NoProbe).expect("writer opens");
            let acknowledged: usize = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..4)
                    .map(|t| {
                        let writer = &writer;
                        scope.spawn(move || {
                            (0..100)
                                .filter(|i| {
                                    writer
                                        .execute_owned(
                                            INSERT,
                                            vec![Value::Integer(t * 1000 + i), Value::Text("v".into())],
                                        )
                                        .is_ok()
                                })
                                .count()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("caller")).sum()
            });
            drop(writer);
            assert_eq!(acknowledged, 400);
            assert_eq!(hopscope_workloads::db::count_rows(&path, "items").expect("count"), 400, "{knobs}");
        });
    }
}

#[test]
fn harvest_reports_exactly_the_tables_a_statement_changed() {
    within_deadline(|| {
        let path = temp_db("harvest");
        let writer = Writer::open(&path, DbConfig::default(), Knobs::default(), NoProbe).expect("writer opens");
        writer
            .batch(vec![
                ("CREATE TABLE IF NOT EXISTS log (item INTEGER)".into(), vec![]),
                (
                    "CREATE TRIGGER IF NOT EXISTS items_log AFTER INSERT ON items BEGIN INSERT INTO log VALUES (new.id); END".into(),
                    vec![],
                ),
            ])
            .expect("schema");
        let with_trigger = writer.execute(INSERT, &[ValueRef::Integer(1), ValueRef::Text("a")]).expect("insert");
        let mut tables: Vec<&str> = with_trigger.tables.iter().collect();
        tables.sort_unstable();
        assert_eq!(tables, ["items", "log"]);

        let blob = writer
            .execute("INSERT INTO blobs (k, data) VALUES (?1, ?2)", &[ValueRef::Integer(1), ValueRef::Blob(&[1, 2, 3])])
            .expect("blob insert");
        assert_eq!(blob.tables.iter().collect::<Vec<_>>(), ["blobs"]);

        let nothing = writer.execute("UPDATE items SET v = v WHERE id = -1", &[]).expect("no-op update");
        assert!(nothing.tables.is_empty());
        assert_eq!(nothing.changes, 0);

        // A statement that changes a row (and its trigger's) and then fails
        // is rolled back: its tables belong to no outcome, not to the next
        // statement's.
        let failed = writer.execute("INSERT INTO items (id, k, v) VALUES (1000, 1, 'a'), (1000, 2, 'b')", &[]);
        assert!(matches!(failed, Err(WriteError::Sqlite { .. })), "{failed:?}");
        let next = writer
            .execute("INSERT INTO blobs (k, data) VALUES (?1, ?2)", &[ValueRef::Integer(2), ValueRef::Blob(&[4])])
            .expect("blob insert after a failure");
        assert_eq!(next.tables.iter().collect::<Vec<_>>(), ["blobs"]);
        let in_batch = writer
            .batch(vec![
                ("INSERT INTO items (id, k, v) VALUES (1001, 1, 'a'), (1001, 2, 'b')".into(), vec![]),
                ("INSERT INTO blobs (k, data) VALUES (3, x'05')".into(), vec![]),
            ])
            .map(|outcomes| outcomes.len());
        assert!(matches!(in_batch, Err(WriteError::Sqlite { .. })), "{in_batch:?}");
        let after_batch = writer
            .execute("INSERT INTO blobs (k, data) VALUES (?1, ?2)", &[ValueRef::Integer(4), ValueRef::Blob(&[6])])
            .expect("blob insert after a failed batch");
        assert_eq!(after_batch.tables.iter().collect::<Vec<_>>(), ["blobs"]);

        let off = Writer::open(
            &temp_db("harvest-off"),
            DbConfig::default(),
            Knobs { harvest: false, ..Knobs::default() },
            NoProbe,
        )
        .expect("writer opens");
        let plain = off.execute(INSERT, &[ValueRef::Integer(1), ValueRef::Text("a")]).expect("insert");
        assert!(plain.tables.is_empty());
    });
}

#[test]
fn a_failing_batch_applies_nothing_and_the_writer_goes_on() {
    within_deadline(|| {
        let path = temp_db("batch");
        let writer = Writer::open(&path, DbConfig::default(), Knobs::default(), NoProbe).expect("writer opens");
        let good = |k: i64| (INSERT.into(), vec![Value::Integer(k), Value::Text("v".into())]);
        let outcomes = writer.batch(vec![good(1), good(2), good(3)]).expect("batch");
        assert_eq!(outcomes.len(), 3);
        let err = writer.batch(vec![good(4), ("INSERT INTO nowhere VALUES (1)".into(), vec![]), good(5)]);
        assert!(matches!(err, Err(WriteError::Sqlite { .. })));
        writer.execute_owned(INSERT, vec![Value::Integer(6), Value::Text("v".into())]).expect("writer still serves");
        drop(writer);
        assert_eq!(hopscope_workloads::db::count_rows(&path, "items").expect("count"), 4);
    });
}

#[test]
fn spinning_on_one_core_never_starves_the_other_thread() {
    // Spin windows of 50 ms would make every write wait out the window if
    // the spinner held the core the other thread needs; the writer turns
    // them into yields, so 500 writes finish well inside the deadline.
    within_deadline(|| {
        let path = temp_db("same-core-spin");
        let knobs = Knobs {
            writer_wait: Wait::Spin(Duration::from_millis(50)),
            caller_wait: Wait::Spin(Duration::from_millis(50)),
            placement: hopscope_workloads::knobs::Placement::SameCore,
            ..Knobs::default()
        };
        let writer = Writer::open(&path, DbConfig::default(), knobs, NoProbe).expect("writer opens");
        let start = std::time::Instant::now();
        for i in 0..500 {
            writer.execute_owned(INSERT, vec![Value::Integer(i), Value::Text("v".into())]).expect("insert");
        }
        // Starved, each write waits out a scheduler slice or the window
        // (milliseconds): 500 of them take seconds. Served, tens of µs each.
        assert!(start.elapsed() < Duration::from_secs(2), "same-core spin starved the writer: {:?}", start.elapsed());
    });
}

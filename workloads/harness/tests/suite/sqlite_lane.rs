//! A writer the user cannot edit, sliced through SQLite's own trace hook:
//! a "library" with its own thread and connection (no hopscope code in
//! it), driven by a lane whose probed build only attaches the probe to the
//! library's connection. Every operation joins with the statement the
//! library ran for it, and the statement's known work lands between the
//! statement's marks.

#![cfg(feature = "sqlite")]

use crate::common;

use std::thread::JoinHandle;

use crossbeam_channel::{Sender, bounded, unbounded};
use hopscope_harness::{BoxError, Harness, Lane, Plan, SQLITE_ROLE};
use hopscope_probe::Hop;
use hopscope_probe::collector::{Collector, DEFAULT_RING_MARKS};
use hopscope_probe::sqlite::SqliteProbe;
use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

/// The work inside each statement, ns: a user function that spins.
const SPIN_NS: i64 = 2_000;

type Call = Box<dyn FnOnce(&Connection) + Send>;

enum Job {
    Insert(Sender<rusqlite::Result<usize>>),
    Call(Call),
}

/// How the library runs each insert.
#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// One statement per call.
    OneStatement,
    /// Its own transaction around the insert: three statements per call.
    Transaction,
    /// Never replies to its `n`th insert (counted from 1).
    HangsAt(u64),
}

/// The library: a thread owning a connection, fed by a channel.
struct Library {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Library {
    fn open(path: std::path::PathBuf, behaviour: Behaviour) -> Library {
        let (jobs, inbox) = unbounded::<Job>();
        let thread = std::thread::spawn(move || {
            let conn = Connection::open(path).expect("open");
            conn.execute_batch("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v INTEGER)").expect("schema");
            conn.create_scalar_function("spin", 1, FunctionFlags::SQLITE_UTF8, |ctx| {
                let ns: i64 = ctx.get(0)?;
                common::busy(ns.max(0) as u64);
                Ok(ns)
            })
            .expect("function");
            let mut inserts = 0;
            for job in inbox {
                match job {
                    Job::Insert(reply) => {
                        inserts += 1;
                        if behaviour == Behaviour::HangsAt(inserts) {
                            // Its reply is never sent; the caller waits on.
                            std::mem::forget(reply);
                            continue;
                        }
                        let transaction = behaviour == Behaviour::Transaction;
                        if transaction {
                            conn.execute_batch("BEGIN").expect("begin");
                        }
                        let done = conn
                            .prepare_cached("INSERT INTO t (v) VALUES (spin(?1))")
                            .and_then(|mut s| s.execute([SPIN_NS]));
                        if transaction {
                            conn.execute_batch("COMMIT").expect("commit");
                        }
                        let _ = reply.send(done);
                    }
                    Job::Call(f) => f(&conn),
                }
            }
        });
        Library { jobs: Some(jobs), thread: Some(thread) }
    }

    fn insert(&self) -> Result<u64, BoxError> {
        let (reply, answer) = bounded(1);
        self.jobs.as_ref().ok_or("closed")?.send(Job::Insert(reply)).map_err(|_| "the library stopped")?;
        Ok(answer.recv()?? as u64)
    }

    /// The library's own way to reach its connection on its thread.
    fn call(&self, f: impl FnOnce(&Connection) + Send + 'static) -> Result<(), BoxError> {
        self.jobs.as_ref().ok_or("closed")?.send(Job::Call(Box::new(f))).map_err(|_| "the library stopped")?;
        Ok(())
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_library_s_statements_join_their_operations_and_hold_their_work() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-sqlite-lane-{}", std::process::id()));
    let probe = in_order();
    // Declaring the lane's own thread roles (none here) keeps the
    // statements' role.
    let lane = library_lane(Behaviour::OneStatement, probe.clone()).threads(&[]);
    let plan = Plan { ops_per_block: 40, samples: 4, passes: 1, warmup_blocks: 1, ..Plan::quick() };
    let outcome = Harness::new("sqlite-lane").plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    let d = outcome.decomposition.as_ref().expect("decomposition");
    assert_eq!(d.drops.incomplete_ops.get("library-probed"), Some(&0), "{:?}", d.drops);
    let complete = d.drops.complete_ops.get("library-probed").copied().unwrap_or(0);
    assert_eq!(Some(complete), d.lanes.get("library-probed").map(|l| l.ops), "every operation joined");
    assert_eq!(d.drops.complete_ops.get("library"), Some(&0), "the clean build marks nothing");
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["enter→woke", "woke→executed", "executed→done"]);
    let statement = &d.slices[1];
    assert!(
        statement.median_us >= SPIN_NS as f64 / 1_000.0,
        "the statement's work lies between its marks: {:.3} µs",
        statement.median_us
    );
    // Every statement was given an operation, and ended where it started.
    let counts = probe.counts();
    assert!(counts.starts >= complete && counts.ends == counts.starts, "{counts:?}");
    assert_eq!(counts.without_op, 0, "{counts:?}");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains(SQLITE_ROLE), "its thread role is named");
    // The hook's own cost was measured before the run and is stated.
    let hook = d.statement_hook.as_ref().expect("the hook's cost measured");
    assert!(hook.rounds > 0 && hook.ns_per_statement.is_finite() && hook.bare_ns > 0.0, "{hook:?}");
    assert!(
        receipt.contains("SQLite's trace hook marks this lane's statements. Measured before this run"),
        "{receipt}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A probe marking statements as `woke` and `executed`, operations taken
/// in the order announced.
fn in_order() -> SqliteProbe {
    SqliteProbe::in_order(Collector::new(DEFAULT_RING_MARKS), Hop::WOKE, Hop::EXECUTED)
}

/// The library's lane, probed by `probe` (SQLite's hook) alone, the library running
/// each insert as `behaviour` says.
fn library_lane(behaviour: Behaviour, probe: SqliteProbe) -> Lane {
    Lane::subject(
        "library",
        move |s| {
            let library = Library::open(s.path("library.db"), behaviour);
            if let Some(probe) = s.sqlite_probe() {
                let probe = probe.clone();
                library.call(move |conn| probe.attach(conn).expect("attach"))?;
            }
            Ok::<_, BoxError>(library)
        },
        |library: &mut Library, _op| library.insert(),
    )
    .per_op(1)
    .probed_by_sqlite(probe)
}

fn run_stopped(name: &str, lane: Lane, deadline: std::time::Duration) -> hopscope_harness::Outcome {
    let dir = std::env::temp_dir().join(format!("hopscope-sqlite-lane-{name}-{}", std::process::id()));
    let plan =
        Plan { ops_per_block: 20, samples: 3, passes: 1, warmup_blocks: 1, block_deadline: deadline, ..Plan::quick() };
    let outcome = Harness::new(name).plan(plan).out(&dir).quiet().lane(lane).run().expect("outcome");
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

#[test]
fn a_library_that_runs_more_than_one_statement_per_call_stops_the_run_saying_so() {
    let _turn = crate::common::serial();
    let outcome = run_stopped(
        "transaction",
        library_lane(Behaviour::Transaction, in_order()),
        std::time::Duration::from_secs(10),
    );
    let line = outcome.stopped.as_deref().expect("the run stopped");
    assert!(line.starts_with("lane `library-probed`"), "{line}");
    assert!(line.contains("did not pair one to one with its operations"), "{line}");
    assert!(line.contains("statements ran with no operation"), "{line}");
    assert!(!line.contains('\n'), "one line: {line}");
}

#[test]
fn a_library_that_never_returns_is_left_at_the_deadline() {
    let _turn = crate::common::serial();
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(2);
    let outcome = run_stopped("hangs", library_lane(Behaviour::HangsAt(30), in_order()), deadline);
    let line = outcome.stopped.as_deref().expect("the run stopped");
    assert!(line.starts_with("lane `library"), "{line}");
    assert!(line.contains("did not finish within the 2-second deadline"), "{line}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the run waited for the library");
}

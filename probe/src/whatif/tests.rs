//! The bookkeeping of a virtual speedup, without timing: what is owed,
//! who pays, who inherits. How well a speedup predicts a real one is a
//! measurement (`cargo bench -p hopscope-probe --features what-if --bench
//! whatif`), not a test.

use std::sync::Mutex;

use super::*;

/// One experiment at a time: the speedup is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Held by a test: one at a time, and whatever it started is stopped when
/// it ends, even by a failed assertion (so one failure is not many).
struct Serial(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Drop for Serial {
    fn drop(&mut self) {
        stop();
    }
}

fn serial() -> Serial {
    Serial(SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

// The tests' own hops, numbered where no other test of this crate marks
// (and below 64, the most an experiment names):
// an experiment is process-wide, and the crate's other tests mark the
// standard hops on their own threads meanwhile (a test here once saw
// five passes of `executed` it had not made).
const ENTER: Hop = Hop(50);
const BUILT: Hop = Hop(51);
const SENT: Hop = Hop(52);
const WOKE: Hop = Hop(53);
const EXECUTED: Hop = Hop(54);
const REPLIED: Hop = Hop(55);
const RECEIVED: Hop = Hop(56);

fn edges() -> Vec<(Hop, Hop)> {
    vec![(SENT, WOKE), (REPLIED, RECEIVED)]
}

fn paid() -> u64 {
    PAID.with(Cell::get).1
}

#[test]
fn each_pass_of_the_slice_s_end_adds_its_delay_and_the_passing_thread_owes_nothing() {
    let _serial = serial();
    start(&Experiment { end: EXECUTED, change: Change::Faster(1_000.0), edges: edges(), serial: false })
        .expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    assert!(delay > 0);
    on_mark(OpId(1), WOKE);
    assert_eq!(owed(), 0, "other hops add nothing");
    on_mark(OpId(1), EXECUTED);
    on_mark(OpId(2), EXECUTED);
    assert_eq!(owed(), 2 * delay);
    assert_eq!(paid(), 2 * delay, "its own passes are paid for");
    assert_eq!(stop(), 2 * delay, "stop says what was inserted");
    // Stopped: marks do nothing.
    on_mark(OpId(3), EXECUTED);
    assert_eq!(owed(), 2 * delay);
}

#[test]
fn another_thread_pays_at_its_next_mark_unless_woken_by_a_thread_that_paid() {
    let _serial = serial();
    // More than a lump: the debt is paid at the next mark.
    start(&Experiment { end: EXECUTED, change: Change::Faster(2.0 * LUMP_NS), edges: edges(), serial: false })
        .expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    // A thread that marked before the pass and marks again after it pays
    // (waits out) what the pass added.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let paying = std::thread::spawn(move || {
        on_mark(OpId(10), ENTER);
        let before = paid();
        ready.send(()).expect("ready");
        wait.recv().expect("go");
        on_mark(OpId(10), BUILT);
        (before, paid())
    });
    is_ready.recv().expect("ready");
    on_mark(OpId(0), EXECUTED);
    go.send(()).expect("go");
    let (before, after) = paying.join().expect("thread");
    assert_eq!(before, 0);
    assert!(after >= delay, "it waited what it owed, and is charged what it waited: {after} < {delay}");
    let waited = spun();
    assert!(waited >= delay);
    // A caller that marked before the writer's pass, then waits for the
    // reply: woken by it, it inherits what the writer had paid.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let caller = std::thread::spawn(move || {
        on_mark(OpId(1), SENT);
        ready.send(()).expect("ready");
        wait.recv().expect("reply");
        on_mark(OpId(1), RECEIVED);
        paid()
    });
    is_ready.recv().expect("ready");
    on_mark(OpId(1), EXECUTED);
    on_mark(OpId(1), REPLIED);
    assert_eq!(SLOT[1].load(Ordering::Relaxed), 2 * delay, "the reply carries what the writer paid");
    go.send(()).expect("reply");
    assert_eq!(caller.join().expect("caller"), 2 * delay, "inherited");
    assert_eq!(spun(), waited, "the woken caller waited for nothing");
    stop();
}

#[test]
fn an_experiment_refuses_a_second_one_and_hops_it_cannot_name() {
    let _serial = serial();
    let speedup = Experiment { end: EXECUTED, change: Change::Faster(100.0), edges: edges(), serial: false };
    start(&speedup).expect("start");
    assert_eq!(start(&speedup), Err(WhatIfError::Running));
    stop();
    let far = Experiment { end: Hop(64), ..speedup.clone() };
    assert_eq!(start(&far), Err(WhatIfError::HopOutOfRange(64)));
    let edge = Experiment { edges: vec![(Hop(70), WOKE)], ..speedup };
    assert_eq!(start(&edge), Err(WhatIfError::HopOutOfRange(70)));
}

#[test]
fn a_slowdown_is_waited_by_the_passing_thread_and_owed_by_nobody() {
    let _serial = serial();
    start(&Experiment { end: EXECUTED, change: Change::Slower(200_000.0), edges: edges(), serial: false })
        .expect("start");
    on_mark(OpId(1), WOKE);
    let before = std::time::Instant::now();
    on_mark(OpId(1), EXECUTED);
    // A lower bound only: the wait happened on this thread.
    assert!(before.elapsed() >= std::time::Duration::from_micros(190), "the passing thread waited");
    assert_eq!(owed(), 0, "nobody else owes a real slowdown");
    assert_eq!(stop(), 0);
}

#[test]
fn a_change_that_is_not_a_number_changes_nothing() {
    let _serial = serial();
    start(&Experiment { end: EXECUTED, change: Change::Faster(f64::NAN), edges: edges(), serial: false })
        .expect("start");
    on_mark(OpId(1), EXECUTED);
    assert_eq!(stop(), 0);
    assert_eq!(Change::Slower(5.0).signed_ns(), -5.0);
}

#[test]
fn a_debt_below_a_lump_is_carried_and_a_thread_is_charged_what_it_paid() {
    let _serial = serial();
    start(&Experiment { end: EXECUTED, change: Change::Faster(0.4 * LUMP_NS), edges: edges(), serial: false })
        .expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    let (go, wait) = std::sync::mpsc::channel::<u32>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let caller = std::thread::spawn(move || {
        on_mark(OpId(20), ENTER);
        ready.send(()).expect("ready");
        let mut seen = Vec::new();
        while let Ok(step) = wait.recv() {
            if step == 0 {
                seen.push((charged(), 0));
            } else {
                on_mark(OpId(20), BUILT);
                seen.push((paid(), spun()));
            }
            ready.send(()).expect("ready");
        }
        seen
    });
    is_ready.recv().expect("ready");
    // Two passes: 0.8 of a lump owed, carried.
    on_mark(OpId(0), EXECUTED);
    on_mark(OpId(0), EXECUTED);
    go.send(1).expect("go");
    is_ready.recv().expect("ready");
    // A third: 1.2 lumps, paid at the next mark.
    on_mark(OpId(0), EXECUTED);
    go.send(1).expect("go");
    is_ready.recv().expect("ready");
    // A fourth, then the block ends: the caller is charged what it paid,
    // not what it still owes.
    on_mark(OpId(0), EXECUTED);
    go.send(0).expect("go");
    is_ready.recv().expect("ready");
    drop(go);
    let seen = caller.join().expect("caller");
    assert_eq!(seen[0], (0, 0), "below a lump: carried");
    assert!(seen[1].0 >= 3 * delay && seen[1].1 >= 3 * delay, "past a lump: paid, {:?}", seen[1]);
    assert_eq!(seen[2].0, seen[1].0, "charged what it paid");
}

#[test]
fn a_faster_hand_off_takes_off_only_the_time_its_thread_waited_for_it() {
    let _serial = serial();
    start(&Experiment { end: WOKE, change: Change::Faster(1_000_000.0), edges: edges(), serial: false })
        .expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    let send = |op: u64| std::thread::spawn(move || on_mark(OpId(op), SENT)).join().expect("caller");
    // Queued: the request was sent before the writer's previous mark, so
    // the writer never slept for it; only what followed its own mark counts.
    send(5);
    on_mark(OpId(4), REPLIED);
    on_mark(OpId(5), WOKE);
    let queued = owed();
    assert!(queued < delay / 10, "a queued request's pass adds almost nothing: {queued} of {delay}");
    // Waited for: sent after the writer's last mark, picked up 2 ms later
    // (more than the change): the whole change.
    on_mark(OpId(6), REPLIED);
    send(7);
    std::thread::sleep(std::time::Duration::from_millis(2));
    on_mark(OpId(7), WOKE);
    assert_eq!(owed() - queued, delay);
}

#[test]
fn on_one_core_nobody_pauses_and_everyone_is_charged_what_is_owed() {
    let _serial = serial();
    let experiment = Experiment { end: EXECUTED, change: Change::Faster(2.0 * LUMP_NS), edges: edges(), serial: true };
    start(&experiment).expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    on_mark(OpId(0), EXECUTED);
    let other = std::thread::spawn(|| {
        on_mark(OpId(1), ENTER);
        on_mark(OpId(1), BUILT);
        charged()
    });
    assert_eq!(other.join().expect("thread"), delay, "charged what is owed");
    assert_eq!(spun(), 0, "without pausing");
}

//! A user's writer generic over `hopscope_probe::Probe`, declared clean
//! (`NoProbe`) and probed (`Recording`) with `.probed(...)`, next to an
//! inline baseline and a user floor built the same way: the whole method on
//! user code — hop, boundary and library with CIs, slices, the cross-check
//! against the floor, and the observer effect; the clean builds record
//! nothing.

use crate::common;

use common::{ToyWriter, busy};
use hopscope_harness::{BoxError, ClosureLane, Harness, Lane, Plan, ThreadJob};
use hopscope_probe::{Hop, NoProbe, OpId, Probe, Recording};

const EXECUTE_NS: u64 = 2_000;
/// What the writer does beyond the floor: its "library" work, in the
/// library-owned slice executed→harvested.
const HARVEST_NS: u64 = 1_000;

enum Message {
    Op(OpId),
    Run(ThreadJob),
}

/// A writer thread generic over the probe; `harvest` is its extra work.
struct Writer<P: Probe> {
    thread: ToyWriter<Message>,
    probe: P,
}

impl<P: Probe> Writer<P> {
    fn spawn(probe: P, harvest: bool) -> Writer<P> {
        let thread = ToyWriter::spawn(
            || {},
            move |message, reply| match message {
                Message::Op(id) => {
                    probe.mark(id, Hop::WOKE);
                    busy(EXECUTE_NS);
                    probe.mark(id, Hop::EXECUTED);
                    if harvest {
                        busy(HARVEST_NS);
                        probe.mark(id, Hop::HARVESTED);
                    }
                    probe.mark(id, Hop::REPLIED);
                    let _ = reply.send(());
                }
                Message::Run(job) => {
                    job();
                    let _ = reply.send(());
                }
            },
        );
        Writer { thread, probe }
    }

    fn write(&self, id: OpId) -> Result<(), BoxError> {
        self.probe.mark(id, Hop::ENTER);
        self.probe.mark(id, Hop::SENT);
        self.thread.send(Message::Op(id))?;
        self.thread.reply()?;
        self.probe.mark(id, Hop::RECEIVED);
        self.probe.mark(id, Hop::DONE);
        Ok(())
    }

    fn on_thread(&self, job: ThreadJob) -> Result<(), BoxError> {
        self.thread.send(Message::Run(job))?;
        self.thread.reply()
    }
}

/// One build of a writer lane: the same code, clean or probed by `P`.
fn build<P: Probe>(name: &str, floor: bool, probe: P) -> ClosureLane<Writer<P>> {
    let spawn = move |_: &hopscope_harness::Setup| Ok::<_, BoxError>(Writer::spawn(probe, !floor));
    let lane = if floor {
        Lane::floor(name, spawn, |w: &mut Writer<P>, op| w.write(op.id()))
    } else {
        Lane::subject(name, spawn, |w: &mut Writer<P>, op| w.write(op.id()))
    };
    lane.on_thread("writer", |w, job| w.on_thread(job))
}

#[test]
fn a_probe_generic_writer_gets_the_whole_method() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-probe-generic-{}", std::process::id()));
    let inline = Lane::baseline(
        "inline",
        |_s| Ok::<_, BoxError>(()),
        |_: &mut (), _op| {
            busy(EXECUTE_NS);
            Ok::<_, BoxError>(())
        },
    );
    let plan = Plan { ops_per_block: 100, samples: 12, passes: 2, warmup_blocks: 2, ..Plan::quick() };
    let outcome = Harness::new("probe-generic")
        .plan(plan)
        .out(&dir)
        .quiet()
        .lane(inline)
        .lane(build("bare", true, NoProbe).probed(build("bare", true, Recording)))
        .lane(build("mine", false, NoProbe).probed(build("mine", false, Recording)))
        .run()
        .expect("run");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(d.drops.complete_ops["mine"], 0, "the clean build records nothing");
    assert_eq!(d.drops.complete_ops["bare"], 0);
    assert_eq!(d.drops.complete_ops["mine-probed"], u64::from(2 * 12 - left_out(&d)) * 100);
    assert_eq!(d.drops.incomplete_ops["mine-probed"], 0);
    let derived = d.derived.as_ref().expect("derived");
    assert_eq!(derived.lanes["subject"], "mine");
    assert_eq!(derived.lanes["floor"], "bare");
    assert!(derived.boundary_us.is_some() && derived.library_us.is_some());
    assert!(d.observer_effect.is_some());
    assert_eq!(d.insitu_lane.as_deref(), Some("mine-probed"));
    let harvest = d.slices.iter().find(|s| s.name == "executed→harvested").expect("the library's own slice");
    assert!((harvest.median_us - HARVEST_NS as f64 / 1e3).abs() < 0.25, "{harvest:?}");
    let cross = d.crosscheck.as_ref().expect("a floor gives the cross-check");
    eprintln!(
        "library: lanes {:.3} µs (CI {:.3}…{:.3}), in-situ {:.3} µs",
        cross.lanes_library_us, cross.lanes_library_ci95[0], cross.lanes_library_ci95[1], cross.insitu_library_us
    );
    assert!((cross.insitu_library_us - HARVEST_NS as f64 / 1e3).abs() < 0.25, "{cross:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rounds the run left out of every figure (another process held their
/// CPUs): their operations are not joined.
fn left_out(d: &hopscope_analyze::Decomposition) -> u32 {
    d.contention.as_ref().map_or(0, |c| c.rounds_left_out())
}

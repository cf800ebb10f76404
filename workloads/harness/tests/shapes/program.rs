//! One program, marked two ways: a caller and a writer thread that
//! busy-wait known lengths between `tracing` span edges of every shape a
//! slice takes (into a child, inside a span, between siblings, a sibling's
//! whole life between two exits, a child closed inside its parent's last
//! slice, an enter whose span exits unmarked), and the same program with
//! direct marks (`hop!`) where the span edges were. Each span slice, net of
//! the machinery the receipt states for it, must land where the direct
//! marks put the same slice, in every placement of the two threads.

use crossbeam_channel::Sender;
use hopscope_harness::{BoxError, HandIn, Harness, Lane, Placement, Plan, ThreadInit};
use hopscope_probe::{Hop, HopLayer, HopTable, OpId, Side, hop};

use crate::common::{ToyWriter, busy};

/// The span events each slice holds besides its two edges: (creates,
/// closes, creates of a root, closes of a root, unmarked enters, unmarked
/// exits).
pub(crate) const EVENTS: [(&str, [u8; 6]); 11] = [
    ("write.enter→prepare.enter", [1, 0, 0, 0, 0, 0]),
    ("prepare.enter→prepare.exit", [0, 0, 0, 0, 0, 0]),
    ("prepare.exit→send.enter", [1, 1, 0, 0, 0, 0]),
    ("send.enter→send.exit", [0, 0, 0, 0, 0, 0]),
    ("serve.enter→execute.enter", [1, 0, 0, 0, 0, 0]),
    ("execute.enter→execute.exit", [0, 0, 0, 0, 0, 0]),
    ("execute.exit→replied", [1, 1, 0, 0, 1, 0]),
    ("replied→note.enter", [1, 1, 0, 0, 0, 0]),
    ("note.enter→serve.exit", [0, 1, 0, 0, 0, 1]),
    ("serve.exit→ack.enter", [0, 0, 1, 1, 0, 0]),
    ("received→write.exit", [0, 1, 0, 0, 0, 0]),
];

/// Busy-waits, ns, by the slice they lie in.
pub(crate) const WAITS: [(&str, u64); 11] = [
    ("write.enter→prepare.enter", 900),
    ("prepare.enter→prepare.exit", 1_200),
    ("prepare.exit→send.enter", 500),
    ("send.enter→send.exit", 400),
    ("serve.enter→execute.enter", 700),
    ("execute.enter→execute.exit", 2_000),
    ("execute.exit→replied", 600),
    ("replied→note.enter", 300),
    ("note.enter→serve.exit", 800),
    ("serve.exit→ack.enter", 400),
    ("received→write.exit", 1_000),
];

/// The busy-wait of slice `name`.
fn wait(name: &str) -> u64 {
    WAITS.iter().find(|(n, _)| *n == name).map_or(0, |(_, ns)| *ns)
}

/// The spans watched, and their hops: `reply` and `wait` mark only their
/// exit (`replied`, `received`), `note` and `ack` only their enter; `ack`
/// follows `serve` with no parent (a root after a root).
pub(crate) fn layer() -> HopLayer {
    let mut layer = HopLayer::new()
        .caller("write")
        .caller("prepare")
        .caller("send")
        .writer("serve")
        .writer("execute")
        .span_exit("reply", Hop::REPLIED)
        .span_exit("wait", Hop::RECEIVED);
    let note = layer.hops_mut().add("note.enter", Side::Writer);
    let ack = layer.hops_mut().add("ack.enter", Side::Writer);
    layer.span("note", note, None).span("ack", ack, None)
}

/// Marks `hop!` takes where the span edges were, by the span layer's names.
#[derive(Clone, Copy)]
struct Direct {
    write: [Hop; 2],
    prepare: [Hop; 2],
    send: [Hop; 2],
    serve: [Hop; 2],
    execute: [Hop; 2],
    note: Hop,
    ack: Hop,
}

impl Direct {
    fn of(table: &HopTable) -> Direct {
        let find = |name: &str| table.find(name).unwrap_or_else(|| panic!("hop {name}"));
        let pair = |span: &str| [find(&format!("{span}.enter")), find(&format!("{span}.exit"))];
        Direct {
            write: pair("write"),
            prepare: pair("prepare"),
            send: pair("send"),
            serve: pair("serve"),
            execute: pair("execute"),
            note: find("note.enter"),
            ack: find("ack.enter"),
        }
    }
}

enum Message {
    Op(u64),
    HandIn(HandIn, Sender<()>),
}

/// How the program is marked.
#[derive(Clone, Copy)]
enum Marking {
    Spans,
    Direct(Direct),
}

/// The writer thread and the channels to it.
pub(crate) struct Program {
    marking: Marking,
    thread: ToyWriter<Message>,
}

impl Program {
    fn spawn(init: ThreadInit, marking: Marking) -> Program {
        let thread = ToyWriter::spawn(
            move || init.enter(),
            move |message, reply| match message {
                Message::Op(op) => {
                    serve(marking, op);
                    let _ = reply.send(());
                }
                Message::HandIn(hand_in, done) => {
                    hand_in.collect("writer");
                    let _ = done.send(());
                }
            },
        );
        Program { marking, thread }
    }

    fn write(&self, op: u64) -> Result<(), BoxError> {
        match self.marking {
            Marking::Spans => {
                let write = tracing::info_span!("write", op).entered();
                busy(wait("write.enter→prepare.enter"));
                tracing::info_span!("prepare", op).in_scope(|| busy(wait("prepare.enter→prepare.exit")));
                busy(wait("prepare.exit→send.enter"));
                tracing::info_span!("send", op).in_scope(|| busy(wait("send.enter→send.exit")));
                self.thread.send(Message::Op(op))?;
                tracing::info_span!("wait", op).in_scope(|| self.thread.reply())?;
                busy(wait("received→write.exit"));
                drop(write);
            }
            Marking::Direct(d) => {
                let id = OpId(op);
                hop!(id, d.write[0]);
                busy(wait("write.enter→prepare.enter"));
                hop!(id, d.prepare[0]);
                busy(wait("prepare.enter→prepare.exit"));
                hop!(id, d.prepare[1]);
                busy(wait("prepare.exit→send.enter"));
                hop!(id, d.send[0]);
                busy(wait("send.enter→send.exit"));
                hop!(id, d.send[1]);
                self.thread.send(Message::Op(op))?;
                self.thread.reply()?;
                hop!(id, Hop::RECEIVED);
                busy(wait("received→write.exit"));
                hop!(id, d.write[1]);
            }
        }
        Ok(())
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        if let Marking::Spans = self.marking {
            return Ok(());
        }
        let (done, answered) = crossbeam_channel::bounded(1);
        self.thread.send(Message::HandIn(hand_in.clone(), done))?;
        Ok(answered.recv()?)
    }
}

/// The writer's side of one operation.
fn serve(marking: Marking, op: u64) {
    match marking {
        Marking::Spans => {
            tracing::info_span!("serve", op).in_scope(|| {
                busy(wait("serve.enter→execute.enter"));
                tracing::info_span!("execute", op).in_scope(|| busy(wait("execute.enter→execute.exit")));
                tracing::info_span!("reply", op).in_scope(|| busy(wait("execute.exit→replied")));
                busy(wait("replied→note.enter"));
                tracing::info_span!("note", op).in_scope(|| busy(wait("note.enter→serve.exit") / 2));
                busy(wait("note.enter→serve.exit") - wait("note.enter→serve.exit") / 2);
            });
            busy(wait("serve.exit→ack.enter"));
            tracing::info_span!("ack", op).in_scope(|| ());
        }
        Marking::Direct(d) => {
            let id = OpId(op);
            hop!(id, d.serve[0]);
            busy(wait("serve.enter→execute.enter"));
            hop!(id, d.execute[0]);
            busy(wait("execute.enter→execute.exit"));
            hop!(id, d.execute[1]);
            busy(wait("execute.exit→replied"));
            hop!(id, Hop::REPLIED);
            busy(wait("replied→note.enter"));
            hop!(id, d.note);
            busy(wait("note.enter→serve.exit") / 2);
            busy(wait("note.enter→serve.exit") - wait("note.enter→serve.exit") / 2);
            hop!(id, d.serve[1]);
            busy(wait("serve.exit→ack.enter"));
            hop!(id, d.ack);
        }
    }
}

/// One slice of both markings in one run: the direct marks' median, the
/// spans' median and the machinery the receipt states for it.
#[derive(Debug, Clone)]
pub(crate) struct Sliced {
    pub(crate) name: String,
    pub(crate) direct_us: f64,
    pub(crate) spans_us: f64,
    pub(crate) machinery_us: Option<f64>,
    pub(crate) unknown: Option<String>,
    pub(crate) events: Option<hopscope_probe::SpanEvents>,
}

/// Run the program in `placement` twice over, interleaved round by round:
/// marked by `spans` (a layer or its subscriber: the subject, sliced with
/// its machinery stated) and by direct marks (a peer lane in the same
/// run); each same-thread slice of both.
pub(crate) fn run(placement: Placement, spans: hopscope_harness::SpanProbe, tag: &str) -> Vec<Sliced> {
    let dir = std::env::temp_dir().join(format!("hopscope-shapes-{tag}-{}-{}", placement.name(), std::process::id()));
    let table = layer().hops().clone();
    let plan = Plan {
        ops_per_block: 100,
        samples: 15,
        passes: 2,
        warmup_blocks: 2,
        placement,
        hops: table.clone(),
        ..Plan::quick()
    };
    let spanned = Lane::subject(
        "spans",
        |s| Ok::<_, BoxError>(Program::spawn(s.thread_init(), Marking::Spans)),
        |p: &mut Program, op| p.write(op.index()),
    )
    .probed_by_spans(spans);
    let direct = Direct::of(&table);
    let marked = Lane::peer(
        "direct",
        move |s| Ok::<_, BoxError>(Program::spawn(s.thread_init(), Marking::Direct(direct))),
        |p: &mut Program, op| p.write(op.index()),
    )
    .threads(&["writer"])
    .hand_in(|p, h| p.hand_in(h));
    let outcome =
        Harness::new("span-shapes").plan(plan).out(&dir).quiet().lane(spanned).lane(marked).run().expect("run");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let d = outcome.decomposition.as_ref().expect("decomposition");
    assert_eq!(d.insitu_lane.as_deref(), Some("spans-probed"));
    assert_eq!(d.drops.incomplete_ops["spans-probed"], 0, "every operation joins across both threads");
    if let Some(m) = &d.span_machinery {
        let e = m.edges.expect("the edge costs are measured");
        eprintln!(
            "shapes {tag} {placement} machinery: inside {:.1} · between {:.1} · into {:.1} · out of {:.1} · \
             enter→enter {:.1} · exit→enter {:.1} · exit→exit {:.1} · create {:.1} · close {:.1} ns",
            m.inside_ns,
            m.between_ns,
            m.into_ns,
            m.out_of_ns,
            e.enter_enter_ns,
            e.exit_enter_ns,
            e.exit_exit_ns,
            e.create_ns,
            e.close_ns
        );
    }
    let trace = hopscope_probe::Trace::read(&outcome.trace).expect("trace");
    let joined = hopscope_analyze::join::join(&trace);
    let medians = |lane: &str| {
        let index = trace.header.lanes.iter().position(|l| l == lane).unwrap_or_else(|| panic!("lane {lane}"));
        let ops = &joined[index];
        assert_eq!(ops.incomplete, 0, "{lane}: every operation joins");
        ops.slices
            .iter()
            .enumerate()
            .map(|(i, def)| {
                let mut blocks: Vec<f64> = ops.blocks.iter().filter_map(|b| b.slice_median_ns[i]).collect();
                blocks.sort_by(f64::total_cmp);
                (def.name.clone(), blocks[blocks.len() / 2] / 1_000.0)
            })
            .collect::<Vec<_>>()
    };
    let (direct, spans) = (medians("direct"), medians("spans-probed"));
    let _ = std::fs::remove_dir_all(&dir);
    d.slices
        .iter()
        .filter(|s| s.side != hopscope_analyze::join::SliceSide::Cross)
        .map(|s| {
            let of = |list: &[(String, f64)]| {
                list.iter().find(|(n, _)| *n == s.name).map(|(_, us)| *us).unwrap_or_else(|| panic!("{}", s.name))
            };
            Sliced {
                name: s.name.clone(),
                direct_us: of(&direct),
                spans_us: of(&spans),
                machinery_us: s.machinery_us,
                unknown: s.machinery_unknown.clone(),
                events: s.span_events,
            }
        })
        .collect()
}

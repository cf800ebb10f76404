//! Measuring the span machinery ([`SpanMachinery`]) on this host, in this
//! process: empty spans through a private `Registry` + [`HopLayer`].
//!
//! Each empty operation (inside a span of its own) opens an outer span, an
//! inner one inside it, closes both, and opens a next one after them, all
//! carrying the operation's id:
//! the four marked slices (outer enter → inner enter, inner enter → inner
//! exit, inner exit → outer exit, outer exit → next enter) hold nothing but
//! machinery, one of each [`SliceKind`](crate::machinery::SliceKind). Then
//! a span whose two children were created before it is entered and closed
//! after it exits: its enter to the first child's enter, the first child's
//! exit to the second's enter and the second's exit to its own exit hold
//! the two ends' callbacks alone ([`EdgeCosts`]); a creation and a close
//! are what the into and out-of slices hold beyond those, and a root's
//! (a span with no parent, cheaper under a Registry) what the same slices
//! around a span created with `parent: None` hold. Two
//! back-to-back probe marks give what a `hop!` slice holds instead. Whole
//! span lives are timed in batches, through the layer and under a bare
//! Registry, alternating.

use std::hint::black_box;
use std::time::Instant;

use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

use super::{HopLayer, LayerSwitch, SubscriberSwitch};
use crate::calibrate::median;
use crate::clock::ClockInfo;
use crate::hop::{Edge, Hop, OpId, SpanEdge};
use crate::local;
use crate::machinery::{EdgeCosts, SpanMachinery, SpanPath};

const OPERATION: &str = "hopscope_calibrate_operation";
const OUTER: &str = "hopscope_calibrate_outer";
const INNER: &str = "hopscope_calibrate_inner";
const NEXT: &str = "hopscope_calibrate_next";
const PAIRED: &str = "hopscope_calibrate_paired";
const FIRST: &str = "hopscope_calibrate_first";
const SECOND: &str = "hopscope_calibrate_second";

const HOLDER: &str = "hopscope_calibrate_holder";
const ORPHAN: &str = "hopscope_calibrate_orphan";

/// The watched spans whose edges are timed, in the column order of an
/// operation's ticks (each span's enter, then its exit).
const TIMED: [&str; 8] = [OUTER, INNER, NEXT, PAIRED, FIRST, SECOND, HOLDER, ORPHAN];

/// Timed edges per empty operation.
const COLUMNS: usize = 2 * TIMED.len();

/// Span lives per timed batch.
const BATCH: usize = 256;

/// Empty operations run between two drains of the calibration layer's ring
/// (8 marks each: the ring holds two batches).
const OPS_PER_DRAIN: usize = 4_096;

/// Measure the span machinery over `samples` empty operations (at least
/// 100) on the calling thread, through a private `Registry` + [`HopLayer`].
/// Takes about 2 µs per sample on a 2-vCPU VM.
pub fn measure(samples: usize) -> SpanMachinery {
    Calibrator::private().measure(samples)
}

/// [`measure`], through `switch`, which must be the process's global
/// default subscriber ([`LayerSwitch::global`]): the stack a harness's span
/// lanes run under. The calling thread must have no default of its own.
pub fn measure_through(switch: &'static LayerSwitch, samples: usize) -> SpanMachinery {
    Calibrator::through(switch).measure(samples)
}

/// [`measure`], through `switch`, the process's global profiling
/// subscriber ([`SubscriberSwitch::global`]): the path a harness's span
/// lanes take when they are probed by [`HopSubscriber`](super::HopSubscriber)s.
/// The calling thread must have no default of its own. `None` when the
/// switch holds no more subscribers.
pub fn measure_through_subscriber(switch: &'static SubscriberSwitch, samples: usize) -> Option<SpanMachinery> {
    Some(Calibrator::through_subscriber(switch)?.measure(samples))
}

/// Where empty span operations run: a private subscriber, or a global
/// switch with the calibration layer registered once.
#[derive(Clone)]
enum Stack {
    Private(Dispatch),
    Switched(&'static LayerSwitch, usize),
    Subscribed(&'static SubscriberSwitch, usize),
}

/// A calibration layer and the stack it runs under, kept to measure the
/// machinery again and again (between the blocks of a run, so host drift
/// reaches the calibration as it reaches the blocks) without registering a
/// layer each time.
#[derive(Clone)]
pub struct Calibrator {
    layer: HopLayer,
    stack: Stack,
    /// The path its empty spans take.
    path: SpanPath,
    /// Read once: measuring the clock takes longer than a calibration.
    info: ClockInfo,
}

impl std::fmt::Debug for Calibrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calibrator").field("switched", &matches!(self.stack, Stack::Switched(..))).finish()
    }
}

/// The four kinds' medians, ns, in the order of [`SliceKind::ALL`].
pub type KindMedians = [f64; 4];

/// One calibration's figures: the four kinds, the machinery taken apart,
/// and how many empty operations joined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Medians of the four kinds, ns.
    pub kinds: KindMedians,
    /// Each edge pair and span event, ns.
    pub edges: EdgeCosts,
    /// Empty operations whose every edge was marked.
    pub joined: u64,
}

impl Calibrator {
    fn layer() -> HopLayer {
        TIMED
            .iter()
            .fold(HopLayer::new().caller(OPERATION), |layer, span| layer.caller(span))
            .ring_marks(OPS_PER_DRAIN * 16)
    }

    /// Through a private `Registry` + [`HopLayer`], on the calling thread.
    pub fn private() -> Calibrator {
        let layer = Calibrator::layer();
        let dispatch = Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
        Calibrator { layer, stack: Stack::Private(dispatch), path: SpanPath::Registry, info: ClockInfo::measure() }
    }

    /// Through a private [`HopSubscriber`](super::HopSubscriber), the
    /// profiling path, on the calling thread.
    pub fn profiling() -> Calibrator {
        let layer = Calibrator::layer();
        let dispatch = Dispatch::new(layer.clone().subscriber());
        Calibrator { layer, stack: Stack::Private(dispatch), path: SpanPath::Subscriber, info: ClockInfo::measure() }
    }

    /// Through `switch`, the process's global default subscriber (see
    /// [`measure_through`]).
    pub fn through(switch: &'static LayerSwitch) -> Calibrator {
        let layer = Calibrator::layer();
        let index = switch.add(&layer);
        Calibrator {
            layer,
            stack: Stack::Switched(switch, index),
            path: SpanPath::Registry,
            info: ClockInfo::measure(),
        }
    }

    /// Through `switch`, the process's global profiling subscriber
    /// ([`SubscriberSwitch::global`]); `None` when it holds no more.
    pub fn through_subscriber(switch: &'static SubscriberSwitch) -> Option<Calibrator> {
        let layer = Calibrator::layer();
        let index = switch.add(&layer)?;
        Some(Calibrator {
            layer,
            stack: Stack::Subscribed(switch, index),
            path: SpanPath::Subscriber,
            info: ClockInfo::measure(),
        })
    }

    /// Run `f` under the calibrated stack.
    fn run(&self, f: &mut dyn FnMut()) {
        match &self.stack {
            Stack::Private(dispatch) => tracing::dispatcher::with_default(dispatch, f),
            Stack::Switched(switch, index) => {
                let previous = switch.active_index();
                switch.activate(Some(*index));
                f();
                switch.activate(previous);
            }
            Stack::Subscribed(switch, index) => {
                let previous = switch.active_index();
                switch.activate(Some(*index));
                f();
                switch.activate(previous);
            }
        }
    }

    /// The machinery over `samples` empty operations (at least 10): the
    /// four kinds and the edge pairs and span events, medians each.
    pub fn calibrate(&self, samples: usize) -> Calibration {
        let samples = samples.max(10);
        let info = &self.info;
        let hops: Vec<Hop> = TIMED
            .iter()
            .flat_map(|name| [Edge::Enter, Edge::Exit].map(|edge| SpanEdge::of(name, edge).hop_name()))
            .map(|n| self.layer.hops().find(&n).unwrap_or(Hop(u16::MAX)))
            .collect();
        let _ = self.layer.collector().drain();
        // op -> every timed edge's ticks, in the order of `hops`
        let mut edges: std::collections::HashMap<u64, [u64; COLUMNS]> = std::collections::HashMap::new();
        let mut done = 0;
        while done < samples {
            let batch = (samples - done).min(OPS_PER_DRAIN);
            self.run(&mut || empty_operations(batch, (1 << 32) + done as u64));
            for mark in self.layer.collector().drain().threads.iter().flat_map(|t| &t.marks) {
                if let Some(i) = hops.iter().position(|h| *h == mark.hop) {
                    edges.entry(mark.op.0).or_insert([0; COLUMNS])[i] = mark.ticks.0;
                }
            }
            done += batch;
        }
        // The calibration's own pairs are not the program's.
        let _ = self.layer.take_sequences();
        let complete: Vec<[u64; COLUMNS]> = edges.into_values().filter(|e| e.iter().all(|t| *t != 0)).collect();
        let between = |from: usize, to: usize| {
            let mut ns: Vec<f64> = complete.iter().map(|e| info.to_ns(e[to].saturating_sub(e[from]))).collect();
            median(&mut ns)
        };
        // Column of a span's enter (its exit is the next).
        let enter = |name: &str| 2 * TIMED.iter().position(|n| *n == name).unwrap_or(0);
        let exit = |name: &str| enter(name) + 1;
        let kinds = [
            between(enter(INNER), exit(INNER)),
            between(exit(OUTER), enter(NEXT)),
            between(enter(OUTER), enter(INNER)),
            between(exit(INNER), exit(OUTER)),
        ];
        let [_, _, into, out_of] = kinds;
        let enter_enter_ns = between(enter(PAIRED), enter(FIRST));
        let exit_exit_ns = between(exit(SECOND), exit(PAIRED));
        let edges = EdgeCosts {
            enter_enter_ns,
            exit_enter_ns: between(exit(FIRST), enter(SECOND)),
            exit_exit_ns,
            // Differences of medians: held at zero when noise takes them below.
            create_ns: (into - enter_enter_ns).max(0.0),
            close_ns: (out_of - exit_exit_ns).max(0.0),
            create_root_ns: (between(enter(HOLDER), enter(ORPHAN)) - enter_enter_ns).max(0.0),
            close_root_ns: (between(exit(ORPHAN), exit(HOLDER)) - exit_exit_ns).max(0.0),
        };
        Calibration { kinds, edges, joined: complete.len() as u64 }
    }

    /// The medians of the four kinds over `samples` empty operations (at
    /// least 10), and how many operations joined.
    pub fn kinds(&self, samples: usize) -> (KindMedians, u64) {
        let c = self.calibrate(samples);
        (c.kinds, c.joined)
    }

    /// The whole measurement: a warm-up, the four kinds over `samples`
    /// empty operations (at least 100), a bare mark pair and whole span
    /// lives.
    pub fn measure(&self, samples: usize) -> SpanMachinery {
        let samples = samples.max(100);
        let _ = self.calibrate(samples / 10);
        let Calibration { kinds: [inside_ns, between_ns, into_ns, out_of_ns], edges, joined } = self.calibrate(samples);
        let registry = Dispatch::new(tracing_subscriber::registry());
        let (span_life_ns, registry_life_ns) = lives(
            &|f| self.run(f),
            &|f| tracing::dispatcher::with_default(&registry, f),
            samples,
            self.layer.collector(),
        );
        SpanMachinery {
            path: self.path,
            inside_ns,
            between_ns,
            into_ns,
            out_of_ns,
            bare_mark_ns: bare_mark_ns(&self.info, samples),
            span_life_ns,
            registry_life_ns,
            samples: joined,
            edges: Some(edges),
        }
    }
}

/// `count` empty operations, ids from `first`. Each runs inside a span of
/// its own, as a program's steps run inside an operation's span: creating
/// and closing a span with a parent also touches the parent.
fn empty_operations(count: usize, first: u64) {
    for i in 0..count as u64 {
        let op = first + i;
        let _operation = tracing::info_span!(OPERATION, op).entered();
        let outer = tracing::info_span!(OUTER, op).entered();
        {
            let _inner = tracing::info_span!(INNER, op).entered();
        }
        drop(outer);
        let _next = tracing::info_span!(NEXT, op).entered();
        // Spans created before and closed after the slices between their
        // edges: those slices hold the two ends' callbacks alone.
        let (first, second) = (tracing::info_span!(FIRST, op), tracing::info_span!(SECOND, op));
        let paired = tracing::info_span!(PAIRED, op).entered();
        first.in_scope(|| ());
        second.in_scope(|| ());
        drop(paired);
        // A span with no parent created and closed inside another's enter
        // and exit: what a root's creation and close hold.
        let holder = tracing::info_span!(HOLDER, op).entered();
        tracing::info_span!(parent: None, ORPHAN, op).in_scope(|| ());
        drop(holder);
    }
}

/// Median ns between two back-to-back marks.
fn bare_mark_ns(info: &ClockInfo, samples: usize) -> f64 {
    let pairs = samples.min(100_000);
    let (marks, _) = std::thread::scope(|s| {
        s.spawn(|| {
            local::attach(2 * pairs);
            for i in 0..pairs as u64 {
                local::record(OpId(i), Hop::ENTER);
                local::record(OpId(i), Hop::DONE);
            }
            let drained = local::drain();
            (drained.marks, drained.dropped)
        })
        .join()
        .unwrap_or_default()
    });
    let mut ns: Vec<f64> =
        marks.chunks_exact(2).map(|p| info.to_ns(p[1].ticks.0.saturating_sub(p[0].ticks.0))).collect();
    median(&mut ns)
}

/// Median ns of one span's whole life under `marked` and under `bare`, in
/// alternating batches.
fn lives(
    marked: &dyn Fn(&mut dyn FnMut()),
    bare: &dyn Fn(&mut dyn FnMut()),
    samples: usize,
    collector: &super::Collector,
) -> (f64, f64) {
    let rounds = (samples / BATCH).clamp(10, 400);
    let (mut through_layer, mut registry) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    let time = |run: &dyn Fn(&mut dyn FnMut()), round: usize| {
        let mut ns = 0.0;
        run(&mut || {
            let start = Instant::now();
            for i in 0..BATCH as u64 {
                tracing::info_span!(OPERATION, op = ((round as u64) << 20) | i).in_scope(|| black_box(()));
            }
            ns = start.elapsed().as_nanos() as f64 / BATCH as f64;
        });
        ns
    };
    for round in 0..rounds {
        if round % 2 == 0 {
            through_layer.push(time(marked, round));
            registry.push(time(bare, round));
        } else {
            registry.push(time(bare, round));
            through_layer.push(time(marked, round));
        }
        // The marks of the timed lives are not wanted.
        let _ = collector.drain();
    }
    (median(&mut through_layer), median(&mut registry))
}

//! Measuring the span machinery ([`SpanMachinery`]) on this host, in this
//! process: empty spans through a private `Registry` + [`HopLayer`].
//!
//! Each empty operation (inside a span of its own) opens an outer span, an
//! inner one inside it, closes both, and opens a next one after them, all
//! carrying the operation's id:
//! the four marked slices (outer enter → inner enter, inner enter → inner
//! exit, inner exit → outer exit, outer exit → next enter) hold nothing but
//! machinery, one of each [`SliceKind`](crate::machinery::SliceKind). Two
//! back-to-back probe marks give what a `hop!` slice holds instead. Whole
//! span lives are timed in batches, through the layer and under a bare
//! Registry, alternating.

use std::hint::black_box;
use std::time::Instant;

use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

use super::{HopLayer, LayerSwitch};
use crate::calibrate::median;
use crate::clock::ClockInfo;
use crate::hop::{Hop, OpId};
use crate::local;
use crate::machinery::{SpanMachinery, SpanPath};

const OPERATION: &str = "hopscope_calibrate_operation";
const OUTER: &str = "hopscope_calibrate_outer";
const INNER: &str = "hopscope_calibrate_inner";
const NEXT: &str = "hopscope_calibrate_next";

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

/// Where empty span operations run: a private subscriber, or the global
/// switch with the calibration layer registered once.
#[derive(Clone)]
enum Stack {
    Private(Dispatch),
    Switched(&'static LayerSwitch, usize),
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

impl Calibrator {
    fn layer() -> HopLayer {
        HopLayer::new().caller(OPERATION).caller(OUTER).caller(INNER).caller(NEXT).ring_marks(OPS_PER_DRAIN * 16)
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
        }
    }

    /// The medians of the four kinds over `samples` empty operations (at
    /// least 10), and how many operations joined.
    pub fn kinds(&self, samples: usize) -> (KindMedians, u64) {
        let samples = samples.max(10);
        let info = &self.info;
        let hops: Vec<Hop> = [OUTER, INNER, NEXT]
            .iter()
            .flat_map(|name| [format!("{name}.enter"), format!("{name}.exit")])
            .map(|n| self.layer.hops().find(&n).unwrap_or(Hop(u16::MAX)))
            .collect();
        let _ = self.layer.collector().drain();
        // op -> the six edges' ticks, in hop order (outer, inner, next; enter, exit)
        let mut edges: std::collections::HashMap<u64, [u64; 6]> = std::collections::HashMap::new();
        let mut done = 0;
        while done < samples {
            let batch = (samples - done).min(OPS_PER_DRAIN);
            self.run(&mut || empty_operations(batch, (1 << 32) + done as u64));
            for mark in self.layer.collector().drain().threads.iter().flat_map(|t| &t.marks) {
                if let Some(i) = hops.iter().position(|h| *h == mark.hop) {
                    edges.entry(mark.op.0).or_insert([0; 6])[i] = mark.ticks.0;
                }
            }
            done += batch;
        }
        let complete: Vec<[u64; 6]> = edges.into_values().filter(|e| e.iter().all(|t| *t != 0)).collect();
        let kind = |from: usize, to: usize| {
            let mut ns: Vec<f64> = complete.iter().map(|e| info.to_ns(e[to].saturating_sub(e[from]))).collect();
            median(&mut ns)
        };
        let (outer_in, outer_out, inner_in, inner_out, next_in) = (0, 1, 2, 3, 4);
        let medians =
            [kind(inner_in, inner_out), kind(outer_out, next_in), kind(outer_in, inner_in), kind(inner_out, outer_out)];
        (medians, complete.len() as u64)
    }

    /// The whole measurement: a warm-up, the four kinds over `samples`
    /// empty operations (at least 100), a bare mark pair and whole span
    /// lives.
    pub fn measure(&self, samples: usize) -> SpanMachinery {
        let samples = samples.max(100);
        let _ = self.kinds(samples / 10);
        let ([inside_ns, between_ns, into_ns, out_of_ns], joined) = self.kinds(samples);
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

//! Span lanes: a lane probed by a [`HopLayer`] (feature `tracing`).
//!
//! The lane's code runs unchanged on every thread it uses, its own writer
//! thread and a runtime's workers included: the harness installs one global
//! subscriber with a [`LayerSwitch`] and, before each block, activates the
//! probed build's layer or none (clean build, and every other lane). After
//! a block it waits for the lane's watched spans to close and drains the
//! layer's collector: the lane's threads run no code to hand marks in.
//! Marks made on the harness's caller threads go to their caller roles;
//! marks from any other thread go to the lane's first declared thread role
//! or, for a lane that declares none, to a role of the thread's own
//! ([`crate::traced`]): declared `traced-1`, `traced-2`, ... and renamed
//! after the thread (`kv-writer`) when the run ends (up to
//! [`MAX_TRACED_THREADS`]; later threads share the last), so a timeline
//! shows a runtime's workers and a connection thread on tracks of their
//! own, under their own names.
//!
//! When the program already has a global subscriber of its own, the switch
//! cannot be installed: the probed build then runs under a `Registry` with
//! the layer as the thread default of the callers and of the threads given
//! to `on_thread`, and a warning says so once.

use std::collections::HashMap;
use std::sync::Once;
use std::thread::ThreadId;
use std::time::Duration;

use hopscope_probe::spans::machinery::Calibrator;
use hopscope_probe::spans::{LayerSwitch, SubscriberSwitch};
use hopscope_probe::trace::Stream;
use hopscope_probe::{HopLayer, HopTable, SpanPath, SpanSequence, TraceHeader};

use crate::readings::SpanReadings;

use crate::lane::{Build, Lane};
use crate::plan::Plan;
use crate::span_probe::SpanBuild;
use crate::traced::{MAX_TRACED_THREADS, SharedThreads, TRACED_ROLE};

/// How long the end of a block waits for watched spans still closing (a
/// writer closes its reply span just after the caller has its reply).
const SETTLE: Duration = Duration::from_millis(100);

/// The global switch a span lane runs under, and its number in it.
#[derive(Clone, Copy)]
enum Switched {
    Layer(&'static LayerSwitch, usize),
    Subscriber(&'static SubscriberSwitch, usize),
}

impl Switched {
    fn activate(self, on: bool) {
        match self {
            Switched::Layer(switch, index) => switch.activate(on.then_some(index)),
            Switched::Subscriber(switch, index) => switch.activate(on.then_some(index)),
        }
    }
}

/// Where a span lane's marks made off the harness's callers go.
#[derive(Clone)]
pub(crate) enum OffCallers {
    /// The lane's first declared thread role.
    Declared(u16),
    /// A role of each thread's own, shared by the run's span lanes.
    Traced(SharedThreads),
}

impl OffCallers {
    fn thread(&self, thread: ThreadId, name: &str) -> u16 {
        match self {
            OffCallers::Declared(role) => *role,
            OffCallers::Traced(threads) => crate::traced::lock(threads).slot_of(thread, name),
        }
    }

    fn first(&self) -> u16 {
        match self {
            OffCallers::Declared(role) => *role,
            OffCallers::Traced(threads) => crate::traced::lock(threads).first(),
        }
    }
}

/// A span build, opened: where its marks go and how it is switched on.
#[derive(Clone)]
pub(crate) struct SpanLane {
    pub(crate) layer: HopLayer,
    /// The global switch and this lane's number in it; `None` when the
    /// process had another global subscriber.
    switched: Option<Switched>,
    probed: bool,
    /// Where marks made off the callers go.
    off_callers: OffCallers,
    /// Spans seen open across a block end (not waited for again).
    long_lived: Vec<u64>,
    /// Measures the span machinery after each probed block, through the
    /// stack the block ran under (`None` for the clean build).
    calibrator: Option<Calibrator>,
}

impl SpanLane {
    /// Open `build`: register its layer with the global switch of its path
    /// (installed on first use) or, failing that, give it a dispatcher of
    /// its own. `registered` holds the switch numbers of layers already
    /// added (the clean and probed builds of a lane share one).
    pub(crate) fn open(
        build: &SpanBuild,
        off_callers: OffCallers,
        registered: &mut Vec<(HopLayer, SpanPath, usize)>,
    ) -> (SpanLane, Option<tracing::Dispatch>) {
        let known = registered
            .iter()
            .find(|(l, path, _)| *path == build.path && l.collector().same(build.layer.collector()))
            .map(|(_, _, index)| *index);
        let switched = match build.path {
            SpanPath::Registry => LayerSwitch::global().map(|switch| {
                let index = known.unwrap_or_else(|| switch.add(&build.layer));
                Switched::Layer(switch, index)
            }),
            SpanPath::Subscriber => SubscriberSwitch::global().and_then(|switch| {
                let index = known.or_else(|| switch.add(&build.layer))?;
                Some(Switched::Subscriber(switch, index))
            }),
        };
        if known.is_none()
            && let Some(Switched::Layer(_, index) | Switched::Subscriber(_, index)) = switched
        {
            registered.push((build.layer.clone(), build.path, index));
        }
        let dispatch = match switched {
            Some(_) => None,
            None => {
                static WARNED: Once = Once::new();
                WARNED.call_once(|| {
                    eprintln!(
                        "hopscope: the process already has a global tracing subscriber (the program's own, or \
                         another span path's): span lanes mark only on the harness's callers and on threads given \
                         to on_thread"
                    );
                });
                Some(match (build.probed, build.path) {
                    (true, SpanPath::Registry) => {
                        use tracing_subscriber::layer::SubscriberExt;
                        tracing::Dispatch::new(tracing_subscriber::registry().with(build.layer.clone()))
                    }
                    (true, SpanPath::Subscriber) => tracing::Dispatch::new(build.layer.clone().subscriber()),
                    (false, _) => tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()),
                })
            }
        };
        let calibrator = build.probed.then(|| match (switched, build.path) {
            (Some(Switched::Layer(switch, _)), _) => Some(Calibrator::through(switch)),
            (Some(Switched::Subscriber(switch, _)), _) => Calibrator::through_subscriber(switch),
            (None, SpanPath::Registry) => Some(Calibrator::private()),
            (None, SpanPath::Subscriber) => Some(Calibrator::profiling()),
        });
        let lane = SpanLane {
            layer: build.layer.clone(),
            switched,
            probed: build.probed,
            off_callers,
            long_lived: Vec::new(),
            calibrator: calibrator.flatten(),
        };
        (lane, dispatch)
    }

    /// Whether the lane runs under the global switch (its callers must not
    /// set a thread default over it).
    pub(crate) fn switched(&self) -> bool {
        self.switched.is_some()
    }

    /// Before a block: switch this build's layer on (probed) or off
    /// (clean), and discard marks made outside any block.
    pub(crate) fn before_block(&self) {
        if let Some(switched) = self.switched {
            switched.activate(self.probed);
        }
        let _ = self.layer.collector().drain();
        let _ = self.layer.take_sequences();
    }

    /// After a block: wait for the lane's spans to close, and add every
    /// mark made since [`SpanLane::before_block`] to `streams`, the
    /// callers' marks under their roles (`callers`: thread id → trace
    /// thread index). The span events its threads ran between their marks
    /// are taken, and a probed build then measures the span machinery
    /// again, so the figure stated beside its slices follows the host
    /// through the run.
    pub(crate) fn after_block(&mut self, streams: &mut Vec<Stream>, callers: &HashMap<ThreadId, u16>) -> SpanReadings {
        self.layer.settle(SETTLE, &mut self.long_lived);
        let drained = self.layer.collector().drain();
        for t in drained.threads {
            let thread = match callers.get(&t.thread) {
                Some(caller) => *caller,
                None => self.off_callers.thread(t.thread, &t.name),
            };
            add(streams, thread, t.marks, t.dropped);
        }
        if drained.dropped_elsewhere > 0 {
            let thread = self.off_callers.first();
            add(streams, thread, Vec::new(), drained.dropped_elsewhere);
        }
        streams.sort_by_key(|s| s.thread);
        let sequences = self.layer.take_sequences().into_iter().map(SpanSequence::to_reading).collect();
        let ps = |ns: f64| (ns * 1_000.0).round().max(0.0) as u64;
        let calibration = self.calibrator.as_ref().map(|c| c.calibrate(CALIBRATION_OPS)).filter(|c| c.joined > 0);
        SpanReadings {
            kinds_ps: calibration.map(|c| c.kinds.map(ps)),
            edges_ps: calibration.map(|c| c.edges.values().map(ps)),
            sequences,
        }
    }
}

/// Open `build` of `lane` if it is a span build: its span lane, and the
/// dispatcher its threads run under (the build's own, or the fallback when
/// the switch could not be installed).
/// `traced` is the run's shared assignment of threads to their own roles.
pub(crate) fn open_build(
    lane: &Lane,
    build: &Build,
    threads: &[String],
    traced: &SharedThreads,
    registered: &mut Vec<(HopLayer, SpanPath, usize)>,
) -> (Option<SpanLane>, Option<tracing::Dispatch>) {
    let declared = lane.threads.first().and_then(|role| threads.iter().position(|t| t == role));
    let off_callers = match declared {
        Some(index) => OffCallers::Declared(index as u16),
        None => OffCallers::Traced(traced.clone()),
    };
    let Some(spans) = &build.spans else {
        // A dispatcher of the user's own: if a HopLayer is in it, its
        // collector is drained like a span lane's (marks only on the
        // threads that run under that dispatcher).
        let layer = build.dispatch.as_ref().and_then(|d| d.downcast_ref::<HopLayer>()).cloned();
        let lane = layer.map(|layer| SpanLane {
            layer,
            switched: None,
            probed: true,
            off_callers,
            long_lived: Vec::new(),
            // Its own stack is not the harness's to calibrate between blocks.
            calibrator: None,
        });
        return (lane, build.dispatch.clone());
    };
    let (span_lane, fallback) = SpanLane::open(spans, off_callers, registered);
    (Some(span_lane), fallback.or_else(|| build.dispatch.clone()))
}

/// `traced-1` ... `traced-N`.
fn traced_roles() -> impl Iterator<Item = String> {
    (1..=MAX_TRACED_THREADS).map(|n| format!("{TRACED_ROLE}-{n}"))
}

/// Add the `traced-N` roles to the run's thread roles when a span lane
/// declares no role of its own.
pub(crate) fn declare_traced_role(lanes: &[Lane], threads: &mut Vec<String>) {
    let needed = lanes.iter().any(|l| l.span_layer().is_some() && l.threads.is_empty());
    if needed {
        for role in traced_roles() {
            if !threads.contains(&role) {
                threads.push(role);
            }
        }
    }
}

/// Refuse span lanes whose hop tables cannot share one trace: every table
/// (the plan's and each layer's) must be a prefix of the longest, with the
/// same owners declared (one hop cannot end SQLite's slice in one lane and
/// the writer's own in another).
pub(crate) fn check_hops(plan: &Plan, lanes: &[Lane]) -> Result<(), String> {
    let longest = trace_hops(plan, lanes);
    let prefix = |t: &HopTable| {
        t.iter().zip(longest.iter()).all(|((_, a), (_, b))| a.name == b.name && a.side == b.side && a.owns == b.owns)
    };
    if !prefix(&plan.hops) {
        return Err("the plan's hops and a span layer's hops differ: declare the same hops in the same order".into());
    }
    for lane in lanes {
        if let Some(layer) = lane.span_layer()
            && !prefix(layer.hops())
        {
            return Err(format!(
                "lane `{}`: its span layer's hops differ from another lane's: give both layers the same spans, \
                 declared the same way (caller, writer, database, ...), in the same order",
                lane.name()
            ));
        }
    }
    Ok(())
}

/// The hop table of a run: the longest of the plan's and the span layers'
/// (each a prefix of it, [`check_hops`]), with every layer's span edges.
fn trace_hops(plan: &Plan, lanes: &[Lane]) -> HopTable {
    let mut hops = plan.hops.clone();
    for layer in lanes.iter().filter_map(Lane::span_layer) {
        if layer.hops().len() > hops.len() {
            hops = layer.hops().clone();
        }
    }
    for layer in lanes.iter().filter_map(Lane::span_layer) {
        for (hop, def) in layer.hops().iter() {
            if let Some(edge) = &def.span {
                hops.mark_by(hop, edge.clone());
            }
        }
    }
    hops
}

/// Declare the run's hops in `header`.
pub(crate) fn declare_hops(plan: &Plan, lanes: &[Lane], header: &mut TraceHeader) {
    header.hops = trace_hops(plan, lanes);
}

/// When a lane is probed by spans, measure the span machinery into
/// `header` (on this thread, before any block).
pub(crate) fn measure_machinery(lanes: &[Lane], header: &mut TraceHeader) {
    if lanes.iter().any(|l| l.span_layer().is_some()) {
        // Through the stack the lanes run under: the global switch when it
        // is installed, a Registry with the layer otherwise.
        use hopscope_probe::spans::machinery;
        let profiling = lanes.iter().any(|l| l.span_path() == Some(SpanPath::Subscriber));
        header.span_machinery = match (profiling, SubscriberSwitch::installed(), LayerSwitch::installed()) {
            (true, Some(switch), _) => machinery::measure_through_subscriber(switch, MACHINERY_SAMPLES),
            (true, None, _) => Some(Calibrator::profiling().measure(MACHINERY_SAMPLES)),
            (false, _, Some(switch)) => Some(machinery::measure_through(switch, MACHINERY_SAMPLES)),
            (false, _, None) => Some(machinery::measure(MACHINERY_SAMPLES)),
        };
    }
}

/// Empty span operations the machinery is measured over after each probed
/// block (about 0.2 ms).
const CALIBRATION_OPS: usize = 400;

/// Empty span operations the machinery is measured over before a run
/// (about 40 ms).
const MACHINERY_SAMPLES: usize = 20_000;

/// Switch every span layer off: before a block of a lane without one.
pub(crate) fn none_active() {
    if let Some(switch) = LayerSwitch::installed() {
        switch.activate(None);
    }
    if let Some(switch) = SubscriberSwitch::installed() {
        switch.activate(None);
    }
}

fn add(streams: &mut Vec<Stream>, thread: u16, mut marks: Vec<hopscope_probe::Mark>, dropped: u64) {
    match streams.iter_mut().find(|s| s.thread == thread) {
        Some(stream) => {
            stream.marks.append(&mut marks);
            stream.dropped = stream.dropped.saturating_add(dropped);
        }
        None => streams.push(Stream { thread, dropped, marks }),
    }
}

/// How often each watched span of each span lane was entered per span over
/// the run (a future's span once per poll), and spans that never got an
/// operation id: one line per lane, or nothing without span lanes.
pub(crate) fn polls(lanes: &[Lane]) -> String {
    let mut out = String::new();
    for lane in lanes {
        let Some(layer) = lane.span_layer() else { continue };
        let spans: Vec<String> = layer
            .counts()
            .iter()
            .filter(|c| c.closed > 0 || c.without_op > 0)
            .map(|c| {
                let per = if c.closed == 0 { 0.0 } else { c.enters as f64 / c.closed as f64 };
                let lost =
                    if c.without_op > 0 { format!(", {} without an op id", c.without_op) } else { String::new() };
                format!("{} entered {per:.2}× per span over {} spans{lost}", c.span, c.closed)
            })
            .collect();
        if !spans.is_empty() {
            out.push_str(&format!("spans of {}: {}\n", lane.name(), spans.join(" · ")));
        }
        // A span without the operation's id marks nothing: said as a
        // warning, since a misnamed field otherwise loses every slice
        // quietly.
        for c in layer.counts().iter().filter(|c| c.without_op > 0) {
            out.push_str(&format!(
                "warning: {} `{}` spans of {} carried no operation id and marked nothing: record the id in a field \
                 named `op` (`info_span!(\"{}\", op = id)`), or name your field with HopLayer::op_field\n",
                c.without_op,
                c.span,
                lane.name(),
                c.span
            ));
        }
        if layer.unbound() > 0 {
            out.push_str(&format!(
                "warning: {} spans of {} found no free slot and marked nothing (more than {} watched spans open at once)\n",
                layer.unbound(),
                lane.name(),
                hopscope_probe::spans::MAX_LIVE_SPANS
            ));
        }
    }
    out
}

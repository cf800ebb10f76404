//! Nanosecond hop marks for the write path, and the trace they go into.
//!
//! `hopscope-probe` is the instrument of hopscope: it marks the moments an
//! operation passes on its way through a writer-thread architecture (lock,
//! build, send, wake, execute, harvest, reply, return), keeps those marks on
//! per-thread buffers without disturbing the code it measures, and writes
//! them to a `.hop` trace that the analyzer can trust. It depends on nothing
//! else in hopscope.
//!
//! # Design
//!
//! - [`local`] is the hot path: [`local::record`] reads the clock
//!   ([`clock::now`], raw [`Ticks`]) and stores one [`Mark`] in a buffer the
//!   thread allocated beforehand with [`local::attach`]. A full buffer drops
//!   the mark and counts the drop; it never grows or blocks.
//! - [`Probe`] lets one piece of code be built probed ([`Recording`]) and
//!   clean ([`NoProbe`], zero-sized) and run both in one process, which is
//!   how hopscope measures its own observer effect.
//! - [`hop!`] is for users' own code: it records only with the `enabled`
//!   feature and compiles to nothing without it.
//! - [`Session`] gathers each thread's drained marks at block boundaries;
//!   [`trace`] writes and reads the `.hop` file; [`Capture`] does both for a
//!   user's program, one lane, blocks where the program says.
//! - [`counters`] tells which perf-event counters the host supports;
//!   [`calibrate`] measures what a clock read and a mark cost.
//!
//! # Feature flags
//!
//! - `enabled` (off by default): [`hop!`] records marks. Without it the macro
//!   type-checks its arguments and emits nothing. [`Probe`], [`Recording`] and
//!   the trace format are available either way.
//! - `tracing` (off by default): `HopLayer` (module `spans`), a
//!   `tracing_subscriber` Layer that marks the first enter and last exit of
//!   chosen spans, the op id taken from a field at creation or later; its
//!   marks reach a `Collector` of per-thread rings drained from outside;
//!   `HopLayer::capture` is the one-call set-up that writes a trace. The
//!   same watches as a subscriber of their own, without a Registry, are
//!   `HopSubscriber` (`capture_profiling`), the profiling path.
//! - `sqlite` (off by default): `SqliteProbe` (module `sqlite`) marks the
//!   start and end of every statement of a rusqlite connection through
//!   SQLite's own trace hook, on whatever thread runs it, into the same
//!   kind of `Collector`: a writer nobody edited still gets its SQLite
//!   slice. It costs a statement ~0.17–0.20 µs on this VM, mostly SQLite's
//!   own callbacks and the two reads of its clock (`benches/sqlite.rs`).
//!
//! # Costs
//!
//! Measured on a 2-vCPU AMD EPYC VM (TSC clock) with
//! `cargo run --release -- calibrate` and `cargo bench -p hopscope-probe`:
//!
//! | path | cost (criterion median) |
//! |------|------|
//! | bare `rdtsc` | 11.9 ns (the VM's TSC read is slow; the floor of any clock read) |
//! | bare `quanta::Clock::raw` | 11.4 ns |
//! | `std::time::Instant::now` | 29.2 ns |
//! | [`local::record`] (one mark) | 12.0 ns (1.05× a raw read) |
//! | [`local::record_on_cpu`] (a mark stamped with its CPU via `rdtscp`) | ≈ 26 ns on this VM: used once per operation per thread, not per hop |
//! | `tracing` span enter + exit through `HopLayer` | the Registry's + 46–64 ns in the same run, two clock reads (35–46 ns on this VM in December 2026) among them |
//! | a whole span life (create, enter, exit, close) through `HopLayer` | 1.4× a bare Registry's life in the same run (217–294 ns against 153–208), the span events between marks counted |
//! | a whole span life through `HopSubscriber` (the profiling path) | 0.79–0.82× a bare Registry's life in the same run (121–170 ns against 153–208 on this VM, whose clock read costs 17 ns; `tracing`'s own floor 21–31 ns), the span events between marks counted |
//! | [`local::drain`] | a `memcpy` of the marks, once per block |
//!
//! `hopscope calibrate` measured, side by side in one run: clock read
//! 11.17 ns, mark 11.51 ns, ratio 1.03×.
//!
//! # Guarantees
//!
//! - [`local::record`] takes no lock, allocates nothing, formats nothing and
//!   makes no syscall once the clock is calibrated (on TSC hosts; the OS
//!   fallback reads the vDSO clock).
//! - Every mark is either in a buffer or counted as dropped: per thread in
//!   [`local::Drained::dropped`], per block in the trace, and process-wide for
//!   marks made after a thread's buffer was torn down.
//! - [`Trace::from_bytes`] returns a complete, validated trace or a
//!   [`TraceError`] with a byte offset; it never panics on any input.
//!
//! # Caveats
//!
//! - TSC ticks are only comparable across cores when the TSC is invariant
//!   (`constant_tsc` and `nonstop_tsc`); the header records whether it is,
//!   and the kernel's clocksource, so a reader can judge cross-thread slices.
//! - On VMs the hypervisor may trap or offset `rdtsc`; the calibration in the
//!   header is what the trace was converted with, not a promise about the
//!   hardware.
//! - A thread that migrates between cores mid-operation sees its slices
//!   stretched by the migration; later issues record the CPU of each mark.
//! - Marks record raw ticks. Nanoseconds exist only after multiplying by
//!   [`ClockInfo::ns_per_tick`].

#![deny(missing_docs)]

pub mod calibrate;
mod capture;
pub mod clock;
pub mod counters;
mod hook_cost;
mod hop;
mod host;
mod live_fact;
pub mod local;
mod placement;
mod probe;
mod reading_key;
mod role;
mod run_fact;
mod session;
mod slice_name;
pub mod trace;

pub mod collector;
pub mod live;
pub mod machinery;
#[cfg(feature = "tracing")]
pub mod spans;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "what-if")]
pub mod whatif;
#[cfg(feature = "tracing")]
pub use spans::{Edges, HopLayer, HopSubscriber, SpanCapture};

#[cfg(feature = "enabled")]
mod enabled;
#[cfg(feature = "enabled")]
pub use enabled::ENABLED;

#[cfg(not(feature = "enabled"))]
mod disabled;
#[cfg(not(feature = "enabled"))]
pub use disabled::ENABLED;

pub use capture::Capture;
pub use clock::{ClockInfo, ClockSource, Ticks};
pub use hook_cost::{HookCost, STATEMENT_ROLE};
pub use hop::{Edge, Hop, HopDef, HopTable, MAX_HOPS, Mark, OpId, Owner, Side, SpanEdge};
pub use host::HostInfo;
pub use live::{CaptureSummary, LiveCapture, LiveOptions};
pub use machinery::{EdgeCosts, SliceKind, SpanEvents, SpanMachinery, SpanPath, SpanSequence};
pub use placement::{Placement, UnknownPlacement};
pub use probe::{NoProbe, Probe, Recording};
pub use reading_key::{LiveReading, ReadingKey, ReservedRole, ThreadFigure, ThreadRole, WRITER_ROLE};
pub use role::{LaneInfo, Role, UnknownRole, Variant};
pub use run_fact::{ArmFact, LaneFact, LiveFact, RunFact, RunFacts};
pub use session::Session;
pub use slice_name::{ARROW, ASCII_ARROW, NotASliceName, SliceName};
pub use trace::{Block, Reading, Salvage, Stream, Trace, TraceError, TraceHeader, TraceReader, TraceWriter};

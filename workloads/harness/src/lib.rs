//! The public harness of hopscope: decompose *your own* write path with the
//! whole method.
//!
//! You declare lanes — a baseline (the same write on the calling thread),
//! optionally a floor (a bare writer thread), your writer (the subject),
//! clean and probed — and the harness runs them alternately in one process,
//! block by block, then writes what `hopscope decompose` writes: the raw
//! `trace.hop`, `result.json` (schema `hopscope.decomposition/1`), a
//! receipt, `report.html` and charts, with `hop = subject − baseline`,
//! `boundary = floor − baseline`, `library = subject − floor` and their
//! CIs, the subject's slices, the cross-check of the two instruments where
//! a floor exists, the observer effect (clean vs probed), CPU and context
//! switches per operation. With `--ab SPEC` two lanes are judged as A/B
//! arms under a rule fixed before the run. hopscope's own commands run on
//! this same API.
//!
//! ```no_run
//! use hopscope_harness::{Harness, Lane};
//! # fn open(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> { todo!() }
//! # fn insert(db: &mut rusqlite::Connection, i: u64) -> rusqlite::Result<usize> { todo!() }
//! fn main() -> std::process::ExitCode {
//!     Harness::from_args("my-writer")
//!         .lane(Lane::baseline("inline", |s| open(&s.path("inline.db")), |db, op| insert(db, op.index())))
//!         // .lane(Lane::subject("my-writer", ...).threads(&["writer"]).hand_in(...).probed_by(...))
//!         .main()
//! }
//! ```
//!
//! # Design
//!
//! - [`Lane`] declares a lane; [`ClosureLane`] builds one from a set-up and
//!   an operation over a state, [`Workload`] is the trait behind both (and
//!   behind hopscope's reference lanes) for code that shares one instance
//!   between several caller threads or builds inputs before each block.
//! - [`runner::run`] alternates the lanes under a [`Plan`] and writes the
//!   trace; [`Harness`] wraps it with flags ([`RunArgs`]), analysis and the
//!   result files.
//! - Every call into a lane's code runs on one of the harness's caller
//!   threads under a deadline: a lane that panics, returns an error,
//!   reports more than it did or blocks stops the run with one line naming
//!   the lane and the block, and what was measured before is kept.
//! - A lane's own threads hand their marks in at block boundaries
//!   ([`HandIn`]); a thread prepares itself with [`ThreadInit::enter`].
//!
//! # Feature flags
//!
//! - `tracing` (off by default): [`Lane::probed_by_spans`] runs a lane clean
//!   and probed by a `HopLayer` on every thread it uses, with nothing of
//!   the user's on those threads; [`Lane::probed_by`] runs it under a
//!   `tracing` dispatcher of the user's own.
//! - `sqlite` (off by default): [`Lane::probed_by_sqlite`] runs a lane clean
//!   and probed through SQLite's own trace hook: a writer whose code the
//!   user cannot edit is sliced by the statements it runs.
//! - `report` (on by default): charts and `report.html` beside the
//!   receipt. The harness measures; every file a run leaves is written by
//!   one call, [`finish`] (hopscope-reports'), and without this feature that
//!   writer skips the chart and template stack (plotters, a font, askama,
//!   pulldown-cmark), so the program builds faster and lists the drawn
//!   files as not drawn.
//! - `what-if` (on by default): `--what-if` causal profiles (virtual
//!   speedups of one slice at a time); without it a mark pays nothing for
//!   them.

#![deny(missing_docs)]

pub mod ab;
mod args;
mod checkpoints;
mod closure;
pub mod cpu;
mod error;
mod follower;
pub mod gate;
mod hand_in;
mod harness;
pub mod index;
pub mod interrupt;
mod lane;
mod lane_names;
#[cfg(unix)]
pub mod lockstep;
mod outcome;
pub mod placement;
mod plan;
pub mod progress;
mod readings;
pub mod record;
mod run_summary;
pub mod rundir;
pub mod runner;
pub mod sched;
#[cfg(feature = "tracing")]
mod span_probe;
#[cfg(feature = "tracing")]
mod spans;
mod spec;
#[cfg(feature = "sqlite")]
mod sqlite;
pub mod summary;
#[cfg(feature = "tracing")]
mod traced;
pub mod twins;
#[cfg(feature = "what-if")]
pub mod whatif;
mod whatif_flags;
mod workload;

pub use args::{FlagError, RunArgs, SpanPathFlag, one_line, parse_flags};
pub use closure::{ClosureLane, ThreadJob};
pub use error::{At, Failure, RunError, Stopped};
pub use hand_in::HandIn;
pub use harness::{Harness, HarnessError, Outcome};
/// The one writer a run ends with, and what it writes: see the `report`
/// feature.
pub use hopscope_reports::{Finished, RunResult, Written, finish};
pub use lane::{Lane, MAX_CALLERS};
pub use lane_names::MAX_NAME_BYTES;
#[cfg(feature = "sqlite")]
pub use lane_names::SQLITE_ROLE;
pub use placement::{Pin, Placement};
pub use plan::{
    DEFAULT_BLOCK_DEADLINE, DEFAULT_MARKS_PER_OP, DEFAULT_SETTLE, MAX_BLOCKS_PER_LANE, MAX_BUFFER_MARKS,
    MAX_OPS_PER_BLOCK, MAX_SETTLE, MIN_OPS_PER_CALLER, MIN_SCALED_SAMPLES, Order, Plan, shuffled,
};
pub use runner::RunSummary;
#[cfg(feature = "tracing")]
pub use span_probe::SpanProbe;
pub use spec::{ExperimentSpec, MAX_SPEC_BYTES, SpecError, sha256_hex};
#[cfg(feature = "sqlite")]
pub use sqlite::HookedStatements;
#[cfg(feature = "tracing")]
pub use traced::{MAX_TRACED_THREADS, TRACED_ROLE};
pub use whatif_flags::WhatIfArgs;
pub use workload::{BlockId, BlockInfo, BoxError, Op, Ops, Reported, Setup, ThreadInit, Workload};

/// Lane roles and builds, as the trace header records them.
pub use hopscope_probe::{Role, Variant};

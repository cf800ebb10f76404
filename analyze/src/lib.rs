//! Pure analysis of `.hop` traces.
//!
//! [`decompose`] turns a [`hopscope_probe::Trace`] into a [`Decomposition`]:
//! marks joined into per-operation slices ([`join`]), lane figures and
//! paired lane differences ([`lanes`]), slice figures and the cross-check of
//! two instruments ([`slices`]) with the full accounting of `writer − floor`
//! ([`accounting`]), the observer effect, CPU per operation and
//! drop accounting. `hopscope-reports` renders it (receipts, charts, the page).
//! Everything here is a
//! function of the trace: no workload is run, no file is written, nothing is
//! printed, and bad data yields an error or an absent figure, never a panic
//! or a NaN.

#![deny(missing_docs)]

pub mod ab;
mod ab_outcome;
pub mod ab_reason;
pub mod ab_trace;
pub mod accounting;
pub mod attribution;
pub mod batches;
pub mod capture;
pub mod carryover;
pub mod causal;
pub mod change;
pub mod checkpoints;
pub mod cold_start;
pub mod comparison;
pub mod contention;
pub mod coverage;
mod decomposition;
pub mod distribution;
pub mod experiment;
pub mod floor;
pub mod generations;
pub mod join;
pub mod keep_warm;
pub mod lanes;
pub mod merge;
pub mod net;
pub mod recorded;
pub mod resolution;
pub mod roles;
pub mod slice_account;
pub mod slice_verdict;
pub mod slices;
pub mod slow_rounds;
pub mod source;
pub mod stats;
pub mod sweep;
pub mod timeline;
pub mod wake;
pub mod warning;

/// Host and clock facts, as recorded in traces and results.
pub use hopscope_probe::{ClockInfo, HostInfo, Role, Variant};

pub use decomposition::{
    AnalyzeError, BOOTSTRAP_SEED, BlockFigure, CounterFigure, Decomposition, Derived, DerivedFigure, Drops,
    HOP_TOLERANCE_US, HopCheck, InstrumentCost, LaneResult, LaneRun, LaneSlices, ObserverEffect, ObserverFigure,
    Partial, PartialCause, PerRole, PlacedTwin, Placements, ResultError, RunInfo, SCHEMA, SliceDifference, decompose,
    decompose_file, decompose_partial, decompose_source, decompose_source_with_samples, join_file,
};

//! The harness's integration tests, one binary: each file a module, each
//! test taking the suite's turn ([`common::serial`]), since most of them
//! measure the machine and two at once measure each other. One binary
//! links the harness, SQLite and the chart stack once instead of twelve
//! times. The span tests stay binaries of their own: a process's spans
//! take one path (Registry or the profiling subscriber), and tracing's
//! callsites remember the first.

#[path = "../common/mod.rs"]
mod common;

mod ab;
mod checkpoints;
mod faults;
mod known_batches;
mod known_slices;
mod order;
mod placement;
mod placement_twins;
mod probe_generic;
mod rundir_lock;
mod sqlite_lane;
mod whatif;

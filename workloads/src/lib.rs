//! The workloads hopscope measures, and the runner that alternates them.
//!
//! - [`Writer`]: the reference writer, a caller handing writes to a
//!   dedicated thread that owns a rusqlite connection, with every knob of
//!   [`Knobs`] selectable at run time and every hop marked.
//! - [`Floor`]: a bare writer thread with none of that machinery; it prices
//!   the thread boundary alone.
//! - [`Inline`]: the same statement on the calling thread; it prices SQLite.
//! - [`peers`]: published crates (tokio-rusqlite, async-sqlite, sqlx,
//!   deadpool-sqlite) as lanes beside those three (cargo feature `peers`).
//! - [`merge`]: a CRDT changeset merge (naive and tuned paths), the write
//!   path inside execute.
//! - [`runner::run`]: runs a [`Plan`] (lanes × a [`Shape`]) in alternating
//!   blocks and writes a `.hop` trace.
//!
//! Every lane is generic over [`hopscope_probe::Probe`], so each exists in a
//! probed and a clean build inside one process.

#![deny(missing_docs)]

mod channel;
pub mod cpu;
pub mod db;
mod error;
mod floor;
mod inline;
pub mod knobs;
mod lane;
mod mailbox;
pub mod merge;
pub mod peers;
mod progress;
mod readings;
pub mod runner;
mod shape;
mod value;
mod writer;

/// Marks a probed writer or floor thread can hold between two flushes
/// (3 MiB): far more than one block's worth; beyond it marks are dropped and
/// counted, never blocking the thread.
pub const WORKER_MARK_CAPACITY: usize = 1 << 17;

pub use db::DbConfig;
pub use error::{RunError, WriteError};
pub use floor::{Floor, FloorClient, FloorOptions};
pub use inline::Inline;
pub use knobs::Knobs;
pub use lane::{LaneKind, LaneSpec};
pub use peers::Peer;
pub use runner::{Order, Plan, RunSummary};
pub use shape::{OpInput, SEED_ROWS, Shape};
pub use value::{Sql, Value, ValueRef};
pub use writer::{MAX_PARAMS, Tables, WriteOutcome, Writer};

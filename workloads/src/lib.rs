//! hopscope's reference workloads, built on the public harness
//! (`hopscope-harness`) like any user's program.
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
//! - [`LaneSpec`]: which of these a lane runs, in which builds; its
//!   [`LaneSpec::lane`] is the harness lane every command runs, on a
//!   [`Shape`] (what a block writes).
//! - [`experiments`]: the keep-warm sweep and the resolution measurement,
//!   each a series of harness runs.
//!
//! Every lane is generic over [`hopscope_probe::Probe`], so each exists in a
//! probed and a clean build inside one process.

#![deny(missing_docs)]

mod channel;
pub mod db;
mod error;
pub mod experiments;
mod facts;
mod floor;
mod handoff;
mod inline;
pub mod knobs;
mod lane;
mod mailbox;
pub mod merge;
pub mod peers;
mod queue;
mod receive;
mod shape;
mod value;
pub mod wait;
pub mod wake;
mod worker;
mod writer;

pub use db::DbConfig;
pub use error::{ParseError, RunError, WriteError};
pub use facts::run_facts;
pub use floor::{Floor, FloorClient, FloorOptions};
pub use handoff::{Handoff, HandoffOptions, HandoffWorkload};
pub use inline::Inline;
pub use knobs::Knobs;
pub use lane::{Builds, INLINE_HOOK, LaneKind, LaneName, LaneSpec, StandardLane, WRITER_HOOK};
pub use peers::Peer;
pub use shape::{MAX_BATCH_ROWS, MAX_BLOB_BYTES, OpInput, SEED_ROWS, Shape};
pub use value::{Sql, Value, ValueRef};
pub use worker::{WORKER_MARK_CAPACITY, WRITER_ROLE};
pub use writer::{GroupHops, MAX_PARAMS, Tables, WriteOutcome, Writer, writer_hops};

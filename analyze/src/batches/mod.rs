//! Batch sizes: how many operations each shared interval served (a group
//! commit's transaction, a drain), over a lane and block by block.
//!
//! A writer that batches changes with its load: the same program batched
//! ~8 requests per transaction with its threads on one core and ~2 with
//! them free. Every figure of such a lane is conditioned on its batch
//! sizes, so a result states them beside the figures.

mod figures;
mod sweep;

pub use figures::{BatchFigures, batch_figures};
pub use sweep::{BatchSweep, KNEE_GAIN_PCT, SweepPoint, sweep};

//! The terminal's words: what hopscope prints after a run, written here
//! beside the receipts' prose so both say a figure the same way. The
//! harness and the binary only call these.

mod decomposition;
mod experiment;

pub use decomposition::decomposition;
pub use experiment::experiment;

//! An event-ingest writer that batches: producers hand events to one
//! writer thread over a bounded channel; the writer blocks for the first,
//! drains up to `max_batch − 1` more already queued, inserts them all in
//! one `BEGIN IMMEDIATE … COMMIT`, and replies to each producer.
//!
//! With the `hopscope` feature the writer can be decomposed through each
//! road ([`Road`]): direct marks (`hop!`, `serves!`), `tracing` spans (a
//! `commit` span recording every event it serves), or SQLite's own trace
//! hook (each statement named with `with_op`; the probe finds the
//! transaction). `decompose` declares the harness lane for each.

#[cfg(feature = "hopscope")]
pub mod decompose;
#[cfg(feature = "hopscope")]
pub mod hops;
mod marks;
mod request;
mod writer;

pub use request::Road;
pub use writer::Ingest;

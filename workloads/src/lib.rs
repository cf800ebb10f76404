//! The workloads hopscope measures: the reference writer (a caller handing
//! writes to a dedicated thread that owns a SQLite connection), the bare
//! floor writer, the inline lane, and the runner that alternates them inside
//! one process. Built generic over [`hopscope_probe::Probe`] so every lane
//! exists in a probed and a clean build.
//!
//! The lanes arrive with the lanes issue; this crate holds its place in the
//! one-way flow workloads → trace → analyze → reports.

#![deny(missing_docs)]

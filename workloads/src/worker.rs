//! The reference lanes' own thread (the writer's, the floor's, a
//! handoff's, a peer's) as the harness sees it: the role it hands its marks
//! and CPU time in as, and how many marks it holds between two hand-ins. A
//! leaf, so the threads and the lanes that declare them share it.

/// The thread role of the reference lanes' own thread (writer or floor).
pub const WRITER_ROLE: &str = hopscope_probe::WRITER_ROLE;

/// Marks a probed writer or floor thread can hold between two flushes
/// (3 MiB): far more than one block's worth; beyond it marks are dropped and
/// counted, never blocking the thread.
pub const WORKER_MARK_CAPACITY: usize = 1 << 17;

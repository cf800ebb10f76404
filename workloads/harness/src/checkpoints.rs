//! WAL checkpoints per block: the process's checkpoints counted and timed
//! from the start of a run ([`hopscope_probe::sqlite::checkpoints`], with
//! the `sqlite` feature), read around each block like its CPU time. A
//! build without the feature records none, and its trace says so by
//! having no checkpoint readings: none seen is not zero.

/// Start recording, before any lane opens a connection; whether it is on.
pub(crate) fn record() -> bool {
    #[cfg(feature = "sqlite")]
    {
        hopscope_probe::sqlite::checkpoints::record().is_ok()
    }
    #[cfg(not(feature = "sqlite"))]
    {
        false
    }
}

/// Checkpoints finished so far and their summed length, ns; `None` when
/// none are recorded.
pub(crate) fn totals() -> Option<(u64, u64)> {
    #[cfg(feature = "sqlite")]
    {
        hopscope_probe::sqlite::checkpoints::totals().map(|t| (t.count, t.total_ns))
    }
    #[cfg(not(feature = "sqlite"))]
    {
        None
    }
}

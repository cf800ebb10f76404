//! Stopping a run gracefully: the first SIGINT or SIGTERM asks the runner
//! to stop after the block in progress (the trace gets its end record, the
//! results of what was measured are written, lane databases are removed);
//! a second one exits at once with the conventional status (128 + signal).
//! SIGKILL cannot be caught: its trace is salvaged by the reader instead.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

/// Which signal asked to stop (0: none), and whether any did.
struct Flags {
    which: Arc<AtomicUsize>,
    any: Arc<AtomicBool>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Handle SIGINT and SIGTERM as above, from now on (once per process; a
/// program that handles them itself need not call it, and the runner then
/// never stops early).
pub fn install() -> std::io::Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = Flags { which: Arc::new(AtomicUsize::new(0)), any: Arc::new(AtomicBool::new(false)) };
    for signal in [SIGINT, SIGTERM] {
        // The second signal: exit at once (registered first, so it sees the
        // flag the first signal set).
        signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(&flags.any))?;
        signal_hook::flag::register(signal, Arc::clone(&flags.any))?;
        signal_hook::flag::register_usize(signal, Arc::clone(&flags.which), signal as usize)?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// The signal that asked the run to stop, if one did.
pub fn requested() -> Option<Signal> {
    let flags = FLAGS.get()?;
    if !flags.any.load(Ordering::Relaxed) {
        return None;
    }
    Some(Signal(i32::try_from(flags.which.load(Ordering::Relaxed)).unwrap_or(SIGINT)))
}

/// A signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal(pub i32);

impl Signal {
    /// The exit status a program stopped by it reports (130, 143).
    pub fn exit_status(self) -> u8 {
        u8::try_from(128 + self.0).unwrap_or(1)
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            SIGINT => f.write_str("SIGINT"),
            SIGTERM => f.write_str("SIGTERM"),
            n => write!(f, "signal {n}"),
        }
    }
}

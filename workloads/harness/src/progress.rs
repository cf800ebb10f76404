//! The progress bar of a long measurement, on stderr, counting blocks
//! (drawn only between blocks, never inside one).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `total` blocks, or a hidden one when `enabled` is false
/// (stderr not a terminal, tests): a bar never writes into a measured
/// block, only between them.
pub fn bar(enabled: bool, total: u64) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} blocks · {elapsed} (eta {eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("measuring");
    bar
}

/// Progress for a run without a terminal: a line on stderr every
/// [`NOTE_EVERY`] of run time, so a long run is seen to be alive.
#[derive(Debug)]
pub struct Note {
    on: bool,
    total: u64,
    started: std::time::Instant,
    last: std::time::Instant,
}

/// How often a [`Note`] speaks.
pub const NOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

impl Note {
    /// A note for a run of `total` blocks; silent unless `on`.
    pub fn new(on: bool, total: u64) -> Note {
        let now = std::time::Instant::now();
        Note { on, total, started: now, last: now }
    }

    /// `done` blocks are measured; say so if a while has passed.
    pub fn tick(&mut self, done: u64) {
        if self.on && self.last.elapsed() >= NOTE_EVERY {
            self.last = std::time::Instant::now();
            eprintln!("measured {done} of {} blocks in {:.0} s", self.total, self.started.elapsed().as_secs_f64());
        }
    }
}

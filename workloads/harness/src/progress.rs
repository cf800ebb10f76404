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

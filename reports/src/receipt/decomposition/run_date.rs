//! When a run started, as the receipt and the HTML report's header print it.

use std::time::{Duration, UNIX_EPOCH};

use hopscope_analyze::Decomposition;

/// When the run started, as RFC 3339 UTC. The stamp comes from the trace
/// file, so a damaged one past RFC 3339's last year (9999) is shown as the
/// raw number rather than trusted.
pub fn date(d: &Decomposition) -> String {
    /// 10000-01-01T00:00:00Z in milliseconds since the Unix epoch.
    const YEAR_10000_MS: u64 = 253_402_300_800_000;
    let ms = d.run.created_unix_ms;
    if ms >= YEAR_10000_MS {
        return format!("{ms} ms after the Unix epoch (past year 9999: a damaged header?)");
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

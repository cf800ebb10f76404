//! Writing a decomposition's files and printing its summary.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hopscope_analyze::{Decomposition, receipt};

/// Files a decomposition writes into its run directory.
pub(crate) struct Written {
    pub(crate) result: PathBuf,
    pub(crate) receipt: PathBuf,
}

/// Write `result.json` and `receipt.md` into `dir`.
pub(crate) fn write(dir: &Path, d: &Decomposition) -> anyhow::Result<Written> {
    let result = dir.join("result.json");
    let json = serde_json::to_string_pretty(d).context("cannot encode result.json")?;
    std::fs::write(&result, json + "\n").with_context(|| format!("cannot write {}", result.display()))?;
    let receipt_path = dir.join("receipt.md");
    std::fs::write(&receipt_path, receipt::markdown(d))
        .with_context(|| format!("cannot write {}", receipt_path.display()))?;
    Ok(Written { result, receipt: receipt_path })
}

/// Print the short summary a person reads in the terminal.
pub(crate) fn print_summary(d: &Decomposition, written: &Written) {
    println!("{:<16} {:>10} {:>21}", "lane", "µs/op", "95% CI");
    for (name, lane) in &d.lanes {
        match &lane.us_per_op {
            Some(s) => println!("{name:<16} {:>10.3} {:>10.3} – {:<8.3}", s.median, s.ci95[0], s.ci95[1]),
            None => println!("{name:<16} {:>10}", "no ops"),
        }
    }
    if let Some(derived) = &d.derived {
        for (name, diff) in
            [("hop", &derived.hop_us), ("boundary", &derived.boundary_us), ("library", &derived.library_us)]
        {
            println!("{name:<16} {:>10.3} {:>10.3} – {:<8.3}", diff.median, diff.ci95[0], diff.ci95[1]);
        }
    }
    // Without lane arithmetic (a program's own capture) the slices are the
    // result; with it, they are in the receipt.
    if d.derived.is_none() && !d.slices.is_empty() {
        let lane = d.insitu_lane.as_deref().unwrap_or("?");
        println!("\nslices of {lane} (µs per op, median of block medians)");
        for s in &d.slices {
            println!(
                "  {:<22} {:>10.3} {:>10.3} – {:<8.3} {:>5.1}%",
                s.name,
                s.median_us,
                s.ci95[0],
                s.ci95[1],
                s.share * 100.0
            );
        }
    }
    if let Some(c) = &d.crosscheck {
        println!(
            "cross-check      in-situ {:.3} µs vs lanes {:.3} µs (CI {:.3} – {:.3}) → agree: {}",
            c.insitu_library_us, c.lanes_library_us, c.lanes_library_ci95[0], c.lanes_library_ci95[1], c.agree
        );
    }
    if let Some(o) = &d.observer_effect {
        println!("observer effect  {:+.3} µs per op ({:+.1}%)", o.delta_us, o.delta_pct);
    }
    if let Some(h) = receipt::headline(d) {
        println!("\n{h}");
    }
    for w in &d.warnings {
        println!("warning: {w}");
    }
    println!("\nreceipt: {}", written.receipt.display());
    println!("result:  {}", written.result.display());
}

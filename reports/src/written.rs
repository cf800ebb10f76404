//! Writing a run's files: the JSON result, the Markdown receipt, the charts
//! and `report.html`, for each kind of run, and the list of what was
//! written, as a terminal prints it. Every command and the public harness
//! write their results through here.

use std::fmt;
use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;
use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::keep_warm::SweepResult;
use hopscope_analyze::merge::MergeResult;
use hopscope_analyze::net::Net;
use hopscope_analyze::resolution::Resolution;

use crate::receipt::{self, experiment, merge, resolution, sweep};
use crate::text_file::write;
use crate::{ChartOptions, ReportError, drawn};

/// The files a run wrote, each under a label (`result`, `receipt`,
/// `report`, `chart`, ...), in the order a reader wants them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// `(label, path)`, in order.
    pub files: Vec<(String, PathBuf)>,
    /// Whether charts or a page were left undrawn because this build has
    /// no `render` feature (the listing says so, and how to draw them).
    pub undrawn: bool,
}

impl Written {
    /// Add `path` under `label`.
    pub fn push(&mut self, label: &str, path: PathBuf) {
        self.files.push((label.to_owned(), path));
    }

    /// The first file written under `label`.
    pub fn get(&self, label: &str) -> Option<&Path> {
        self.files.iter().find(|(l, _)| l == label).map(|(_, p)| p.as_path())
    }
}

impl fmt::Display for Written {
    /// One line per file (`label:  path`); charts share one line that names
    /// their directory and files. A change's files are left to the line
    /// that gives its verdict (the run's recorder prints it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let charts: Vec<&PathBuf> = self.files.iter().filter(|(l, _)| l == "chart").map(|(_, p)| p).collect();
        for (label, path) in self.files.iter().filter(|(l, _)| l != "chart" && l != "change") {
            writeln!(f, "{:<8} {}", format!("{label}:"), path.display())?;
        }
        if let Some(dir) = charts.first().and_then(|p| p.parent()) {
            let names: Vec<String> =
                charts.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
            writeln!(f, "{:<8} {} ({})", "charts:", dir.display(), names.join(", "))?;
        }
        if self.undrawn {
            // A decomposition's are drawn later from its result.json.
            let later =
                self.get("result").and_then(Path::parent).map(|dir| format!(": hopscope report {}", dir.display()));
            writeln!(
                f,
                "{:<8} not drawn (built without hopscope-harness' `report` feature){}",
                "report:",
                later.unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

fn json<T: serde::Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String, ReportError> {
    serde_json::to_string_pretty(value).map(|s| s + "\n").map_err(|source| ReportError::Json { what, source })
}

/// Write `file` (the JSON, listed under `label`) and `receipt.md` into
/// `dir`; a decomposition lists its receipt first, as `decompose` always
/// has.
fn json_and_receipt<T: serde::Serialize + ?Sized>(
    dir: &Path,
    label: &str,
    file: &'static str,
    value: &T,
    receipt_text: &str,
) -> Result<Written, ReportError> {
    let path = dir.join(file);
    write(&path, &json(file, value)?)?;
    let receipt_path = dir.join("receipt.md");
    write(&receipt_path, receipt_text)?;
    let mut written = Written::default();
    if label == "result" {
        written.push("receipt", receipt_path);
        written.push(label, path);
    } else {
        written.push(label, path);
        written.push("receipt", receipt_path);
    }
    Ok(written)
}

impl Written {
    /// Add what drawing wrote, or mark it undrawn.
    fn drawn(mut self, drawn: Option<Vec<(&'static str, PathBuf)>>) -> Written {
        match drawn {
            Some(files) => files.into_iter().for_each(|(label, path)| self.push(label, path)),
            None => self.undrawn = true,
        }
        self
    }
}

/// A decomposition: `result.json`, `receipt.md`, every chart and
/// `report.html` in `dir`.
pub fn write_decomposition(dir: &Path, d: &Decomposition, options: ChartOptions) -> Result<Written, ReportError> {
    let written = json_and_receipt(dir, "result", "result.json", d, &receipt::markdown(d))?;
    Ok(written.drawn(drawn::decomposition(d, dir, options)?))
}

/// An A/B experiment: `ab.json`, `receipt.md`, `report.html` and its chart.
pub fn write_experiment(dir: &Path, e: &Experiment) -> Result<Written, ReportError> {
    let written = json_and_receipt(dir, "ab", "ab.json", e, &experiment::markdown(e))?;
    Ok(written.drawn(drawn::experiment(e, dir)?))
}

/// A change net of another lane's (`hopscope ab --minus`): `net.json` and
/// `net.md` beside the lane's own results.
pub fn write_net(dir: &Path, n: &Net) -> Result<Written, ReportError> {
    let path = dir.join("net.json");
    write(&path, &json("net.json", n)?)?;
    let receipt_path = dir.join("net.md");
    write(&receipt_path, &receipt::net::markdown(n))?;
    let mut written = Written::default();
    written.push("net", path);
    written.push("net.md", receipt_path);
    Ok(written)
}

/// A merge measurement: `merge.json`, `receipt.md`, `report.html`, charts.
pub fn write_merge(dir: &Path, r: &MergeResult) -> Result<Written, ReportError> {
    let written = json_and_receipt(dir, "merge", "merge.json", r, &merge::markdown(r))?;
    Ok(written.drawn(drawn::merge(r, dir)?))
}

/// A keep-warm sweep: `keep-warm.json`, `receipt.md`, `frontier.png`, and
/// `wake-floor.json` when the wake floor was measured.
pub fn write_sweep(dir: &Path, result: &SweepResult) -> Result<Written, ReportError> {
    let mut written = json_and_receipt(dir, "sweep", "keep-warm.json", result, &sweep::markdown(result))?;
    if let Some(floor) = &result.wake_floor {
        let path = dir.join("wake-floor.json");
        write(&path, &json("wake-floor.json", floor)?)?;
        written.push("wakes", path);
    }
    Ok(written.drawn(drawn::sweep(&result.rows, dir)?))
}

/// A resolution measurement: `resolution.json`, `receipt.md`,
/// `resolution.png`.
pub fn write_resolution(dir: &Path, r: &Resolution) -> Result<Written, ReportError> {
    let written = json_and_receipt(dir, "resolution", "resolution.json", r, &resolution::markdown(r))?;
    Ok(written.drawn(drawn::resolution(r, dir)?))
}

/// Write a what-if run's results into `dir`: `causal.json`, `receipt.md`,
/// `report.html` and `causal.png`.
pub fn write_causal(dir: &Path, p: &hopscope_analyze::causal::CausalProfile) -> Result<Written, ReportError> {
    let written = json_and_receipt(dir, "profile", "causal.json", p, &crate::receipt::causal::markdown(p))?;
    Ok(written.drawn(drawn::causal(p, dir)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_share_one_line_and_other_files_one_each() {
        let mut w = Written::default();
        w.push("receipt", PathBuf::from("run/receipt.md"));
        w.push("chart", PathBuf::from("run/a.png"));
        w.push("chart", PathBuf::from("run/b.png"));
        assert_eq!(w.to_string(), "receipt: run/receipt.md\ncharts:  run (a.png, b.png)\n");
        assert_eq!(w.get("receipt"), Some(Path::new("run/receipt.md")));
    }

    #[test]
    fn undrawn_files_are_said_with_the_command_that_draws_them() {
        let mut w = Written::default();
        w.push("receipt", PathBuf::from("run/receipt.md"));
        w.push("change", PathBuf::from("run/change.md"));
        w.undrawn = true;
        // Without a result.json, no command draws them later.
        assert_eq!(
            w.to_string(),
            "receipt: run/receipt.md\nreport:  not drawn (built without hopscope-harness' `report` feature)\n"
        );
        w.push("result", PathBuf::from("run/result.json"));
        assert!(
            w.to_string()
                .ends_with("not drawn (built without hopscope-harness' `report` feature): hopscope report run\n")
        );
    }
}

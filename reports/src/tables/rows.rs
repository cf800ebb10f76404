//! The rows of each table. A struct's fields are its table's columns, in
//! order, with the Parquet types `parquet_derive` gives them (`String` →
//! UTF8 BYTE_ARRAY, `f64` → DOUBLE, `i64` → INT64, `bool` → BOOLEAN,
//! `Option<_>` → the same, OPTIONAL). `docs/parquet.md` documents each
//! column; a change here is a change of the schema and bumps
//! [`super::SCHEMA`].
//!
//! Every table carries `run_id` (`<hostname>@<created_unix_ms>`), so tables
//! from many hosts and commits concatenate and join without a key clash.

use parquet_derive::ParquetRecordWriter;

/// `runs.parquet`: one row per run: where and how it was made.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct RunRow {
    pub(crate) run_id: String,
    pub(crate) schema: String,
    pub(crate) created_unix_ms: i64,
    pub(crate) hostname: String,
    pub(crate) cpu_model: String,
    pub(crate) cores: i64,
    pub(crate) kernel: String,
    pub(crate) target: String,
    pub(crate) commit: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) clock_source: String,
    pub(crate) ns_per_tick: f64,
    pub(crate) invariant_tsc: bool,
    pub(crate) subject_lane: Option<String>,
    pub(crate) floor_lane: Option<String>,
    pub(crate) baseline_lane: Option<String>,
    pub(crate) marks_dropped: i64,
    pub(crate) partial: Option<String>,
    pub(crate) warnings: i64,
    pub(crate) source: String,
}

/// `lanes.parquet`: one row per lane of a run: µs per operation.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct LaneRow {
    pub(crate) run_id: String,
    pub(crate) lane: String,
    pub(crate) role: Option<String>,
    pub(crate) probed: bool,
    pub(crate) ops: i64,
    pub(crate) blocks: i64,
    pub(crate) median_us: Option<f64>,
    pub(crate) ci_lo_us: Option<f64>,
    pub(crate) ci_hi_us: Option<f64>,
    pub(crate) mad_us: Option<f64>,
    pub(crate) p10_us: Option<f64>,
    pub(crate) p90_us: Option<f64>,
    pub(crate) p99_us: Option<f64>,
    pub(crate) min_us: Option<f64>,
    pub(crate) max_us: Option<f64>,
    pub(crate) outliers: Option<i64>,
    pub(crate) ctx_switches_per_op: Option<f64>,
}

/// `figures.parquet`: the lane arithmetic (`hop`, `boundary`, `library`)
/// and the observer effect, each a paired difference with its CI.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct FigureRow {
    pub(crate) run_id: String,
    pub(crate) figure: String,
    pub(crate) median_us: f64,
    pub(crate) ci_lo_us: f64,
    pub(crate) ci_hi_us: f64,
    pub(crate) rounds: Option<i64>,
}

/// `blocks.parquet`: one row per measured block: the sample every lane
/// figure is a statistic of.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct BlockRow {
    pub(crate) run_id: String,
    pub(crate) lane: String,
    pub(crate) pass: i64,
    pub(crate) sample: i64,
    pub(crate) us_per_op: f64,
}

/// `slices.parquet`: one row per slice of the in-situ lane and of the
/// probed floor.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct SliceRow {
    pub(crate) run_id: String,
    pub(crate) lane: String,
    pub(crate) floor: bool,
    pub(crate) position: i64,
    pub(crate) slice: String,
    pub(crate) side: String,
    pub(crate) owner: String,
    pub(crate) median_us: f64,
    pub(crate) ci_lo_us: f64,
    pub(crate) ci_hi_us: f64,
    pub(crate) mad_us: f64,
    pub(crate) p10_us: f64,
    pub(crate) p90_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) outliers: i64,
    pub(crate) share: f64,
    pub(crate) machinery_us: Option<f64>,
}

/// `marks.parquet` (with `--marks`): every probe mark of the run's trace.
#[derive(Debug, Clone, PartialEq, ParquetRecordWriter)]
pub(crate) struct MarkRow {
    pub(crate) run_id: String,
    pub(crate) lane: String,
    pub(crate) pass: i64,
    pub(crate) sample: i64,
    pub(crate) thread: String,
    pub(crate) op: i64,
    pub(crate) hop: String,
    pub(crate) cpu: Option<i64>,
    pub(crate) t_ns: i64,
    /// The shared interval (a batch's transaction) that serves this row's
    /// operation, by its id, when the block links one.
    pub(crate) serves: Option<i64>,
}

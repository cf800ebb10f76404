//! `export --format parquet`: two real runs written as tables, read back
//! with the parquet crate's own reader, and held field by field to each
//! run's `result.json` and, for marks, to its trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;
use hopscope_probe::{Mark, Trace};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::{Value, json};

mod common;
use common::{hopscope_indexed, small_decompose_args, temp_dir};

fn quick_run(root: &Path, name: &str) -> (PathBuf, Decomposition) {
    let dir = root.join(name);
    let out = hopscope_indexed(root, &small_decompose_args(&dir, &[]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("result.json")).expect("result.json");
    (dir, Decomposition::from_json(&text).expect("a decomposition"))
}

/// A Parquet file's rows as JSON objects (column name → value), through
/// the crate's record reader, plus the file's key-value metadata.
fn read_table(path: &Path) -> (Vec<BTreeMap<String, Value>>, BTreeMap<String, String>) {
    let reader = SerializedFileReader::new(std::fs::File::open(path).expect("table file")).expect("a Parquet file");
    let metadata = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| kv.iter().map(|k| (k.key.clone(), k.value.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    let rows = reader
        .get_row_iter(None)
        .expect("rows")
        .map(|row| {
            row.expect("a row")
                .get_column_iter()
                .map(|(name, field)| {
                    let value = match field {
                        Field::Null => Value::Null,
                        Field::Bool(b) => json!(b),
                        Field::Long(n) => json!(n),
                        Field::Double(x) => json!(x),
                        Field::Str(s) => json!(s),
                        other => panic!("column {name}: unexpected type {other:?}"),
                    };
                    (name.clone(), value)
                })
                .collect()
        })
        .collect();
    (rows, metadata)
}

fn f(row: &BTreeMap<String, Value>, column: &str) -> Option<f64> {
    row.get(column).unwrap_or_else(|| panic!("no column {column}")).as_f64()
}

fn s<'a>(row: &'a BTreeMap<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or_else(|| panic!("column {column} is not text: {row:?}"))
}

fn of_run<'a>(rows: &'a [BTreeMap<String, Value>], id: &str) -> Vec<&'a BTreeMap<String, Value>> {
    rows.iter().filter(|r| s(r, "run_id") == id).collect()
}

#[test]
fn tables_round_trip_to_each_runs_result_and_trace() {
    let root = temp_dir("round-trip");
    let runs = [quick_run(&root, "a"), quick_run(&root, "b")];
    let out = root.join("tables");
    // The first run by its directory, the second through the index.
    let written = hopscope_indexed(
        &root,
        &[
            "export",
            "--format",
            "parquet",
            "--marks",
            "-o",
            out.to_str().expect("utf-8"),
            runs[0].0.to_str().expect("utf-8"),
            "latest",
        ],
    );
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    let said = String::from_utf8_lossy(&written.stderr);
    for table in ["runs", "lanes", "figures", "blocks", "slices", "marks"] {
        assert!(said.contains(&format!("{table}.parquet")), "{table} is said: {said}");
    }

    let table = |name: &str| {
        let (rows, metadata) = read_table(&out.join(format!("{name}.parquet")));
        assert_eq!(metadata.get("hopscope.schema").map(String::as_str), Some("hopscope.tables/1"));
        assert_eq!(metadata.get("hopscope.table").map(String::as_str), Some(name));
        rows
    };
    let (run_rows, lanes, figures, blocks, slices, marks) =
        (table("runs"), table("lanes"), table("figures"), table("blocks"), table("slices"), table("marks"));
    assert_eq!(run_rows.len(), 2);

    for (dir, d) in &runs {
        let id = format!("{}@{}", d.host.hostname, d.run.created_unix_ms);
        // runs
        let run = of_run(&run_rows, &id);
        assert_eq!(run.len(), 1, "one row for {id}");
        assert_eq!(s(run[0], "hostname"), d.host.hostname);
        assert_eq!(run[0]["created_unix_ms"], json!(d.run.created_unix_ms));
        assert_eq!(run[0]["commit"].as_str(), d.run.meta.get("commit").map(String::as_str));
        assert_eq!(run[0]["warnings"], json!(d.warnings.len()));
        assert_eq!(s(run[0], "source"), dir.canonicalize().expect("dir").display().to_string());
        let derived = d.derived.as_ref().expect("a quick run has the lane arithmetic");
        assert_eq!(run[0]["subject_lane"].as_str(), derived.lanes.get("subject").map(String::as_str));

        // lanes
        let lane_rows = of_run(&lanes, &id);
        assert_eq!(lane_rows.len(), d.lanes.len());
        for (name, lane) in &d.lanes {
            let row = lane_rows.iter().find(|r| s(r, "lane") == name).unwrap_or_else(|| panic!("lane {name}"));
            let us = lane.us_per_op.as_ref().expect("every quick lane ran");
            assert_eq!(row["ops"], json!(lane.ops));
            assert_eq!(row["blocks"], json!(lane.blocks));
            assert_eq!(row["probed"], json!(lane.probed));
            assert_eq!(f(row, "median_us"), Some(us.median), "{name}");
            assert_eq!((f(row, "ci_lo_us"), f(row, "ci_hi_us")), (Some(us.ci95[0]), Some(us.ci95[1])));
            assert_eq!(
                (f(row, "p10_us"), f(row, "p99_us"), f(row, "max_us")),
                (Some(us.p10), Some(us.p99), Some(us.max))
            );
            let role = derived.lanes.iter().find(|(_, l)| *l == name).map(|(r, _)| r.as_str());
            assert_eq!(row["role"].as_str(), role, "{name}");
        }

        // blocks: every block, in run order
        let block_rows = of_run(&blocks, &id);
        let expected: Vec<(String, u32, u32, f64)> = d
            .lanes_in_order()
            .into_iter()
            .flat_map(|(name, lane)| lane.blocks_us.iter().map(|b| (name.to_owned(), b.pass, b.sample, b.us_per_op)))
            .collect();
        let got: Vec<(String, u32, u32, f64)> = block_rows
            .iter()
            .map(|r| {
                let int = |c: &str| u32::try_from(r[c].as_i64().expect("int")).expect("u32");
                (s(r, "lane").to_owned(), int("pass"), int("sample"), f(r, "us_per_op").expect("figure"))
            })
            .collect();
        assert_eq!(got, expected);

        // figures
        let figure_rows = of_run(&figures, &id);
        let differences = [
            ("hop", Some(&derived.hop_us)),
            ("boundary", derived.boundary_us.as_ref()),
            ("library", derived.library_us.as_ref()),
        ];
        for (name, diff) in differences {
            let diff = diff.unwrap_or_else(|| panic!("a quick run has {name}"));
            let row = figure_rows.iter().find(|r| s(r, "figure") == name).unwrap_or_else(|| panic!("figure {name}"));
            assert_eq!(f(row, "median_us"), Some(diff.median));
            assert_eq!((f(row, "ci_lo_us"), f(row, "ci_hi_us")), (Some(diff.ci95[0]), Some(diff.ci95[1])));
            assert_eq!(row["rounds"], json!(diff.rounds));
        }
        let effect = d.observer_effect.as_ref().expect("observer effect");
        let row = figure_rows.iter().find(|r| s(r, "figure") == "observer_effect").expect("observer effect row");
        assert_eq!(f(row, "median_us"), Some(effect.delta_us));

        // slices: the sliced lane's, then the probed floor's, in hop order
        let slice_rows = of_run(&slices, &id);
        assert!(!d.slices.is_empty() && !d.floor_slices.is_empty());
        let expected: Vec<(String, bool, String, f64, f64, f64)> = d
            .slices
            .iter()
            .map(|x| (d.insitu_lane.clone().expect("sliced lane"), false, x))
            .chain(d.floor_slices.iter().map(|x| (d.floor_slices_lane.clone().expect("floor lane"), true, x)))
            .map(|(lane, floor, x)| (lane, floor, x.name.clone(), x.median_us, x.ci95[0], x.ci95[1]))
            .collect();
        let got: Vec<(String, bool, String, f64, f64, f64)> = slice_rows
            .iter()
            .map(|r| {
                let x = |c: &str| f(r, c).expect("figure");
                let floor = r["floor"].as_bool().expect("bool");
                (s(r, "lane").to_owned(), floor, s(r, "slice").to_owned(), x("median_us"), x("ci_lo_us"), x("ci_hi_us"))
            })
            .collect();
        assert_eq!(got, expected);

        // marks: every mark of the trace, in trace order, on the run's
        // own time axis
        let trace = Trace::read(&dir.join("trace.hop")).expect("trace");
        let origin = trace.blocks.first().expect("blocks").start.0;
        let mut expected = Vec::new();
        for block in &trace.blocks {
            // Links are no rows: each row names the interval serving its op.
            let served: std::collections::HashMap<u64, u64> =
                block.streams.iter().flat_map(|s| &s.marks).filter_map(|m| Some((m.op.0, m.link()?.0))).collect();
            for stream in &block.streams {
                for mark in stream.marks.iter().filter(|m| !m.is_link()) {
                    let ns = ((i128::from(mark.ticks.0) - i128::from(origin)) as f64 * trace.header.clock.ns_per_tick)
                        .round();
                    expected.push(json!({
                        "lane": trace.header.lanes[usize::from(block.lane)],
                        "pass": block.pass, "sample": block.sample,
                        "thread": trace.header.threads[usize::from(stream.thread)],
                        "op": mark.op.0,
                        "hop": trace.header.hops.get(mark.hop).expect("hop").name,
                        "cpu": (mark.cpu != Mark::UNKNOWN_CPU).then_some(mark.cpu),
                        "t_ns": ns as i64,
                        "serves": served.get(&mark.op.0),
                    }));
                }
            }
        }
        let got: Vec<Value> = of_run(&marks, &id)
            .into_iter()
            .map(|r| {
                let mut r = r.clone();
                r.remove("run_id");
                json!(r)
            })
            .collect();
        assert_eq!(got.len(), expected.len(), "every mark");
        assert!(got == expected, "marks differ, first: {:?}", got.iter().zip(&expected).find(|(g, e)| g != e));
    }
}

#[test]
fn a_bad_export_is_refused_before_anything_is_written() {
    let root = temp_dir("refused");
    let (dir, _) = quick_run(&root, "a");
    let out = root.join("tables");
    let path = |p: &Path| p.to_str().expect("utf-8").to_owned();

    // The same run twice.
    let twice = hopscope_indexed(&root, &["export", "--format", "parquet", "-o", &path(&out), &path(&dir), "latest"]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("give each run once"));
    // Marks from a run that kept no trace.
    std::fs::remove_file(dir.join("trace.hop")).expect("remove trace");
    let no_trace =
        hopscope_indexed(&root, &["export", "--format", "parquet", "--marks", "-o", &path(&out), &path(&dir)]);
    assert_eq!(no_trace.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&no_trace.stderr).contains("kept no trace"));
    assert!(!out.exists(), "nothing written before the check");
    // Flags that belong to the other kind of export: usage errors.
    for args in [
        vec!["export", "--format", "parquet", &path(&dir)],
        vec!["export", "--format", "parquet", "--ops", "5", "-o", &path(&root.join("x")), &path(&dir)],
        vec!["export", "--marks", &path(&dir)],
    ] {
        let usage = hopscope_indexed(&root, &args);
        assert_eq!(usage.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&usage.stderr));
    }
    assert!(!root.join("x").exists());
    // Without marks the traceless run still exports.
    let ok = hopscope_indexed(&root, &["export", "--format", "parquet", "-o", &path(&out), &path(&dir)]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(!out.join("marks.parquet").exists());
}

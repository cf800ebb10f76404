//! A decomposition of a lane that several callers drive at once, through
//! the command line: the run records how many, and the result says what
//! its slices then are (each write's latency, the wait behind the other
//! callers included) instead of comparing them with a µs per write they
//! need not add up to.

mod common;
use common::{finished, hopscope_indexed, small_decompose_args, temp_dir};
use hopscope_testkit::output_text as text;

#[test]
fn several_callers_are_recorded_and_their_slices_are_not_read_as_one_callers() {
    let root = temp_dir("callers");
    let dir = root.join("run");
    let out = hopscope_indexed(&root, &small_decompose_args(&dir, &["--shape", "concurrent-insert:3"]));
    assert!(finished(&out), "{}", text(&out));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    let sliced = result["insitu_lane"].as_str().expect("a sliced lane").to_owned();
    assert_eq!(result["run"]["meta"][format!("lane.{sliced}.callers")], "3", "{}", result["run"]["meta"]);
    let warned = result["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .any(|w| w["warning"] == "several_callers" && w["lane"] == sliced.as_str() && w["callers"] == 3);
    assert!(warned, "{}", result["warnings"]);
    // Neither the time between marks nor the cross-check compares the two.
    assert!(result["coverage"].is_null() && result["crosscheck"].is_null(), "{result}");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains(&format!("lane `{sliced}` ran 3 callers at once")), "{receipt}");
    // `--ops 20` is a size asked for: kept, and warned of (under 7 each).
    let few = |w: &serde_json::Value| w["warning"] == "few_ops_per_caller" && w["lane"] == sliced.as_str();
    assert!(result["warnings"].as_array().expect("warnings").iter().any(few), "{}", result["warnings"]);
    assert_eq!(result["run"]["meta"][format!("lane.{sliced}.ops_per_block")], "20");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn blocks_of_several_callers_give_each_its_share_unless_a_size_is_asked_for() {
    let root = temp_dir("callers-sized");
    let dir = root.join("run");
    let args = ["decompose", "--quick", "--samples", "2", "--passes", "1", "--warmup", "1"];
    let mut args = args.to_vec();
    args.extend(["--shape", "concurrent-insert:3", "--out", dir.to_str().expect("utf-8")]);
    let out = hopscope_indexed(&root, &args);
    assert!(finished(&out), "{}", text(&out));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    let sliced = result["insitu_lane"].as_str().expect("a sliced lane").to_owned();
    // `--quick`'s 100 operations a block, a hundred for each of three.
    assert_eq!(result["run"]["meta"][format!("lane.{sliced}.ops_per_block")], "300");
    assert_eq!(result["lanes"][sliced.as_str()]["ops"], 600, "two blocks of 300");
    let few = |w: &serde_json::Value| w["warning"] == "few_ops_per_caller";
    assert!(!result["warnings"].as_array().expect("warnings").iter().any(few), "{}", result["warnings"]);
    let _ = std::fs::remove_dir_all(&root);
}

//! Each trace of the seed corpus (`tests/corpus/`: real runs of every kind,
//! an old format's included) decodes to the `result.json` it gave when its
//! result was last accepted (`tests/corpus-results/`), byte for byte: a
//! refactor of the analyzer or of the trace's vocabulary changes no figure
//! and no word of any of them.
//!
//! A change meant to alter results rewrites them with
//! `HOPSCOPE_BLESS=1 cargo test -p hopscope-analyze --test corpus_results`;
//! the diff of `tests/corpus-results/` then shows what it changed.

use std::path::Path;

const CORPUS: [&str; 6] = ["legacy", "decompose", "traced-writer", "concurrent-counters", "ab", "merge"];

#[test]
fn every_corpus_trace_gives_its_accepted_result_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let bless = std::env::var_os("HOPSCOPE_BLESS").is_some();
    let mut changed = Vec::new();
    for name in CORPUS {
        let d = hopscope_analyze::decompose_file(&root.join("corpus").join(format!("{name}.hop")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // As every run's result.json is written (reports' writer).
        let json = serde_json::to_string_pretty(&d).expect("json") + "\n";
        let accepted = root.join("corpus-results").join(format!("{name}.json"));
        if bless {
            std::fs::write(&accepted, &json).expect("bless");
            continue;
        }
        let before = std::fs::read_to_string(&accepted).unwrap_or_else(|e| panic!("{}: {e}", accepted.display()));
        if before != json {
            let line = before.lines().zip(json.lines()).position(|(a, b)| a != b).unwrap_or(0);
            let at = |text: &str| text.lines().nth(line).unwrap_or("(ends)").to_owned();
            changed.push(format!("{name}: line {}: was `{}`, now `{}`", line + 1, at(&before), at(&json)));
        }
    }
    assert!(
        changed.is_empty(),
        "results changed (HOPSCOPE_BLESS=1 to accept them, then read the diff):\n{}",
        changed.join("\n")
    );
}

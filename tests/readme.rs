//! The README's programs are the files that compile: every block marked
//! `<!-- readme-program: PATH -->` (or `<!-- readme-program: PATH, N lines
//! -->`) equals PATH (less its `#[rustfmt::skip]` line), and its code stays
//! within the lines the README promises (15 unless the marker says N); every
//! block marked `<!-- readme-excerpt: PATH#NAME -->` equals the lines of
//! PATH between `// readme-excerpt: NAME` and `// readme-excerpt: end`,
//! their common indentation taken off.

use std::path::Path;

const MARKER: &str = "<!-- readme-program: ";

#[test]
fn the_readme_program_is_the_compiled_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut checked = 0;
    for (at, _) in readme.match_indices(MARKER) {
        let rest = &readme[at + MARKER.len()..];
        let marker = rest.split(" -->").next().expect("marker ends");
        let (path, limit) = match marker.split_once(", ") {
            Some((path, lines)) => {
                (path, lines.trim_end_matches(" lines").parse::<usize>().expect("`N lines` after the path"))
            }
            None => (marker, 15),
        };
        let block = rest.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block follows");
        let file = std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let file = file.replace("#[rustfmt::skip]\n", "");
        assert_eq!(block, file, "the README's block and {path} differ");
        let code = block.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(code <= limit, "{path}: {code} lines of code, the README promises at most {limit}");
        checked += 1;
    }
    assert!(checked >= 1, "no README program found");
}

const EXCERPT: &str = "<!-- readme-excerpt: ";

/// The lines of `file` between `// readme-excerpt: name` and the next
/// `// readme-excerpt: end`, their common indentation taken off.
fn excerpt(file: &str, name: &str) -> Option<String> {
    let start = format!("// readme-excerpt: {name}");
    let mut lines = file.lines().skip_while(|l| l.trim() != start).skip(1);
    let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "// readme-excerpt: end").collect();
    let indent = body.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min()?;
    Some(body.iter().map(|l| l.get(indent..).unwrap_or("").to_owned() + "\n").collect())
}

#[test]
fn the_readme_excerpts_are_the_compiled_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut checked = 0;
    for (at, _) in readme.match_indices(EXCERPT) {
        let rest = &readme[at + EXCERPT.len()..];
        let marker = rest.split(" -->").next().expect("marker ends");
        let (path, name) = marker.split_once('#').expect("PATH#NAME");
        let block = rest.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block follows");
        let file = std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let code = excerpt(&file, name).unwrap_or_else(|| panic!("{path} has no excerpt `{name}`"));
        assert_eq!(block, code, "the README's block and {path}#{name} differ");
        checked += 1;
    }
    assert!(checked >= 3, "the three roads of a writer that batches are excerpted: {checked}");
}

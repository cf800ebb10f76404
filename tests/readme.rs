//! The README and the guide (`docs/guide/*.md`) show only what the code
//! does. Every page is read the same way:
//!
//! - Every ```` ```rust ```` block is compiled code. A block marked
//!   `<!-- readme-program: PATH -->` (or `<!-- readme-program: PATH, N lines
//!   -->`) equals PATH (less its `#[rustfmt::skip]` line), and its code stays
//!   within the lines the page promises (15 unless the marker says N); a
//!   block marked `<!-- readme-excerpt: PATH#NAME -->` equals the lines of
//!   PATH between `// readme-excerpt: NAME` and `// readme-excerpt: end`,
//!   their common indentation taken off. A rust block with neither marker
//!   fails, named by page and line.
//! - Every command in a shell block that runs the binary (`cargo run
//!   --release -- SUB ...`, `hopscope SUB ...`, `just RECIPE ...`) names a
//!   subcommand the built binary has and flags its `SUB --help` lists; a
//!   harness program (`cargo run -p PKG ...`) takes `decompose`'s flags or
//!   its own; `cargo build|test|bench` name workspace members, their
//!   features, and test, bench, bin and example targets that exist.
//! - The README stays short (at most 250 lines), the guide's contents page
//!   links every chapter, and every relative link of these pages reaches a
//!   file (and, into a Markdown page, a heading) that exists.
//!
//! Only fenced blocks are checked as commands: a command in running prose
//! often carries placeholders the reader fills in (`--lane NAME`), and the
//! fenced ones are those a reader copies.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's promise to a newcomer: it reads in five minutes.
const README_LINES: usize = 250;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A page the test reads: its path from the repository root and its text.
struct Page {
    path: PathBuf,
    text: String,
}

/// README.md and every page of the guide, in a fixed order.
fn pages() -> Vec<Page> {
    let guide = root().join("docs/guide");
    let mut paths = vec![PathBuf::from("README.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&guide)
        .expect("docs/guide")
        .map(|entry| entry.expect("a guide entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root()).expect("under the root").to_owned())
        .collect();
    chapters.sort();
    paths.extend(chapters);
    paths
        .into_iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(root().join(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            Page { path, text }
        })
        .collect()
}

/// A fenced block: its info string, the line its fence opens on
/// (1-based), its body (the fence's indentation taken off each line, so a
/// block inside a list item reads as written), and the marker comment on
/// the last non-blank line before the fence, if any.
struct Block {
    lang: String,
    line: usize,
    body: String,
    marker: Option<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            at += 1;
            continue;
        };
        let indent = line.len() - trimmed.len();
        let marker = lines[..at]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim())
            .filter(|l| l.starts_with("<!-- readme-"))
            .map(str::to_owned);
        let mut body = String::new();
        let mut end = at + 1;
        while end < lines.len() && lines[end].trim() != "```" {
            let l = lines[end];
            let cut = l.len() - l.trim_start().len();
            body.push_str(&l[cut.min(indent)..]);
            body.push('\n');
            end += 1;
        }
        found.push(Block { lang: info.trim().to_owned(), line: at + 1, body, marker });
        at = end + 1;
    }
    found
}

/// The lines of `file` between `// readme-excerpt: name` and the next
/// `// readme-excerpt: end`, their common indentation taken off.
fn excerpt(file: &str, name: &str) -> Option<String> {
    let start = format!("// readme-excerpt: {name}");
    let mut lines = file.lines().skip_while(|l| l.trim() != start).skip(1);
    let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "// readme-excerpt: end").collect();
    let indent = body.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min()?;
    Some(body.iter().map(|l| l.get(indent..).unwrap_or("").to_owned() + "\n").collect())
}

/// Whether `block` is the compiled code its marker names; `Err` says why
/// not.
fn check_rust_block(block: &Block) -> Result<(), String> {
    let Some(marker) = &block.marker else {
        return Err("a rust block without a `<!-- readme-program: ... -->` or `<!-- readme-excerpt: ... -->` marker: \
                    every rust block is compiled code"
            .to_owned());
    };
    let inner = marker.trim_start_matches("<!-- ").trim_end_matches(" -->");
    if let Some(spec) = inner.strip_prefix("readme-program: ") {
        let (path, limit) = match spec.split_once(", ") {
            Some((path, lines)) => {
                let n = lines.trim_end_matches(" lines").parse::<usize>();
                (path, n.map_err(|_| format!("`{spec}`: `N lines` after the path"))?)
            }
            None => (spec, 15),
        };
        let file = std::fs::read_to_string(root().join(path)).map_err(|e| format!("{path}: {e}"))?;
        let file = file.replace("#[rustfmt::skip]\n", "");
        if block.body != file {
            return Err(format!("the block and {path} differ"));
        }
        let code = block.body.lines().filter(|l| !l.trim().is_empty()).count();
        if code > limit {
            return Err(format!("{path}: {code} lines of code, the page promises at most {limit}"));
        }
        Ok(())
    } else if let Some(spec) = inner.strip_prefix("readme-excerpt: ") {
        let (path, name) = spec.split_once('#').ok_or_else(|| format!("`{spec}`: PATH#NAME"))?;
        let file = std::fs::read_to_string(root().join(path)).map_err(|e| format!("{path}: {e}"))?;
        let code = excerpt(&file, name).ok_or_else(|| format!("{path} has no excerpt `{name}`"))?;
        if block.body != code {
            return Err(format!("the block and {path}#{name} differ"));
        }
        Ok(())
    } else {
        Err(format!("`{marker}`: neither readme-program nor readme-excerpt"))
    }
}

#[test]
fn every_rust_block_is_compiled_code() {
    let mut failures = Vec::new();
    let (mut programs, mut excerpts) = (0, 0);
    for page in pages() {
        let all = blocks(&page.text);
        for block in all.iter().filter(|b| b.lang == "rust") {
            match check_rust_block(block) {
                Ok(()) if block.marker.as_deref().is_some_and(|m| m.contains("readme-program")) => programs += 1,
                Ok(()) => excerpts += 1,
                Err(why) => failures.push(format!("{}:{}: {why}", page.path.display(), block.line)),
            }
        }
        // A marker that no rust block follows checks nothing: say so.
        for (at, line) in page.text.lines().enumerate() {
            if line.trim().starts_with("<!-- readme-")
                && !all.iter().any(|b| b.lang == "rust" && b.marker.as_deref() == Some(line.trim()) && b.line > at)
            {
                failures.push(format!("{}:{}: a marker with no rust block after it", page.path.display(), at + 1));
            }
        }
    }
    assert!(failures.is_empty(), "rust blocks that are not the compiled code:\n{}", failures.join("\n"));
    println!("{programs} programs and {excerpts} excerpts checked");
    // The two programs, the batching roads' seven excerpts and the capture.
    assert!(programs >= 2 && excerpts >= 8, "{programs} programs, {excerpts} excerpts: fewer than the pages hold");
}

// -- Commands --------------------------------------------------------------

/// A word of a command line, and whether any of it was quoted (a value,
/// never a flag).
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    quoted: bool,
}

/// A command line split into commands of words as `sh` would: quotes group
/// and are taken off (a quoted word is marked, so a command inside one,
/// such as `--build "cargo build ..."`, is checked too); unquoted `&&`,
/// `||`, `;` and `|` end a command; an unquoted `#` starting a word starts
/// a comment. No expansion: `$VAR` stays as written.
fn split_commands(line: &str) -> Vec<Vec<Word>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<Word> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                word.get_or_insert(Word { text: String::new(), quoted: true }).text.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                word.get_or_insert(Word { text: String::new(), quoted: true }).quoted = true;
            }
            '#' if word.is_none() => break,
            ' ' | '\t' => commands.last_mut().expect("one").extend(word.take()),
            '&' | '|' | ';' => {
                commands.last_mut().expect("one").extend(word.take());
                if matches!(chars.peek(), Some('&' | '|')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            _ => word.get_or_insert(Word { text: String::new(), quoted: false }).text.push(c),
        }
    }
    commands.last_mut().expect("one").extend(word);
    commands.retain(|c| !c.is_empty());
    commands
}

/// The command lines of a shell block: `\` continuations joined; in a
/// `console` or `text` block only the lines a `$ ` prompt starts (the rest
/// is output).
fn command_lines(block: &Block) -> Vec<String> {
    let prompted = matches!(block.lang.as_str(), "console" | "text");
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in block.body.lines() {
        let line = if pending.is_empty() && prompted {
            match line.strip_prefix("$ ") {
                Some(rest) => rest,
                None => continue,
            }
        } else {
            line.strip_prefix("$ ").unwrap_or(line)
        };
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending));
            }
        }
    }
    lines
}

/// A workspace member: its package name, directory and manifest.
struct Member {
    name: String,
    dir: PathBuf,
    manifest: String,
}

impl Member {
    /// The keys of the manifest's `[features]` table.
    fn features(&self) -> BTreeSet<String> {
        self.manifest
            .lines()
            .skip_while(|l| l.trim() != "[features]")
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim()))
            .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .map(str::to_owned)
            .collect()
    }

    /// Whether the package has a target of `kind` (`bin`, `example`,
    /// `test`, `bench`) called `name`: Cargo's file layout, or a target the
    /// manifest declares by name.
    fn has_target(&self, kind: &str, name: &str) -> bool {
        let dir = match kind {
            "bin" => "src/bin",
            "example" => "examples",
            "test" => "tests",
            _ => "benches",
        };
        let declared = self.manifest.split(&format!("[[{kind}]]")).skip(1).any(|table| {
            table.lines().take_while(|l| !l.starts_with("[[")).any(|l| l.trim() == format!("name = \"{name}\""))
        });
        self.dir.join(dir).join(format!("{name}.rs")).is_file()
            || self.dir.join(dir).join(name).join("main.rs").is_file()
            || (kind == "bin" && self.name == name && self.dir.join("src/main.rs").is_file())
            || declared
    }

    /// Whether the package's own sources name `flag` (a program's flags of
    /// its own, such as batch-ingest's `--road`).
    fn source_names(&self, flag: &str) -> bool {
        fn walk(dir: &Path, needle: &str) -> bool {
            let Ok(entries) = std::fs::read_dir(dir) else { return false };
            entries.flatten().any(|e| {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, needle)
                } else {
                    p.extension().is_some_and(|x| x == "rs")
                        && std::fs::read_to_string(&p).is_ok_and(|s| s.contains(needle))
                }
            })
        }
        // A program's flags are named in its sources: its library and
        // binaries, or the example a command runs.
        let needle = format!("\"{flag}\"");
        ["src", "examples"].iter().any(|dir| walk(&self.dir.join(dir), &needle))
    }
}

/// What a command is checked against: the workspace's members, the root
/// manifest's profiles, the justfile, and the binary's help, asked once
/// per subcommand.
struct Checker {
    members: HashMap<String, Member>,
    profiles: BTreeSet<String>,
    justfile: String,
    helps: HashMap<String, Option<BTreeSet<String>>>,
    checked: usize,
}

impl Checker {
    fn new() -> Checker {
        let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
        let listed = manifest.lines().find(|l| l.starts_with("members = [")).expect("the workspace's members");
        let mut dirs = vec![String::from(".")];
        dirs.extend(listed.split('"').skip(1).step_by(2).map(str::to_owned));
        let members = dirs
            .into_iter()
            .map(|dir| {
                let dir = root().join(dir);
                let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a member's manifest");
                let name = manifest
                    .lines()
                    .skip_while(|l| l.trim() != "[package]")
                    .find_map(|l| l.strip_prefix("name = \""))
                    .expect("a package name")
                    .trim_end_matches('"')
                    .to_owned();
                (name.clone(), Member { name, dir, manifest })
            })
            .collect();
        let mut profiles: BTreeSet<String> = ["dev", "release", "test", "bench"].map(String::from).into();
        profiles.extend(
            manifest
                .lines()
                .filter_map(|l| l.strip_prefix("[profile.")?.strip_suffix(']'))
                .filter(|p| !p.contains('.'))
                .map(str::to_owned),
        );
        let justfile = std::fs::read_to_string(root().join("justfile")).expect("justfile");
        Checker { members, profiles, justfile, helps: HashMap::new(), checked: 0 }
    }

    /// The flags `hopscope SUB --help` lists (its option lines, not its
    /// prose), or `None` when the binary has no such subcommand. Asked once
    /// per subcommand: a spawn is cheap, a hundred of them are not.
    fn help(&mut self, sub: &str) -> Option<&BTreeSet<String>> {
        self.helps
            .entry(sub.to_owned())
            .or_insert_with(|| {
                let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
                    .args([sub, "--help"])
                    .output()
                    .expect("the hopscope binary runs");
                if !out.status.success() {
                    return None;
                }
                let text = String::from_utf8_lossy(&out.stdout);
                let flags = text
                    .lines()
                    .map(str::trim_start)
                    .filter(|l| l.starts_with('-'))
                    .flat_map(|l| {
                        l.split_whitespace()
                            .map(|w| w.trim_end_matches(','))
                            .take_while(|w| w.starts_with('-'))
                            .map(str::to_owned)
                    })
                    .filter(|w| w.len() > 1 && w != "--")
                    .collect();
                Some(flags)
            })
            .as_ref()
    }

    /// The flags a command names: its words that start with `-` (a
    /// placeholder's brackets, `[--log]`, taken off; `--flag=value` read as
    /// `--flag`). Quoted words are values.
    fn flags(words: &[Word]) -> Vec<String> {
        words
            .iter()
            .filter(|w| !w.quoted)
            .map(|w| w.text.trim_start_matches('[').trim_end_matches(']'))
            .filter(|w| w.starts_with('-') && w.len() > 1 && *w != "--")
            .map(|w| w.split('=').next().unwrap_or(w).to_owned())
            .collect()
    }

    /// Check one command; `Ok(false)` when it is not one this test knows
    /// (`cp`, `pip`, `cargo install`), `Err` with what is wrong.
    fn check(&mut self, words: &[Word]) -> Result<bool, String> {
        // Leading `NAME=value` words set the environment.
        let start = words.iter().take_while(|w| !w.quoted && w.text.contains('=') && !w.text.starts_with('-')).count();
        let words = &words[start..];
        // A command inside a quoted value (`--build "cargo build ..."`).
        for w in words.iter().filter(|w| w.quoted) {
            for inner in split_commands(&w.text) {
                self.check(&inner)?;
            }
        }
        let Some(first) = words.first() else { return Ok(false) };
        let rest = &words[1..];
        let known = match first.text.as_str() {
            "hopscope" => self.check_hopscope(rest).map(|()| true),
            "cargo" => self.check_cargo(rest),
            "just" => self.check_just(rest).map(|()| true),
            _ => Ok(false),
        }?;
        if known {
            self.checked += 1;
        }
        Ok(known)
    }

    fn check_hopscope(&mut self, words: &[Word]) -> Result<(), String> {
        let sub = words.first().ok_or("`hopscope` with no subcommand")?.text.clone();
        let flags = Self::flags(&words[1..]);
        let help = self.help(&sub).ok_or_else(|| format!("the binary has no subcommand `{sub}`"))?;
        let missing: Vec<&String> = flags.iter().filter(|f| !help.contains(*f)).collect();
        if missing.is_empty() { Ok(()) } else { Err(format!("`hopscope {sub} --help` lists no {missing:?}")) }
    }

    fn check_cargo(&mut self, words: &[Word]) -> Result<bool, String> {
        let Some(verb) = words.first().map(|w| w.text.as_str()) else { return Ok(false) };
        if !matches!(verb, "run" | "build" | "test" | "bench") {
            return Ok(false);
        }
        let split = words.iter().position(|w| w.text == "--" && !w.quoted).unwrap_or(words.len());
        let (cargo, program) = (&words[1..split], words.get(split + 1..).unwrap_or(&[]));
        let mut package = String::from("hopscope");
        let mut features = Vec::new();
        let mut targets = Vec::new();
        let mut manifest = None;
        let mut workspace = false;
        let mut at = 0;
        while at < cargo.len() {
            let flag = cargo[at].text.as_str();
            let takes_value = matches!(
                flag,
                "-p" | "--package"
                    | "--features"
                    | "-F"
                    | "--profile"
                    | "--bin"
                    | "--example"
                    | "--test"
                    | "--bench"
                    | "--manifest-path"
                    | "--target-dir"
            );
            let value = match cargo.get(at + 1) {
                Some(v) if takes_value => v.text.clone(),
                None if takes_value => return Err(format!("`{flag}` wants a value")),
                _ => String::new(),
            };
            match flag {
                "--workspace" => workspace = true,
                "--release" | "--locked" | "--all-targets" | "--no-run" | "-q" | "--quiet" => {}
                "-p" | "--package" => package = value,
                "--features" | "-F" => features.extend(value.split([',', ' ']).map(str::to_owned)),
                "--profile" if !self.profiles.contains(&value) => {
                    return Err(format!("no profile `{value}` in Cargo.toml"));
                }
                "--profile" => {}
                "--bin" | "--example" | "--test" | "--bench" => targets.push((flag[2..].to_owned(), value)),
                "--manifest-path" => manifest = Some(value),
                "--target-dir" => {}
                other => return Err(format!("`cargo {verb} {other}`: a flag this check does not know")),
            }
            at += if takes_value { 2 } else { 1 };
        }
        // A crate outside the workspace (checks/): its manifest must exist.
        if let Some(manifest) = manifest {
            return if root().join(&manifest).is_file() { Ok(true) } else { Err(format!("no manifest {manifest}")) };
        }
        // `--workspace --test NAME`: some member has the target.
        if workspace && package == "hopscope" {
            if let Some((kind, name)) =
                targets.iter().find(|(kind, name)| !self.members.values().any(|m| m.has_target(kind, name)))
            {
                return Err(format!("no workspace member has a {kind} target `{name}`"));
            }
            return Ok(true);
        }
        let member = self.members.get(&package).ok_or_else(|| format!("`-p {package}`: not a workspace member"))?;
        let known = member.features();
        if let Some(f) = features.iter().find(|f| !f.is_empty() && !known.contains(*f)) {
            return Err(format!("`{package}` has no feature `{f}` (it has {known:?})"));
        }
        if let Some((kind, name)) = targets.iter().find(|(kind, name)| !member.has_target(kind, name)) {
            return Err(format!("`{package}` has no {kind} target `{name}`"));
        }
        if verb != "run" {
            return Ok(true);
        }
        if package == "hopscope" {
            self.check_hopscope(program)?;
            return Ok(true);
        }
        // A program on the harness takes `decompose`'s flags, or flags of
        // its own that its sources name.
        let flags = Self::flags(program);
        let decompose = self.help("decompose").expect("decompose").clone();
        let member = &self.members[&package];
        if let Some(f) = flags.iter().find(|f| !decompose.contains(*f) && !member.source_names(f)) {
            return Err(format!(
                "`{package}` takes no `{f}`: neither `hopscope decompose --help` nor its sources name it"
            ));
        }
        Ok(true)
    }

    /// `just RECIPE ARGS`: the recipe's commands, its parameters filled in
    /// from ARGS (`*NAME` takes the rest), each checked as written.
    fn check_just(&mut self, words: &[Word]) -> Result<(), String> {
        let name = words.first().ok_or("`just` with no recipe")?.text.clone();
        let args = &words[1..];
        let justfile = self.justfile.clone();
        let lines: Vec<&str> = justfile.lines().collect();
        let at = lines
            .iter()
            .position(|l| {
                !l.starts_with([' ', '\t', '#']) && l.split([' ', ':']).next() == Some(name.as_str()) && l.contains(':')
            })
            .ok_or_else(|| format!("the justfile has no recipe `{name}`"))?;
        let params: Vec<&str> = lines[at].split(':').next().unwrap_or("").split_whitespace().skip(1).collect();
        let body: Vec<String> =
            lines[at + 1..].iter().take_while(|l| l.starts_with([' ', '\t'])).map(|l| l.trim().to_owned()).collect();
        for line in body {
            let mut line = line;
            for (i, param) in params.iter().enumerate() {
                let text = match param.strip_prefix('*') {
                    Some(_) => {
                        args.get(i..).unwrap_or(&[]).iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
                    }
                    None => {
                        args.get(i).map(|w| w.text.clone()).ok_or_else(|| format!("`just {name}` wants {param}"))?
                    }
                };
                line = line.replace(&format!("{{{{{}}}}}", param.trim_start_matches('*')), &text);
            }
            for command in split_commands(line.trim_start_matches('@')) {
                if !self.check(&command)? {
                    return Err(format!("`just {name}` runs `{line}`, which this check cannot follow"));
                }
            }
        }
        Ok(())
    }
}

#[test]
fn every_command_in_a_shell_block_is_one_the_code_takes() {
    let mut checker = Checker::new();
    let mut failures = Vec::new();
    for page in pages() {
        for block in blocks(&page.text) {
            if !matches!(block.lang.as_str(), "sh" | "bash" | "shell" | "console" | "text") {
                continue;
            }
            for line in command_lines(&block) {
                for command in split_commands(&line) {
                    if let Err(why) = checker.check(&command) {
                        failures.push(format!("{}:{}: `{}`: {why}", page.path.display(), block.line, line.trim()));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "commands the code does not take:\n{}", failures.join("\n"));
    println!("{} commands checked, {} subcommands' help read", checker.checked, checker.helps.len());
    assert!(checker.checked >= 40, "only {} commands found: the block parser lost some", checker.checked);
}

// -- Length, contents and links ---------------------------------------------

#[test]
fn the_readme_reads_in_five_minutes() {
    let lines = std::fs::read_to_string(root().join("README.md")).expect("README.md").lines().count();
    assert!(lines <= README_LINES, "README.md is {lines} lines; at most {README_LINES} (move detail to docs/guide/)");
}

/// The text outside fenced blocks and inline code: where links live.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    // Inline code: a run of N backticks to the next run of exactly N.
    let mut plain = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find('`') {
        plain.push_str(&rest[..at]);
        let run = rest[at..].chars().take_while(|&c| c == '`').count();
        let after = &rest[at + run..];
        let ticks = "`".repeat(run);
        let close = after.match_indices(&ticks).find(|(i, _)| !after[i + run..].starts_with('`'));
        match close {
            Some((i, _)) => rest = &after[i + run..],
            None => {
                plain.push_str(&rest[at..at + run]);
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    plain
}

/// The link targets of a page's prose: `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    prose
        .match_indices("](")
        .filter_map(|(at, _)| prose[at + 2..].split(')').next())
        .map(|t| t.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

/// A page's heading anchors as GitHub makes them: lower case, punctuation
/// dropped, spaces to hyphens, a repeated one numbered.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut fenced = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        found.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    found
}

#[test]
fn the_contents_page_lists_every_chapter_and_every_link_lands() {
    let pages = pages();
    let contents = pages.iter().find(|p| p.path == Path::new("docs/guide/README.md")).expect("docs/guide/README.md");
    let listed: BTreeSet<String> = links(&contents.text).into_iter().collect();
    let unlisted: Vec<String> = pages
        .iter()
        .filter(|p| p.path.starts_with("docs/guide") && p.path != contents.path)
        .map(|p| p.path.file_name().expect("a name").to_string_lossy().into_owned())
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(unlisted.is_empty(), "docs/guide/README.md does not list {unlisted:?}");

    let mut failures = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let dir = page.path.parent().expect("a page's directory");
        for target in links(&page.text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() { page.path.clone() } else { dir.join(path) };
            let full = root().join(&file);
            checked += 1;
            if !full.exists() {
                failures.push(format!("{}: `{target}`: no {}", page.path.display(), file.display()));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| full.extension().is_some_and(|e| e == "md")) {
                let text = std::fs::read_to_string(&full).expect("a linked page");
                if !anchors(&text).contains(anchor) {
                    failures.push(format!("{}: `{target}`: no heading `#{anchor}` there", page.path.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "links that land nowhere:\n{}", failures.join("\n"));
    assert!(checked >= 50, "only {checked} links found: the link reader lost some");
}

// -- The guide's hand-written trace, compiled and run -----------------------

/// The guide's "Without the harness" block is this code: a trace written
/// with `Capture` and marks of one's own, which `hopscope analyze` reads.
#[test]
fn a_capture_by_hand_is_a_trace_analyze_reads() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("hopscope-readme-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("app.hop");
    // readme-excerpt: capture
    use hopscope_probe::{Capture, Hop, OpId, hop, local};

    let mut capture = Capture::create(&path, "my-writer", &["caller", "writer"])?;
    let session = capture.session(); // clone into each thread
    local::attach(1 << 16); // once per thread, outside the hot path
    capture.begin_block();
    hop!(OpId(42), Hop::ENTER); // ~12 ns with `enabled`, nothing without
    // ... on the writer thread: hop!(OpId(42), Hop::WOKE); ... Hop::REPLIED ...
    hop!(OpId(42), Hop::DONE);
    // At the block's end every marking thread hands in its own marks
    // (buffers are thread-local and lock-free, so only their thread can drain
    // them); e.g. the writer thread when its loop is asked to:
    session.collect(capture.thread("caller").unwrap());
    capture.end_block(1)?; // operations in the block
    capture.finish()?;
    // readme-excerpt: end
    let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .args(["analyze".as_ref(), path.as_os_str(), "--out".as_ref(), dir.join("analysis").as_os_str()])
        .env("HOPSCOPE_RUNS", dir.join("runs"))
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "analyze: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("enter→done"), "the slice the marks make: {stdout}");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The checks above pass on the pages as written; here each is shown a
/// line it must refuse, so a check that lost its teeth fails too.
#[test]
fn the_checks_refuse_what_they_are_for() {
    let mut checker = Checker::new();
    let mut verdict =
        |line: &str| split_commands(line).iter().map(|c| checker.check(c)).collect::<Result<Vec<bool>, String>>();
    for good in [
        "cargo run --release -- decompose --quick --out target/x   # a comment --not-a-flag",
        "hopscope export --format perfetto -o run.perfetto-trace TRACE",
        "cargo bench -p hopscope-analyze --bench join",
        "just ab experiments/reply-persistent.toml --json",
        "A=1 cargo build --release -p kv-writer --features hopscope && cp a b",
    ] {
        assert!(verdict(good).is_ok(), "`{good}` refused: {:?}", verdict(good));
    }
    for bad in [
        "cargo run --release -- decompose --no-such-flag",
        "cargo run --release -- no-such-subcommand",
        "hopscope analyze TRACE -z",
        "cargo run --release --features no-such-feature -- decompose",
        "cargo test -p no-such-package",
        "cargo bench -p hopscope-analyze --bench no_such_bench",
        "cargo run --release -p traced-writer --features hopscope --example no_such_example",
        "cargo run --release -p traced-writer --features hopscope -- --no-such-flag",
        "just no-such-recipe",
        "hopscope ab --commits A B --build \"cargo build -p no-such-package\"",
    ] {
        assert!(verdict(bad).is_err(), "`{bad}` passed");
    }
    let unmarked = Block { lang: "rust".into(), line: 1, body: "fn main() {}\n".into(), marker: None };
    assert!(check_rust_block(&unmarked).is_err(), "an unmarked rust block passed");
}

//! `hopscope ab --commits REV_A REV_B`: build two revisions of the project
//! you run it in, each in a git worktree of its own, and judge the two
//! programs as `--builds` does. A build is cached under
//! `target/hopscope/builds/` by its commit and its build command, so a
//! second judgement of the same revisions starts measuring at once; the
//! worktrees are removed however a build ends.
//!
//! `--layouts N` builds each revision N times, the linker placing the
//! program's functions in a different shuffled order each time (LLD's
//! `--shuffle-sections`, seeds 1…N): code layout alone moves a program's
//! speed by more than many changes (Curtsinger & Berger, Stabilizer), and
//! the builds of one commit measure by how much. The linker flag goes in
//! through a response file whose path stays the same for every layout, so
//! the dependencies compile once and only the project's own crates and
//! the link are redone per layout.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The build command when `--build` is not given (`{bin}` is the program).
const DEFAULT_BUILD: &str = "cargo build --release --locked --bin {bin}";

/// How `--layouts` varies a build, as the receipt says it.
pub(crate) const LAYOUT_METHOD: &str =
    "functions in a shuffled link order (LLD --shuffle-sections=.text*=SEED, seeds 1…N), nothing else changed";

/// Most builds of each side `--layouts` takes: each is a build of the
/// project's own crates and a link.
pub(crate) const MAX_LAYOUTS: u32 = 8;

/// The response file (in the shared target directory) that carries a
/// layout's linker flag. One `--layouts` build at a time per target
/// directory: Cargo serialises the builds, not the file.
const LAYOUT_ARGS: &str = "hopscope-layout.args";

/// One revision to judge: what the user named, and the commit it is.
#[derive(Debug, Clone)]
pub(crate) struct Revision {
    /// As given (`main`, `HEAD~1`, a tag, a hash).
    pub(crate) name: String,
    /// The full commit hash.
    pub(crate) commit: String,
}

impl Revision {
    /// `name (abcdef123456)`, the way a build is named in every line.
    pub(crate) fn label(&self) -> String {
        format!("{} ({})", self.name, &self.commit[..12.min(self.commit.len())])
    }
}

/// What `--commits` was asked: the revisions, how to build one, and which
/// program of the build to run.
#[derive(Debug)]
pub(crate) struct Commits {
    pub(crate) revisions: [String; 2],
    pub(crate) build: Option<String>,
    /// Revision b's own build command (`--build-b`), so that a compiler
    /// flag or a profile setting is judged as a change; `None`: `build`.
    pub(crate) build_b: Option<String>,
    pub(crate) bin: Option<String>,
    /// Builds of each revision, each in its own link order (`--layouts`);
    /// 1: the build as the command makes it.
    pub(crate) layouts: u32,
}

/// One side's builds: its programs (one per layout), the revision they
/// are of, and the command that built them.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) programs: Vec<PathBuf>,
    pub(crate) revision: Revision,
    pub(crate) command: String,
}

/// Resolve both revisions, build (or find cached) each one's programs (one
/// per layout), and return them with their revisions, arm a first.
pub(crate) fn programs(request: &Commits) -> anyhow::Result<[Built; 2]> {
    if !(1..=MAX_LAYOUTS).contains(&request.layouts) {
        bail!("--layouts {}: at most {MAX_LAYOUTS} builds of each revision", request.layouts);
    }
    let root = git(None, &["rev-parse", "--show-toplevel"])
        .context("--commits: the working directory is not inside a git repository")?;
    let root = PathBuf::from(root);
    // Both names are checked before anything is built.
    let [a, b] = [&request.revisions[0], &request.revisions[1]].map(|name| resolve(&root, name));
    let (a, b) = (a?, b?);
    let bin = match &request.bin {
        Some(bin) => check_bin(bin)?,
        None => default_bin(&root, &a)?,
    };
    let command_a = request.build.clone().unwrap_or_else(|| DEFAULT_BUILD.replace("{bin}", &bin));
    let command_b = request.build_b.clone().unwrap_or_else(|| command_a.clone());
    let cache = hopscope_harness::rundir::runs_dir().join("builds");
    std::fs::create_dir_all(&cache).with_context(|| format!("cannot create {}", cache.display()))?;
    let cache = std::fs::canonicalize(&cache).with_context(|| format!("cannot find {}", cache.display()))?;
    // A build is cached by its commit, its command and its program.
    let key = |command: &str| hopscope_harness::sha256_hex(&format!("{command}\n{bin}"))[..12].to_owned();
    let layouts: Vec<Option<u32>> =
        if request.layouts > 1 { (1..=request.layouts).map(Some).collect() } else { vec![None] };
    let mut out = Vec::new();
    for (arm, revision, command) in [("a", a, command_a), ("b", b, command_b)] {
        let mut programs = Vec::new();
        for &layout in &layouts {
            programs.push(build(&root, &cache, (arm, &revision, layout), (&command, &bin, &key(&command)))?);
        }
        out.push(Built { programs, revision, command });
    }
    let b = out.pop().context("two builds")?;
    let a = out.pop().context("two builds")?;
    Ok([a, b])
}

/// The commit `name` names in the repository at `root`, or one line saying
/// it names none.
fn resolve(root: &Path, name: &str) -> anyhow::Result<Revision> {
    if name.is_empty() || name.starts_with('-') {
        bail!("--commits: `{name}` is not a revision");
    }
    let commit = git(Some(root), &["rev-parse", "--verify", "--quiet", &format!("{name}^{{commit}}")])
        .map_err(|_| anyhow::anyhow!("--commits: `{name}` is not a commit in {}", root.display()))?;
    Ok(Revision { name: name.to_owned(), commit })
}

/// A `--bin` that names a file under the target directory: a program name,
/// or a path below it (`debug/foo`), never above it.
fn check_bin(bin: &str) -> anyhow::Result<String> {
    let path = Path::new(bin);
    let inside = path.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if bin.is_empty() || !inside {
        bail!("--bin {bin}: a program name, or a path inside the target directory (e.g. release/my-writer)");
    }
    Ok(bin.to_owned())
}

/// The program of the root package of `revision`: its `[package] name`.
fn default_bin(root: &Path, revision: &Revision) -> anyhow::Result<String> {
    let manifest = git(Some(root), &["show", &format!("{}:Cargo.toml", revision.commit)])
        .with_context(|| format!("--commits: {} has no Cargo.toml at its root; give --bin NAME", revision.label()))?;
    let parsed: toml::Table = manifest.parse().with_context(|| format!("{}: Cargo.toml", revision.label()))?;
    let name = parsed.get("package").and_then(|p| p.get("name")).and_then(toml::Value::as_str);
    match name {
        Some(name) => check_bin(name),
        None => bail!("--commits: the root of {} is a workspace with no package; give --bin NAME", revision.label()),
    }
}

/// The program `bin` built from `revision` with `command` (in link order
/// `layout`, when given): from the cache when built before, else built in
/// a fresh worktree (removed afterwards) and copied into the cache.
fn build(
    root: &Path,
    cache: &Path,
    (arm, revision, layout): (&str, &Revision, Option<u32>),
    recipe: (&str, &str, &str),
) -> anyhow::Result<PathBuf> {
    let (command, bin, key) = recipe;
    let file = Path::new(bin).file_name().context("--bin names a file")?;
    let (suffix, named) = match layout {
        Some(seed) => (format!("-layout{seed}"), format!("{}, layout {seed}", revision.label())),
        None => (String::new(), revision.label()),
    };
    let slot = cache.join(format!("{}-{key}{suffix}", revision.commit));
    let program = slot.join(file);
    if program.is_file() {
        eprintln!("build {arm}: {named} from the cache, {}", program.display());
        return Ok(program);
    }
    std::fs::create_dir_all(&slot).with_context(|| format!("cannot create {}", slot.display()))?;
    let log = slot.join("build.log");
    let target = cache.join("target");
    // Outside the project: Cargo looks for a workspace in the directories
    // above a manifest, and would take a checkout under the project's own
    // target/ for a stray member of the project's workspace.
    // A checkout per layout too: the project's own crates at a new path
    // are compiled and linked again, with this layout's response file.
    let checkout = std::env::temp_dir().join("hopscope-worktrees").join(format!(
        "{}-{}{suffix}",
        &revision.commit[..12],
        std::process::id()
    ));
    let tree = Worktree::add(root, &checkout, &revision.commit)?;
    eprintln!("build {arm}: {named} with `{command}` (log: {})", log.display());
    let log_file = std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut sh = Command::new("sh");
    if let Some(seed) = layout {
        std::fs::create_dir_all(&target).with_context(|| format!("cannot create {}", target.display()))?;
        let args = target.join(LAYOUT_ARGS);
        std::fs::write(&args, format!("-Wl,--shuffle-sections=.text*={seed}\n"))
            .with_context(|| format!("cannot write {}", args.display()))?;
        sh.env("CARGO_ENCODED_RUSTFLAGS", layout_rustflags(&args)).env_remove("RUSTFLAGS");
    }
    let status = sh
        .arg("-c")
        .arg(command)
        .current_dir(&tree.dir)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().context("cannot share the build log")?)
        .stderr(log_file)
        .status()
        .with_context(|| format!("build {arm}: cannot start `sh -c {command}`"))?;
    drop(tree);
    if !status.success() {
        let last = last_line(&log);
        let how = status.code().map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"));
        bail!("build {arm}: {named} failed ({how}): {last}; the whole log: {}", log.display());
    }
    let built = if bin.contains('/') { target.join(bin) } else { target.join("release").join(bin) };
    if !built.is_file() {
        bail!(
            "build {arm}: {named} made no program at {}: give --bin NAME (or a path under the target directory)",
            built.display()
        );
    }
    // Copied then renamed: a cache slot holds a whole program or none.
    let partial = slot.join(".partial");
    std::fs::copy(&built, &partial).with_context(|| format!("cannot copy {} into the cache", built.display()))?;
    std::fs::rename(&partial, &program).with_context(|| format!("cannot move {} into place", program.display()))?;
    Ok(program)
}

/// `CARGO_ENCODED_RUSTFLAGS` for a layout build: the caller's own flags
/// (encoded, or `RUSTFLAGS`), then the linker driver reading the layout's
/// response file `args` (encoded, so a path with spaces or commas holds).
fn layout_rustflags(args: &Path) -> String {
    let mut flags: Vec<String> = match std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        Ok(encoded) if !encoded.is_empty() => encoded.split('\x1f').map(str::to_owned).collect(),
        _ => std::env::var("RUSTFLAGS").unwrap_or_default().split_whitespace().map(str::to_owned).collect(),
    };
    flags.extend(["-C".to_owned(), format!("link-arg=@{}", args.display())]);
    flags.join("\x1f")
}

/// A detached worktree of one commit, removed (and the repository's list
/// of worktrees pruned) when dropped, however the build ended.
struct Worktree {
    root: PathBuf,
    dir: PathBuf,
}

impl Worktree {
    fn add(root: &Path, dir: &Path, commit: &str) -> anyhow::Result<Worktree> {
        let _ = std::fs::remove_dir_all(dir);
        let dir_text = dir.to_str().context("a worktree path that is not UTF-8")?;
        git(Some(root), &["worktree", "add", "--detach", "--force", dir_text, commit])
            .with_context(|| format!("cannot check out {commit} into {}", dir.display()))?;
        Ok(Worktree { root: root.to_owned(), dir: dir.to_owned() })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.to_str() {
            let _ = git(Some(&self.root), &["worktree", "remove", "--force", dir]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = git(Some(&self.root), &["worktree", "prune"]);
    }
}

/// Run git with `args` (in `dir`, if given); its trimmed stdout, or an
/// error with its stderr's first line.
fn git(dir: Option<&Path>, args: &[&str]) -> anyhow::Result<String> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    let output = command.args(args).stdin(Stdio::null()).output().context("cannot run git")?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!("git {}: {}", args.join(" "), stderr.lines().next().unwrap_or("failed"));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The last non-empty line of the file at `path` (a build's last word).
fn last_line(path: &Path) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no output)").trim().to_owned()
}

//! No circle inside any crate: each crate's production modules, one node
//! per source file, with an arrow from a file to every file whose items its
//! code names (`use` lines, paths in code, paths inside macro arguments).
//! A circle means two files each need the other, so neither can be read,
//! tested or moved alone; what both need belongs one floor down.
//!
//! Run `cargo test -p hopscope-testkit --test module_circles -- --nocapture`
//! to print every crate's graph. Test modules (`#[cfg(test)]`) are left out:
//! a test may name anything of its parent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Every crate root of the workspace's members: each member's library,
/// main binary and `src/bin/` binaries (members read from the workspace's
/// `Cargo.toml`, so a new member is checked without a list to keep).
fn roots(workspace: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).expect("workspace Cargo.toml");
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).expect("members = [...]");
    let members = line.split('"').skip(1).step_by(2);
    let mut roots = Vec::new();
    let dirs = std::iter::once(workspace.to_path_buf()).chain(members.map(|m| workspace.join(m)));
    for dir in dirs.map(|d| d.join("src")) {
        roots.extend(["lib.rs", "main.rs"].map(|f| dir.join(f)).into_iter().filter(|p| p.exists()));
        if let Ok(bins) = std::fs::read_dir(dir.join("bin")) {
            let mut bins: Vec<PathBuf> = bins.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
            bins.sort();
            roots.extend(bins);
        }
    }
    roots
}

type ModPath = Vec<String>;

/// The first segment of a path that leaves the crate.
const EXTERN: &str = "::extern";

/// One crate's modules: where each lives, and which file holds it (an
/// inline module belongs to the file it is written in).
#[derive(Default)]
struct Crate {
    files: BTreeMap<ModPath, PathBuf>,
    parsed: BTreeMap<PathBuf, (ModPath, syn::File)>,
    /// The names each module defines itself.
    defs: BTreeMap<ModPath, BTreeSet<String>>,
    /// Each module's `use` lines: name → the absolute path it stands for.
    aliases: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Each module's glob imports (`use x::*`).
    globs: BTreeMap<ModPath, Vec<ModPath>>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().contains("test")))
}

/// The file a `mod name;` in `parent_file` (module `parent`) loads.
fn child_file(parent_file: &Path, parent_is_dir_owner: bool, name: &str, attrs: &[syn::Attribute]) -> PathBuf {
    let dir =
        if parent_is_dir_owner { parent_file.parent().unwrap().to_path_buf() } else { parent_file.with_extension("") };
    for a in attrs {
        if a.path().is_ident("path")
            && let syn::Meta::NameValue(nv) = &a.meta
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            return parent_file.parent().unwrap().join(s.value());
        }
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() { flat } else { dir.join(name).join("mod.rs") }
}

fn owns_dir(file: &Path) -> bool {
    matches!(file.file_name().and_then(|n| n.to_str()), Some("mod.rs" | "lib.rs" | "main.rs"))
}

impl Crate {
    fn load(root: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.load_file(root, vec!["crate".into()]);
        krate.learn_uses();
        krate
    }

    fn load_file(&mut self, file: &Path, path: ModPath) {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        self.files.insert(path.clone(), file.to_path_buf());
        self.load_items(file, owns_dir(file), &path, &ast.items);
        self.parsed.insert(file.to_path_buf(), (path, ast));
    }

    fn load_items(&mut self, file: &Path, dir_owner: bool, path: &ModPath, items: &[syn::Item]) {
        let defs = self.defs.entry(path.clone()).or_default();
        for item in items {
            let ident = match item {
                syn::Item::Fn(i) => Some(&i.sig.ident),
                syn::Item::Struct(i) => Some(&i.ident),
                syn::Item::Enum(i) => Some(&i.ident),
                syn::Item::Const(i) => Some(&i.ident),
                syn::Item::Static(i) => Some(&i.ident),
                syn::Item::Type(i) => Some(&i.ident),
                syn::Item::Trait(i) => Some(&i.ident),
                syn::Item::Macro(i) => i.ident.as_ref(),
                _ => None,
            };
            defs.extend(ident.map(ToString::to_string));
        }
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            if is_test_only(&m.attrs) {
                continue;
            }
            let mut child = path.clone();
            child.push(m.ident.to_string());
            match &m.content {
                Some((_, inner)) => {
                    self.files.insert(child.clone(), file.to_path_buf());
                    self.load_items(file, false, &child, inner);
                }
                None => {
                    let at = child_file(file, dir_owner, &m.ident.to_string(), &m.attrs);
                    self.load_file(&at, child);
                }
            }
        }
    }

    /// Learns every module's `use` lines, so a name a module re-exports
    /// leads to the module that defines it.
    fn learn_uses(&mut self) {
        let mut learned = Vec::new();
        for (path, ast) in self.parsed.values() {
            let mut names = Names::new(self, path.clone());
            names.module_uses(&ast.items);
            learned.extend(names.learned);
        }
        for (scope, alias, target) in learned {
            match alias {
                Some(alias) => {
                    self.aliases.entry(scope).or_default().insert(alias, target);
                }
                None => self.globs.entry(scope).or_default().push(target),
            }
        }
    }

    /// The module that defines what `path` names: the longest known module
    /// prefix, followed through re-exports (`pub use`, globs).
    fn defining(&self, path: &[String], depth: usize) -> Option<ModPath> {
        let n = (1..=path.len()).rev().find(|&n| self.files.contains_key(&path[..n]))?;
        let module = path[..n].to_vec();
        let Some(name) = path.get(n) else { return Some(module) };
        if depth > 8 || self.defs.get(&module).is_some_and(|d| d.contains(name)) {
            return Some(module);
        }
        let alias = self.aliases.get(&module).and_then(|a| a.get(name));
        if alias.is_some_and(|to| to[0] == EXTERN) {
            return None;
        }
        if let Some(to) = alias
            && to.as_slice() != path
        {
            let mut whole = to.clone();
            whole.extend(path[n + 1..].iter().cloned());
            return self.defining(&whole, depth + 1).or(Some(module));
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            let mut whole = glob.clone();
            whole.extend(path[n..].iter().cloned());
            if let Some(found) = self.defining(&whole, depth + 1)
                && found != *glob
            {
                return Some(found);
            }
            if self.defs.get(glob).is_some_and(|d| d.contains(name)) {
                return Some(glob.clone());
            }
        }
        Some(module)
    }

    /// The file holding what `path` names.
    fn target(&self, path: &[String]) -> Option<&PathBuf> {
        self.files.get(&self.defining(path, 0)?)
    }
}

/// Walks one file's production code and collects the module paths it names.
struct Names<'a> {
    krate: &'a Crate,
    scope: ModPath,
    aliases: BTreeMap<String, ModPath>,
    named: BTreeSet<ModPath>,
    /// Module-level `use` lines seen: (module, alias or `None` for a
    /// glob, absolute path).
    learned: Vec<(ModPath, Option<String>, ModPath)>,
}

impl<'a> Names<'a> {
    fn new(krate: &'a Crate, scope: ModPath) -> Self {
        Names { krate, scope, aliases: BTreeMap::new(), named: BTreeSet::new(), learned: Vec::new() }
    }

    /// The `use` lines at module level in `items` (inline modules' too).
    fn module_uses(&mut self, items: &[syn::Item]) {
        for item in items {
            match item {
                syn::Item::Use(u) if !is_test_only(&u.attrs) => self.use_tree(&mut Vec::new(), &u.tree),
                syn::Item::Mod(m) if !is_test_only(&m.attrs) => {
                    if let Some((_, inner)) = &m.content {
                        self.scope.push(m.ident.to_string());
                        self.module_uses(inner);
                        self.scope.pop();
                    }
                }
                _ => {}
            }
        }
    }

    /// A path as written in `scope`, made absolute when it starts inside the
    /// crate; `None` for other crates, the prelude and local names.
    fn absolute(&self, segs: &[String]) -> Option<ModPath> {
        let first = segs.first()?;
        let mut base = match first.as_str() {
            "crate" => vec!["crate".to_string()],
            "self" => self.scope.clone(),
            "super" => {
                let mut b = self.scope.clone();
                let mut rest = segs;
                while rest.first().is_some_and(|s| s == "super") {
                    b.pop();
                    rest = &rest[1..];
                }
                b.extend(rest.iter().cloned());
                return Some(b);
            }
            name => {
                let mut child = self.scope.clone();
                child.push(name.to_string());
                if self.krate.files.contains_key(&child) {
                    child
                } else if let Some(alias) = self.aliases.get(name) {
                    alias.clone()
                } else {
                    return None;
                }
            }
        };
        base.extend(segs[1..].iter().cloned());
        Some(base)
    }

    fn name(&mut self, segs: &[String]) {
        if let Some(abs) = self.absolute(segs) {
            self.named.insert(abs);
        }
    }

    /// Every leaf of a `use` tree as a whole path; records aliases.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident.to_string(), &n.ident.to_string()),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident.to_string(), &r.rename.to_string()),
            syn::UseTree::Glob(_) => {
                if let Some(abs) = self.absolute(prefix) {
                    self.named.insert(abs.clone());
                    self.learned.push((self.scope.clone(), None, abs));
                }
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &str, alias: &str) {
        let mut full = prefix.to_vec();
        if ident != "self" {
            full.push(ident.to_string());
        }
        match self.absolute(&full) {
            Some(abs) => {
                self.named.insert(abs.clone());
                self.learned.push((self.scope.clone(), Some(alias.to_string()), abs.clone()));
                self.aliases.insert(alias.to_string(), abs);
            }
            // Another crate's item re-exported (`pub use hopscope_probe::Role`):
            // a path through this module to it leads out of the crate.
            None => self.learned.push((self.scope.clone(), Some(alias.to_string()), vec![EXTERN.to_string()])),
        }
    }
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test_only(attrs) {
            return;
        }
        match item {
            // A module's own body is walked with its own scope, and a
            // file module is walked when its file is.
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    self.scope.push(m.ident.to_string());
                    inner.iter().for_each(|i| self.visit_item(i));
                    self.scope.pop();
                }
            }
            syn::Item::Use(u) => self.use_tree(&mut Vec::new(), &u.tree),
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 {
            self.name(&segs);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Macro arguments are tokens to syn; the usual ones (format!,
        // assert!, vec!, write!) are comma-separated expressions.
        use syn::parse::Parser;
        let exprs = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(list) = exprs.parse2(mac.tokens.clone()) {
            list.iter().for_each(|e| self.visit_expr(e));
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// Arrows between one crate's files: file → files it names.
fn graph(krate: &Crate) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, (path, ast)) in &krate.parsed {
        let mut names = Names::new(krate, path.clone());
        // Twice: the first pass learns the `use` aliases a path before
        // them may lean on.
        names.visit_file(ast);
        names.named.clear();
        names.visit_file(ast);
        let out = edges.entry(file.clone()).or_default();
        for named in &names.named {
            if let Some(to) = krate.target(named)
                && to != file
            {
                out.insert(to.clone());
            }
        }
    }
    edges
}

/// The strongly connected components with more than one file (Tarjan).
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, (n, n));
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[w].1.min(s.index[v].1);
                s.index.get_mut(v).unwrap().1 = low;
            } else if s.on.contains(w) {
                let low = s.index[w].0.min(s.index[v].1);
                s.index.get_mut(v).unwrap().1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State { edges, index: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_crate_has_a_circle_between_its_files() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let relative = |f: &PathBuf| f.strip_prefix(workspace).unwrap_or(f).display().to_string();
    let mut report = String::new();
    let mut found = 0;
    for root in roots(workspace) {
        let krate = Crate::load(&root);
        let edges = graph(&krate);
        let arrows: usize = edges.values().map(BTreeSet::len).sum();
        let circles = circles(&edges);
        report += &format!("{}: {} files, {arrows} arrows, {} circles\n", relative(&root), edges.len(), circles.len());
        found += circles.len();
        for circle in &circles {
            report += "  circle:\n";
            for file in circle {
                let into: Vec<String> = edges[file].iter().filter(|t| circle.contains(t)).map(relative).collect();
                report += &format!("    {} → {}\n", relative(file), into.join(", "));
            }
        }
    }
    println!("{report}");
    assert_eq!(found, 0, "circles between a crate's files (move what both sides need one floor down):\n{report}");
}

/// Writes a small crate (file name → text) and returns its circles.
fn circles_of(name: &str, files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let dir = std::env::temp_dir().join(format!("hopscope-circles-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (file, text) in files {
        let at = dir.join(file);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    let krate = Crate::load(&dir.join("lib.rs"));
    let found = circles(&graph(&krate))
        .into_iter()
        .map(|c| c.iter().map(|f| f.strip_prefix(&dir).unwrap().display().to_string()).collect())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    found
}

#[test]
fn the_check_sees_a_circle_through_a_re_export_and_not_a_leaf() {
    // `sum` needs `Row` from `mod.rs`, which calls `sum`: a circle, even
    // when the path goes through the crate root's re-export.
    let circle = circles_of(
        "circle",
        &[
            ("lib.rs", "mod table;\npub use table::Row;\n"),
            ("table/mod.rs", "mod sum;\npub struct Row;\npub fn total() { sum::sum(); }\n"),
            ("table/sum.rs", "pub fn sum() { let _ = crate::Row; }\n"),
        ],
    );
    assert_eq!(circle, vec![vec!["table/mod.rs".to_string(), "table/sum.rs".to_string()]]);
    // `Row` one floor down: both name the leaf, neither the other.
    let leaf = circles_of(
        "leaf",
        &[
            ("lib.rs", "mod table;\npub use table::Row;\n"),
            ("table/mod.rs", "mod row;\nmod sum;\npub use row::Row;\npub fn total() { sum::sum(); }\n"),
            ("table/row.rs", "pub struct Row;\n"),
            ("table/sum.rs", "use super::row::Row;\npub fn sum() { let _ = Row; }\n"),
        ],
    );
    assert!(leaf.is_empty(), "{leaf:?}");
    // Another crate's item re-exported at the root leads out of the crate.
    let outside = circles_of(
        "outside",
        &[
            ("lib.rs", "mod a;\npub use std::fmt::Write;\npub fn f() { a::g(); }\n"),
            ("a.rs", "use crate::Write;\npub fn g() {}\n"),
        ],
    );
    assert!(outside.is_empty(), "{outside:?}");
    // A test module may name its parent.
    let test = circles_of(
        "test",
        &[
            ("lib.rs", "mod a;\n"),
            ("a.rs", "pub fn f() {}\n#[cfg(test)]\nmod tests;\n"),
            ("a/tests.rs", "use super::f;\n"),
        ],
    );
    assert!(test.is_empty(), "{test:?}");
}

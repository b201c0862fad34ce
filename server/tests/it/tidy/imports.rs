//! The import graph of a crate, read from its source: which module each non-test file names
//! through `use` trees and `crate::`/`super::` paths. It is how the layering is measured: no
//! cycle between files, and no reference that runs back up the engine's layers
//! (base → pure stages → config → store → features → `lib.rs`).
//!
//! A folder's root file (`mod.rs`, `lib.rs`) re-exporting its own descendants (`pub use
//! child::X`) is its facade, not a dependency, so that adds no edge; any other `pub use`
//! imports what it names. A path through a re-export counts as a reference to the module that
//! re-exports it, which is what "an import that runs back up" means (a stage naming
//! `crate::recall::Ref` names the recall entry).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path inside one crate, `[]` for the crate root.
pub(super) type ModPath = Vec<String>;

/// The files of one crate's `src/` with the modules each one references.
pub(super) struct Graph {
    /// Module path → the module paths it references (never itself).
    pub(super) edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

impl Graph {
    /// Reads every non-test file under `src`.
    pub(super) fn of_crate(src: &Path) -> Graph {
        let mut files = Vec::new();
        collect(src, src, &mut files);
        let modules: BTreeSet<ModPath> = files.iter().map(|(m, _)| m.clone()).collect();
        let mut edges = BTreeMap::new();
        for (module, text) in &files {
            let code = strip_test_modules(&strip_comments(text));
            let mut targets = BTreeSet::new();
            for path in referenced_paths(&code, module, &modules) {
                if let Some(target) = longest_module(&modules, &path)
                    && target != *module
                {
                    targets.insert(target);
                }
            }
            edges.insert(module.clone(), targets);
        }
        Graph { edges }
    }

    /// The strongly connected components with more than one module, each as its internal
    /// edges (`a -> b`), sorted.
    pub(super) fn cycles(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&ModPath> = self.edges.keys().collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let adjacency: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| {
                self.edges[*m]
                    .iter()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        tarjan(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let members: BTreeSet<&ModPath> = c.iter().map(|&i| nodes[i]).collect();
                let mut edges: Vec<String> = members
                    .iter()
                    .flat_map(|from| {
                        self.edges[*from]
                            .iter()
                            .filter(|to| members.contains(to))
                            .map(move |to| format!("{} -> {}", name(from), name(to)))
                    })
                    .collect();
                edges.sort();
                edges
            })
            .collect()
    }
}

/// `a::b` (or `<root>`).
pub(super) fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "<root>".to_owned()
    } else {
        module.join("::")
    }
}

fn collect(src: &Path, dir: &Path, out: &mut Vec<(ModPath, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            // A `tests/` folder inside `src/` holds unit tests only.
            if file_name != "tests" {
                collect(src, &path, out);
            }
            continue;
        }
        if !file_name.ends_with(".rs")
            || file_name == "tests.rs"
            || file_name.ends_with("_tests.rs")
        {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap_or(&path);
        let mut module: ModPath = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        out.push((module, text));
    }
}

/// The text without `//` comments (doc comments name paths that are not imports).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text without `#[cfg(test)]` items (a `mod x { ... }` block or a `mod x;` line).
fn strip_test_modules(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let brace = after.find('{');
        let semi = after.find(';');
        match (brace, semi) {
            (Some(b), Some(s)) if s < b => rest = &after[s + 1..],
            (Some(b), _) => {
                let mut depth = 0usize;
                let mut end = after.len();
                for (i, ch) in after[b..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            (None, Some(s)) => rest = &after[s + 1..],
            (None, None) => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// Every absolute module-item path the code names: expanded `use` trees (a module's
/// re-exports of its own descendants aside) and `crate::…` / `super::…` paths in expressions,
/// resolved against `module` (a bare `child::x` names a child module of `module`).
fn referenced_paths(code: &str, module: &ModPath, modules: &BTreeSet<ModPath>) -> Vec<ModPath> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let stmt_start = at;
        let Some(end) = rest[stmt_start..].find(';') else {
            break;
        };
        let stmt = &rest[stmt_start..stmt_start + end];
        let is_reexport = rest[..stmt_start].trim_end().ends_with("pub")
            || rest[..stmt_start].trim_end().ends_with(')')
                && rest[..stmt_start].trim_end().ends_with("pub(crate)");
        let tree = stmt.trim_start_matches("use").trim();
        for path in expand_tree(tree) {
            let Some(first) = path.first() else {
                continue;
            };
            let child = [module.clone(), vec![first.clone()]].concat();
            let path = if modules.contains(&child) {
                [vec!["self".to_owned()], path].concat()
            } else {
                path
            };
            if let Some(resolved) = resolve(&path, module) {
                let facade = is_reexport && resolved.starts_with(module);
                if !facade {
                    out.push(resolved);
                }
            }
        }
        rest = &rest[stmt_start + end + 1..];
    }
    // Paths written in code: `crate::a::b` and `super::a`.
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let begin = from + at;
            let preceded = code[..begin]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            let len = code[begin..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - begin);
            if !preceded {
                let path: Vec<String> = code[begin..begin + len]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                if let Some(resolved) = resolve(&path, module) {
                    out.push(resolved);
                }
            }
            from = begin + len.max(1);
        }
    }
    out
}

/// The offset of the next `use ` keyword that starts a statement.
fn find_use(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find("use ") {
        let begin = from + at;
        let before = text[..begin].chars().next_back();
        if before.is_none_or(|c| c.is_whitespace() || c == ';' || c == '{' || c == '}') {
            return Some(begin);
        }
        from = begin + 4;
    }
    None
}

/// `a::{b, c::{d, self}}` → `[a::b, a::c::d, a::c]`.
fn expand_tree(tree: &str) -> Vec<Vec<String>> {
    // `x as y` keeps `x`: mark the rename before the spaces go.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let tree: String = words.join(" ").replace(" as ", "@").replace(' ', "");
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for part in split_top(tree) {
        if let Some(open) = part.find('{') {
            let head: Vec<String> = part[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let inner = &part[open + 1..part.len().saturating_sub(1)];
            let len = prefix.len();
            prefix.extend(head);
            expand_into(inner, prefix, out);
            prefix.truncate(len);
        } else {
            let mut path = prefix.clone();
            for seg in part.split("::").filter(|s| !s.is_empty()) {
                let seg = seg.split('@').next().unwrap_or(seg);
                if seg != "self" {
                    path.push(seg.to_owned());
                }
            }
            out.push(path);
        }
    }
}

/// Splits `a, b::{c, d}, e` at the commas outside braces.
fn split_top(tree: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, ch) in tree.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// An absolute module path for `crate::…` or `super::…`; `None` for other crates and `std`.
fn resolve(path: &[String], module: &ModPath) -> Option<ModPath> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "super" => {
            let mut base = module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        "self" => {
            let mut base = module.clone();
            base.extend(path[1..].iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// The longest prefix of `path` that is a module of the crate.
fn longest_module(modules: &BTreeSet<ModPath>, path: &ModPath) -> Option<ModPath> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
}

/// Tarjan's strongly connected components.
fn tarjan(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adjacency: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.adjacency[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = adjacency.len();
    let mut state = State {
        adjacency,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.out
}

//! Workspace tidiness (conventions 1, 3, 4, 11, 12, 13, 14, 15): source-level invariants that
//! must fail loudly rather than rot. Reads files only; lives in the outermost crate, as
//! rust-analyzer's tidy lives in xtask.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod imports;

use imports::{Graph, ModPath, name};

/// Files allowed past 600 lines of non-test code, each with its reason.
const LONG_FILE_ALLOW_LIST: &[(&str, &str)] = &[];

/// The one crate-wide dependency allow-list that is closed (convention 3).
const INDEX_DEPENDENCIES: &[&str] = &["memmap2", "bytemuck", "rayon", "pulp", "thiserror"];

/// Dependencies the engine must never take (convention 3).
const ENGINE_FORBIDDEN: &[&str] = &["tokio", "rmcp", "axum", "hyper", "tower", "clap"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("server/ sits in the workspace root")
        .to_path_buf()
}

fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members list");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every `.rs` file of the workspace, outside `target/` and hidden folders.
fn rust_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), &mut out);
    out.sort();
    out
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

fn is_this_file(path: &Path) -> bool {
    rel(path) == "server/tests/it/tidy.rs"
}

/// `[dependencies]` names of a crate manifest (not dev- or build-dependencies).
fn dependencies(member: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join(member).join("Cargo.toml")).unwrap();
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            out.push(name.to_owned());
        }
    }
    out
}

#[test]
fn every_member_has_an_architecture_heading() {
    let path = root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("ARCHITECTURE.md is missing at the workspace root ({e})"));
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("### ")).collect();
    for member in members() {
        let package = format!("cpersona-{member}");
        assert!(
            headings
                .iter()
                .any(|h| h.contains(&member) || h.contains(&package)),
            "ARCHITECTURE.md has no `### {member}` heading"
        );
    }
}

#[test]
fn folder_names_are_package_names() {
    for member in members() {
        let manifest = std::fs::read_to_string(root().join(&member).join("Cargo.toml")).unwrap();
        let name = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_owned())
            .expect("a package name");
        assert_eq!(name, format!("cpersona-{member}"), "folder {member}/");
    }
}

#[test]
fn dependencies_point_one_way_and_stay_narrow() {
    for dep in dependencies("index") {
        assert!(
            INDEX_DEPENDENCIES.contains(&dep.as_str()),
            "index depends on {dep}"
        );
    }
    for dep in dependencies("engine") {
        assert!(
            !ENGINE_FORBIDDEN.contains(&dep.as_str()),
            "engine depends on {dep}"
        );
        assert_ne!(dep, "cpersona-server", "engine depends on the server");
    }
    // The store (SQLite) is the engine's: the server reaches it only through `Engine`.
    assert!(
        !dependencies("server").iter().any(|d| d == "rusqlite"),
        "the server's library depends on rusqlite"
    );
    for member in ["index", "engine", "server"] {
        for dep in dependencies(member) {
            assert!(
                dep != "cpersona-benches" && dep != "cpersona-scale",
                "{member} depends on {dep}"
            );
        }
    }
}

#[test]
fn unsafe_only_in_the_fenced_index_modules() {
    let patterns = [
        "unsafe {",
        "unsafe fn",
        "unsafe impl",
        "unsafe extern",
        "unsafe trait",
    ];
    let mut offenders = Vec::new();
    for path in rust_files() {
        let name = rel(&path);
        if is_this_file(&path)
            || name.starts_with("index/src/kernels/")
            || name == "index/src/mmap.rs"
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if patterns.iter().any(|p| text.contains(p)) {
            offenders.push(name);
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe outside index/src/kernels and index/src/mmap.rs: {offenders:?}"
    );
}

#[test]
fn only_the_server_reads_the_environment() {
    let mut offenders = Vec::new();
    for path in rust_files() {
        let name = rel(&path);
        // Unit-test modules may read the environment (e.g. where a test model lives).
        let unit_test = name.ends_with("/tests.rs") || name.contains("/tests/");
        let library = name.contains("/src/") && !name.starts_with("server/") && !unit_test;
        if !library {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("env::var") {
            offenders.push(name);
        }
    }
    assert!(
        offenders.is_empty(),
        "environment read below the server: {offenders:?}"
    );
}

#[test]
fn every_file_opens_with_a_module_doc() {
    let missing: Vec<String> = rust_files()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| rel(&p))
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` doc: {missing:?}"
    );
}

/// Lines of non-test code: everything before an inline `#[cfg(test)]` block; test files
/// (`tests.rs`, anything under `tests/`, `benches/`) count as tests.
fn non_test_lines(path: &Path, text: &str) -> usize {
    let name = rel(path);
    if name.ends_with("/tests.rs") || name.contains("/tests/") || name.contains("/benches/") {
        return 0;
    }
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests {"))
        .unwrap_or(lines.len())
}

#[test]
fn long_files_are_listed_with_a_reason() {
    let allowed: BTreeSet<&str> = LONG_FILE_ALLOW_LIST.iter().map(|(p, _)| *p).collect();
    let mut long = Vec::new();
    for path in rust_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let n = non_test_lines(&path, &text);
        if n > 600 && !allowed.contains(rel(&path).as_str()) {
            long.push(format!("{} ({n} lines)", rel(&path)));
        }
    }
    assert!(
        long.is_empty(),
        "files over 600 lines of non-test code: {long:?}"
    );
}

#[test]
fn no_ignored_or_should_panic_tests() {
    let mut offenders = Vec::new();
    for path in rust_files() {
        if is_this_file(&path) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("#[ignore") || text.contains("#[should_panic") {
            offenders.push(rel(&path));
        }
    }
    assert!(
        offenders.is_empty(),
        "#[ignore] or #[should_panic] in {offenders:?}"
    );
}

#[test]
fn one_integration_binary_per_crate() {
    for member in members() {
        let tests = root().join(&member).join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        let extra: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rs"))
            .collect();
        assert!(
            extra.is_empty(),
            "{member}/tests has top-level test files {extra:?}; use tests/it/"
        );
    }
}

/// The engine's layers, bottom first: an import may name its own layer or a lower one.
/// Base utilities, the pure stages (no SQLite, no store), the configuration that gathers the
/// stages' settings, the store, the features, and the facade in `lib.rs`.
fn engine_layer(module: &ModPath) -> (u8, &'static str) {
    let first = module.first().map(String::as_str);
    let second = module.get(1).map(String::as_str);
    match (first, second) {
        (None, _) => (5, "lib.rs"),
        (
            Some(
                "error" | "refs" | "text" | "time" | "source" | "vector" | "scope" | "embed"
                | "paging" | "progress",
            ),
            _,
        ) => (0, "base"),
        (Some("recall" | "reconstruct"), Some("stages")) => (1, "pure stages"),
        (Some("derived"), Some("nodes" | "blocks")) => (1, "pure stages"),
        (Some("health"), Some("stages")) => (1, "pure stages"),
        (Some("config"), _) => (2, "config"),
        (Some("store"), _) => (3, "store"),
        _ => (4, "features"),
    }
}

fn src_of(member: &str) -> PathBuf {
    root().join(member).join("src")
}

#[test]
fn no_import_cycle_in_any_crate() {
    for member in ["index", "engine", "server"] {
        let cycles = Graph::of_crate(&src_of(member)).cycles();
        assert!(
            cycles.is_empty(),
            "{member}: modules that import each other (break each cycle by moving the shared \
             item down): {cycles:#?}"
        );
    }
}

#[test]
fn engine_imports_never_run_back_up_a_layer() {
    let graph = Graph::of_crate(&src_of("engine"));
    let mut upward = Vec::new();
    for (from, targets) in &graph.edges {
        let (from_layer, from_name) = engine_layer(from);
        for to in targets {
            let (to_layer, to_name) = engine_layer(to);
            if to_layer > from_layer {
                upward.push(format!(
                    "{} ({from_name}) -> {} ({to_name})",
                    name(from),
                    name(to)
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run back up the engine's layers (base -> pure stages -> config -> store \
         -> features -> lib.rs): {upward:#?}"
    );
}

#[test]
fn pure_stages_read_neither_sqlite_nor_the_store() {
    let mut offenders = Vec::new();
    for path in rust_files() {
        let rel = rel(&path);
        let is_test = rel.ends_with("tests.rs") || rel.contains("/tests/");
        if !rel.contains("/stages/") || is_test {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        if code.contains("rusqlite") || code.contains("crate::store") {
            offenders.push(rel);
        }
    }
    assert!(
        offenders.is_empty(),
        "stages that touch SQLite or the store: {offenders:?}"
    );
}

#[test]
fn a_split_file_lands_inside_its_feature_folder() {
    let mut scattered = Vec::new();
    for member in members() {
        let src = src_of(&member);
        let Ok(entries) = std::fs::read_dir(&src) else {
            continue;
        };
        let names: BTreeSet<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for file in &names {
            let Some(stem) = file.strip_suffix(".rs") else {
                continue;
            };
            if let Some((feature, _)) = stem.split_once('_')
                && names.contains(feature)
            {
                scattered.push(format!(
                    "{member}/src/{file} beside {member}/src/{feature}/"
                ));
            }
        }
    }
    assert!(
        scattered.is_empty(),
        "a file split out of a feature sits beside its folder instead of inside it: {scattered:?}"
    );
}

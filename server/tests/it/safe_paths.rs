//! Issue 17's attacks on `export_memories` / `import_memories`, each through the real binary
//! over stdio: an export aimed at the store's own files (the WAL, the database, with the
//! export folder holding the database), at a file outside the default export folder, through
//! a symlink that leaves the folder, over an existing file; and an import that probes paths
//! outside the folder. Each ends with what must still be true on disk or after a restart.

use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::binary::{call_tools_with, cpersona_in, run_ok};

const STORE_FILE: &str = "output_path refused: it names one of the store's own files";
const OUTSIDE_EXPORT: &str =
    "output_path refused: it must name a file in an existing folder inside the export folder";
const OUTSIDE_IMPORT: &str =
    "input_path refused: it must name a readable export file inside the export folder";
const EXISTS: &str = "output_path refused: the file already exists";

/// The store folder `cpersona_in` uses, and its database.
fn store_dir(dir: &Path) -> PathBuf {
    dir.join("store")
}
fn db(dir: &Path) -> PathBuf {
    store_dir(dir).join("test.db")
}

/// The binary over `dir`'s store with `CPERSONA_EXPORT_DIR` set (or left unset).
fn with_export_dir(dir: &Path, export_dir: Option<&Path>) -> Command {
    let mut cmd = cpersona_in(dir);
    if let Some(folder) = export_dir {
        cmd.env("CPERSONA_EXPORT_DIR", folder);
    }
    cmd
}

fn stores(agent: &str, texts: &[&str]) -> Vec<(&'static str, Value)> {
    texts
        .iter()
        .map(|t| ("store", json!({"agent_id": agent, "content": t})))
        .collect()
}

/// The error of a refused call: a user error (`isError`, `ok: false`) whose message is returned.
fn refusal(reply: &(bool, Value)) -> String {
    let (is_error, body) = reply;
    assert!(is_error, "not refused: {body}");
    assert_eq!(body["ok"], false, "{body}");
    body["error"].as_str().unwrap().to_owned()
}

fn memory_count(dir: &Path) -> u64 {
    let out = call_tools_with(
        cpersona_in(dir),
        &[("list_memories", json!({"agent_id": "a", "limit": 100}))],
    );
    out[0].1["count"].as_u64().unwrap()
}

fn text_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn an_export_onto_the_wal_is_refused_and_every_acknowledged_row_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_dir(dir.path());
    std::fs::create_dir_all(&store).unwrap();
    let wal = db(dir.path()).with_file_name("test.db-wal");
    // The export folder holds the database (relative name), and `/` (absolute name).
    for (round, (folder, output_path)) in [
        (store.clone(), "test.db-wal".to_owned()),
        (PathBuf::from("/"), wal.display().to_string()),
    ]
    .into_iter()
    .enumerate()
    {
        let texts: Vec<String> = ["first fact", "second fact", "third fact"]
            .iter()
            .map(|t| format!("{t} of round {round}"))
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut calls = stores("a", &texts);
        calls.push((
            "export_memories",
            json!({"output_path": output_path, "overwrite": true}),
        ));
        let after = format!("acknowledged after the export of round {round}");
        calls.extend(stores("a", &[after.as_str()]));
        let out = call_tools_with(with_export_dir(dir.path(), Some(&folder)), &calls);
        assert!(
            refusal(&out[3]).starts_with(STORE_FILE),
            "{round}: {}",
            out[3].1
        );
        assert_eq!(out[4].1["result"], "stored", "{}", out[4].1);
    }
    // After each restart, every acknowledged row of both rounds is there.
    assert_eq!(memory_count(dir.path()), 8);
}

#[test]
fn an_export_onto_the_database_is_refused_and_the_store_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_dir(dir.path());
    std::fs::create_dir_all(&store).unwrap();
    let db = db(dir.path());
    for (folder, output_path) in [
        (store.clone(), "test.db".to_owned()),
        (PathBuf::from("/"), db.display().to_string()),
        (store.clone(), "test.db.memories.gen".to_owned()),
    ] {
        let mut calls = stores("a", &["first fact", "second fact"]);
        calls.push((
            "export_memories",
            json!({"output_path": output_path, "overwrite": true}),
        ));
        let out = call_tools_with(with_export_dir(dir.path(), Some(&folder)), &calls);
        assert!(refusal(&out[2]).starts_with(STORE_FILE), "{}", out[2].1);
    }
    // The file is still SQLite's (with the WAL holding every page, a JSONL file in its place
    // would still open until the next checkpoint).
    let bytes = std::fs::read(&db).unwrap();
    assert!(
        bytes.starts_with(b"SQLite format 3\0"),
        "{:?}",
        &bytes[..32.min(bytes.len())]
    );
    let check: Value = serde_json::from_str(&run_ok(cpersona_in(dir.path()).arg("check"))).unwrap();
    assert_eq!(check["stats"]["memories"], 2, "{check}");
    assert_eq!(check["stats"]["integrity"], json!(["ok"]));
}

#[test]
fn the_default_export_folder_keeps_an_export_off_the_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bashrc = home.join(".bashrc");
    std::fs::write(&bashrc, "export PATH=$HOME/bin:$PATH\n").unwrap();
    let mut cmd = with_export_dir(dir.path(), None);
    cmd.env("HOME", &home);
    let mut calls = stores("a", &["a fact"]);
    calls.push((
        "export_memories",
        json!({"output_path": bashrc.display().to_string(), "overwrite": true}),
    ));
    calls.push(("export_memories", json!({"output_path": "a.jsonl"})));
    let out = call_tools_with(cmd, &calls);
    assert_eq!(refusal(&out[1]), OUTSIDE_EXPORT);
    assert_eq!(text_of(&bashrc), "export PATH=$HOME/bin:$PATH\n");
    // A relative name lands in `exports/` beside the database, created by this export.
    let landed = store_dir(dir.path()).join("exports").join("a.jsonl");
    assert!(!out[2].0, "{}", out[2].1);
    assert_eq!(
        out[2].1["path"],
        landed.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(out[2].1["memories"], 1);
}

#[test]
fn an_import_probe_learns_nothing_about_paths_outside_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // A valid export file outside, a large file, a folder, and nothing at all.
    let out = call_tools_with(
        cpersona_in(dir.path()),
        &[
            ("store", json!({"agent_id": "a", "content": "a fact"})),
            ("export_memories", json!({"output_path": "a.jsonl"})),
        ],
    );
    let exported = PathBuf::from(out[1].1["path"].as_str().unwrap());
    std::fs::copy(&exported, outside.join("valid.jsonl")).unwrap();
    std::fs::write(outside.join("big.bin"), vec![b'x'; 1 << 20]).unwrap();
    let probes = [
        outside.join("valid.jsonl"),
        outside.join("big.bin"),
        outside.clone(),
        outside.join("missing.jsonl"),
        outside.join("missing/deeper.jsonl"),
        PathBuf::from("not-there.jsonl"),
    ];
    let calls: Vec<(&str, Value)> = probes
        .iter()
        .map(|p| {
            let args = json!({"input_path": p.display().to_string(), "target_agent_id": "b"});
            ("import_memories", args)
        })
        .collect();
    let out = call_tools_with(cpersona_in(dir.path()), &calls);
    for (probe, reply) in probes.iter().zip(&out) {
        assert_eq!(refusal(reply), OUTSIDE_IMPORT, "{}", probe.display());
        // Byte for byte the same body: no size, no kind, no path.
        assert_eq!(reply.1, out[0].1, "{}", probe.display());
    }
    // The file inside the folder imports.
    let out = call_tools_with(
        cpersona_in(dir.path()),
        &[(
            "import_memories",
            json!({"input_path": "a.jsonl", "target_agent_id": "b"}),
        )],
    );
    assert_eq!(out[0].1["imported_memories"], 1, "{}", out[0].1);
}

#[test]
fn a_symlink_inside_the_folder_that_leaves_it_is_refused_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("exports");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // A real export file outside, reachable through symlinks inside the folder.
    let out = call_tools_with(
        with_export_dir(dir.path(), Some(&folder)),
        &[
            ("store", json!({"agent_id": "a", "content": "a fact"})),
            ("export_memories", json!({"output_path": "real.jsonl"})),
        ],
    );
    assert!(!out[1].0, "{}", out[1].1);
    let victim = outside.join("victim.jsonl");
    std::fs::rename(folder.join("real.jsonl"), &victim).unwrap();
    let before = text_of(&victim);
    symlink(&victim, folder.join("link.jsonl")).unwrap();
    symlink(&outside, folder.join("sub")).unwrap();
    let out = call_tools_with(
        with_export_dir(dir.path(), Some(&folder)),
        &[
            (
                "import_memories",
                json!({"input_path": "link.jsonl", "target_agent_id": "b"}),
            ),
            (
                "import_memories",
                json!({"input_path": "sub/victim.jsonl", "target_agent_id": "b"}),
            ),
            (
                "export_memories",
                json!({"output_path": "link.jsonl", "overwrite": true}),
            ),
            (
                "export_memories",
                json!({"output_path": "sub/new.jsonl", "overwrite": true}),
            ),
            ("list_memories", json!({"agent_id": "b"})),
        ],
    );
    assert_eq!(refusal(&out[0]), OUTSIDE_IMPORT);
    assert_eq!(refusal(&out[1]), OUTSIDE_IMPORT);
    assert_eq!(refusal(&out[2]), OUTSIDE_EXPORT);
    assert_eq!(refusal(&out[3]), OUTSIDE_EXPORT);
    assert_eq!(out[4].1["count"], 0, "nothing imported: {}", out[4].1);
    assert_eq!(text_of(&victim), before);
    assert!(!outside.join("new.jsonl").exists());
    assert!(
        std::fs::symlink_metadata(folder.join("link.jsonl"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn an_existing_file_is_kept_unless_overwrite_and_then_replaced_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("exports");
    std::fs::create_dir_all(&folder).unwrap();
    let kept = folder.join("kept.jsonl");
    std::fs::write(&kept, b"the user's own notes\n").unwrap();
    let inode = std::fs::metadata(&kept).unwrap().ino();
    let mut calls = stores("a", &["a fact", "another fact"]);
    calls.push(("export_memories", json!({"output_path": "kept.jsonl"})));
    calls.push((
        "export_memories",
        json!({"output_path": "kept.jsonl", "overwrite": false}),
    ));
    let out = call_tools_with(with_export_dir(dir.path(), Some(&folder)), &calls);
    assert!(refusal(&out[2]).starts_with(EXISTS), "{}", out[2].1);
    assert!(refusal(&out[3]).starts_with(EXISTS), "{}", out[3].1);
    assert_eq!(std::fs::read(&kept).unwrap(), b"the user's own notes\n");
    assert_eq!(std::fs::metadata(&kept).unwrap().ino(), inode);
    let out = call_tools_with(
        with_export_dir(dir.path(), Some(&folder)),
        &[(
            "export_memories",
            json!({"output_path": "kept.jsonl", "overwrite": true}),
        )],
    );
    assert_eq!(out[0].1["memories"], 2, "{}", out[0].1);
    let text = text_of(&kept);
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["memory_count"], 2);
    // Renamed into place (a new inode), not rewritten where it stood; no temporary left.
    assert_ne!(std::fs::metadata(&kept).unwrap().ino(), inode);
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["kept.jsonl"]);
}

#[test]
fn the_operator_cli_names_any_path_but_not_the_store_nor_an_existing_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    call_tools_with(cpersona_in(dir.path()), &stores("a", &["a fact"]));
    let file = dir.path().join("backup.jsonl");
    std::fs::write(&file, b"older backup\n").unwrap();
    let refused = cpersona_in(dir.path())
        .args(["export", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"older backup\n");
    let done: Value = serde_json::from_str(&run_ok(cpersona_in(dir.path()).args([
        "export",
        file.to_str().unwrap(),
        "--force",
    ])))
    .unwrap();
    assert_eq!(done["memories"], 1, "{done}");
    let wal = db(dir.path()).with_file_name("test.db-wal");
    let onto_db = cpersona_in(dir.path())
        .args(["export", wal.to_str().unwrap(), "--force"])
        .output()
        .unwrap();
    assert!(!onto_db.status.success());
    assert!(String::from_utf8_lossy(&onto_db.stderr).contains("store's own files"));
    assert_eq!(memory_count(dir.path()), 1);
}

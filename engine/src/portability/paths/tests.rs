//! The path rules one by one, on real folders: confinement, the store's own files, no
//! overwrite unasked, symlinks judged where they lead, and refusals that say nothing about
//! what lies outside the folder.

use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

/// A data folder with a database `data/test.db` (and its companions) and `outside/`.
struct Place {
    _dir: tempfile::TempDir,
    data: PathBuf,
    db: PathBuf,
    outside: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let db = data.join("test.db");
    for name in [
        "test.db",
        "test.db-wal",
        "test.db-shm",
        "test.db.memories.gen",
    ] {
        std::fs::write(data.join(name), name).unwrap();
    }
    std::fs::create_dir_all(data.join("test.db.memories.segs")).unwrap();
    Place {
        _dir: dir,
        data,
        db,
        outside,
    }
}

impl Place {
    fn default_reach(&self) -> ExportDir {
        ExportDir::default_for(&self.db)
    }
    fn exports(&self) -> PathBuf {
        self.data.join("exports")
    }
    fn target(&self, reach: &ExportDir, path: &str, overwrite: bool) -> Result<ExportTarget> {
        export_target(reach, &self.db, Path::new(path), overwrite)
    }
    fn export(
        &self,
        reach: &ExportDir,
        path: &str,
        overwrite: bool,
        text: &str,
    ) -> Result<PathBuf> {
        let target = self.target(reach, path, overwrite)?;
        target.write(&self.db, |out| out.write_all(text.as_bytes()))?;
        Ok(target.path)
    }
    fn import(&self, reach: &ExportDir, path: &str) -> Result<String> {
        read_import(reach, &self.db, Path::new(path), 1 << 20)
    }
}

fn reason(err: Error) -> String {
    match err {
        Error::PathRefused { reason, .. } => reason,
        other => panic!("not a path refusal: {other}"),
    }
}

#[test]
fn a_relative_path_lands_in_the_default_folder_which_the_first_export_creates() {
    let p = place();
    assert!(!p.exports().exists());
    let path = p.export(&p.default_reach(), "a.jsonl", false, "x").unwrap();
    assert_eq!(path, p.exports().canonicalize().unwrap().join("a.jsonl"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "x");
    assert_eq!(
        std::fs::metadata(p.exports()).unwrap().mode() & 0o777,
        0o700
    );
    // Nothing but the file: the temporary file is gone.
    let names: Vec<_> = std::fs::read_dir(p.exports()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1);
    assert_eq!(p.import(&p.default_reach(), "a.jsonl").unwrap(), "x");
}

#[test]
fn outside_the_folder_is_refused_alike_whether_it_exists_or_not() {
    let p = place();
    let reach = p.default_reach();
    std::fs::write(p.outside.join("real.jsonl"), "secret").unwrap();
    let existing = p.outside.join("real.jsonl");
    let missing = p.outside.join("missing/none.jsonl");
    for path in [&existing, &missing] {
        let err = p.target(&reach, path.to_str().unwrap(), true).unwrap_err();
        assert_eq!(reason(err), OUTSIDE_EXPORT);
        let err = p.import(&reach, path.to_str().unwrap()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("input_path refused: {OUTSIDE_IMPORT}")
        );
    }
    // Inside, missing reads the same too; and `..` is refused on its face.
    let err = p.import(&reach, "nothing.jsonl").unwrap_err();
    assert_eq!(reason(err), OUTSIDE_IMPORT);
    let err = p.target(&reach, "sub/../../x.jsonl", true).unwrap_err();
    assert!(reason(err).contains("'..'"));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "secret");
}

#[test]
fn the_stores_own_files_are_refused_even_inside_the_folder() {
    let p = place();
    // The export folder is the data folder itself, and `/` (the old reach).
    for reach in [
        ExportDir::Folder(p.data.clone()),
        ExportDir::Folder("/".into()),
    ] {
        for name in [
            "test.db",
            "test.db-wal",
            "test.db-shm",
            "test.db-journal",
            "test.db.memories.gen",
            "test.db.memories.segs/seg-1",
        ] {
            let path = p.data.join(name);
            let err = p.target(&reach, path.to_str().unwrap(), true).unwrap_err();
            assert_eq!(reason(err), STORE_FILE, "{name}");
        }
    }
    let reach = ExportDir::Folder(p.data.clone());
    // Relative, through a symlink inside the folder, and under the operator's reach.
    assert_eq!(
        reason(p.target(&reach, "test.db-wal", true).unwrap_err()),
        STORE_FILE
    );
    symlink(p.data.join("test.db"), p.data.join("link.jsonl")).unwrap();
    assert_eq!(
        reason(p.target(&reach, "link.jsonl", true).unwrap_err()),
        STORE_FILE
    );
    let wal = p.data.join("test.db-wal");
    let err = p
        .target(&ExportDir::Operator, wal.to_str().unwrap(), true)
        .unwrap_err();
    assert_eq!(reason(err), STORE_FILE);
    // A name that only begins like the database is not one of its files.
    p.export(&reach, "test.dbx.jsonl", false, "ok").unwrap();
    for name in [
        "test.db",
        "test.db-wal",
        "test.db-shm",
        "test.db.memories.gen",
    ] {
        assert_eq!(std::fs::read_to_string(p.data.join(name)).unwrap(), name);
    }
}

#[test]
fn a_hard_link_to_the_database_is_known_by_its_inode() {
    let p = place();
    let reach = p.default_reach();
    std::fs::create_dir_all(p.exports()).unwrap();
    std::fs::hard_link(&p.db, p.exports().join("copy.jsonl")).unwrap();
    let err = p.target(&reach, "copy.jsonl", true).unwrap_err();
    assert_eq!(reason(err), STORE_FILE);
    let err = p.import(&reach, "copy.jsonl").unwrap_err();
    assert_eq!(reason(err), OUTSIDE_IMPORT);
    assert_eq!(std::fs::read_to_string(&p.db).unwrap(), "test.db");
}

#[test]
fn symlinks_that_leave_the_folder_are_refused_both_ways() {
    let p = place();
    let reach = p.default_reach();
    std::fs::create_dir_all(p.exports()).unwrap();
    std::fs::write(p.outside.join("out.jsonl"), "outside").unwrap();
    symlink(p.outside.join("out.jsonl"), p.exports().join("file.jsonl")).unwrap();
    symlink(&p.outside, p.exports().join("sub")).unwrap();
    symlink(p.outside.join("gone"), p.exports().join("dangling.jsonl")).unwrap();
    for path in [
        "file.jsonl",
        "sub/out.jsonl",
        "sub/new.jsonl",
        "dangling.jsonl",
    ] {
        let err = p.target(&reach, path, true).unwrap_err();
        assert_eq!(reason(err), OUTSIDE_EXPORT, "{path}");
        let err = p.import(&reach, path).unwrap_err();
        assert_eq!(reason(err), OUTSIDE_IMPORT, "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(p.outside.join("out.jsonl")).unwrap(),
        "outside"
    );
    assert!(!p.outside.join("new.jsonl").exists());
    assert!(!p.outside.join("gone").exists());
    // A symlink that stays inside is followed.
    std::fs::write(p.exports().join("real.jsonl"), "inside").unwrap();
    symlink(
        p.exports().join("real.jsonl"),
        p.exports().join("alias.jsonl"),
    )
    .unwrap();
    assert_eq!(p.import(&reach, "alias.jsonl").unwrap(), "inside");
}

#[test]
fn an_existing_file_is_replaced_only_when_asked_and_then_atomically() {
    let p = place();
    let reach = p.default_reach();
    let first = p.export(&reach, "a.jsonl", false, "first").unwrap();
    let before = std::fs::metadata(&first).unwrap().ino();
    let err = p.export(&reach, "a.jsonl", false, "second").unwrap_err();
    assert_eq!(reason(err), EXISTS);
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "first");
    // Created between the check and the write: the link still refuses it.
    let target = p.target(&reach, "b.jsonl", false).unwrap();
    std::fs::write(p.exports().join("b.jsonl"), "raced").unwrap();
    let err = target
        .write(&p.db, |out| out.write_all(b"late"))
        .unwrap_err();
    assert_eq!(reason(err), EXISTS);
    assert_eq!(
        std::fs::read_to_string(p.exports().join("b.jsonl")).unwrap(),
        "raced"
    );
    p.export(&reach, "a.jsonl", true, "second").unwrap();
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "second");
    assert_ne!(
        std::fs::metadata(&first).unwrap().ino(),
        before,
        "renamed, not rewritten"
    );
    assert_eq!(std::fs::read_dir(p.exports()).unwrap().count(), 2);
}

#[test]
fn a_failed_write_leaves_no_file() {
    let p = place();
    let reach = p.default_reach();
    let target = p.target(&reach, "a.jsonl", false).unwrap();
    let err = target
        .write(&p.db, |out| {
            out.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err}");
    assert_eq!(std::fs::read_dir(p.exports()).unwrap().count(), 0);
}

#[test]
fn the_operator_names_any_path_but_still_not_over_a_file_unasked() {
    let p = place();
    let path = p.outside.join("op.jsonl");
    let path = path.to_str().unwrap();
    p.export(&ExportDir::Operator, path, false, "one").unwrap();
    let err = p
        .export(&ExportDir::Operator, path, false, "two")
        .unwrap_err();
    assert_eq!(reason(err), EXISTS);
    p.export(&ExportDir::Operator, path, true, "two").unwrap();
    assert_eq!(p.import(&ExportDir::Operator, path).unwrap(), "two");
}

#[test]
fn an_import_over_the_limit_says_so_and_a_folder_is_not_a_file() {
    let p = place();
    let reach = p.default_reach();
    std::fs::create_dir_all(p.exports().join("dir.jsonl")).unwrap();
    std::fs::write(p.exports().join("big.jsonl"), vec![b'x'; 100]).unwrap();
    let err = read_import(&reach, &p.db, Path::new("big.jsonl"), 10).unwrap_err();
    assert!(reason(err).contains("100 bytes, over the import limit of 10"));
    assert_eq!(
        reason(p.import(&reach, "dir.jsonl").unwrap_err()),
        OUTSIDE_IMPORT
    );
}

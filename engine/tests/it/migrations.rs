//! Migrations: each landed file's hash is pinned (never edited once landed), the embedded
//! list equals the folder, the final schema is a snapshot, and newer databases are refused.

use std::path::Path;

use cpersona_engine::store::db::migrate::{MIGRATIONS, supported_version};
use cpersona_engine::{Engine, EngineConfig, Error};
use sha2::{Digest, Sha256};

use crate::common::{TestEmbedder, fixture};

/// A landed migration must never change: add a new file instead.
const PINNED: &[(&str, &str)] = &[
    (
        "0001_init.sql",
        "38dd1668034e995edb0d01b341e62167960e3f5db2ca62bdf6cab809326b5d15",
    ),
    (
        "0002_fts5_trigram.sql",
        "8df1d4921db84280e6ba61ac975ead96bde81769d941e3e3b45432060e42e81c",
    ),
];

#[test]
fn landed_files_are_pinned() {
    assert_eq!(
        MIGRATIONS.len(),
        PINNED.len(),
        "a new migration needs a pinned hash here"
    );
    for (migration, (name, sha)) in MIGRATIONS.iter().zip(PINNED) {
        assert_eq!(migration.name, *name);
        let got = format!("{:x}", Sha256::digest(migration.sql.as_bytes()));
        assert_eq!(&got, sha, "{name} was edited after it landed");
    }
}

#[test]
fn list_matches_the_folder() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let listed: Vec<&str> = MIGRATIONS.iter().map(|m| m.name).collect();
    assert_eq!(
        files, listed,
        "every file in migrations/ must be listed, in order"
    );
    for (idx, name) in listed.iter().enumerate() {
        assert_eq!(
            name[..4].parse::<usize>().unwrap(),
            idx + 1,
            "numbers are contiguous from 0001"
        );
        assert!(name.ends_with(".sql") && name.as_bytes()[4] == b'_');
    }
}

#[test]
fn schema_snapshot() {
    let f = fixture();
    let conn = crate::common::conn(&f);
    let mut stmt = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |row| {
            let sql: Option<String> = row.get(2)?;
            Ok(format!(
                "{} {}: {}",
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                sql.unwrap_or_default()
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let version: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, supported_version());
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    expect_test::expect_file!["schema.snapshot"].assert_eq(&rows.join("\n"));
}

#[test]
fn newer_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", supported_version() + 1)
        .unwrap();
    drop(conn);
    let err = Engine::open(EngineConfig::new(&path), TestEmbedder::new("m", 8))
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::SchemaTooNew { found, supported } if found == supported + 1 && supported == supported_version())
    );
    assert!(err.to_string().contains("newer"));
}

#[test]
fn foreign_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (text TEXT)")
        .unwrap();
    drop(conn);
    let err = Engine::open(EngineConfig::new(&path), TestEmbedder::new("m", 8))
        .err()
        .unwrap();
    assert!(matches!(err, Error::ForeignDatabase { .. }), "{err}");
}

/// Issue 20: a CPersona file is recognised by its `schema_version` table at any
/// `user_version` (CPersona keeps a flag in bit 0, which read as "step 1 applied" here and
/// would have run step 2 over its tables), and pointed at the conversion.
#[test]
fn r20_a_cpersona_database_is_refused_at_any_user_version() {
    for user_version in [0, 1] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpersona.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY); \
             CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT); \
             PRAGMA user_version = {user_version};"
        ))
        .unwrap();
        drop(conn);
        let err = Engine::open(EngineConfig::new(&path), TestEmbedder::new("m", 8))
            .err()
            .unwrap();
        assert!(matches!(err, Error::CPersonaDatabase { .. }), "{err}");
        assert!(
            err.to_string().contains("cpersona migrate --from-cpersona"),
            "{err}"
        );
    }
}

#[test]
fn reopening_is_idempotent() {
    let f = fixture();
    let path = f.dir.path().join("store.db");
    drop(f.engine);
    let again = Engine::open(EngineConfig::new(&path), f.embedder.clone()).unwrap();
    assert_eq!(again.change_log_head().unwrap(), 0);
}

//! Crash safety of the real binary, a short seeded run: writes stream over stdio, SIGKILL lands
//! at seeded random moments (during start-up, mid-write, mid-`index rebuild`), and after each
//! restart every acknowledged write is present, the write in flight is whole or absent, SQLite,
//! FTS5 and the change log agree, and the generation file is the old one or a valid new one.
//! The long run is `cargo run -p cpersona-server --example crash_soak -- --iterations 500`.

pub(crate) mod check;
pub(crate) mod harness;

use harness::{CrashConfig, run};

#[test]
fn sigkill_at_random_points_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(&CrashConfig {
        bin: env!("CARGO_BIN_EXE_cpersona").into(),
        dir: dir.path().to_path_buf(),
        seed: 0x5EED_0009,
        iterations: 12,
        max_kill_ms: 400,
        verbose: false,
    });
    assert!(report.failures.is_empty(), "{report:#?}");
    assert_eq!(report.iterations, 12);
    // The run really wrote and really killed mid-write, or it proves nothing.
    assert!(report.acked_writes >= 12, "{report:#?}");
    assert!(report.in_flight_kills >= 3, "{report:#?}");
    assert!(report.final_rows > 0, "{report:#?}");
}

/// The checker itself must be able to fail: a row deleted behind the harness's back (through
/// SQL, so FTS5 and the change log stay in step) is reported missing.
#[test]
fn the_checker_catches_a_lost_write() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(&CrashConfig {
        bin: env!("CARGO_BIN_EXE_cpersona").into(),
        dir: dir.path().to_path_buf(),
        seed: 7,
        iterations: 2,
        max_kill_ms: 300,
        verbose: false,
    });
    assert!(report.failures.is_empty(), "{report:#?}");
    let db = dir.path().join("crash.db");
    check::check_store(&db, &report.model).unwrap();
    let (&victim, _) = report.model.iter().next().expect("the run stored rows");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("DELETE FROM memories WHERE id = ?1", [victim])
        .unwrap();
    let err = check::check_store(&db, &report.model).unwrap_err();
    assert!(err.contains(&format!("missing [{victim}]")), "{err}");
}

/// Issue 17: `cpersona reembed` killed with SIGKILL part-way leaves a store that opens with
/// every row, some already carrying the new model, and a second run finishes the rest and
/// moves the store's identity.
#[test]
fn sigkill_during_reembed_resumes_with_every_row() {
    use std::time::{Duration, Instant};

    const ROWS: usize = 600;
    const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.jsonl");
    let mut lines = vec![r#"{"_type":"header","version":"cpersona-export/1.0"}"#.to_owned()];
    for i in 0..ROWS {
        lines.push(
            serde_json::json!({"_type": "memory", "agent_id": "a",
                "timestamp": "2026-12-01T09:30:00+00:00",
                "content": format!("note {i} about the harbour, the market and the river")})
            .to_string(),
        );
    }
    std::fs::write(&file, lines.join("\n")).unwrap();
    // Written on the hashed fallback, as a new user's store is.
    let imported: serde_json::Value = serde_json::from_str(&crate::binary::run_ok(
        crate::binary::cpersona_in(dir.path()).args(["import", file.to_str().unwrap()]),
    ))
    .unwrap();
    assert_eq!(imported["imported_memories"], ROWS, "{imported}");
    // The import queues their vectors; `reembed` with the fallback embeds them.
    let mut fallback = crate::binary::cpersona_in(dir.path());
    let embedded: serde_json::Value =
        serde_json::from_str(&crate::binary::run_ok(fallback.arg("reembed"))).unwrap();
    assert_eq!(embedded["done"], ROWS, "{embedded}");
    let model_dir = crate::model::test_model_dir();
    let reembed = || {
        let mut cmd = crate::binary::cpersona_in(dir.path());
        cmd.env_remove("CPERSONA_EMBEDDING_MODE")
            .env("CPERSONA_MODEL_DIR", &model_dir)
            .arg("reembed")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    };
    let db = dir.path().join("store").join("test.db");
    let done = |conn: &rusqlite::Connection| -> (i64, i64) {
        conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(embedding_model = ?1), 0) FROM memories",
            [MODEL],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let mut child = reembed().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let killed_at = loop {
        assert!(Instant::now() < deadline, "no progress to interrupt");
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        let conn = rusqlite::Connection::open(&db).unwrap();
        let (_, re_embedded) = done(&conn);
        if re_embedded > 0 {
            child.kill().unwrap();
            child.wait().unwrap();
            break re_embedded;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let conn = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let (rows, partial) = done(&conn);
    assert_eq!(rows, ROWS as i64, "no row lost");
    assert!(
        partial >= killed_at && partial < ROWS as i64,
        "{partial} of {ROWS}"
    );
    let identity: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'embedding_model'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        identity, "hash-ngram-v1",
        "the identity moves only when done"
    );
    drop(conn);
    assert!(reembed().status().unwrap().success());
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(done(&conn), (ROWS as i64, ROWS as i64));
    let identity: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'embedding_model'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(identity, MODEL);
}

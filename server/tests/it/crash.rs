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

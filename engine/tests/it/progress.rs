//! The long operations under a caller's cancellation and progress (`cpersona_engine::progress`):
//! a cancel honoured at any of their checkpoints leaves the store and the export folder as
//! they were, and the reports count up to the total.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use cpersona_engine::progress::{Progress, Step};
use cpersona_engine::*;

use crate::common::{Fixture, counts, fixture, store};

fn seeded(rows: usize) -> Fixture {
    let f = fixture();
    for i in 0..rows {
        store(&f, "a", &format!("fact number {i} about the garden"));
    }
    f
}

fn export_request(f: &Fixture, name: &str) -> ExportRequest {
    ExportRequest {
        agent_id: "a".into(),
        output_path: f.dir.path().join(name),
        include_embeddings: false,
        overwrite: false,
    }
}

/// A progress that is cancelled from the start.
fn cancelled<T>(run: impl FnOnce(&Progress<'_>) -> T) -> T {
    let flag = AtomicBool::new(true);
    run(&Progress::new(None, Some(&flag)))
}

#[test]
fn a_cancelled_export_leaves_no_file() {
    let f = seeded(30);
    let req = export_request(&f, "out.jsonl");
    let err = cancelled(|p| f.engine.export_memories(&req, p)).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err}");
    let left: Vec<_> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("out.jsonl"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cancelled_import_or_merge_writes_nothing() {
    let src = seeded(40);
    let path = src.dir.path().join("all.jsonl");
    src.engine
        .export_memories(
            &export_request(&src, "all.jsonl"),
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    let dst = seeded(3);
    let before = counts(&dst);
    let import = ImportRequest {
        input_path: path.clone(),
        target_agent_id: "b".into(),
        ..Default::default()
    };
    let err = cancelled(|p| dst.engine.import_memories_with(&import, p)).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err}");
    assert_eq!(counts(&dst), before);

    let merge = MergeRequest {
        source_agent_id: "a".into(),
        target_agent_id: "c".into(),
        strategy: "skip".into(),
        mode: MergeMode::Move,
        ..Default::default()
    };
    let err = cancelled(|p| dst.engine.merge_memories(&merge, p)).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err}");
    assert_eq!(counts(&dst), before);

    // Not cancelled, the same calls land, and their reports count up to the total.
    let steps = Mutex::new(Vec::<Step>::new());
    let report = |step: Step| steps.lock().unwrap().push(step);
    let flag = AtomicBool::new(false);
    let progress = Progress::new(Some(&report), Some(&flag));
    let imported = dst.engine.import_memories_with(&import, &progress).unwrap();
    assert_eq!(imported.imported_memories, 40);
    let steps = steps.lock().unwrap().clone();
    let done: Vec<u64> = steps.iter().map(|s| s.done).collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert_eq!(
        steps.last().map(|s| (s.done, s.total)),
        Some((40, Some(40)))
    );
    flag.store(false, Ordering::Release);
    let merged = dst.engine.merge_memories(&merge, &progress).unwrap();
    assert_eq!(merged.merged_memories, 3);
}

#[test]
fn a_cancelled_fix_repairs_nothing() {
    let f = seeded(5);
    // A row without its vector: `fix` would queue it.
    crate::common::conn(&f)
        .execute("UPDATE memories SET embedding = NULL WHERE id = 1", [])
        .unwrap();
    let before = counts(&f);
    let req = HealthRequest {
        fix: true,
        ..HealthRequest::default()
    };
    let err = cancelled(|p| f.engine.check_health(&req, p)).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err}");
    assert_eq!(counts(&f), before);
    let still_null: bool = crate::common::conn(&f)
        .query_row(
            "SELECT embedding IS NULL FROM memories WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(still_null, "a cancelled fix touched the row");
    let report = f
        .engine
        .check_health(&req, &cpersona_engine::progress::Progress::none())
        .unwrap();
    assert!(report.fixed > 0, "the same fix, not cancelled, repairs");
}

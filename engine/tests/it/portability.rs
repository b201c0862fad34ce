//! Export / import / merge: CPersona's JSONL format, idempotent re-import, pre-computed
//! embeddings kept or queued, malformed files write nothing.

use cpersona_engine::*;
use serde_json::json;

use crate::common::{DIM, conn, counts, fixture, write_lines};

fn store(engine: &Engine, agent: &str, content: &str) {
    let out = engine
        .store(&StoreRequest {
            agent_id: agent.into(),
            content: content.into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.result, StoreResult::Stored);
}

#[test]
fn export_then_import_elsewhere_is_idempotent() {
    let src = fixture();
    store(&src.engine, "a", "alpha fact");
    store(&src.engine, "a", "beta fact");
    src.engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a session".into(),
            ..Default::default()
        })
        .unwrap();
    src.engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "a".into(),
            profile: "likes tea".into(),
            ..Default::default()
        })
        .unwrap();
    let path = src.dir.path().join("export.jsonl");
    let out = src
        .engine
        .export_memories(
            &ExportRequest {
                agent_id: "a".into(),
                output_path: path.clone(),
                include_embeddings: true,
                overwrite: false,
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!((out.memories, out.episodes, out.profiles), (2, 1, 1));
    let text = std::fs::read_to_string(&path).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], "cpersona-export/1.0");
    assert_eq!(header["memory_count"], 2);

    let dst = fixture();
    let req = ImportRequest {
        input_path: path.clone(),
        target_agent_id: "z".into(),
        ..Default::default()
    };
    let first = dst.engine.import_memories(&req).unwrap();
    assert_eq!(
        (
            first.imported_memories,
            first.imported_episodes,
            first.profile_updated
        ),
        (2, 1, true)
    );
    assert_eq!(first.embedded_rows, 3, "{first:?}");
    assert_eq!(first.queued_embeddings, 0);
    let after_first = counts(&dst);
    let again = dst.engine.import_memories(&req).unwrap();
    assert_eq!(
        (
            again.imported_memories,
            again.skipped_memories,
            again.imported_episodes,
            again.skipped_episodes
        ),
        (0, 2, 0, 1)
    );
    let mut after_again = counts(&dst);
    let mut after_first_no_log = after_first.clone();
    after_again.retain(|(t, _)| t != "change_log");
    after_first_no_log.retain(|(t, _)| t != "change_log");
    assert_eq!(after_again, after_first_no_log);
    assert_eq!(dst.engine.get_profile("z").unwrap().profile, "likes tea");
    // The imported vector equals the exported one.
    let a: Vec<u8> = conn(&src)
        .query_row(
            "SELECT embedding FROM memories WHERE content = 'alpha fact'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let b: Vec<u8> = conn(&dst)
        .query_row(
            "SELECT embedding FROM memories WHERE content = 'alpha fact'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(a, b);
}

fn header(memories: usize) -> serde_json::Value {
    json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "", "memory_count": memories, "episode_count": 0, "profile_count": 0})
}

#[test]
fn cpersona_lines_import_with_queued_or_refused_embeddings() {
    let f = fixture();
    let wrong_dim = vector::base64_encode(
        &vector::encode(&[0.5; DIM + 1], DIM + 1, EmbeddingFormat::F32).unwrap(),
    );
    let path = write_lines(
        f.dir.path(),
        &[
            header(4),
            json!({"_type": "memory", "id": 7, "agent_id": "a", "msg_id": "", "content": "no vector", "source": "{\"type\": \"User\"}", "timestamp": "2025-05-01T12:00:00+09:00", "metadata": {}, "created_at": "2025-05-01 03:00:00", "project_id": "", "channel": "", "locked": 1, "recall_count": 3, "last_recalled_at": null}),
            json!({"_type": "memory", "id": 8, "agent_id": "a", "content": "wrong width", "timestamp": "2025-05-01T12:00:00Z", "embedding_b64": wrong_dim}),
            json!({"_type": "memory", "id": 9, "agent_id": "a", "content": "bad time", "timestamp": "someday"}),
            json!({"_type": "memory", "id": 10, "agent_id": "a", "content": "", "timestamp": "2025-05-01T12:00:00Z"}),
        ],
    );
    let out = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        (
            out.imported_memories,
            out.skipped_memories,
            out.queued_embeddings
        ),
        (2, 2, 2),
        "{out:?}"
    );
    assert_eq!(out.errors.len(), 3, "{:?}", out.errors);
    assert!(
        out.errors
            .iter()
            .any(|e| e.contains("does not match the store's dimension"))
    );
    let (locked, created, source): (bool, i64, String) = conn(&f)
        .query_row(
            "SELECT locked, created_at_ms, source FROM memories WHERE content = 'no vector'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(locked);
    assert_eq!(
        created,
        time::parse_iso8601_ms("2025-05-01T03:00:00Z").unwrap()
    );
    assert_eq!(source, "{\"type\": \"User\"}");
    assert_eq!(f.engine.get_queue_status().unwrap().pending, 2);
}

#[test]
fn malformed_files_write_nothing() {
    let f = fixture();
    let before = counts(&f);
    let line = json!({"_type": "memory", "agent_id": "a", "content": "x", "timestamp": "2025-05-01T12:00:00Z"});
    let bad_count = write_lines(f.dir.path(), &[header(2), line.clone()]);
    let err = f
        .engine
        .import_memories(&ImportRequest {
            input_path: bad_count,
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::ImportMalformed { line: 1, .. }),
        "{err}"
    );
    let path = f.dir.path().join("broken.jsonl");
    std::fs::write(&path, format!("{}\n{}\n{{not json", header(2), line)).unwrap();
    let err = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::ImportMalformed { line: 3, .. }),
        "{err}"
    );
    let no_header = write_lines(f.dir.path(), &[line]);
    assert!(
        f.engine
            .import_memories(&ImportRequest {
                input_path: no_header,
                ..Default::default()
            })
            .unwrap_err()
            .is_user_error()
    );
    let up = f
        .engine
        .import_memories(&ImportRequest {
            input_path: "../x.jsonl".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(up, Error::PathRefused { .. }));
    assert_eq!(counts(&f), before);
}

#[test]
fn dry_run_counts_without_writing() {
    let f = fixture();
    let path = write_lines(
        f.dir.path(),
        &[
            header(1),
            json!({"_type": "memory", "agent_id": "a", "content": "x", "timestamp": "2025-05-01T12:00:00Z"}),
        ],
    );
    let before = counts(&f);
    let out = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            dry_run: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.imported_memories, 1);
    assert_eq!(counts(&f), before);
}

#[test]
fn merge_copies_and_moves_but_never_a_locked_row_away() {
    let f = fixture();
    store(&f.engine, "src", "one");
    store(&f.engine, "src", "two");
    store(&f.engine, "dst", "two");
    f.engine
        .lock_memory(&MemoryIdRequest {
            memory_id: 1,
            agent_id: "src".into(),
            ..Default::default()
        })
        .unwrap();
    f.engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "src".into(),
            profile: "p".into(),
            ..Default::default()
        })
        .unwrap();
    let req = MergeRequest {
        source_agent_id: "src".into(),
        target_agent_id: "dst".into(),
        mode: MergeMode::Move,
        ..Default::default()
    };
    let dry = f
        .engine
        .merge_memories(
            &MergeRequest {
                dry_run: true,
                ..req.clone()
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!(dry.merged_memories, 1);
    let out = f
        .engine
        .merge_memories(&req, &cpersona_engine::progress::Progress::none())
        .unwrap();
    assert_eq!(
        (
            out.merged_memories,
            out.skipped_memories,
            out.profile_copied
        ),
        (1, 1, true)
    );
    assert_eq!(out.source_deleted, Some(1));
    assert_eq!(out.left_at_source, Some(2));
    let c = conn(&f);
    let n = |agent: &str| -> i64 {
        c.query_row(
            "SELECT COUNT(*) FROM memories WHERE agent_id = ?",
            [agent],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!((n("src"), n("dst")), (2, 2));
    let again = f
        .engine
        .merge_memories(
            &MergeRequest {
                mode: MergeMode::Copy,
                ..req.clone()
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!(again.merged_memories, 0);
    assert!(
        f.engine
            .merge_memories(
                &MergeRequest {
                    target_agent_id: "src".into(),
                    ..req
                },
                &cpersona_engine::progress::Progress::none()
            )
            .unwrap_err()
            .is_user_error()
    );
}

/// A batch large enough for the bulk path: the FTS index holds exactly the imported rows, the
/// insert trigger is back with its stored SQL (so a later store is indexed), every row is in
/// the change log, and FTS5's own integrity check passes.
#[test]
fn bulk_import_fills_fts_and_restores_the_trigger() {
    let f = fixture();
    store(&f.engine, "a", "stored before the import");
    let trigger = |c: &rusqlite::Connection| -> String {
        c.query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'memories_fts_ai'",
            [],
            |row| row.get(0),
        )
        .unwrap()
    };
    let before = trigger(&conn(&f));
    let rows = 600;
    let path = f.dir.path().join("bulk.jsonl");
    let mut text = json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": ""})
        .to_string()
        + "\n";
    for i in 0..rows {
        let line = json!({"_type": "memory", "agent_id": "a", "msg_id": format!("m{i}"),
            "content": format!("bulk row {i} mentions zebra{i}"),
            "timestamp": "2026-01-01T00:00:00+00:00"});
        text.push_str(&format!("{line}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let out = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.imported_memories, rows);
    store(&f.engine, "a", "stored after the import mentions okapi");
    let c = conn(&f);
    assert_eq!(trigger(&c), before);
    let hits = |q: &str| -> i64 {
        c.query_row(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?",
            [q],
            |row| row.get(0),
        )
        .unwrap()
    };
    assert_eq!(hits("\"bulk row\""), rows as i64);
    assert_eq!(hits("\"zebra599\""), 1);
    assert_eq!(
        hits("\"okapi\""),
        1,
        "the restored trigger indexes new rows"
    );
    assert_eq!(hits("\"stored before\""), 1);
    let indexed: i64 = c
        .query_row("SELECT COUNT(*) FROM memories_fts_docsize", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(indexed, rows as i64 + 2, "each row indexed once");
    c.execute(
        "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
    let logged: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM change_log WHERE table_name = 'memories' AND op = 'insert'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(logged, rows as i64 + 2);
}

// See: issue 18. An import line whose text is over the content limit was cut (and could then
// collide with another long line as a duplicate); now that line is refused and named.
#[test]
fn r18_an_import_line_over_the_limit_is_refused_and_named() {
    let f = crate::common::fixture_with(|c| c.max_content_chars = 50);
    let long = "L".repeat(51);
    let path = write_lines(
        f.dir.path(),
        &[
            json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "", "memory_count": 2, "episode_count": 2, "profile_count": 0}),
            json!({"_type": "memory", "agent_id": "a", "content": "fits", "timestamp": "2025-05-01T12:00:00Z"}),
            json!({"_type": "memory", "agent_id": "a", "content": long, "timestamp": "2025-05-01T12:00:00Z"}),
            json!({"_type": "episode", "agent_id": "a", "summary": long, "keywords": ""}),
            json!({"_type": "episode", "agent_id": "a", "summary": "fits", "keywords": long}),
        ],
    );
    let out = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            ..Default::default()
        })
        .unwrap();
    let counted = (
        out.imported_memories,
        out.skipped_memories,
        out.imported_episodes,
        out.skipped_episodes,
    );
    assert_eq!(counted, (1, 1, 0, 2), "{out:?}");
    for (line, field) in [(3, "content"), (4, "summary"), (5, "keywords")] {
        assert!(
            out.errors
                .iter()
                .any(|e| e.starts_with(&format!("line {line}:"))
                    && e.contains(field)
                    && e.contains("51 characters, over the limit of 50")),
            "line {line}: {:?}",
            out.errors
        );
    }
}

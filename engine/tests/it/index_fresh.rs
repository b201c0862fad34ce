//! Issue 16's equivalence: the index segments the write path keeps (flushes, merges, a
//! restart, rebuilds after a purge) answer every recall byte for byte like a fresh rebuild of
//! the same rows, whatever the sequence of writes (store, update, delete, purge, import).

use cpersona_engine::{
    Engine, EngineConfig, ExportRequest, ImportRequest, IndexTable, MemoryIdRequest,
    UpdateMemoryRequest,
};
use proptest::prelude::*;

use crate::common::{Fixture, fixture};
use crate::recall::{
    answers, flush_all, merge_all, rebuild_all, remove_generations, sentence, store,
};

/// One step of a random history.
#[derive(Clone, Debug)]
enum Step {
    Store {
        agent: usize,
        project: usize,
        channel: usize,
        seed: usize,
    },
    Update {
        pick: usize,
        seed: usize,
    },
    Delete {
        pick: usize,
    },
    Purge {
        agent: usize,
    },
    /// Export agent `from` and import it under agent `to`.
    Import {
        from: usize,
        to: usize,
    },
    Flush,
    Merge,
    Restart,
}

const AGENTS: [&str; 3] = ["a", "b", "c"];

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0usize..3, 0usize..3, 0usize..2, 0usize..400).prop_map(|(agent, project, channel, seed)| Step::Store { agent, project, channel, seed }),
        2 => (any::<usize>(), 0usize..400).prop_map(|(pick, seed)| Step::Update { pick, seed }),
        2 => any::<usize>().prop_map(|pick| Step::Delete { pick }),
        1 => (0usize..3).prop_map(|agent| Step::Purge { agent }),
        1 => (0usize..3, 0usize..3).prop_map(|(from, to)| Step::Import { from, to }),
        3 => Just(Step::Flush),
        1 => Just(Step::Merge),
        1 => Just(Step::Restart),
    ]
}

fn open(f: &Fixture) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.export_dir = cpersona_engine::ExportDir::Folder(f.dir.path().to_path_buf());
    Engine::open(config, f.embedder.clone()).unwrap()
}

/// Live index rows per record table (rows no newer segment or tombstone shadows).
fn live_index_rows(engine: &Engine) -> Vec<u64> {
    let status = engine.index_status().unwrap();
    status.tables.iter().map(|t| t.rows).collect()
}

/// Live memory ids with their agent, oldest first.
fn live(f: &Fixture) -> Vec<(i64, String)> {
    let conn = crate::common::conn(f);
    let mut stmt = conn
        .prepare("SELECT id, agent_id FROM memories ORDER BY id")
        .unwrap();
    stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn apply(f: &mut Fixture, n: usize, step: &Step) {
    match *step {
        Step::Store {
            agent,
            project,
            channel,
            seed,
        } => {
            store(
                f,
                AGENTS[agent],
                ["", "p1", "p2"][project],
                ["", "c1"][channel],
                &sentence(seed, 3 + seed % 3),
            );
        }
        Step::Update { pick, seed } => {
            let rows = live(f);
            if let Some((id, agent)) = rows.get(pick % rows.len().max(1)) {
                let updated = f.engine.update_memory(&UpdateMemoryRequest {
                    memory_id: *id,
                    content: sentence(seed, 4),
                    agent_id: agent.clone(),
                    ..UpdateMemoryRequest::default()
                });
                // A sentence another row of the scope already holds is refused (dedup) and
                // writes nothing: a step of the history like any other.
                match updated {
                    Ok(_) => {}
                    Err(cpersona_engine::Error::InvalidInput {
                        field: "content",
                        reason,
                    }) if reason.contains("already holds this content") => {}
                    Err(err) => panic!("update refused: {err}"),
                }
            }
        }
        Step::Delete { pick } => {
            let rows = live(f);
            if let Some((id, agent)) = rows.get(pick % rows.len().max(1)) {
                f.engine
                    .delete_memory(&MemoryIdRequest {
                        memory_id: *id,
                        agent_id: agent.clone(),
                        ..MemoryIdRequest::default()
                    })
                    .unwrap();
            }
        }
        Step::Purge { agent } => {
            f.engine.delete_agent_data(AGENTS[agent], "").unwrap();
        }
        Step::Import { from, to } => {
            let path = f.dir.path().join(format!("export-{n}.jsonl"));
            f.engine
                .export_memories(
                    &ExportRequest {
                        agent_id: AGENTS[from].into(),
                        output_path: path.clone(),
                        include_embeddings: n.is_multiple_of(2),
                        overwrite: false,
                    },
                    &cpersona_engine::progress::Progress::none(),
                )
                .unwrap();
            f.engine
                .import_memories(&ImportRequest {
                    input_path: path,
                    target_agent_id: AGENTS[to].into(),
                    ..ImportRequest::default()
                })
                .unwrap();
        }
        Step::Flush => flush_all(&f.engine),
        Step::Merge => {
            merge_all(&f.engine);
        }
        Step::Restart => f.engine = open(f),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Segments after any history == segments after a restart == a fresh rebuild.
    #[test]
    fn segments_after_any_history_answer_like_a_fresh_rebuild(
        steps in prop::collection::vec(step(), 1..40),
    ) {
        let mut f = fixture();
        f.engine = open(&f);
        for (n, step) in steps.iter().enumerate() {
            apply(&mut f, n, step);
        }
        let as_left = answers(&f.engine);
        flush_all(&f.engine);
        prop_assert_eq!(&as_left, &answers(&f.engine), "after a flush");
        let flushed_rows = live_index_rows(&f.engine);
        merge_all(&f.engine);
        prop_assert_eq!(&as_left, &answers(&open(&f)), "after merges and a restart");
        prop_assert_eq!(&flushed_rows, &live_index_rows(&f.engine), "rows after merges");
        remove_generations(&f);
        let fresh = open(&f);
        rebuild_all(&fresh);
        prop_assert_eq!(&as_left, &answers(&fresh), "a fresh rebuild");
        // Recall hides a row the segments still hold once SQLite lost it, so the answers alone
        // would not see a missed tombstone: the live rows must be the rebuild's too.
        prop_assert_eq!(&flushed_rows, &live_index_rows(&fresh), "rows of a fresh rebuild");
    }
}

/// Thirty flushes of one row each: the policy folds a level once eight segments share it
/// (taking up to 32 at once), the set stays small, and the answers never move.
#[test]
fn many_small_flushes_merge_and_answer_the_same() {
    let mut f = fixture();
    f.engine = open(&f);
    crate::recall::corpus(&f);
    flush_all(&f.engine);
    for i in 0..30 {
        store(&f, "a", "", "", &sentence(100 + i, 4));
        flush_all(&f.engine);
    }
    let before = f.engine.index_status().unwrap();
    assert!(before.tables[0].segments.len() > 8, "{before:?}");
    assert!(before.tables[0].pending_merge.is_some(), "{before:?}");
    let answered = answers(&f.engine);
    let merges = merge_all(&f.engine);
    assert!(merges >= 1, "{merges}");
    let after = f.engine.index_status().unwrap();
    assert!(after.tables[0].segments.len() < 8, "{after:?}");
    assert!(after.tables[0].last_merge_ms.is_some());
    assert_eq!(after.tables[0].rows, before.tables[0].rows);
    assert_eq!(answered, answers(&f.engine));
    // Nothing the manifest does not list is left in the directory once collected.
    let dir = f.engine.index_path(IndexTable::Memories);
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert!(
        files <= after.tables[0].segments.len() + 2 + 8,
        "{files} files in {dir:?}"
    );
}

/// FTS5 merge probe: true when a merge down to one segment still found work (the change
/// count moves by two or more, FTS5's documented test). Rolled back, so it changes nothing.
fn fts_has_segments_to_merge(f: &Fixture, table: &str) -> bool {
    let mut conn = crate::common::conn(f);
    let tx = conn.transaction().unwrap();
    let before = tx.total_changes();
    tx.execute(
        &format!("INSERT INTO {table}({table}, rank) VALUES('merge', -100000)"),
        [],
    )
    .unwrap();
    let worked = tx.total_changes() - before >= 2;
    tx.rollback().unwrap();
    worked
}

/// Every write leaves FTS5 a new b-tree segment; the upkeep (`maintain_index` with merging)
/// folds them in bounded steps until one is left, then goes idle without writing a page (a
/// reader's `data_version` does not move), and the answers never change.
// See: issue 16 (the lexical arm of a store filled by many small writes ranked 6x slower).
#[test]
fn upkeep_merges_the_full_text_segments_and_then_rests() {
    let f = fixture();
    for i in 0..40 {
        store(&f, "a", "", "", &sentence(300 + i, 5));
    }
    assert!(fts_has_segments_to_merge(&f, "memories_fts"));
    let answered = answers(&f.engine);
    let mut fts_steps = 0;
    let mut passes = 0;
    loop {
        let outcome = f.engine.maintain_index(true).unwrap();
        fts_steps += usize::from(outcome.fts_merged.contains(&"memories_fts"));
        passes += 1;
        if outcome.is_idle() {
            break;
        }
        assert!(passes < 100, "the upkeep never rests: {outcome:?}");
    }
    assert!(fts_steps >= 1);
    assert!(!fts_has_segments_to_merge(&f, "memories_fts"));
    assert_eq!(answered, answers(&f.engine));
    let reader = crate::common::conn(&f);
    let version = |c: &rusqlite::Connection| -> i64 {
        c.query_row("PRAGMA data_version", [], |r| r.get(0))
            .unwrap()
    };
    let seen = version(&reader);
    assert!(f.engine.maintain_index(true).unwrap().is_idle());
    assert_eq!(version(&reader), seen, "an idle pass wrote a page");
    // Without merging (CPERSONA_INDEX_AUTO_MERGE=false) the upkeep leaves FTS5 alone.
    store(&f, "a", "", "", &sentence(400, 5));
    store(&f, "a", "", "", &sentence(401, 5));
    assert!(fts_has_segments_to_merge(&f, "memories_fts"));
    let outcome = f.engine.maintain_index(false).unwrap();
    assert!(outcome.fts_merged.is_empty(), "{outcome:?}");
    // The writes moved the change log, so the next merging pass looks again (a pass that once
    // found nothing skips FTS5 only until then).
    let outcome = f.engine.maintain_index(true).unwrap();
    assert!(outcome.fts_merged.contains(&"memories_fts"), "{outcome:?}");
    assert!(!fts_has_segments_to_merge(&f, "memories_fts"));
}

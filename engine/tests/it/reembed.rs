//! Re-embedding after a model change (issue 17): a store whose vectors another model wrote
//! adopts the configured embedder, its rows are re-embedded in bounded steps that survive a
//! restart, recall never compares vectors of two models and says what share it covered, and
//! the store's identity moves only when the last row is done. The hashed fallback never
//! replaces a real model's vectors by itself.

use std::path::Path;
use std::sync::Arc;

use cpersona_engine::embed::hash::HashEmbedder;
use cpersona_engine::{
    ArchiveEpisodeRequest, Engine, EngineConfig, ExportDir, RecallQuery, StoreRequest,
};
use rusqlite::OptionalExtension;

use crate::common::{Fixture, TestEmbedder, fixture, store};

const LONG: &str = "The harbour opened at dawn. Fishing boats came back with the tide; the market \
    filled with crates of mackerel and squid. By noon the stalls were empty, the gulls were \
    loud, and the old ferry left for the island. In the evening the lamps along the quay were \
    lit one by one, and the cafes put their chairs outside for the night.";

fn seeded() -> Fixture {
    let f = fixture();
    for i in 0..12 {
        store(&f, "a", &format!("note {i} about apples and the river {i}"));
    }
    store(&f, "a", LONG);
    f.engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a walk along the river with apples".into(),
            ..Default::default()
        })
        .unwrap();
    f
}

fn open_with(dir: &Path, model: &str, dim: usize, adopt: bool) -> Engine {
    let mut config = EngineConfig::new(dir.join("store.db"));
    config.export_dir = ExportDir::Operator;
    config.reembed_on_model_change = adopt;
    Engine::open(config, TestEmbedder::new(model, dim)).unwrap()
}

fn conn(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("store.db")).unwrap()
}

fn meta(dir: &Path, key: &str) -> Option<String> {
    conn(dir)
        .query_row("SELECT value FROM meta WHERE key = ?", [key], |r| r.get(0))
        .optional()
        .unwrap()
}

/// Rows of memories, episodes, nodes and blocks whose vector is not `model`'s.
fn rows_not_of(dir: &Path, model: &str) -> i64 {
    conn(dir)
        .query_row(
            "SELECT (SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model <> ?1) \
             + (SELECT COUNT(*) FROM episodes WHERE embedding IS NOT NULL AND embedding_model <> ?1) \
             + (SELECT COUNT(*) FROM record_nodes WHERE embedding IS NOT NULL AND embedding_model <> ?1) \
             + (SELECT COUNT(*) FROM record_blocks WHERE embedding_i8 IS NOT NULL AND embedding_model <> ?1)",
            [model],
            |r| r.get(0),
        )
        .unwrap()
}

fn recall(engine: &Engine, text: &str) -> cpersona_engine::RecallResult {
    engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: text.into(),
            limit: 10,
            ..RecallQuery::default()
        })
        .unwrap()
}

#[test]
fn a_new_model_is_adopted_and_every_row_reembedded() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let blocks: i64 = conn(dir)
        .query_row("SELECT COUNT(*) FROM record_blocks", [], |r| r.get(0))
        .unwrap();
    assert!(blocks > 1, "the long text must have blocks to re-embed");
    // Another model, another width: nothing of the old one may ever meet its queries.
    let engine = open_with(dir, "model-b", 16, true);
    let start = engine.reembed_progress().unwrap();
    assert!(start.active);
    assert_eq!(start.from_model.as_deref(), Some("test-hash-32"));
    assert_eq!((start.rows, start.done, start.remaining), (14, 0, 14));
    assert!(start.derived_remaining >= blocks as u64);
    // Before any step the arm covers nothing and says so; the lexical arms still answer.
    let early = recall(&engine, "apples river");
    assert!(!early.response.messages.is_empty());
    assert!(
        early
            .advisories
            .iter()
            .any(|a| a.contains("re-embedding to model-b") && a.contains("covered 0 of 14")),
        "{:?}",
        early.advisories
    );
}

#[test]
fn steps_finish_the_store_then_the_identity_moves() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let engine = open_with(dir, "model-b", 16, true);
    let out = engine
        .store(&StoreRequest {
            agent_id: "a".into(),
            content: "written after the model change".into(),
            ..StoreRequest::default()
        })
        .unwrap();
    assert_eq!(
        out.embedded,
        Some(true),
        "new writes carry the adopted model"
    );
    let first = engine.reembed_step(5).unwrap();
    assert_eq!(first.embedded, 5);
    assert!(!first.finished);
    assert_eq!(
        first.progress.done, 6,
        "the five re-embedded and the new write"
    );
    // Mid-way, the vector arm returns only rows carrying the new model.
    let query = TestEmbedder::new("model-b", 16);
    let vector = cpersona_engine::embed::Embedder::embed(query.as_ref(), &["note 11 about apples"])
        .unwrap()
        .remove(0);
    let lists = engine.vector_arm("a", None, &vector, 50).unwrap();
    let returned: usize = lists.iter().map(|l| l.hits.len()).sum();
    assert_eq!(returned, 6, "{lists:?}");
    assert_eq!(
        meta(dir, "embedding_model").as_deref(),
        Some("test-hash-32")
    );
    let mut finished = 0;
    for _ in 0..20 {
        let step = engine.reembed_step(5).unwrap();
        finished += usize::from(step.finished);
        if !step.progress.active && step.finished {
            break;
        }
    }
    assert_eq!(finished, 1, "the identity moves exactly once");
    assert_eq!(rows_not_of(dir, "model-b"), 0);
    assert_eq!(meta(dir, "embedding_model").as_deref(), Some("model-b"));
    assert_eq!(meta(dir, "embedding_dim").as_deref(), Some("16"));
    assert_eq!(meta(dir, "reembed_to_model"), None);
    let after = recall(&engine, "apples river");
    assert!(
        !after.advisories.iter().any(|a| a.contains("re-embedding")),
        "{:?}",
        after.advisories
    );
    let status = engine.get_queue_status().unwrap();
    assert!(status.reembed.is_none(), "{status:?}");
    drop(engine);
    let reopened = open_with(dir, "model-b", 16, true);
    assert!(!reopened.reembed_progress().unwrap().active);
}

#[test]
fn a_restart_resumes_where_the_last_step_left_off() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let engine = open_with(dir, "model-b", 32, true);
    assert_eq!(engine.reembed_step(4).unwrap().embedded, 4);
    drop(engine);
    let engine = open_with(dir, "model-b", 32, true);
    let resumed = engine.reembed_progress().unwrap();
    assert_eq!(resumed.from_model.as_deref(), Some("test-hash-32"));
    assert_eq!((resumed.done, resumed.remaining), (4, 10));
    let status = engine.get_queue_status().unwrap();
    assert_eq!(status.reembed.as_ref().map(|r| r.done), Some(4));
    while !engine.reembed_step(64).unwrap().finished {}
    assert_eq!(rows_not_of(dir, "model-b"), 0);
}

#[test]
fn the_old_model_back_mid_way_takes_its_rows_back() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let engine = open_with(dir, "model-b", 32, true);
    engine.reembed_step(4).unwrap();
    drop(engine);
    let back = open_with(dir, "test-hash-32", 32, true);
    assert_eq!(meta(dir, "reembed_to_model"), None, "the adoption is void");
    let progress = back.reembed_progress().unwrap();
    assert_eq!((progress.remaining, progress.from_model), (4, None));
    for _ in 0..5 {
        back.reembed_step(64).unwrap();
    }
    assert_eq!(rows_not_of(dir, "test-hash-32"), 0);
    assert_eq!(
        meta(dir, "embedding_model").as_deref(),
        Some("test-hash-32")
    );
}

#[test]
fn the_fallback_never_replaces_a_model_unless_an_operator_asks() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let mut config = EngineConfig::new(dir.join("store.db"));
    config.export_dir = ExportDir::Operator;
    let engine = Engine::open(config.clone(), Arc::new(HashEmbedder::new())).unwrap();
    let blocked = engine.reembed_progress().unwrap();
    assert!(blocked.blocked.is_some(), "{blocked:?}");
    let step = engine.reembed_step(64).unwrap();
    assert_eq!(step.embedded, 0);
    assert_eq!(
        rows_not_of(dir, "test-hash-32"),
        0,
        "the model's vectors are kept"
    );
    let skipped = recall(&engine, "apples river");
    assert!(
        skipped
            .advisories
            .iter()
            .any(|a| a.contains("vector arm skipped")),
        "{:?}",
        skipped.advisories
    );
    // `cpersona reembed`: the operator's explicit start adopts it anyway.
    let started = engine.start_reembed().unwrap();
    assert!(started.blocked.is_none() && started.active, "{started:?}");
    while !engine.reembed_step(64).unwrap().finished {}
    assert_eq!(rows_not_of(dir, "hash-ngram-v1"), 0);
}

#[test]
fn adoption_off_keeps_the_old_target_until_started() {
    let Fixture { dir, engine, .. } = seeded();
    drop(engine);
    let dir = dir.path();
    let engine = open_with(dir, "model-b", 16, false);
    let out = engine
        .store(&StoreRequest {
            agent_id: "a".into(),
            content: "queued while the model differs".into(),
            ..StoreRequest::default()
        })
        .unwrap();
    assert_eq!(out.embedded, Some(false));
    assert_eq!(engine.reembed_step(64).unwrap().embedded, 0);
    engine.start_reembed().unwrap();
    while !engine.reembed_step(64).unwrap().finished {}
    // The queued row is the queue's: it drains with the adopted model.
    engine.drain_embedding_queue_now(10).unwrap();
    assert_eq!(rows_not_of(dir, "model-b"), 0);
    let missing: i64 = conn(dir)
        .query_row(
            "SELECT COUNT(*) FROM memories WHERE embedding IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(missing, 0);
}

//! Shared fixtures: a tiny deterministic embedder (words hashed into 32 dimensions) that can
//! be switched off to simulate an outage, and a store in a temporary folder.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cpersona_engine::embed::{EmbedError, Embedder, EmbedderIdentity};
use cpersona_engine::{Engine, EngineConfig, ExportDir, StoreId, StoreRequest};

pub(crate) const DIM: usize = 32;

pub(crate) struct TestEmbedder {
    identity: EmbedderIdentity,
    pub(crate) down: AtomicBool,
}

impl TestEmbedder {
    pub(crate) fn new(model_id: &str, dim: usize) -> Arc<TestEmbedder> {
        Arc::new(TestEmbedder {
            identity: EmbedderIdentity {
                model_id: model_id.into(),
                dim,
                window_tokens: 256,
            },
            down: AtomicBool::new(false),
        })
    }
}

impl Embedder for TestEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EmbedError::Unavailable {
                reason: "test embedder is down".into(),
            });
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; self.identity.dim];
                for word in text.split_whitespace() {
                    let h = word.bytes().fold(2166136261u32, |h, b| {
                        (h ^ u32::from(b)).wrapping_mul(16777619)
                    });
                    v[h as usize % self.identity.dim] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub embedder: Arc<TestEmbedder>,
    pub engine: Engine,
}

pub(crate) fn fixture() -> Fixture {
    fixture_with(|_| {})
}

/// A fresh store whose configuration `edit` changes first (associations on, a cap, …).
pub(crate) fn fixture_with(edit: impl FnOnce(&mut EngineConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let embedder = TestEmbedder::new("test-hash-32", DIM);
    let mut config = EngineConfig::new(dir.path().join("store.db"));
    // The tests here move files between fixtures' folders, as an operator would; the export
    // folder's confinement has its own tests (`portability/paths`, the server's binary tests).
    config.export_dir = ExportDir::Operator;
    edit(&mut config);
    let engine = Engine::open(config, embedder.clone()).unwrap();
    Fixture {
        dir,
        embedder,
        engine,
    }
}

/// Stores one row and returns its id; panics when the store skipped or rejected it.
pub(crate) fn store_request(f: &Fixture, req: &StoreRequest) -> i64 {
    match f.engine.store(req).unwrap().id {
        Some(StoreId::Row(id)) => id,
        other => panic!("not stored: {other:?}"),
    }
}

/// Stores `content` for `agent` with every other field defaulted; returns the row id.
pub(crate) fn store(f: &Fixture, agent: &str, content: &str) -> i64 {
    store_request(
        f,
        &StoreRequest {
            agent_id: agent.into(),
            content: content.into(),
            ..StoreRequest::default()
        },
    )
}

/// Row counts of every table a write can touch.
pub(crate) fn counts(f: &Fixture) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(f.dir.path().join("store.db")).unwrap();
    [
        "memories",
        "episodes",
        "profiles",
        "change_log",
        "embedding_queue",
        "memories_fts",
        "episodes_fts",
    ]
    .iter()
    .map(|t| {
        (
            t.to_string(),
            conn.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
                .unwrap(),
        )
    })
    .collect()
}

pub(crate) fn conn(f: &Fixture) -> rusqlite::Connection {
    rusqlite::Connection::open(f.dir.path().join("store.db")).unwrap()
}

/// Writes `lines` as a JSONL file `in.jsonl` in `dir` (an import's input).
pub(crate) fn write_lines(
    dir: &std::path::Path,
    lines: &[serde_json::Value],
) -> std::path::PathBuf {
    let path = dir.join("in.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

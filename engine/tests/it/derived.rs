//! Overflow nodes and blocks end to end: the split at write time and its report, the stored
//! sets, `get_contents` node and block ranges, the queue filling owed vectors, and the block
//! generation round trip.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use cpersona_engine::blocks::{BlockOrder, best_blocks};
use cpersona_engine::embed::{EmbedError, Embedder, EmbedderIdentity, TokenInfo};
use cpersona_engine::refs::Ref;
use cpersona_engine::{
    Engine, EngineConfig, ImportRequest, IndexTable, MemoryIdRequest, StoreId, StoreRequest,
    UpdateMemoryRequest, split_block_row_id,
};
use cpersona_index::Generation;
use serde_json::json;

use crate::common::{DIM, TestEmbedder};

/// The test embedder with a window of `WINDOW` tokens: one token per word plus two specials.
struct Windowed(Arc<TestEmbedder>, EmbedderIdentity);

const WINDOW: usize = 24;

impl Embedder for Windowed {
    fn identity(&self) -> &EmbedderIdentity {
        &self.1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.embed(texts)
    }
    fn count_tokens(&self, texts: &[&str]) -> Result<Option<Vec<TokenInfo>>, EmbedError> {
        Ok(Some(texts.iter().map(|t| measure(t)).collect()))
    }
}

fn measure(text: &str) -> TokenInfo {
    let chars: Vec<char> = text.chars().collect();
    let (mut count, mut end, mut in_word) = (2, chars.len(), false);
    for (i, c) in chars.iter().enumerate() {
        if c.is_whitespace() {
            in_word = false;
        } else if !in_word {
            in_word = true;
            count += 1;
            if count == WINDOW + 1 {
                end = i;
            }
        }
    }
    TokenInfo {
        count,
        window: WINDOW,
        truncated: count > WINDOW,
        window_end_char: end,
    }
}

struct F {
    dir: tempfile::TempDir,
    inner: Arc<TestEmbedder>,
    engine: Engine,
}

fn fixture() -> F {
    let dir = tempfile::tempdir().unwrap();
    let inner = TestEmbedder::new("test-hash-32", DIM);
    let identity = EmbedderIdentity {
        model_id: "test-hash-32".into(),
        dim: DIM,
        window_tokens: WINDOW,
    };
    let mut config = EngineConfig::new(dir.path().join("store.db"));
    // Import files are written beside the store, as an operator would place them.
    config.export_dir = cpersona_engine::ExportDir::Operator;
    let engine = Engine::open(config, Arc::new(Windowed(inner.clone(), identity))).unwrap();
    F { dir, inner, engine }
}

const LONG: &str = "The harbor opened at dawn. Boats left early.\n\
Copper lanterns hung on every mast (red, green, blue).\n\n\
The winter storm came late. Nobody expected it! Signals failed along the coast.\n\
Meadow farmers watched the river rise. Stones rolled down the garden path.\n\
```\nlet engine = start(); // never cut. here.\n```\n\
Clouds cleared by noon. The harbor reopened. Apples were sold at the market.";

fn store(f: &F, agent: &str, content: &str) -> (i64, serde_json::Value) {
    let out = f
        .engine
        .store(&StoreRequest {
            agent_id: agent.into(),
            content: content.into(),
            ..StoreRequest::default()
        })
        .unwrap();
    let body = serde_json::to_value(&out).unwrap();
    match out.id {
        Some(StoreId::Row(id)) => (id, body),
        other => panic!("not stored: {other:?}"),
    }
}

fn spans(f: &F, table: &str, id: i64) -> Vec<(usize, usize)> {
    let c = conn_of(f);
    let idx = if table == "record_nodes" {
        "node_index"
    } else {
        "block_index"
    };
    let mut stmt = c
        .prepare(&format!(
            "SELECT start_char, end_char FROM {table} WHERE parent_kind = 'mem' AND parent_id = ? ORDER BY {idx}"
        ))
        .unwrap();
    stmt.query_map([id], |r| {
        Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn conn_of(f: &F) -> rusqlite::Connection {
    rusqlite::Connection::open(f.dir.path().join("store.db")).unwrap()
}

fn cut(text: &str, (s, e): (usize, usize)) -> String {
    text.chars().skip(s).take(e - s).collect()
}

fn assert_partition(parts: &[(usize, usize)], len: usize) {
    assert_eq!(parts.first().unwrap().0, 0);
    assert_eq!(parts.last().unwrap().1, len);
    assert!(parts.windows(2).all(|w| w[0].1 == w[1].0), "{parts:?}");
}

#[test]
fn a_long_record_splits_into_nodes_and_blocks_deterministically() {
    let f = fixture();
    let (id, body) = store(&f, "a", LONG);
    let nodes = spans(&f, "record_nodes", id);
    let blocks = spans(&f, "record_blocks", id);
    assert!(nodes.len() >= 2, "{nodes:?}");
    assert_eq!(body["nodes"], json!(nodes.len()), "{body}");
    assert_eq!(body["blocks"], json!(blocks.len()), "{body}");
    assert!(body.get("derived_queued").is_none(), "{body}");
    let len = LONG.chars().count();
    assert_partition(&nodes, len);
    assert_partition(&blocks, len);
    for &node in &nodes {
        assert!(measure(&cut(LONG, node)).count <= WINDOW, "{node:?}");
        // A block never crosses a node end.
        assert!(blocks.iter().any(|b| b.1 == node.1));
    }
    // The fence stays whole.
    assert!(
        blocks
            .iter()
            .any(|&b| cut(LONG, b).contains("```\nlet engine = start(); // never cut. here.\n```"))
    );
    // Every node has a vector; every block has bits and codes of the store's width.
    let c = conn_of(&f);
    let (node_vecs, bad_blocks): (i64, i64) = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM record_nodes WHERE embedding IS NOT NULL AND parent_id = ?1), \
             (SELECT COUNT(*) FROM record_blocks WHERE parent_id = ?1 AND \
               (length(embedding_bits) != 4 OR length(embedding_i8) != 32))",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(node_vecs as usize, nodes.len());
    assert_eq!(bad_blocks, 0);
    // The same text under another agent divides the same way.
    let (other, _) = store(&f, "b", LONG);
    assert_eq!(spans(&f, "record_nodes", other), nodes);
    assert_eq!(spans(&f, "record_blocks", other), blocks);
    // A short record has neither.
    let (short, body) = store(&f, "a", "one line only");
    assert!(spans(&f, "record_nodes", short).is_empty());
    assert!(spans(&f, "record_blocks", short).is_empty());
    assert!(
        body.get("nodes").is_none() && body.get("blocks").is_none(),
        "{body}"
    );
}

#[test]
fn get_contents_serves_node_block_and_span_ranges_exactly() {
    let f = fixture();
    let (id, _) = store(&f, "a", LONG);
    let (short, _) = store(&f, "a", "one line only");
    let nodes = spans(&f, "record_nodes", id);
    let blocks = spans(&f, "record_blocks", id);
    let r = format!("mem:{id}");
    let s = format!("mem:{short}");
    let refs = vec![
        json!({"ref": r, "node": 1}),
        json!({"ref": r, "block": [1, 2]}),
        json!({"ref": r, "span": [4, 10]}),
        json!({"ref": r, "node": nodes.len()}),
        json!({"ref": r, "block": [2, 1]}),
        json!({"ref": s, "node": 0}),
        json!({"ref": s, "block": 0}),
        json!({"ref": r, "block": [0, blocks.len()]}),
        json!({"ref": r, "node": 0, "block": 0}),
    ];
    let out = f.engine.get_contents("a", None, None, &refs).unwrap();
    let body = serde_json::to_value(&out).unwrap();
    assert_eq!(out.items.len(), 3, "{body}");
    assert_eq!(out.items[0].content, cut(LONG, nodes[1]));
    assert_eq!(out.items[1].content, cut(LONG, (blocks[1].0, blocks[2].1)));
    assert_eq!(out.items[2].content, cut(LONG, (4, 10)));
    assert_eq!(
        body["items"][0]["range"],
        json!({"span": [nodes[1].0, nodes[1].1], "content_len": LONG.chars().count(),
               "node": [1, 1], "of": nodes.len()})
    );
    assert_eq!(body["items"][1]["range"]["block"], json!([1, 2]));
    let reasons: Vec<String> = out
        .unresolved
        .iter()
        .map(|u| {
            serde_json::to_value(u.reason)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            "node_out_of_range",
            "invalid_range",
            "no_current_nodes",
            "no_current_blocks",
            "block_out_of_range",
            "invalid_range"
        ]
    );
    // Another agent's record is not found, whatever range is asked.
    let out = f
        .engine
        .get_contents("b", None, None, &[json!({"ref": r, "block": 0})])
        .unwrap();
    assert!(out.items.is_empty());
    assert_eq!(
        serde_json::to_value(out.unresolved[0].reason).unwrap(),
        json!("not_found")
    );
}

#[test]
fn owed_vectors_are_queued_then_filled_by_the_drain() {
    let f = fixture();
    f.inner.down.store(true, Ordering::SeqCst);
    let (id, body) = store(&f, "a", LONG);
    assert!(body["derived_queued"].is_string(), "{body}");
    assert!(body["blocks"].as_u64().unwrap() >= 2, "{body}");
    let c = conn_of(&f);
    let owed = |c: &rusqlite::Connection| -> i64 {
        c.query_row(
            "SELECT (SELECT COUNT(*) FROM record_blocks WHERE embedding_i8 IS NULL) + \
             (SELECT COUNT(*) FROM record_nodes WHERE embedding IS NULL)",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert!(owed(&c) > 0);
    // Ranges are offsets: they are served while the vectors are owed.
    let out = f
        .engine
        .get_contents(
            "a",
            None,
            None,
            &[json!({"ref": format!("mem:{id}"), "block": 0})],
        )
        .unwrap();
    assert_eq!(out.items.len(), 1);
    f.inner.down.store(false, Ordering::SeqCst);
    let drained = f.engine.drain_embedding_queue_now(10).unwrap();
    assert_eq!(drained.derived_filled, 1);
    assert_eq!(owed(&c), 0);
}

#[test]
fn an_imported_episode_gets_block_offsets_then_vectors() {
    let f = fixture();
    let lines = [
        json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "a",
               "memory_count": 0, "episode_count": 1, "profile_count": 0}),
        json!({"_type": "episode", "agent_id": "a", "summary": LONG,
               "start_time": "2026-01-01T09:00:00Z", "end_time": "2026-01-01T10:00:00Z"}),
    ];
    let path = crate::common::write_lines(f.dir.path(), &lines);
    let out = f
        .engine
        .import_memories(&ImportRequest {
            input_path: path,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.imported_episodes, 1, "{out:?}");
    let c = conn_of(&f);
    let id: i64 = c
        .query_row("SELECT id FROM episodes", [], |r| r.get(0))
        .unwrap();
    // The offsets land with the row; they tile the summary.
    let mut stmt = c
        .prepare(
            "SELECT start_char, end_char FROM record_blocks WHERE parent_kind = 'ep' \
             AND parent_id = ? ORDER BY block_index",
        )
        .unwrap();
    let blocks: Vec<(usize, usize)> = stmt
        .query_map([id], |r| {
            Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(blocks.len() >= 2, "{blocks:?}");
    assert_partition(&blocks, LONG.chars().count());
    // The drain fills their vectors, so quotes can rank them.
    f.engine.drain_embedding_queue_now(10).unwrap();
    let stored = f.engine.stored_blocks(Ref::ep(id)).unwrap();
    assert_eq!(stored.len(), blocks.len());
    assert!(stored.iter().all(|b| b.int8.is_some()));
}

#[test]
fn update_redivides_and_delete_removes() {
    let f = fixture();
    let (id, _) = store(&f, "a", LONG);
    let before = spans(&f, "record_blocks", id);
    let longer = format!("{LONG}\nOne more line. And another.");
    let out = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: longer.clone(),
            agent_id: "a".into(),
            session_key: String::new(),
        })
        .unwrap();
    let body = serde_json::to_value(&out).unwrap();
    let after = spans(&f, "record_blocks", id);
    assert_eq!(body["blocks"], json!(after.len()), "{body}");
    assert_ne!(after, before);
    assert_partition(&after, longer.chars().count());
    f.engine
        .delete_memory(&MemoryIdRequest {
            memory_id: id,
            agent_id: "a".into(),
            session_key: String::new(),
        })
        .unwrap();
    assert!(spans(&f, "record_blocks", id).is_empty());
    assert!(spans(&f, "record_nodes", id).is_empty());
}

#[test]
fn stored_blocks_rank_by_int8_cosine() {
    let f = fixture();
    let (id, _) = store(&f, "a", LONG);
    let blocks = f.engine.stored_blocks(Ref::mem(id)).unwrap();
    let target = blocks.len() - 1;
    let text = cut(LONG, blocks[target].span);
    let query = f.inner.embed(&[text.as_str()]).unwrap().remove(0);
    let views: Vec<_> = blocks.iter().map(|b| b.vectors()).collect();
    let ranked = best_blocks(&query, &views);
    assert_eq!(ranked.len(), blocks.len());
    assert_eq!(ranked[0].index, target);
    assert_eq!(ranked[0].order, BlockOrder::Int8);
}

#[test]
fn block_generation_round_trips() {
    let f = fixture();
    let (a, _) = store(&f, "a", LONG);
    let (b, _) = store(&f, "b", &LONG.replace("harbor", "port"));
    let n_blocks = spans(&f, "record_blocks", a).len() + spans(&f, "record_blocks", b).len();
    let built = f
        .engine
        .rebuild_index(IndexTable::Blocks, &mut |_, _| {})
        .unwrap();
    assert_eq!(built.rows as usize, n_blocks);
    assert!(built.path.to_string_lossy().ends_with(".blocks.gen"));
    let generation = Generation::open(&built.path).unwrap();
    assert_eq!(generation.len(), n_blocks);
    let mut seen: Vec<(Ref, usize)> = generation
        .ids()
        .iter()
        .map(|&id| split_block_row_id(id))
        .collect();
    seen.sort_by_key(|(r, i)| (r.id, *i));
    let mut expected: Vec<(Ref, usize)> = (0..spans(&f, "record_blocks", a).len())
        .map(|i| (Ref::mem(a), i))
        .chain((0..spans(&f, "record_blocks", b).len()).map(|i| (Ref::mem(b), i)))
        .collect();
    expected.sort_by_key(|(r, i)| (r.id, *i));
    assert_eq!(seen, expected);
    // The same rows give the same bytes.
    let bytes = std::fs::read(&built.path).unwrap();
    let again = f
        .engine
        .rebuild_index(IndexTable::Blocks, &mut |_, _| {})
        .unwrap();
    assert_eq!(again.rows, built.rows);
    assert_eq!(std::fs::read(&again.path).unwrap().len(), bytes.len());
}

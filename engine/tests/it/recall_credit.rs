//! The recall-count bump (`recall/credit.rs`, CPersona 2.5 §5.8): each memory a recall
//! returns gets `recall_count + 1` and `last_recalled_at_ms = now`; paused, deep and
//! confidence-off recalls give none; another agent's rows and the change log never move.

use cpersona_engine::{Engine, EngineConfig, RecallQuery};

use crate::common::{Fixture, TestEmbedder, conn, fixture, store};

const NOW: i64 = 1_800_000_000_000;

/// `(id, recall_count, last_recalled_at_ms)` of every memory, by id, once the credit
/// waiting in memory is written.
fn credits(f: &Fixture) -> Vec<(i64, i64, Option<i64>)> {
    f.engine.flush_recall_credits().unwrap();
    written_credits(f)
}

/// The same as the database holds it now, without writing what waits.
fn written_credits(f: &Fixture) -> Vec<(i64, i64, Option<i64>)> {
    let c = conn(f);
    let mut stmt = c
        .prepare("SELECT id, recall_count, last_recalled_at_ms FROM memories ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn change_log_len(f: &Fixture) -> i64 {
    conn(f)
        .query_row("SELECT COUNT(*) FROM change_log", [], |r| r.get(0))
        .unwrap()
}

fn corpus(f: &Fixture) {
    for text in [
        "copper lantern harbor",
        "copper river stone",
        "winter garden meadow",
    ] {
        store(f, "a", text);
        store(f, "b", text);
    }
}

fn query(text: &str) -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: text.into(),
        limit: 10,
        now_ms: Some(NOW),
        ..RecallQuery::default()
    }
}

fn returned_mems(f: &Fixture, q: &RecallQuery) -> Vec<i64> {
    let result = f.engine.recall(q).unwrap();
    assert!(
        result
            .advisories
            .iter()
            .all(|a| !a.contains("recall count"))
    );
    let mut ids: Vec<i64> = result
        .response
        .messages
        .iter()
        .filter(|m| m.r#ref.to_string().starts_with("mem:"))
        .map(|m| m.r#ref.id)
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn each_returned_memory_gains_one_per_recall_and_nothing_else_moves() {
    let f = fixture();
    corpus(&f);
    let before = credits(&f);
    let log = change_log_len(&f);
    let returned = returned_mems(&f, &query("copper"));
    assert!(!returned.is_empty(), "the query must return memories");
    let after = credits(&f);
    for ((id, count, at), (_, was, _)) in after.iter().zip(&before) {
        if returned.contains(id) {
            assert_eq!((*count, *at), (was + 1, Some(NOW)), "mem:{id}");
        } else {
            assert_eq!((*count, *at), (*was, None), "mem:{id} was not returned");
        }
    }
    // Another recall returning the same rows adds one more each.
    let again = returned_mems(&f, &query("copper"));
    let twice = credits(&f);
    for (id, count, _) in &twice {
        let expected = i64::from(returned.contains(id)) + i64::from(again.contains(id));
        assert_eq!(*count, expected, "mem:{id}");
    }
    // Agent b holds the same texts and is never credited by a's recalls.
    let c = conn(&f);
    let b_credit: i64 = c
        .query_row(
            "SELECT COALESCE(SUM(recall_count), 0) + COUNT(last_recalled_at_ms) FROM memories \
             WHERE agent_id = 'b'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(b_credit, 0);
    assert_eq!(
        change_log_len(&f),
        log,
        "a bump must not enter the change log"
    );
}

#[test]
fn paused_and_deep_recalls_give_no_credit() {
    let f = fixture();
    corpus(&f);
    f.engine.pause_persistence(Some(600), "s1");
    let paused = RecallQuery {
        session_key: "s1".into(),
        ..query("copper")
    };
    assert!(!returned_mems(&f, &paused).is_empty());
    assert!(credits(&f).iter().all(|(_, n, at)| *n == 0 && at.is_none()));
    // Another session is not paused: its recall credits.
    let other = RecallQuery {
        session_key: "s2".into(),
        ..query("copper")
    };
    let returned = returned_mems(&f, &other);
    let total: i64 = credits(&f).iter().map(|(_, n, _)| n).sum();
    assert_eq!(total, returned.len() as i64);
    let deep = RecallQuery {
        deep: true,
        ..query("copper")
    };
    assert!(!returned_mems(&f, &deep).is_empty());
    let after: i64 = credits(&f).iter().map(|(_, n, _)| n).sum();
    assert_eq!(after, total, "deep recalls give no credit");
}

#[test]
fn a_recall_without_credit_leaves_the_counters_alone() {
    let f = fixture();
    corpus(&f);
    let looked = f.engine.recall_without_credit(&query("copper")).unwrap();
    assert!(!looked.response.messages.is_empty());
    assert!(credits(&f).iter().all(|(_, n, at)| *n == 0 && at.is_none()));
    // The same query through recall credits what it returns.
    let returned = returned_mems(&f, &query("copper"));
    let total: i64 = credits(&f).iter().map(|(_, n, _)| n).sum();
    assert_eq!(total, returned.len() as i64);
}

#[test]
fn confidence_off_gives_no_credit() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path().join("store.db"));
    config.recall.report_confidence = false;
    let engine = Engine::open(config, TestEmbedder::new("test-hash-32", 32)).unwrap();
    let f = Fixture {
        dir,
        embedder: TestEmbedder::new("test-hash-32", 32),
        engine,
    };
    corpus(&f);
    assert!(!returned_mems(&f, &query("copper")).is_empty());
    assert!(credits(&f).iter().all(|(_, n, at)| *n == 0 && at.is_none()));
}

/// Credit waits in memory (a recall writes nothing, so readers keep their caches), yet the
/// next recall's confidence counts it exactly as if each credit had been written at once;
/// it lands on the next flush, and a store closed with credit waiting writes it first.
#[test]
fn waiting_credit_counts_at_once_and_lands_on_flush_or_close() {
    let waiting = fixture();
    let written = fixture();
    corpus(&waiting);
    corpus(&written);
    let mut bodies = Vec::new();
    for _ in 0..3 {
        let kept = waiting.engine.recall(&query("copper")).unwrap();
        let immediate = written.engine.recall(&query("copper")).unwrap();
        assert!(written.engine.flush_recall_credits().unwrap() > 0);
        let kept = without_timestamps(&kept.response);
        assert_eq!(kept, without_timestamps(&immediate.response));
        bodies.push(kept);
    }
    assert_ne!(
        bodies[0], bodies[1],
        "the first recall's credit must show in the second's confidence"
    );
    assert!(
        written_credits(&waiting)
            .iter()
            .all(|(_, n, at)| *n == 0 && at.is_none()),
        "nothing is written before a flush"
    );
    let expected = written_credits(&written);
    assert!(expected.iter().any(|(_, n, _)| *n == 3));
    // A store closed with credit waiting writes it as it closes.
    let Fixture { dir, engine, .. } = waiting;
    drop(engine);
    let c = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
    let mut stmt = c
        .prepare("SELECT id, recall_count, last_recalled_at_ms FROM memories ORDER BY id")
        .unwrap();
    let closed: Vec<(i64, i64, Option<i64>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(closed, expected);
}

/// A response as JSON text without its rows' timestamps (two stores written a millisecond
/// apart differ in those alone).
fn without_timestamps(response: &impl serde::Serialize) -> String {
    let mut value = serde_json::to_value(response).unwrap();
    for message in value["messages"].as_array_mut().unwrap() {
        message.as_object_mut().unwrap().remove("timestamp");
    }
    value.to_string()
}

/// An export carries the counters with the credit that was still waiting.
#[test]
fn export_writes_the_waiting_credit_first() {
    let f = fixture();
    corpus(&f);
    let returned = returned_mems(&f, &query("copper"));
    assert!(!returned.is_empty());
    let path = f.dir.path().join("out.jsonl");
    f.engine
        .export_memories(
            &cpersona_engine::ExportRequest {
                agent_id: "a".into(),
                output_path: path.clone(),
                include_embeddings: false,
                overwrite: false,
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut exported: Vec<i64> = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|v| v["_type"] == "memory" && v["recall_count"] == 1)
        .map(|v| v["id"].as_i64().unwrap())
        .collect();
    exported.sort_unstable();
    assert_eq!(exported, returned);
}

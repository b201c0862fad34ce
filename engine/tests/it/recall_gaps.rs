//! The recall arguments the engine now owns: `exclude_contents`, `source_id` and
//! `min_similarity` act before the count cut (so `limit` rows still come back), confidence is
//! reported beside each row without moving it, and the per-agent precision β reaches the
//! calibration the gate reads.

use cpersona_engine::{Engine, EngineConfig, RecallQuery, StoreRequest};
use serde_json::json;

use crate::common::{Fixture, TestEmbedder, fixture};

fn store(f: &Fixture, content: &str, source: &str) {
    f.engine
        .store(&StoreRequest {
            agent_id: "a".into(),
            content: content.into(),
            source: Some(json!({"type": "User", "id": source})),
            timestamp: Some("2026-01-01T00:00:00+00:00".into()),
            ..StoreRequest::default()
        })
        .unwrap();
}

/// 24 rows that all match "apple", in three sources (two sharing a namespace and a prefix).
fn corpus(f: &Fixture) {
    for i in 0..24 {
        let source = match i % 3 {
            0 => "discord:1",
            1 => "discord:10",
            _ => "slack:2",
        };
        store(f, &format!("apple note {i} river"), source);
    }
}

fn ask(limit: usize) -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: "apple note".into(),
        limit,
        now_ms: Some(1_767_312_000_000), // 2026-01-02T00:00:00Z
        ..RecallQuery::default()
    }
}

fn contents(f: &Fixture, q: &RecallQuery) -> Vec<String> {
    let r = f.engine.recall(q).unwrap();
    r.response
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect()
}

#[test]
fn exclude_contents_still_returns_limit_rows() {
    let f = fixture();
    corpus(&f);
    let first = contents(&f, &ask(5));
    assert_eq!(first.len(), 5);
    let mut q = ask(5);
    // Exact (short) entries, in another case and padded.
    q.exclude_contents = first
        .iter()
        .map(|c| format!("  {} ", c.to_uppercase()))
        .collect();
    let r = f.engine.recall(&q).unwrap();
    let second: Vec<String> = r
        .response
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(second.len(), 5, "the count cut comes after the filter");
    assert!(second.iter().all(|c| !first.contains(c)), "{second:?}");
    assert!(r.filtered.excluded >= 5, "{:?}", r.filtered);
}

/// `source_id` names one id whole (`discord:1` is not `discord:10`) or, ending in a
/// delimiter, a namespace (`discord:`), as CPersona 2.6.14 reads it; it filters before the
/// count cut, so the count is still met.
#[test]
fn source_id_selects_one_id_or_a_namespace_before_the_count_cut() {
    let f = fixture();
    corpus(&f);
    let sources = |source_id: &str| -> Vec<String> {
        let mut q = ask(6);
        q.source_id = source_id.into();
        let r = f.engine.recall(&q).unwrap();
        assert!(r.filtered.source_mismatch > 0, "{source_id}");
        r.response
            .messages
            .iter()
            .map(|m| {
                m.source
                    .as_ref()
                    .and_then(|s| s.get("id"))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    let one = sources("discord:1");
    assert_eq!(one.len(), 6);
    assert!(one.iter().all(|id| id == "discord:1"), "{one:?}");
    let namespace = sources("discord:");
    assert_eq!(namespace.len(), 6);
    assert!(
        namespace.iter().any(|id| id == "discord:10"),
        "{namespace:?}"
    );
    assert!(
        namespace.iter().all(|id| id.starts_with("discord:")),
        "{namespace:?}"
    );
}

#[test]
fn min_similarity_drops_weak_vector_hits() {
    let f = fixture();
    corpus(&f);
    let mut q = ask(10);
    q.trace = true;
    q.min_similarity = Some(1.5); // above any cosine: the vector arms come back empty
    let r = f.engine.recall(&q).unwrap();
    let stages = r.stages.unwrap();
    assert!(
        stages
            .arms
            .iter()
            .filter(|a| a.arm.is_vector())
            .all(|a| a.hits.is_empty())
    );
    assert!(r.filtered.below_similarity > 0);
    assert_eq!(
        r.response.messages.len(),
        10,
        "the lexical arms still answer"
    );
}

#[test]
fn confidence_is_reported_and_moves_nothing() {
    let f = fixture();
    corpus(&f);
    let r = f.engine.recall(&ask(8)).unwrap();
    for m in &r.response.messages {
        let c = m.confidence.expect("confidence beside every row");
        assert!((0.0..=1.0).contains(&c.score), "{c:?}");
        assert!((c.age_hours - 24.0).abs() < 0.05, "{c:?}");
    }
    // The same store without confidence gives the same rows in the same order.
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.recall.report_confidence = false;
    let plain = Engine::open(
        config,
        TestEmbedder::new("test-hash-32", crate::common::DIM),
    )
    .unwrap()
    .recall(&ask(8))
    .unwrap();
    let refs = |r: &cpersona_engine::RecallResult| {
        r.response
            .messages
            .iter()
            .map(|m| m.r#ref)
            .collect::<Vec<_>>()
    };
    assert_eq!(refs(&plain), refs(&r));
    assert!(
        plain
            .response
            .messages
            .iter()
            .all(|m| m.confidence.is_none())
    );
}

#[test]
fn recall_precision_is_per_agent_and_rolls_back_when_calibration_fails() {
    let f = fixture();
    for i in 0..60 {
        let session = format!("s{}", i / 6);
        store(
            &f,
            &format!("{session} apple river stone note {i}"),
            &session,
        );
    }
    assert_eq!(f.engine.recall_beta("a").unwrap(), None);
    let strict = f.engine.set_recall_precision("a", Some(2.0), "").unwrap();
    let strict_threshold = strict.calibration.as_ref().unwrap().calibration.threshold;
    assert_eq!(f.engine.recall_beta("a").unwrap(), Some(2.0));
    assert_eq!(strict.beta, 2.0);
    let lenient = f.engine.set_recall_precision("a", Some(0.5), "").unwrap();
    let lenient_threshold = lenient.calibration.as_ref().unwrap().calibration.threshold;
    assert!(
        strict_threshold >= lenient_threshold,
        "strict {strict_threshold} < lenient {lenient_threshold}"
    );
    assert_eq!(f.engine.recall_beta("b").unwrap(), None, "per agent");
    let cleared = f.engine.set_recall_precision("a", None, "").unwrap();
    assert!(cleared.cleared);
    assert_eq!(f.engine.recall_beta("a").unwrap(), None);
    // An agent without enough rows cannot be calibrated: its β stays as it was.
    let failed = f
        .engine
        .set_recall_precision("empty", Some(2.0), "")
        .unwrap();
    assert!(failed.calibration.is_err());
    assert_eq!(f.engine.recall_beta("empty").unwrap(), None);
    assert!(f.engine.set_recall_precision("a", Some(-1.0), "").is_err());
}

fn set_profile(f: &Fixture, agent: &str, text: &str) {
    f.engine
        .update_profile(&cpersona_engine::UpdateProfileRequest {
            agent_id: agent.into(),
            profile: text.into(),
            session_key: String::new(),
        })
        .unwrap();
}

/// CPersona's `[Profile]` row: it joins an answer that leaves a place under `limit` once the
/// scope holds 50 rows, never takes a ranked row's place, and is never credited.
#[test]
fn the_profile_row_fills_a_free_place_once_the_pool_holds_fifty_rows() {
    let f = fixture();
    set_profile(&f, "a", "prefers short answers");
    // 24 "apple" rows: a pool under 50, so no profile however much room is left.
    corpus(&f);
    assert!(f.engine.recall(&ask(100)).unwrap().profile.is_none());
    for i in 0..30 {
        store(&f, &format!("weather log {i} cloudy"), "discord:1");
    }
    // 54 rows in scope: an answer with room gets the profile, marked as such.
    let roomy = f.engine.recall(&ask(100)).unwrap();
    let ranked = roomy.response.messages.len();
    assert!(ranked < 100, "{ranked}");
    let profile = roomy
        .profile
        .expect("a place was free and the pool holds 54 rows");
    assert_eq!(profile.content, "[Profile] prefers short answers");
    assert_eq!(profile.source, json!({"System": "profile"}));
    assert_eq!(profile.match_reason.pool, 54);
    // A full answer keeps every ranked row and no profile.
    let full = f.engine.recall(&ask(5)).unwrap();
    assert_eq!(full.response.messages.len(), 5);
    assert!(full.profile.is_none());
    // Another agent's profile never shows; an agent without one gets none.
    set_profile(&f, "b", "someone else");
    let mut other = ask(100);
    other.agent_id = "c".into();
    for i in 0..55 {
        f.engine
            .store(&StoreRequest {
                agent_id: "c".into(),
                content: format!("apple note {i} for c"),
                ..StoreRequest::default()
            })
            .unwrap();
    }
    assert!(f.engine.recall(&other).unwrap().profile.is_none());
}

/// An embedder that counts the single-text calls made for `query`.
struct CountingQueries {
    inner: std::sync::Arc<TestEmbedder>,
    query: &'static str,
    calls: std::sync::atomic::AtomicUsize,
}

impl cpersona_engine::embed::Embedder for CountingQueries {
    fn identity(&self) -> &cpersona_engine::embed::EmbedderIdentity {
        self.inner.identity()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, cpersona_engine::embed::EmbedError> {
        if texts == [self.query] {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.embed(texts)
    }
}

/// CPersona's query-vector cache: a query asked again is not embedded again (while the
/// cache holds it), answers the same, and with the cache off is embedded every time.
#[test]
fn a_repeated_query_is_embedded_once_unless_the_cache_is_off() {
    for (entries, expected_calls) in [(256, 1), (0, 3)] {
        let dir = tempfile::tempdir().unwrap();
        let embedder = std::sync::Arc::new(CountingQueries {
            inner: TestEmbedder::new("test-hash-32", crate::common::DIM),
            query: "apple note",
            calls: Default::default(),
        });
        let mut config = EngineConfig::new(dir.path().join("store.db"));
        config.query_cache.entries = entries;
        let f = Fixture {
            engine: Engine::open(config, embedder.clone()).unwrap(),
            embedder: TestEmbedder::new("test-hash-32", crate::common::DIM),
            dir,
        };
        corpus(&f);
        let first = contents(&f, &ask(5));
        assert_eq!(contents(&f, &ask(5)), first);
        assert_eq!(contents(&f, &ask(5)), first);
        assert_eq!(
            embedder.calls.load(std::sync::atomic::Ordering::SeqCst),
            expected_calls,
            "cache of {entries}"
        );
    }
}

/// Calibrating an agent with too few rows is the caller's problem, said as such (an MCP
/// client sees the message, not "internal error").
#[test]
fn too_few_rows_to_calibrate_is_a_user_error() {
    let f = fixture();
    store(&f, "one lonely note", "discord:1");
    let err = f
        .engine
        .calibrate_threshold(&cpersona_engine::CalibrateRequest {
            agent_id: "a",
            ..Default::default()
        })
        .unwrap_err();
    assert!(err.is_user_error(), "{err}");
    assert!(err.to_string().contains("too few pairs"), "{err}");
}

//! `Engine::recall`, `get_contents`, generations and the live tail end to end, on small
//! corpora with the hashed-words test embedder.

use cpersona_engine::{
    ArchiveEpisodeRequest, CalibrateRequest, Engine, EngineConfig, IndexTable, ListMemoriesRequest,
    MAX_SAMPLE_SIZE, MemoryIdRequest, RecallQuery, ReconstructRequest, StoreId, StoreRequest,
    ThresholdMethod, UpdateMemoryRequest,
};
use cpersona_index::Kernels;
use proptest::prelude::*;
use serde_json::json;

use crate::common::{Fixture, TestEmbedder, conn, fixture};

const WORDS: &[&str] = &[
    "apple", "river", "stone", "cloud", "engine", "garden", "winter", "copper", "signal", "harbor",
    "lantern", "meadow",
];

pub(crate) fn store(f: &Fixture, agent: &str, project: &str, channel: &str, content: &str) -> i64 {
    let out = f
        .engine
        .store(&StoreRequest {
            agent_id: agent.into(),
            project_id: project.into(),
            channel: channel.into(),
            content: content.into(),
            ..StoreRequest::default()
        })
        .unwrap();
    match out.id {
        Some(StoreId::Row(id)) => id,
        other => panic!("not stored: {other:?}"),
    }
}

pub(crate) fn sentence(seed: usize, n: usize) -> String {
    (0..n)
        .map(|i| WORDS[(seed * 7 + i * 5 + seed / 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" note{seed}")
}

pub(crate) fn corpus(f: &Fixture) {
    for i in 0..40 {
        let agent = if i % 4 == 3 { "b" } else { "a" };
        let project = ["", "p1", "p2"][i % 3];
        let channel = ["", "c1"][i % 2];
        store(f, agent, project, channel, &sentence(i, 3 + i % 4));
    }
    for i in 0..4 {
        f.engine
            .archive_episode(&ArchiveEpisodeRequest {
                agent_id: "a".into(),
                summary: format!("episode about {} and {}", WORDS[i], WORDS[i + 3]),
                keywords: WORDS[i + 1].into(),
                ..ArchiveEpisodeRequest::default()
            })
            .unwrap();
    }
}

fn query(agent: &str, text: &str) -> RecallQuery {
    RecallQuery {
        agent_id: agent.into(),
        query: text.into(),
        limit: 10,
        ..RecallQuery::default()
    }
}

const QUERIES: &[&str] = &[
    "apple river",
    "winter copper signal",
    "note7",
    "episode harbor",
    "zzz",
];

/// The session the comparisons recall in (see [`answers`]).
const COMPARE: &str = "compare";

/// The response bodies of a fixed query set, as JSON text.
///
/// A recall credits the memories it returns (`recall_count`, which the confidence report
/// reads), so the same query set run twice on one store would differ in its confidence
/// objects by the first run's credit alone. These tests compare answers across index states
/// (generations, kernels, scan windows), not across recall histories: the set runs in a
/// paused session, which gives no credit, so every run reads the store as the test left it.
pub(crate) fn answers(engine: &Engine) -> Vec<String> {
    engine.pause_persistence(Some(3_600), COMPARE);
    let mut out = Vec::new();
    for agent in ["a", "b"] {
        for q in QUERIES {
            for (project, channel) in [(None, None), (Some("p1"), Some("c1")), (Some(""), None)] {
                let mut rq = query(agent, q);
                rq.project_id = project.map(str::to_owned);
                rq.channel = channel.map(str::to_owned);
                rq.session_key = COMPARE.into();
                let r = engine.recall(&rq).unwrap();
                out.push(timeless(&r.response));
            }
        }
    }
    out
}

/// A response as JSON text without each row's `confidence.score`: its recency decay reads
/// the clock, so two runs a few seconds apart on a loaded machine can differ in its fourth
/// decimal (0.5332 vs 0.5331) whatever the index state. Rows, ranks, cosines and fused
/// scores, which the index decides, are all kept.
fn timeless(response: &impl serde::Serialize) -> String {
    let mut body = serde_json::to_value(response).unwrap();
    if let Some(messages) = body["messages"].as_array_mut() {
        for message in messages {
            if let Some(confidence) = message
                .get_mut("confidence")
                .and_then(serde_json::Value::as_object_mut)
            {
                confidence.remove("score");
            }
        }
    }
    body.to_string()
}

fn reopen(f: &Fixture) -> Engine {
    reopen_with_window(f, cpersona_engine::MAX_MEMORIES)
}

pub(crate) fn reopen_with_window(f: &Fixture, window: usize) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.scan_window = window;
    Engine::open(config, f.embedder.clone()).unwrap()
}

pub(crate) fn remove_generations(f: &Fixture) {
    for table in IndexTable::ALL {
        let _ = std::fs::remove_dir_all(f.engine.index_path(table));
    }
}

/// Flushes every table until it is up to the change log (what `serve` does in the background).
pub(crate) fn flush_all(engine: &Engine) {
    for table in IndexTable::ALL {
        while let Some(out) = engine.flush_index(table).unwrap() {
            assert!(!out.raced, "{out:?}");
        }
    }
}

/// Runs every merge the policy picks.
pub(crate) fn merge_all(engine: &Engine) -> usize {
    let mut merges = 0;
    for table in IndexTable::ALL {
        while engine.merge_index(table).unwrap().is_some() {
            merges += 1;
        }
    }
    merges
}

pub(crate) fn rebuild_all(engine: &Engine) {
    for table in IndexTable::ALL {
        let out = engine.rebuild_index(table, &mut |_, _| {}).unwrap();
        assert!(!out.discarded);
    }
}

#[test]
fn fresh_stale_and_missing_generations_answer_the_same() {
    check_generation_equivalence(cpersona_engine::MAX_MEMORIES);
}

/// A window of 7 rows puts most of the corpus in the far list, so the window boundary is
/// placed from the generation merged with the tail, and from SQLite without one.
#[test]
fn with_a_small_scan_window_fresh_stale_and_missing_generations_answer_the_same() {
    check_generation_equivalence(7);
}

fn check_generation_equivalence(window: usize) {
    let mut f = fixture();
    f.engine = reopen_with_window(&f, window);
    corpus(&f);
    let none = answers(&f.engine);
    assert!(none.iter().any(|a| a.contains("mem:")), "{none:?}");
    rebuild_all(&f.engine);
    let status = f.engine.index_status().unwrap();
    assert_eq!(status.tables[0].rows, 40);
    assert_eq!(status.tables[0].live_tail, 0);
    let fresh = answers(&f.engine);
    assert_eq!(none, fresh);
    if window < 40 {
        assert!(fresh.iter().any(|a| a.contains("vector_far")), "{fresh:?}");
    }

    // Writes, an update and deletes since the generation.
    store(&f, "a", "p1", "c1", "apple river brand new row");
    store(&f, "b", "", "", "winter copper signal fresh");
    f.engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: 2,
            content: "apple river rewritten".into(),
            agent_id: "a".into(),
            ..UpdateMemoryRequest::default()
        })
        .unwrap();
    for id in [1, 5] {
        f.engine
            .delete_memory(&MemoryIdRequest {
                memory_id: id,
                agent_id: "a".into(),
                ..MemoryIdRequest::default()
            })
            .unwrap();
    }
    let status = f.engine.index_status().unwrap();
    assert!(status.tables[0].live_tail >= 4, "{status:?}");
    let stale = answers(&f.engine);
    // The same rows through the write path: the changes flushed into a segment (tombstones
    // for the deletes), then merged, then after a restart.
    flush_all(&f.engine);
    let status = f.engine.index_status().unwrap();
    assert_eq!(status.tables[0].live_tail, 0, "{status:?}");
    assert_eq!(status.tables[0].segments.len(), 2, "{status:?}");
    assert!(status.tables[0].tombstones >= 2, "{status:?}");
    assert_eq!(stale, answers(&f.engine), "flushed segments");
    assert_eq!(stale, answers(&reopen_with_window(&f, window)), "restart");
    remove_generations(&f);
    let missing = answers(&reopen_with_window(&f, window));
    assert_eq!(stale, missing);
    let rebuilt = reopen_with_window(&f, window);
    rebuild_all(&rebuilt);
    assert_eq!(stale, answers(&rebuilt));
    assert_ne!(stale, fresh, "the writes must change some answer");
}

#[test]
fn scalar_and_detected_kernels_answer_the_same() {
    let f = fixture();
    corpus(&f);
    rebuild_all(&f.engine);
    let detected = answers(&f.engine);
    let scalar = reopen(&f).with_kernels(Kernels::scalar());
    assert_eq!(detected, answers(&scalar));
}

#[test]
fn a_rebuild_overtaken_by_a_purge_is_not_used() {
    let f = fixture();
    corpus(&f);
    // A purge mark above any head a build can read: the build must discard.
    conn(&f)
        .execute(
            "INSERT INTO meta(key, value) VALUES ('index_purged_through_seq', '999999')",
            [],
        )
        .unwrap();
    let out = f
        .engine
        .rebuild_index(IndexTable::Memories, &mut |_, _| {})
        .unwrap();
    assert!(out.discarded);
    assert_eq!(f.engine.index_status().unwrap().tables[0].generation, None);
}

#[test]
fn a_generation_older_than_a_purge_is_not_used() {
    let f = fixture();
    corpus(&f);
    rebuild_all(&f.engine);
    let built = f.engine.index_status().unwrap().tables[0].generation;
    assert!(built.is_some());
    f.engine.delete_agent_data("b", "").unwrap();
    let status = f.engine.index_status().unwrap();
    assert_eq!(status.tables[0].generation, None, "{status:?}");
    assert!(
        status.tables[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("purge")
    );
    let r = f
        .engine
        .recall(&query("b", "winter copper signal"))
        .unwrap();
    assert!(r.response.messages.is_empty());
    // The next background flush rebuilds it whole, and it is usable again.
    let flushed = f.engine.flush_index(IndexTable::Memories).unwrap().unwrap();
    assert!(flushed.rebuilt, "{flushed:?}");
    let status = f.engine.index_status().unwrap();
    assert!(status.tables[0].generation > built, "{status:?}");
    assert_eq!(status.tables[0].rows, 30, "agent b's 10 rows are gone");
}

#[test]
fn a_generation_of_another_embedder_is_ignored() {
    let f = fixture();
    corpus(&f);
    rebuild_all(&f.engine);
    let before = answers(&f.engine);
    drop(f.engine);
    // Same store, generation files copied from a store of another model.
    let other_dir = tempfile::tempdir().unwrap();
    let other = Engine::open(
        EngineConfig::new(other_dir.path().join("store.db")),
        TestEmbedder::new("other-model", 32),
    )
    .unwrap();
    other
        .store(&StoreRequest {
            agent_id: "a".into(),
            content: "apple river".into(),
            ..StoreRequest::default()
        })
        .unwrap();
    other
        .rebuild_index(IndexTable::Memories, &mut |_, _| {})
        .unwrap();
    let engine = Engine::open(
        EngineConfig::new(f.dir.path().join("store.db")),
        f.embedder.clone(),
    )
    .unwrap();
    let ours = engine.index_path(IndexTable::Memories);
    std::fs::remove_dir_all(&ours).unwrap();
    std::fs::create_dir(&ours).unwrap();
    for entry in std::fs::read_dir(other.index_path(IndexTable::Memories)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), ours.join(entry.file_name())).unwrap();
    }
    let status = engine.index_status().unwrap();
    assert_eq!(status.tables[0].generation, None);
    assert!(
        status.tables[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("another embedder"),
        "{status:?}"
    );
    assert_eq!(before, answers(&engine));
    // The next flush starts the directory over for this store's model.
    assert!(
        engine
            .flush_index(IndexTable::Memories)
            .unwrap()
            .unwrap()
            .rebuilt
    );
    assert!(
        engine.index_status().unwrap().tables[0]
            .generation
            .is_some()
    );
    assert_eq!(before, answers(&engine));
}

#[test]
fn golden_recall_response() {
    let f = fixture();
    for i in 0..30 {
        f.engine
            .store(&StoreRequest {
                agent_id: ["a", "b"][i % 2].into(),
                content: sentence(i, 3 + i % 4),
                timestamp: Some(format!("2026-01-{:02}T09:30:00+00:00", i + 1)),
                ..StoreRequest::default()
            })
            .unwrap();
    }
    rebuild_all(&f.engine);
    let mut rq = query("a", "apple river stone");
    rq.limit = 4;
    // Confidence ages are measured against this clock, so the golden does not age.
    rq.now_ms = Some(1_769_904_000_000); // 2026-02-01T00:00:00Z
    let r = f.engine.recall(&rq).unwrap();
    let body = serde_json::to_string_pretty(&r.response).unwrap();
    expect_test::expect_file!["recall_golden.json"].assert_eq(&body);
}

#[test]
fn get_contents_limits_and_unresolved() {
    let f = fixture();
    let mine = store(&f, "a", "", "", "my own words");
    let theirs = store(&f, "b", "", "", "their secret words");
    let refs = vec![
        json!(format!("mem:{mine}")),
        json!(format!("mem:{theirs}")),
        json!("mem:999"),
        json!("bogus"),
        json!({"ref": format!("mem:{mine}"), "span": [3, 6]}),
    ];
    let out = f.engine.get_contents("a", None, None, &refs).unwrap();
    let body = serde_json::to_value(&out).unwrap();
    assert_eq!(out.items.len(), 2, "{body}");
    assert_eq!(out.items[0].content, "my own words");
    assert_eq!(out.items[1].content, "own");
    assert!(!body.to_string().contains("secret"));
    let unresolved: Vec<String> = out.unresolved.iter().map(|u| u.r#ref.clone()).collect();
    assert_eq!(
        unresolved,
        vec![
            format!("mem:{theirs}"),
            "mem:999".to_owned(),
            "bogus".to_owned()
        ]
    );
    let many: Vec<_> = (1..=21).map(|i| json!(format!("mem:{i}"))).collect();
    assert!(f.engine.get_contents("a", None, None, &many).is_err());
    assert!(f.engine.get_contents("a", None, None, &[]).is_err());
}

#[test]
fn hostile_queries_never_error() {
    let f = fixture();
    corpus(&f);
    for q in [
        "\"",
        "\"\"\"",
        "a OR b",
        "NEAR(apple river, 2)",
        "content: apple",
        "apple*",
        "(((",
        ")",
        "-apple",
        "^apple",
        "'; DROP TABLE memories; --",
        "100%_\\",
        "日本",
        "日本語の記憶",
        "\u{FFFD}\u{FFFD}",
        "ab",
        "   ",
        "AND OR NOT",
        "{apple}",
        "apple\0river",
    ] {
        let r = f.engine.recall(&query("a", q));
        assert!(r.is_ok(), "{q:?}: {r:?}");
    }
}

#[test]
fn embedder_outage_degrades_to_lexical_with_an_advisory() {
    let f = fixture();
    corpus(&f);
    f.embedder
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let r = f.engine.recall(&query("a", "apple river")).unwrap();
    assert!(
        r.advisories
            .iter()
            .any(|a| a.contains("vector arm skipped")),
        "{r:?}"
    );
    assert!(!r.response.messages.is_empty());
}

#[test]
fn calibration_is_stored_and_used_by_the_gate() {
    let f = fixture();
    for i in 0..60 {
        f.engine
            .store(&StoreRequest {
                agent_id: "a".into(),
                content: sentence(i, 4),
                source: Some(json!({"type": "user", "id": format!("s{}", i % 5)})),
                ..StoreRequest::default()
            })
            .unwrap();
    }
    let out = f
        .engine
        .calibrate_threshold(&CalibrateRequest {
            agent_id: "a",
            ..CalibrateRequest::default()
        })
        .unwrap();
    let mut rq = query("a", "apple river");
    rq.trace = true;
    let r = f.engine.recall(&rq).unwrap();
    let gate = &r.stages.unwrap().gate;
    assert_eq!(
        serde_json::to_value(gate.origin).unwrap(),
        json!("calibrated"),
        "{out:?}"
    );
}

/// CPersona's `method`, `sample_size`, `z_factor` and `percentile` place the threshold on
/// the null distribution as it does (a quantile; mean + z·std), bounds refuse, and the
/// global scope (`agent_id: ""`) calibrates from every agent's rows into the row the gate
/// falls back to for an agent without its own.
#[test]
fn calibration_methods_sample_size_and_the_global_scope() {
    let f = fixture();
    for agent in ["a", "b"] {
        for i in 0..60 {
            f.engine
                .store(&StoreRequest {
                    agent_id: agent.into(),
                    content: sentence(i, 4),
                    source: Some(json!({"type": "user", "id": format!("s{}", i % 5)})),
                    ..StoreRequest::default()
                })
                .unwrap();
        }
    }
    let run = |agent_id, method, sample_size| {
        f.engine.calibrate_threshold(&CalibrateRequest {
            agent_id,
            method,
            sample_size,
            session_key: "",
        })
    };
    let p50 = run("a", ThresholdMethod::Percentile(0.5), None)
        .unwrap()
        .calibration;
    let p99 = run("a", ThresholdMethod::Percentile(0.99), None)
        .unwrap()
        .calibration;
    assert_eq!((p50.method, p50.percentile), ("percentile", Some(0.5)));
    assert!(p99.threshold > p50.threshold, "{p50:?} {p99:?}");
    // The median admits about half the null pairs (this corpus's cosines tie, and the
    // threshold is rounded to 4 decimals), the 99th percentile about 1%.
    assert!((0.35..=0.65).contains(&p50.null_admit_rate), "{p50:?}");
    assert!(p99.null_admit_rate <= 0.05, "{p99:?}");
    let z = run("a", ThresholdMethod::ZScore(1.0), None)
        .unwrap()
        .calibration;
    let expected = (z.null_mean + z.null_std).max(0.05);
    assert!((z.threshold - expected).abs() < 2e-4, "{z:?}");
    assert_eq!(z.z_factor, Some(1.0));
    let small = run("a", ThresholdMethod::Percentile(0.5), Some(10))
        .unwrap()
        .calibration;
    assert_eq!(small.sampled_rows, 10);
    for (method, size, field) in [
        (ThresholdMethod::Percentile(0.0), None, "percentile"),
        (ThresholdMethod::Percentile(1.5), None, "percentile"),
        (ThresholdMethod::ZScore(f64::NAN), None, "z_factor"),
        (ThresholdMethod::Separation, Some(0), "sample_size"),
        (
            ThresholdMethod::Separation,
            Some(MAX_SAMPLE_SIZE + 1),
            "sample_size",
        ),
    ] {
        let err = run("a", method, size).unwrap_err();
        assert!(err.to_string().contains(field), "{err}");
    }
    // The global scope reads both agents, and an agent without its own row uses it.
    let global = run("", ThresholdMethod::Separation, None).unwrap();
    assert_eq!(global.agent_id, "");
    assert_eq!(global.calibration.sampled_rows, 120);
    let mut rq = query("b", "apple river");
    rq.trace = true;
    let gate = f.engine.recall(&rq).unwrap().stages.unwrap().gate;
    assert_eq!(
        serde_json::to_value(gate.origin).unwrap(),
        json!("calibrated")
    );
}

/// The scope a row must satisfy for a reader (mirrors `Scope::read`).
fn admits(
    row: (&str, &str, &str),
    agent: &str,
    project: Option<&str>,
    channel: Option<&str>,
) -> bool {
    let (a, p, c) = row;
    a == agent
        && match project {
            None => true,
            Some("") => p.is_empty(),
            Some(x) => p == x || p.is_empty(),
        }
        && match channel {
            None | Some("") => true,
            Some(x) => c == x || c.is_empty(),
        }
}

fn axes(f: &Fixture, r: &str) -> (String, String, String) {
    let (table, id) = r.split_once(':').unwrap();
    let table = if table == "mem" {
        "memories"
    } else {
        "episodes"
    };
    conn(f)
        .query_row(
            &format!("SELECT agent_id, project_id, channel FROM {table} WHERE id = ?"),
            [id.parse::<i64>().unwrap()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap()
}

/// Every `mem:<id>` / `ep:<id>` string anywhere in `value` (heads, claims, excerpts, rows).
fn refs_in(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => {
            if let Some((kind, id)) = s.split_once(':')
                && (kind == "mem" || kind == "ep")
                && !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
            {
                out.push(s.clone());
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Recall, reconstruct, get_contents with guessed refs and list_memories, over random
    /// corpora of three agents, projects and channels: no row outside the caller's scope.
    #[test]
    fn no_row_outside_the_scope_is_ever_returned(
        rows in prop::collection::vec((0usize..3, 0usize..3, 0usize..3, 0usize..500), 1..30),
        split in 0usize..30,
        agent in 0usize..3,
        project in 0usize..4,
        channel in 0usize..4,
        q in 0usize..500,
    ) {
        let agents = ["a", "b", "c"];
        let projects = ["", "p1", "p2"];
        let channels = ["", "c1", "c2"];
        let f = fixture();
        for (i, (a, p, c, s)) in rows.iter().enumerate() {
            if i == split {
                rebuild_all(&f.engine);
            }
            let _ = f.engine.store(&StoreRequest {
                agent_id: agents[*a].into(),
                project_id: projects[*p].into(),
                channel: channels[*c].into(),
                content: sentence(*s, 3),
                ..StoreRequest::default()
            });
        }
        let agent = agents[agent];
        let project = [None, Some(""), Some("p1"), Some("p2")][project];
        let channel = [None, Some(""), Some("c1"), Some("c2")][channel];
        let rq = RecallQuery {
            agent_id: agent.into(),
            project_id: project.map(str::to_owned),
            channel: channel.map(str::to_owned),
            query: sentence(q, 2),
            limit: 50,
            ..RecallQuery::default()
        };
        let r = f.engine.recall(&rq).unwrap();
        for m in serde_json::to_value(&r.response).unwrap()["messages"].as_array().unwrap() {
            let rf = m["ref"].as_str().unwrap();
            let (a, p, c) = axes(&f, rf);
            prop_assert!(admits((&a, &p, &c), agent, project, channel), "{rf} {a} {p} {c}");
        }
        let rebuilt = f
            .engine
            .reconstruct(&ReconstructRequest {
                agent_id: agent.into(),
                project_id: project.map(str::to_owned),
                channel: channel.map(str::to_owned),
                query: sentence(q, 2),
                ..ReconstructRequest::default()
            })
            .unwrap();
        let mut refs = Vec::new();
        refs_in(&serde_json::to_value(&rebuilt.response).unwrap(), &mut refs);
        for rf in &refs {
            let (a, p, c) = axes(&f, rf);
            prop_assert!(admits((&a, &p, &c), agent, project, channel), "reconstruct {rf}");
        }
        let listed = f
            .engine
            .list_memories(&ListMemoriesRequest {
                agent_id: agent.into(),
                project_id: project.map(str::to_owned),
                ..ListMemoriesRequest::default()
            })
            .unwrap();
        for m in &listed.memories {
            let (a, p, c) = axes(&f, &format!("mem:{}", m.id));
            prop_assert!(admits((&a, &p, &c), agent, project, None), "list mem:{}", m.id);
        }
        let guesses: Vec<_> = (1..=20).map(|i| json!(format!("mem:{i}"))).collect();
        let out = f.engine.get_contents(agent, project, channel, &guesses).unwrap();
        for item in &out.items {
            let (a, p, c) = axes(&f, &item.r#ref.to_string());
            prop_assert!(admits((&a, &p, &c), agent, project, channel));
        }
    }
}

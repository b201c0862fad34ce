//! The two tracks. Track A ranks each query's group by exact f32 cosine of the raw embedder's
//! vectors. Track B hands the same vectors to the real store (`import_memories` with
//! `embedding_b64`, one agent per group, an index generation built) and ranks with
//! `Engine::recall` in the full-ranking regime: gate off, scan window covering the corpus,
//! Recall Depth (50) covering the top 10; only the query embedder is a lookup of the cached
//! query vectors (CPersona's `LookupEmbeddingClient`). Neither track may see the relevance
//! labels.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cpersona_engine::embed::EmbedderIdentity;
use cpersona_engine::recall::stages::fusion_weights::AdaptiveFusion;
use cpersona_engine::{
    EmbeddingFormat, Engine, EngineConfig, ExportDir, ImportRequest, IndexTable, RecallQuery, time,
    vector,
};

use super::{Dataset, Error};
use crate::LookupEmbedder;

/// How many ids each ranked list keeps (NDCG@10 and Recall@10 need 10).
pub const DEPTH: usize = 10;
/// The timestamp of a row the data gives no time: CPersona's Track B constant.
pub const DEFAULT_AT_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// One track's answer: per query (in dataset order) the ranked row ids, best first.
#[derive(Clone, Debug, Default)]
pub struct Ranked {
    /// Ranked ids per query.
    pub lists: Vec<Vec<String>>,
    /// Track B only: the same answers re-sorted by each row's reported confidence score
    /// (best first, ties in fused order), to measure design §3's re-sort question.
    pub by_confidence: Vec<Vec<String>>,
    /// Track B with [`TrackB::pools`]: per query, `[[arm, [[msg_id, raw], ...]], ...]`.
    pub pools: Vec<serde_json::Value>,
    /// Per-query ranking time, ms (embedding excluded: vectors are precomputed).
    pub query_ms: Vec<f64>,
    /// Set-up seconds (Track B: import and index build).
    pub setup_s: f64,
    /// What the track saw that a reader should know (skipped rows, bounds).
    pub notes: Vec<String>,
}

/// Track A: exact f32 cosine (the vectors are normalised) over each query's group; ties keep
/// corpus order.
pub fn track_a(ds: &Dataset, doc_vecs: &[Vec<f32>], query_vecs: &[Vec<f32>]) -> Ranked {
    let mut by_group: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in ds.docs.iter().enumerate() {
        by_group.entry(d.group.as_str()).or_default().push(i);
    }
    let mut out = Ranked::default();
    for (q, qv) in ds.queries.iter().zip(query_vecs) {
        let started = Instant::now();
        let mut scored: Vec<(f32, usize)> = by_group
            .get(q.group.as_str())
            .into_iter()
            .flatten()
            .map(|&i| (qv.iter().zip(&doc_vecs[i]).map(|(a, b)| a * b).sum(), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.lists.push(
            scored
                .iter()
                .take(DEPTH)
                .map(|&(_, i)| ds.docs[i].id.clone())
                .collect(),
        );
        out.query_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    out
}

/// The agent a group's rows are stored under (one agent per candidate set).
pub fn agent_of(group: &str) -> String {
    format!("quality-{group}")
}

/// The recall settings a Track B run may change from the engine's defaults, for
/// before/after runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackB {
    /// The lexical candidate cap (`None` = off).
    pub lexical_cap: Option<usize>,
    /// Adaptive fusion's rule (`None` = fixed weights).
    pub adaptive: Option<AdaptiveFusion>,
    /// Keep each query's frozen pool (every arm's list as fused, by `msg_id`, with raw
    /// scores) in [`Ranked::pools`], for offline replays of other fusions.
    pub pools: bool,
}

impl Default for TrackB {
    fn default() -> TrackB {
        let recall = cpersona_engine::recall::RecallConfig::default();
        TrackB {
            lexical_cap: recall.lexical_cap,
            adaptive: recall.adaptive,
            pools: false,
        }
    }
}

/// Track B through a fresh store in `work` (removed first), the engine's default settings.
pub fn track_b(
    ds: &Dataset,
    identity: &EmbedderIdentity,
    doc_vecs: &[Vec<f32>],
    query_vecs: &[Vec<f32>],
    work: &Path,
) -> Result<Ranked, Error> {
    track_b_with(ds, identity, doc_vecs, query_vecs, work, &TrackB::default())
}

/// [`track_b`] with the recall settings of `settings`.
pub fn track_b_with(
    ds: &Dataset,
    identity: &EmbedderIdentity,
    doc_vecs: &[Vec<f32>],
    query_vecs: &[Vec<f32>],
    work: &Path,
    settings: &TrackB,
) -> Result<Ranked, Error> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).map_err(|e| Error::io(work, e))?;
    let jsonl = work.join("import.jsonl");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(&jsonl).map_err(|e| Error::io(&jsonl, e))?);
    let header = serde_json::json!({"_type": "header", "version": "cpersona-export/1.0",
        "agent_id": "", "memory_count": ds.docs.len(), "episode_count": 0, "profile_count": 0});
    writeln!(out, "{header}").map_err(|e| Error::io(&jsonl, e))?;
    for (d, v) in ds.docs.iter().zip(doc_vecs) {
        let b64 = vector::base64_encode(&vector::encode(v, identity.dim, EmbeddingFormat::F32)?);
        let stamp = time::format_ms_python(d.at_ms.unwrap_or(DEFAULT_AT_MS));
        let line = serde_json::json!({
            "_type": "memory", "agent_id": agent_of(&d.group), "msg_id": d.id,
            "content": d.text,
            "source": {"type": "User", "id": d.speaker.as_deref().unwrap_or("u")},
            "timestamp": stamp, "metadata": {}, "created_at": stamp,
            "project_id": "", "channel": "", "locked": false, "recall_count": 0,
            "last_recalled_at": null, "embedding_b64": b64, "embedding_model": identity.model_id,
        });
        writeln!(out, "{line}").map_err(|e| Error::io(&jsonl, e))?;
    }
    out.flush().map_err(|e| Error::io(&jsonl, e))?;
    drop(out);

    let embedder = Arc::new(LookupEmbedder {
        identity: identity.clone(),
        table: ds
            .queries
            .iter()
            .zip(query_vecs)
            .map(|(q, v)| (q.text.clone(), v.clone()))
            .collect(),
    });
    let mut config = EngineConfig::new(work.join("store.db"));
    config.max_import_bytes = 1 << 40;
    // The task's corpus lives in the work folder, not in the store's export folder.
    config.export_dir = ExportDir::Operator;
    // Full-ranking regime (cpersona-2.5 §11.1): the scan window covers the corpus, the gate
    // is off; the default Recall Depth (50) covers the top 10.
    config.scan_window = config.scan_window.max(ds.docs.len());
    config.recall.gate.enabled = false;
    config.recall.lexical_cap = settings.lexical_cap;
    config.recall.adaptive = settings.adaptive;
    let engine = Engine::open(config, embedder)?;
    let started = Instant::now();
    let outcome = engine.import_memories(&ImportRequest {
        input_path: jsonl.clone(),
        ..Default::default()
    })?;
    engine.rebuild_index(IndexTable::Memories, &mut |_, _| {})?;
    let mut ranked = Ranked {
        setup_s: started.elapsed().as_secs_f64(),
        ..Ranked::default()
    };
    let _ = std::fs::remove_file(&jsonl);
    if outcome.skipped_memories > 0 {
        ranked.notes.push(format!(
            "import skipped {} of {} rows (duplicate content in a group, or invalid): {:?}",
            outcome.skipped_memories,
            ds.docs.len(),
            outcome.errors.iter().take(3).collect::<Vec<_>>()
        ));
    }
    if outcome.embedded_rows < outcome.imported_memories {
        return Err(Error::Regime(format!(
            "{} of {} imported rows lost their vector",
            outcome.imported_memories - outcome.embedded_rows,
            outcome.imported_memories
        )));
    }
    let (mut window_cut, mut advisories) = (0usize, HashMap::<String, usize>::new());
    for q in &ds.queries {
        let started = Instant::now();
        let result = engine.recall(&RecallQuery {
            agent_id: agent_of(&q.group),
            query: q.text.clone(),
            limit: DEPTH,
            trace: settings.pools,
            ..RecallQuery::default()
        })?;
        if let Some(trace) = settings.pools.then(|| result.trace()).flatten() {
            let ids: HashMap<_, Option<String>> = trace
                .pool
                .iter()
                .map(|p| (p.r#ref, p.row.as_ref().and_then(|r| r.msg_id.clone())))
                .collect();
            let arms: Vec<serde_json::Value> = trace
                .arms
                .iter()
                .map(|arm| {
                    let hits: Vec<serde_json::Value> = arm
                        .hits
                        .iter()
                        .map(|h| serde_json::json!([ids.get(&h.r#ref), h.raw]))
                        .collect();
                    serde_json::json!([arm.arm, hits])
                })
                .collect();
            ranked.pools.push(serde_json::Value::Array(arms));
        }
        ranked.query_ms.push(started.elapsed().as_secs_f64() * 1e3);
        window_cut += result.vector.tables.iter().filter(|t| t.window_cut).count();
        for a in result.advisories {
            // One note per kind of advisory: the words left out and the id bound are the
            // query's own.
            let kind = a
                .split("; left out")
                .next()
                .and_then(|k| k.split(" (ids >=").next())
                .unwrap_or(&a)
                .to_owned();
            *advisories.entry(kind).or_default() += 1;
        }
        // Messages come in ascending relevance: the last is the best.
        let mut by_confidence: Vec<(f64, usize, String)> = result
            .response
            .messages
            .iter()
            .rev()
            .enumerate()
            .filter_map(|(i, m)| {
                let score = m.confidence.as_ref().map_or(f64::NEG_INFINITY, |c| c.score);
                m.id.clone().map(|id| (score, i, id))
            })
            .collect();
        by_confidence.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked
            .by_confidence
            .push(by_confidence.into_iter().map(|(_, _, id)| id).collect());
        ranked.lists.push(
            result
                .response
                .messages
                .iter()
                .rev()
                .filter_map(|m| m.id.clone())
                .collect(),
        );
    }
    if window_cut > 0 {
        ranked.notes.push(format!(
            "the scan window cut {window_cut} table scans (the regime wants none)"
        ));
    }
    let mut advisories: Vec<(String, usize)> = advisories.into_iter().collect();
    advisories.sort();
    for (a, n) in advisories {
        ranked.notes.push(format!("advisory on {n} queries: {a}"));
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(work);
    Ok(ranked)
}

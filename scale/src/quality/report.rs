//! The quality report: per-subtask and per-task scores of both tracks, deltas B − A, CPersona's
//! published Track B figure beside ours, timings; rendered as a text table and JSON. A task
//! score is the mean over its subtasks (LMEB's rule). It only formats what it is given.

use std::collections::BTreeMap;

use comfy_table::{Table, presets::UTF8_FULL};
use serde_json::{Value, json};

use super::Dataset;
use super::metrics::QueryScore;
use super::tracks::Ranked;
use crate::report::Pct;

/// One subtask's means.
#[derive(Clone, Debug, PartialEq)]
pub struct SubtaskScore {
    /// The subtask.
    pub subtask: String,
    /// Queries scored.
    pub queries: usize,
    /// Track A means.
    pub a: QueryScore,
    /// Track B means.
    pub b: QueryScore,
}

/// One task under one embedder.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskResult {
    /// The task.
    pub task: String,
    /// The embedder's model id.
    pub model: String,
    /// Rows in the corpus (all groups).
    pub rows: usize,
    /// Candidate sets (groups).
    pub groups: usize,
    /// Queries scored.
    pub queries: usize,
    /// Per subtask, sorted by name.
    pub subtasks: Vec<SubtaskScore>,
    /// Track A, mean over subtasks.
    pub a: QueryScore,
    /// Track B, mean over subtasks.
    pub b: QueryScore,
    /// CPersona's published Track B NDCG@10 (MiniLM), ×100.
    pub published_b_minilm: Option<f64>,
    /// Seconds embedding (this run; cached vectors cost nothing).
    pub embed_s: f64,
    /// Vectors read from the cache / computed.
    pub cached: (usize, usize),
    /// Track A per-query ranking time, ms.
    pub a_ms: Pct,
    /// Track B per-query `Engine::recall` time, ms.
    pub b_ms: Pct,
    /// Track B import and index build, s.
    pub b_setup_s: f64,
    /// Notes (skipped rows, dropped labels, bounds).
    pub notes: Vec<String>,
}

/// Scores both tracks per subtask; the task means are means over subtasks.
pub fn score(ds: &Dataset, a: &Ranked, b: &Ranked) -> (Vec<SubtaskScore>, QueryScore, QueryScore) {
    let mut per: BTreeMap<&str, (Vec<QueryScore>, Vec<QueryScore>)> = BTreeMap::new();
    for (i, q) in ds.queries.iter().enumerate() {
        let entry = per.entry(q.subtask.as_str()).or_default();
        let list = |r: &Ranked| -> Vec<String> { r.lists.get(i).cloned().unwrap_or_default() };
        let (la, lb) = (list(a), list(b));
        entry.0.push(QueryScore::of(
            &la.iter().map(String::as_str).collect::<Vec<_>>(),
            &q.relevant,
        ));
        entry.1.push(QueryScore::of(
            &lb.iter().map(String::as_str).collect::<Vec<_>>(),
            &q.relevant,
        ));
    }
    let subtasks: Vec<SubtaskScore> = per
        .into_iter()
        .map(|(name, (sa, sb))| SubtaskScore {
            subtask: name.to_owned(),
            queries: sa.len(),
            a: QueryScore::mean(&sa),
            b: QueryScore::mean(&sb),
        })
        .collect();
    let a = QueryScore::mean(&subtasks.iter().map(|s| s.a).collect::<Vec<_>>());
    let b = QueryScore::mean(&subtasks.iter().map(|s| s.b).collect::<Vec<_>>());
    (subtasks, a, b)
}

fn pts(x: f64) -> String {
    format!("{:.2}", x * 100.0)
}

fn delta(b: f64, a: f64) -> String {
    format!("{:+.2}", (b - a) * 100.0)
}

/// The text table: one row per task and embedder, then its subtasks indented.
pub fn render_text(results: &[TaskResult]) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL).set_header(vec![
        "task / subtask",
        "embedder",
        "rows",
        "queries",
        "A nDCG@10",
        "B nDCG@10",
        "B−A",
        "CPersona B",
        "A R@5",
        "B R@5",
        "A R@10",
        "B R@10",
        "B recall p50/p95 ms",
    ]);
    for r in results {
        table.add_row(vec![
            r.task.clone(),
            r.model.clone(),
            r.rows.to_string(),
            r.queries.to_string(),
            pts(r.a.ndcg10),
            pts(r.b.ndcg10),
            delta(r.b.ndcg10, r.a.ndcg10),
            r.published_b_minilm
                .filter(|_| r.model.contains("MiniLM"))
                .map_or_else(|| "—".into(), |p| format!("{p:.2}")),
            pts(r.a.recall5),
            pts(r.b.recall5),
            pts(r.a.recall10),
            pts(r.b.recall10),
            format!("{:.2} / {:.2}", r.b_ms.p50, r.b_ms.p95),
        ]);
        for s in &r.subtasks {
            table.add_row(vec![
                format!("  {}", s.subtask),
                String::new(),
                String::new(),
                s.queries.to_string(),
                pts(s.a.ndcg10),
                pts(s.b.ndcg10),
                delta(s.b.ndcg10, s.a.ndcg10),
                String::new(),
                pts(s.a.recall5),
                pts(s.b.recall5),
                pts(s.a.recall10),
                pts(s.b.recall10),
                String::new(),
            ]);
        }
    }
    let mut out = table.to_string();
    for r in results {
        out.push_str(&format!(
            "\n{} / {}: {} groups; embedding {:.1} s ({} cached, {} computed); track A p50 {:.3} ms; track B set-up {:.1} s",
            r.task, r.model, r.groups, r.embed_s, r.cached.0, r.cached.1, r.a_ms.p50, r.b_setup_s
        ));
        for n in &r.notes {
            out.push_str(&format!("\n  note: {n}"));
        }
    }
    out
}

fn score_json(s: &QueryScore) -> Value {
    json!({"ndcg_at_10": s.ndcg10 * 100.0, "recall_at_5": s.recall5 * 100.0,
        "recall_at_10": s.recall10 * 100.0})
}

/// The JSON report (scores ×100, as LMEB and CPersona print them).
pub fn to_json(command: &str, results: &[TaskResult]) -> Value {
    json!({
        "command": command,
        "regime": "track A: exact f32 cosine over the query's group; track B: import_memories with the same vectors + Engine::recall, gate off, scan window >= corpus, depth 50, limit 10",
        "tasks": results.iter().map(|r| json!({
            "task": r.task, "model": r.model, "rows": r.rows, "groups": r.groups,
            "queries": r.queries,
            "track_a": score_json(&r.a), "track_b": score_json(&r.b),
            "delta_b_minus_a_ndcg_at_10": (r.b.ndcg10 - r.a.ndcg10) * 100.0,
            "cpersona_published_track_b_minilm": r.published_b_minilm,
            "embed_s": r.embed_s, "cached_vectors": r.cached.0, "computed_vectors": r.cached.1,
            "track_a_ms": {"p50": r.a_ms.p50, "p95": r.a_ms.p95},
            "track_b_recall_ms": {"p50": r.b_ms.p50, "p95": r.b_ms.p95},
            "track_b_setup_s": r.b_setup_s,
            "notes": r.notes,
            "subtasks": r.subtasks.iter().map(|s| json!({
                "subtask": s.subtask, "queries": s.queries,
                "track_a": score_json(&s.a), "track_b": score_json(&s.b),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

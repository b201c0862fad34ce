//! The quality report: per-subtask and per-task scores of both tracks, deltas B − A, issue 23's
//! success condition checked line by line (B beats A on the task, no subtask loses more than
//! 2 NDCG@10 points), the list of every line where B loses, CPersona's published Track B figure
//! beside ours, timings; rendered as a text table, Markdown and JSON. A task score is the mean
//! over its subtasks (LMEB's rule). It only formats and checks what it is given.

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
    /// The task (with its split, `LoCoMo [dev]`).
    pub task: String,
    /// The split (`dev`, `val`, `holdout`, or `all` for the unsplit task).
    pub split: String,
    /// The embedder's name in the harness (`hash`, `minilm`, `e5`).
    pub embedder: String,
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

/// The most NDCG@10 a subtask may lose (B − A, on the 0–1 scale): issue 23's 2 points.
pub const MAX_SUBTASK_LOSS: f64 = 0.02;
/// Slack for the comparison, so a loss of exactly 2.00 points printed as such holds.
const EPS: f64 = 1e-12;

/// Whether a subtask keeps the rule: B − A ≥ −2 NDCG@10 points.
pub fn subtask_holds(s: &SubtaskScore) -> bool {
    s.b.ndcg10 - s.a.ndcg10 >= -MAX_SUBTASK_LOSS - EPS
}

/// The subtasks of `r` that lose more than 2 points.
pub fn failing_subtasks(r: &TaskResult) -> Vec<&SubtaskScore> {
    r.subtasks.iter().filter(|s| !subtask_holds(s)).collect()
}

/// Whether a task keeps issue 23's condition: B beats A on the task score and no subtask
/// loses more than 2 points.
pub fn task_holds(r: &TaskResult) -> bool {
    r.b.ndcg10 > r.a.ndcg10 && failing_subtasks(r).is_empty()
}

/// The condition's verdict for a task row.
fn task_verdict(r: &TaskResult) -> String {
    let failing = failing_subtasks(r).len();
    match (r.b.ndcg10 > r.a.ndcg10, failing) {
        (true, 0) => "yes".into(),
        (true, n) => format!("NO: {n} subtask(s) < −2"),
        (false, 0) => "NO: B ≤ A".into(),
        (false, n) => format!("NO: B ≤ A, {n} subtask(s) < −2"),
    }
}

fn subtask_verdict(s: &SubtaskScore) -> &'static str {
    if subtask_holds(s) { "yes" } else { "NO" }
}

/// Per embedder and split: does the condition hold on every task it ran?
pub fn verdicts(results: &[TaskResult]) -> Vec<(String, String, usize, usize)> {
    let mut by: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for r in results {
        let e = by.entry((r.split.clone(), r.embedder.clone())).or_default();
        e.0 += 1;
        e.1 += usize::from(task_holds(r));
    }
    by.into_iter()
        .map(|((split, embedder), (tasks, holding))| (split, embedder, tasks, holding))
        .collect()
}

/// One line where Track B is under Track A.
#[derive(Clone, Debug, PartialEq)]
pub struct Loss {
    /// The task (with its split).
    pub task: String,
    /// The subtask, or `None` for the task score.
    pub subtask: Option<String>,
    /// The embedder's harness name.
    pub embedder: String,
    /// Queries behind the line.
    pub queries: usize,
    /// B − A NDCG@10, ×100.
    pub delta: f64,
}

/// Every task and subtask line where B − A < 0, worst first.
pub fn losses(results: &[TaskResult]) -> Vec<Loss> {
    let mut out = Vec::new();
    for r in results {
        if r.b.ndcg10 < r.a.ndcg10 {
            out.push(Loss {
                task: r.task.clone(),
                subtask: None,
                embedder: r.embedder.clone(),
                queries: r.queries,
                delta: (r.b.ndcg10 - r.a.ndcg10) * 100.0,
            });
        }
        for s in &r.subtasks {
            if s.b.ndcg10 < s.a.ndcg10 {
                out.push(Loss {
                    task: r.task.clone(),
                    subtask: Some(s.subtask.clone()),
                    embedder: r.embedder.clone(),
                    queries: s.queries,
                    delta: (s.b.ndcg10 - s.a.ndcg10) * 100.0,
                });
            }
        }
    }
    out.sort_by(|a, b| a.delta.total_cmp(&b.delta));
    out
}

fn pts(x: f64) -> String {
    format!("{:.2}", x * 100.0)
}

fn delta(b: f64, a: f64) -> String {
    format!("{:+.2}", (b - a) * 100.0)
}

fn published(r: &TaskResult) -> String {
    r.published_b_minilm
        .filter(|_| r.model.contains("MiniLM") && r.split == "all")
        .map_or_else(|| "—".into(), |p| format!("{p:.2}"))
}

/// Texts per second of embedding in this run (`None` when everything came from the cache).
pub fn texts_per_s(r: &TaskResult) -> Option<f64> {
    (r.cached.1 > 0 && r.embed_s > 0.0).then(|| r.cached.1 as f64 / r.embed_s)
}

const HEADER: [&str; 14] = [
    "task / subtask",
    "embedder",
    "rows",
    "queries",
    "A nDCG@10",
    "B nDCG@10",
    "B−A",
    "holds (B>A, no subtask < −2)",
    "CPersona B",
    "A R@5",
    "B R@5",
    "A R@10",
    "B R@10",
    "B recall p50/p95 ms",
];

/// The table's rows: per task and embedder, then its subtasks indented.
fn rows(results: &[TaskResult]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for r in results {
        out.push(vec![
            r.task.clone(),
            r.embedder.clone(),
            r.rows.to_string(),
            r.queries.to_string(),
            pts(r.a.ndcg10),
            pts(r.b.ndcg10),
            delta(r.b.ndcg10, r.a.ndcg10),
            task_verdict(r),
            published(r),
            pts(r.a.recall5),
            pts(r.b.recall5),
            pts(r.a.recall10),
            pts(r.b.recall10),
            format!("{:.2} / {:.2}", r.b_ms.p50, r.b_ms.p95),
        ]);
        for s in &r.subtasks {
            out.push(vec![
                format!("  {}", s.subtask),
                String::new(),
                String::new(),
                s.queries.to_string(),
                pts(s.a.ndcg10),
                pts(s.b.ndcg10),
                delta(s.b.ndcg10, s.a.ndcg10),
                subtask_verdict(s).into(),
                String::new(),
                pts(s.a.recall5),
                pts(s.b.recall5),
                pts(s.a.recall10),
                pts(s.b.recall10),
                String::new(),
            ]);
        }
    }
    out
}

fn summary(results: &[TaskResult]) -> Vec<String> {
    let mut out = vec!["Issue 23's condition per split and embedder (every task: B > A and no subtask loses more than 2 NDCG@10 points):".to_owned()];
    for (split, embedder, tasks, holding) in verdicts(results) {
        out.push(format!(
            "  {split} / {embedder}: {holding} of {tasks} tasks hold{}",
            if holding == tasks { " — HOLDS" } else { "" }
        ));
    }
    let lost = losses(results);
    out.push(format!(
        "Where Track B loses to Track A ({} lines, worst first; * = more than 2 points):",
        lost.len()
    ));
    for l in &lost {
        out.push(format!(
            "  {}{} / {} / {}: {:+.2} ({} queries)",
            if l.delta < -MAX_SUBTASK_LOSS * 100.0 {
                "* "
            } else {
                "  "
            },
            l.task,
            l.subtask.as_deref().unwrap_or("(task score)"),
            l.embedder,
            l.delta,
            l.queries
        ));
    }
    out
}

fn footnotes(results: &[TaskResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let speed = texts_per_s(r).map_or_else(String::new, |t| format!(", {t:.1} texts/s"));
        out.push(format!(
            "{} / {} ({}): {} groups; embedding {:.1} s ({} cached, {} computed{speed}); track A p50 {:.3} ms; track B set-up {:.1} s",
            r.task, r.embedder, r.model, r.groups, r.embed_s, r.cached.0, r.cached.1, r.a_ms.p50, r.b_setup_s
        ));
        for n in &r.notes {
            out.push(format!("  note: {n}"));
        }
    }
    out
}

/// The text table, the condition's summary, the loss list and the per-run notes.
pub fn render_text(results: &[TaskResult]) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL).set_header(HEADER.to_vec());
    for row in rows(results) {
        table.add_row(row);
    }
    let mut out = table.to_string();
    for line in summary(results).into_iter().chain(footnotes(results)) {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

/// The same report as Markdown (for `scale/RESULTS.md`): the table, then the summary.
pub fn render_markdown(results: &[TaskResult]) -> String {
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out.push_str(&format!(
        "|{}\n",
        HEADER
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { "---|" } else { "---:|" })
            .collect::<String>()
    ));
    for row in rows(results) {
        let cells: Vec<String> = row
            .into_iter()
            .enumerate()
            .map(|(i, c)| match (i, c.strip_prefix("  ")) {
                (0, Some(sub)) => format!("&nbsp;&nbsp;{sub}"),
                (0, None) => format!("**{c}**"),
                _ => c,
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
    for line in summary(results) {
        out.push_str(&line);
        out.push('\n');
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
        "condition": "per task: B > A on NDCG@10 and no subtask B - A < -2 points (issue 23)",
        "tasks": results.iter().map(|r| json!({
            "task": r.task, "split": r.split, "embedder": r.embedder, "model": r.model,
            "rows": r.rows, "groups": r.groups, "queries": r.queries,
            "track_a": score_json(&r.a), "track_b": score_json(&r.b),
            "delta_b_minus_a_ndcg_at_10": (r.b.ndcg10 - r.a.ndcg10) * 100.0,
            "holds": task_holds(r),
            "cpersona_published_track_b_minilm": r.published_b_minilm,
            "embed_s": r.embed_s, "cached_vectors": r.cached.0, "computed_vectors": r.cached.1,
            "embed_texts_per_s": texts_per_s(r),
            "track_a_ms": {"p50": r.a_ms.p50, "p95": r.a_ms.p95},
            "track_b_recall_ms": {"p50": r.b_ms.p50, "p95": r.b_ms.p95},
            "track_b_setup_s": r.b_setup_s,
            "notes": r.notes,
            "subtasks": r.subtasks.iter().map(|s| json!({
                "subtask": s.subtask, "queries": s.queries,
                "track_a": score_json(&s.a), "track_b": score_json(&s.b),
                "delta_b_minus_a_ndcg_at_10": (s.b.ndcg10 - s.a.ndcg10) * 100.0,
                "holds": subtask_holds(s),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "losses": losses(results).iter().map(|l| json!({
            "task": l.task, "subtask": l.subtask, "embedder": l.embedder,
            "queries": l.queries, "delta_ndcg_at_10": l.delta,
        })).collect::<Vec<_>>(),
    })
}

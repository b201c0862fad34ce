//! Issue 23's table: per task × subtask × embedder, Track A, today's fixed fusion and adaptive
//! fusion side by side, issue 23's condition checked line by line for both, and the rule that
//! decides whether adaptive fusion may ship as the default: the condition on every task and
//! no loss to the fixed fusion on LoCoMo and TMD of more than 0.5 points. Pairs two runs'
//! [`TaskResult`]s (same tasks, splits and embedders; Track A is the same in both by
//! construction) and only formats and checks what it is given.

use super::report::{MAX_SUBTASK_LOSS, TaskResult, subtask_holds, task_holds};

/// The most adaptive fusion may lose to the fixed fusion on LoCoMo and TMD (task score,
/// NDCG@10 on the 0–1 scale): issue 23's 0.5 points.
pub const MAX_LOSS_TO_FIXED: f64 = 0.005;
/// The tasks on which that rule is checked (task names without the split).
pub const GUARDED_TASKS: [&str; 2] = ["LoCoMo", "TMD"];

/// One task under one embedder, both fusions.
#[derive(Clone, Debug)]
pub struct Pair<'a> {
    /// Fixed weights.
    pub fixed: &'a TaskResult,
    /// Adaptive fusion.
    pub adaptive: &'a TaskResult,
}

/// Pairs each adaptive result with the fixed result of the same task, split and embedder;
/// a result without its twin is an error (the two runs did not cover the same lines).
pub fn pair<'a>(
    fixed: &'a [TaskResult],
    adaptive: &'a [TaskResult],
) -> Result<Vec<Pair<'a>>, String> {
    adaptive
        .iter()
        .map(|a| {
            fixed
                .iter()
                .find(|f| f.task == a.task && f.split == a.split && f.embedder == a.embedder)
                .map(|f| Pair {
                    fixed: f,
                    adaptive: a,
                })
                .ok_or_else(|| {
                    format!(
                        "{} / {} / {}: no fixed-fusion run",
                        a.task, a.split, a.embedder
                    )
                })
        })
        .collect()
}

fn base_task(task: &str) -> &str {
    task.split(" [").next().unwrap_or(task)
}

/// Whether the pair keeps the 0.5-point rule (true for a task the rule does not guard).
pub fn keeps_fixed(p: &Pair<'_>) -> bool {
    !GUARDED_TASKS.contains(&base_task(&p.adaptive.task))
        || p.adaptive.b.ndcg10 - p.fixed.b.ndcg10 >= -MAX_LOSS_TO_FIXED - 1e-12
}

/// Whether adaptive fusion may ship as the default on these lines: issue 23's condition on
/// every task and the 0.5-point rule on LoCoMo and TMD.
pub fn may_ship(pairs: &[Pair<'_>]) -> bool {
    pairs
        .iter()
        .all(|p| task_holds(p.adaptive) && keeps_fixed(p))
}

fn pts(x: f64) -> String {
    format!("{:.2}", x * 100.0)
}

fn delta(b: f64, a: f64) -> String {
    format!("{:+.2}", (b - a) * 100.0)
}

fn verdict(holds: bool) -> &'static str {
    if holds { "yes" } else { "**NO**" }
}

/// One line of the table: Track A, both fusions, their differences and verdicts.
fn line(
    label: &str,
    embedder: &str,
    queries: usize,
    (a, fixed, adaptive): (f64, f64, f64),
    (holds_fixed, holds_adaptive): (bool, bool),
) -> String {
    format!(
        "| {label} | {embedder} | {queries} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        pts(a),
        pts(fixed),
        pts(adaptive),
        delta(fixed, a),
        delta(adaptive, a),
        delta(adaptive, fixed),
        verdict(holds_fixed),
        verdict(holds_adaptive),
    )
}

/// The Markdown table and its summary.
pub fn render_markdown(pairs: &[Pair<'_>]) -> String {
    let mut out = String::from(
        "| task / subtask | embedder | queries | A | B fixed | B adaptive | fixed − A | adaptive − A | adaptive − fixed | holds fixed | holds adaptive |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
    );
    for p in pairs {
        let (f, a) = (p.fixed, p.adaptive);
        out.push_str(&line(
            &format!("**{}**", a.task),
            &a.embedder,
            a.queries,
            (a.a.ndcg10, f.b.ndcg10, a.b.ndcg10),
            (task_holds(f), task_holds(a)),
        ));
        for s in &a.subtasks {
            let Some(fs) = f.subtasks.iter().find(|x| x.subtask == s.subtask) else {
                continue;
            };
            out.push_str(&line(
                &format!("&nbsp;&nbsp;{}", s.subtask),
                "",
                s.queries,
                (s.a.ndcg10, fs.b.ndcg10, s.b.ndcg10),
                (subtask_holds(fs), subtask_holds(s)),
            ));
        }
    }
    out.push('\n');
    for line in summary(pairs) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The verdicts in words: per split and embedder, how many tasks hold under each fusion;
/// every guarded task where adaptive loses more than 0.5 points to fixed; the decision.
pub fn summary(pairs: &[Pair<'_>]) -> Vec<String> {
    let mut keys: Vec<(String, String)> = pairs
        .iter()
        .map(|p| (p.adaptive.split.clone(), p.adaptive.embedder.clone()))
        .collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    let mut out = vec![format!(
        "Issue 23's condition (B > A on the task, no subtask below {:.0} points), tasks holding:",
        -MAX_SUBTASK_LOSS * 100.0
    )];
    for (split, embedder) in &keys {
        let of: Vec<&Pair<'_>> = pairs
            .iter()
            .filter(|p| &p.adaptive.split == split && &p.adaptive.embedder == embedder)
            .collect();
        let count = |f: fn(&Pair<'_>) -> bool| of.iter().filter(|p| f(p)).count();
        out.push(format!(
            "  {split} / {embedder}: fixed {} of {n}, adaptive {} of {n}",
            count(|p| task_holds(p.fixed)),
            count(|p| task_holds(p.adaptive)),
            n = of.len()
        ));
    }
    let broke: Vec<String> = pairs
        .iter()
        .filter(|p| !keeps_fixed(p))
        .map(|p| {
            format!(
                "{} / {}: {}",
                p.adaptive.task,
                p.adaptive.embedder,
                delta(p.adaptive.b.ndcg10, p.fixed.b.ndcg10)
            )
        })
        .collect();
    out.push(format!(
        "Adaptive under fixed by more than {:.1} points on LoCoMo or TMD: {}",
        MAX_LOSS_TO_FIXED * 100.0,
        if broke.is_empty() {
            "none".to_owned()
        } else {
            broke.join("; ")
        }
    ));
    out.push(format!(
        "Adaptive fusion may ship as the default on these lines: {}",
        if may_ship(pairs) { "yes" } else { "no" }
    ));
    out
}

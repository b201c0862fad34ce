//! The vector arm's checks, judged from facts: the embedder itself (`embedder`: the hashed
//! fallback, a failing backend), vectors of another model (`embedding_model`), the share of
//! the store the arm covers (`vector_coverage`, the honest figure while re-embedding runs),
//! rows without a vector (`null_embedding`, `null_episode_embedding`) and a stuck queue
//! (`stale_pending_tasks`). Each one that degrades recall is a warning with its remedy.

use crate::health::stages::facts::{EmbedderFacts, QueueFacts, TableVectors};
use crate::health::stages::finding::{Finding, Severity};

/// Rows one `fix` queues and embeds at most (CPersona re-embeds ≤ 500 rows per run).
pub const FIX_EMBED_ROWS: u64 = 500;

/// `embedder`: the fallback or a degraded backend means the vector arm matches spelling, or
/// nothing, instead of meaning.
pub fn embedder(facts: &EmbedderFacts) -> Finding {
    let who = format!("{} ({} dims)", facts.model_id, facts.dim);
    if facts.is_fallback {
        let advisory = facts
            .degraded
            .as_ref()
            .map(|d| d.advisory.clone())
            .unwrap_or_else(|| "install an embedding model: `cpersona model install`".into());
        let mut finding = Finding::new(
            "embedder",
            Severity::Warning,
            format!(
                "the embedder is the hashed n-gram fallback {who}: the vector arm matches shared \
                 words and spellings, not meaning"
            ),
        )
        .remedy(advisory)
        .with("model_id", &facts.model_id)
        .with("fallback", true);
        if let Some(evidence) = facts.degraded.as_ref().and_then(|d| d.evidence.clone()) {
            finding = finding.with("evidence", evidence);
        }
        return finding;
    }
    match &facts.degraded {
        None => Finding::ok("embedder", format!("the embedder {who} answers")),
        Some(degraded) => Finding::new(
            "embedder",
            Severity::Warning,
            format!("the embedder {who} is degraded: {}", degraded.reason),
        )
        .remedy(degraded.advisory.clone())
        .with("model_id", &facts.model_id)
        .with("advisory_severity", degraded.severity)
        .with("evidence", degraded.evidence.clone()),
    }
}

/// `embedding_model`: rows whose vector was written by another model or dimension. When the
/// store's own identity differs from the embedder, recall skips the vector arm entirely.
pub fn embedding_model(facts: &EmbedderFacts, tables: &[TableVectors]) -> Finding {
    let other: u64 = tables.iter().map(TableVectors::other_rows).sum();
    let per_table = per_table_other(tables);
    let configured = format!("{} ({} dims)", facts.model_id, facts.dim);
    if !facts.store_matches {
        let store = format!("{} ({} dims)", facts.store_model_id, facts.store_dim);
        return Finding::new(
            "embedding_model",
            Severity::Warning,
            format!(
                "vector arm skipped: the store's vectors are {store}, the embedder is \
                 {configured}; recall answers from the lexical arms only ({per_table})"
            ),
        )
        .remedy(format!(
            "restart with the embedder that wrote the vectors ({store}), or run `cpersona \
             reembed` to re-embed the store with {configured}; until then new rows land \
             without a vector and wait in the embedding queue"
        ))
        .count(other)
        .with("store_model_id", &facts.store_model_id)
        .with("store_dim", facts.store_dim)
        .with("tables", tables);
    }
    if other == 0 {
        return Finding::ok(
            "embedding_model",
            format!("every stored vector is {configured}"),
        );
    }
    let (reason, remedy) = match &facts.reembed_from {
        Some(from) => (
            format!(
                "vector arm partial: re-embedding from {from} to {configured} is under way; \
                 {other} rows still carry another model's vector ({per_table}) and recall \
                 reaches them through the lexical arms only until they are done"
            ),
            "nothing to do: `cpersona serve` re-embeds them in the background (progress in \
             get_queue_status's `reembed`); `cpersona reembed` does it in the foreground"
                .to_owned(),
        ),
        None => (
            format!(
                "vector arm partial: {other} rows carry vectors of another model ({per_table}); \
                 recall never compares them with {configured} queries, so it misses them"
            ),
            format!(
                "re-embed those rows with {configured}: `cpersona serve` does it in the \
                 background, `cpersona reembed` in the foreground"
            ),
        ),
    };
    Finding::new("embedding_model", Severity::Warning, reason)
        .remedy(remedy)
        .count(other)
        .with("tables", tables)
}

/// `vector_coverage`: the share of rows whose vector the arm can search now. It counts rows
/// already carrying the configured model against the rest, so it stays honest while a
/// re-embedding runs.
pub fn vector_coverage(facts: &EmbedderFacts, tables: &[TableVectors]) -> Finding {
    let rows: u64 = tables.iter().map(|t| t.rows).sum();
    let searchable: u64 = if facts.store_matches {
        tables.iter().map(|t| t.current).sum()
    } else {
        0
    };
    let share = if rows == 0 {
        1.0
    } else {
        searchable as f64 / rows as f64
    };
    let base = Finding::ok("vector_coverage", "")
        .with("rows", rows)
        .with("searchable", searchable)
        .with("share", share)
        .with("tables", tables);
    if searchable == rows {
        return Finding {
            reason: format!("the vector arm covers every row ({rows})"),
            ..base
        };
    }
    let missing: u64 = tables.iter().map(|t| t.missing).sum();
    let other: u64 = tables.iter().map(TableVectors::other_rows).sum();
    Finding {
        severity: Severity::Warning,
        reason: format!(
            "the vector arm covers {searchable} of {rows} rows ({:.1}%): {other} carry another \
             model's vector, {missing} have none{}",
            share * 100.0,
            if facts.store_matches {
                ""
            } else {
                ", and the store's model is not the embedder's"
            }
        ),
        remedy: "see embedding_model and null_embedding: the share rises as rows get vectors \
                 of the configured model"
            .into(),
        count: Some(rows - searchable),
        ..base
    }
}

/// `null_embedding` (memories) or `null_episode_embedding` (episodes): rows without a
/// vector. `fix` queues them and embeds up to [`FIX_EMBED_ROWS`].
pub fn null_embedding(facts: &EmbedderFacts, table: &TableVectors) -> Finding {
    let check = null_check_name(table.table);
    if table.missing == 0 {
        return Finding::ok(check, format!("every row of {} has a vector", table.table));
    }
    let unqueued = table.missing - table.missing_queued.min(table.missing);
    let remedy = if facts.store_matches {
        format!(
            "check_health with fix=true queues the {unqueued} unqueued rows and embeds up to \
             {FIX_EMBED_ROWS} now; the queue fills the rest while the embedder answers"
        )
    } else {
        "the embedder does not match the store's vectors, so these rows wait: see \
         embedding_model"
            .to_owned()
    };
    Finding::new(
        check,
        Severity::Warning,
        format!(
            "{} of {} rows of {} have no vector ({} queued): recall's vector arm cannot find them",
            table.missing, table.rows, table.table, table.missing_queued
        ),
    )
    .remedy(remedy)
    .count(table.missing)
    .repairable(if facts.store_matches {
        table.missing
    } else {
        unqueued
    })
    .with("table", table.table)
    .with("queued", table.missing_queued)
}

/// The check name for `table`'s missing vectors (CPersona's names).
pub fn null_check_name(table: &str) -> &'static str {
    if table == "episodes" {
        "null_episode_embedding"
    } else {
        "null_embedding"
    }
}

/// `stale_pending_tasks`: queued rows out of automatic attempts never get a vector unless
/// someone retries them; `fix` resets their attempts.
pub fn stale_pending_tasks(queue: &QueueFacts) -> Finding {
    let age = queue
        .oldest_age_ms
        .map(|ms| format!(", the oldest waiting {}", human_age(ms)))
        .unwrap_or_default();
    let base = Finding::ok("stale_pending_tasks", "")
        .with("pending", queue.pending)
        .with("stuck", queue.stuck)
        .with("max_attempts", queue.max_attempts)
        .with("oldest_age_ms", queue.oldest_age_ms)
        .with("last_error", queue.last_error.clone());
    if queue.stuck > 0 {
        return Finding {
            severity: Severity::Warning,
            reason: format!(
                "{} of {} queued rows failed {} attempts and are no longer retried{age}; last \
                 error: {}",
                queue.stuck,
                queue.pending,
                queue.max_attempts,
                queue.last_error.as_deref().unwrap_or("none recorded")
            ),
            remedy: "fix the embedder (see embedder), then check_health with fix=true resets \
                     their attempts and embeds them"
                .into(),
            count: Some(queue.stuck),
            repairable: Some(queue.stuck),
            ..base
        };
    }
    if queue.pending > 0 {
        return Finding {
            severity: Severity::Info,
            reason: format!(
                "{} rows wait in the embedding queue{age}, none out of attempts",
                queue.pending
            ),
            remedy: "they drain in the background while the embedder answers".into(),
            count: Some(queue.pending),
            ..base
        };
    }
    Finding {
        reason: "the embedding queue is empty".into(),
        ..base
    }
}

fn per_table_other(tables: &[TableVectors]) -> String {
    tables
        .iter()
        .map(|t| {
            let models: Vec<String> = t
                .other
                .iter()
                .map(|m| format!("{} × {} ({} dims)", m.rows, m.model_id, m.dim))
                .collect();
            if models.is_empty() {
                format!("{}: none of another model", t.table)
            } else {
                format!("{}: {}", t.table, models.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `ms` as the largest whole unit (s, min, h, d).
pub fn human_age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7_199 => format!("{} min", s / 60),
        7_200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

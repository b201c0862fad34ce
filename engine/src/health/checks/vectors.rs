//! Reads for the vector arm's checks: the embedder and the store's recorded identity, each
//! table's vectors counted against the embedder, and the embedding queue.

use rusqlite::{Connection, OptionalExtension, params};

use crate::embed::{EmbedHealth, hash::HASH_MODEL_ID};
use crate::error::Result;
use crate::health::checks::{AGENT, VECTOR_TABLES};
use crate::health::stages::facts::{
    DegradedEmbedder, EmbedderFacts, ModelRows, QueueFacts, TableVectors,
};
use crate::store::Store;
use crate::time::now_ms;

/// The embedder's identity and health against the store's recorded identity.
pub(crate) fn embedder(store: &Store) -> EmbedderFacts {
    let identity = store.embedder.identity();
    let target = store.vector_target();
    let degraded = match store.embedder.health() {
        EmbedHealth::Healthy => None,
        EmbedHealth::Degraded {
            severity,
            reason,
            evidence,
            advisory,
        } => Some(DegradedEmbedder {
            severity: severity.as_str(),
            reason,
            evidence,
            advisory,
        }),
    };
    EmbedderFacts {
        model_id: identity.model_id.clone(),
        dim: identity.dim,
        is_fallback: identity.model_id == HASH_MODEL_ID,
        degraded,
        store_model_id: target.model_id,
        store_dim: target.dim,
        store_matches: target.embedder_matches,
        reembed_from: target.reembed_from.map(|(model, _)| model),
    }
}

/// Each table's rows counted by the vector they carry: the embedder's, another model's, none.
pub(crate) fn tables(store: &Store, agent: &str) -> Result<Vec<TableVectors>> {
    let identity = store.embedder.identity().clone();
    store.read(|conn| {
        VECTOR_TABLES
            .iter()
            .map(|table| table_vectors(conn, table, agent, &identity.model_id, identity.dim))
            .collect()
    })
}

fn table_vectors(
    conn: &Connection,
    table: &'static str,
    agent: &str,
    model_id: &str,
    dim: usize,
) -> Result<TableVectors> {
    let (rows, current, missing, missing_queued) = conn.query_row(
        &format!(
            "SELECT COUNT(*), \
               COALESCE(SUM(embedding IS NOT NULL AND embedding_model = ?2 AND embedding_dim = ?3), 0), \
               COALESCE(SUM(embedding IS NULL), 0), \
               COALESCE(SUM(embedding IS NULL AND EXISTS (SELECT 1 FROM embedding_queue q \
                 WHERE q.table_name = '{table}' AND q.row_id = t.id)), 0) \
             FROM {table} t WHERE {AGENT}"
        ),
        params![agent, model_id, dim as i64],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
    )?;
    let mut stmt = conn.prepare(&format!(
        "SELECT embedding_model, embedding_dim, COUNT(*) FROM {table} \
         WHERE embedding IS NOT NULL AND (embedding_model <> ?2 OR embedding_dim <> ?3) \
         AND {AGENT} GROUP BY 1, 2 ORDER BY 3 DESC, 1"
    ))?;
    let other = stmt
        .query_map(params![agent, model_id, dim as i64], |row| {
            Ok(ModelRows {
                model_id: row.get(0)?,
                dim: row.get::<_, i64>(1)?.max(0) as u64,
                rows: row.get::<_, i64>(2)?.max(0) as u64,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let count = |n: i64| n.max(0) as u64;
    Ok(TableVectors {
        table,
        rows: count(rows),
        current: count(current),
        missing: count(missing),
        missing_queued: count(missing_queued),
        other,
    })
}

/// The embedding queue of `agent` (`""` = all).
pub(crate) fn queue(store: &Store, agent: &str) -> Result<QueueFacts> {
    let max_attempts = store.settings.queue_max_attempts;
    store.read(|conn| {
        let (pending, stuck, oldest): (i64, i64, Option<i64>) = conn.query_row(
            &format!(
                "SELECT COUNT(*), COALESCE(SUM(attempts >= ?2), 0), MIN(enqueued_at_ms) \
                 FROM embedding_queue WHERE {AGENT}"
            ),
            params![agent, max_attempts],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        let last_error: Option<String> = conn
            .query_row(
                &format!(
                    "SELECT last_error FROM embedding_queue WHERE attempts > 0 \
                     AND last_error <> '' AND {AGENT} ORDER BY enqueued_at_ms DESC LIMIT 1"
                ),
                params![agent],
                |row| row.get(0),
            )
            .optional()?;
        Ok(QueueFacts {
            pending: pending.max(0) as u64,
            stuck: stuck.max(0) as u64,
            max_attempts,
            oldest_age_ms: oldest.map(|t| now_ms() - t),
            last_error,
        })
    })
}

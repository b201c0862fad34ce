//! The persisted embedding queue: rows whose vector is owed, filled by
//! [`Engine::drain_embedding_queue`] when the embedder is back, and reported by
//! `get_queue_status`. It must never embed inside the writer lock.

use rusqlite::{Transaction, params};
use serde::Serialize;

use crate::error::Result;
use crate::store::Store;
use crate::time::now_ms;

/// `get_queue_status`'s response (CPersona's shape plus `exhausted`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QueueStatus {
    /// Always true: the queue always exists.
    pub enabled: bool,
    /// Rows waiting for a vector.
    pub pending: i64,
    /// Rows that reached `max_retries` and wait for an explicit drain.
    pub exhausted: i64,
    /// Attempts before a row stops being retried automatically.
    pub max_retries: u32,
    /// Seconds between attempts on one row.
    pub retry_delay: u64,
    /// A re-embedding under way (or blocked) after a model change; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reembed: Option<crate::store::reembed::ReembedProgress>,
}

/// What one drain did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DrainOutcome {
    /// Rows that got their vector.
    pub embedded: usize,
    /// Rows attempted that failed again (still queued).
    pub failed: usize,
    /// Rows still queued after the drain.
    pub remaining: i64,
    /// Why the last attempt failed, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Records whose owed node and block vectors this drain filled (at most `max_rows`).
    #[serde(skip_serializing_if = "is_zero")]
    pub derived_filled: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Queues `(table, row_id)` (or records another failed attempt).
pub(crate) fn enqueue(
    tx: &Transaction<'_>,
    table: &str,
    row_id: i64,
    agent_id: &str,
    reason: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO embedding_queue(table_name, row_id, agent_id, enqueued_at_ms, last_error) \
         VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT(table_name, row_id) DO UPDATE SET last_error = excluded.last_error",
    )?
    .execute(params![table, row_id, agent_id, now_ms(), reason])?;
    Ok(())
}

/// Removes `(table, row_id)` from the queue (its vector landed).
pub(crate) fn dequeue(tx: &Transaction<'_>, table: &str, row_id: i64) -> Result<()> {
    tx.prepare_cached("DELETE FROM embedding_queue WHERE table_name = ? AND row_id = ?")?
        .execute(params![table, row_id])?;
    Ok(())
}

impl Store {
    /// `get_queue_status`.
    pub fn get_queue_status(&self) -> Result<QueueStatus> {
        let max = self.settings.queue_max_attempts;
        self.read(|conn| {
            let (pending, exhausted) = conn.query_row(
                "SELECT COUNT(*), COALESCE(SUM(attempts >= ?), 0) FROM embedding_queue",
                [max],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            Ok(QueueStatus {
                enabled: true,
                pending,
                exhausted,
                max_retries: max,
                retry_delay: self.settings.queue_retry_delay_secs,
                reembed: None,
            })
        })
    }

    /// Embedder calls are batched by [`crate::EngineConfig::embed_batch`]; each batch's
    /// vectors are written in one transaction, only if the row's text is unchanged since it
    /// was read.
    /// Embeds up to `max_rows` queued rows, oldest first; `force` also retries rows inside
    /// their retry delay or out of attempts (an operator's explicit "embed now"). Derived
    /// rows (nodes, blocks) are filled by the caller (`derived::drain_embedding_queue`).
    pub(crate) fn drain_queue(&self, max_rows: usize, force: bool) -> Result<DrainOutcome> {
        let now = now_ms();
        let (retry_before, max_attempts) = if force {
            (i64::MAX, u32::MAX)
        } else {
            let delay_ms = (self.settings.queue_retry_delay_secs as i64).saturating_mul(1000);
            (now - delay_ms, self.settings.queue_max_attempts)
        };
        let due: Vec<(String, i64, String)> = self.read(|conn| {
            let mut stmt = conn.prepare(
                "SELECT q.table_name, q.row_id, \
                   CASE q.table_name WHEN 'memories' THEN m.content ELSE e.summary END \
                 FROM embedding_queue q \
                 LEFT JOIN memories m ON q.table_name = 'memories' AND m.id = q.row_id \
                 LEFT JOIN episodes e ON q.table_name = 'episodes' AND e.id = q.row_id \
                 WHERE q.attempts < ? AND (q.attempts = 0 OR q.enqueued_at_ms <= ?) \
                 ORDER BY q.enqueued_at_ms, q.table_name, q.row_id LIMIT ?",
            )?;
            let rows = stmt.query_map(
                params![max_attempts, retry_before, max_rows as i64],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    ))
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })?;
        let mut outcome = DrainOutcome {
            embedded: 0,
            failed: 0,
            remaining: 0,
            last_error: None,
            derived_filled: 0,
        };
        let target = self.vector_target();
        let format = self.settings.embedding_format;
        for batch in due.chunks(self.settings.embed_batch) {
            let texts: Vec<&str> = batch.iter().map(|(_, _, text)| text.as_str()).collect();
            let result = self.embed_for_store(&texts);
            self.write(|tx| {
                for (idx, (table, row_id, text)) in batch.iter().enumerate() {
                    match &result {
                        Ok(blobs) => {
                            let column = if table == "memories" { "content" } else { "summary" };
                            let sql = format!(
                                "UPDATE {table} SET embedding = ?, embedding_model = ?, \
                                 embedding_dim = ?, embedding_format = ? WHERE id = ? AND {column} = ?"
                            );
                            let n = tx.prepare_cached(&sql)?.execute(params![
                                blobs[idx], target.model_id, target.dim as i64, format.tag(), row_id, text
                            ])?;
                            // A row whose text changed meanwhile stays queued for its new text.
                            if n == 1 {
                                dequeue(tx, table, *row_id)?;
                                outcome.embedded += 1;
                            }
                        }
                        Err(reason) => {
                            tx.prepare_cached(
                                "UPDATE embedding_queue SET attempts = attempts + 1, \
                                 enqueued_at_ms = ?, last_error = ? WHERE table_name = ? AND row_id = ?",
                            )?
                            .execute(params![now, reason, table, row_id])?;
                            outcome.failed += 1;
                        }
                    }
                }
                Ok(())
            })?;
            if let Err(reason) = result {
                outcome.last_error = Some(reason);
                break;
            }
        }
        outcome.remaining = self.get_queue_status()?.pending;
        Ok(outcome)
    }
}

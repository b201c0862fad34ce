//! The bulk path of one import batch: inside the batch's transaction, the per-row FTS5
//! trigger on `memories` is set aside, the rows are inserted, the full-text index is filled
//! for exactly the new rows with one `INSERT … SELECT`, and the trigger is put back with its
//! stored SQL — all before the commit, so a crash or an error leaves the schema and the index
//! as they were (SQLite DDL is transactional). The change-log and every other trigger still
//! fire per row. The writer's page cache is widened for the batch so index pages are not
//! spilled to the WAL and rewritten. Nothing here may commit or leave the schema changed.

use rusqlite::{OptionalExtension, Transaction};

use crate::error::Result;

/// The trigger that indexes a new memory row (migration 0002).
const FTS_INSERT_TRIGGER: &str = "memories_fts_ai";

/// The writer's page cache during a bulk batch, KiB (SQLite's negative `cache_size`).
const BULK_CACHE_KIB: i64 = 64 * 1024;

/// A batch whose FTS work is deferred to its end.
pub(crate) struct DeferredFts {
    trigger_sql: String,
    max_id_before: i64,
    cache_before: i64,
}

impl DeferredFts {
    /// Sets the insert trigger aside within `tx`; `None` when the store has no such trigger
    /// (nothing is then changed and rows take the per-row path).
    pub(crate) fn begin(tx: &Transaction<'_>) -> Result<Option<DeferredFts>> {
        let trigger_sql: Option<String> = tx
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1",
                [FTS_INSERT_TRIGGER],
                |row| row.get(0),
            )
            .optional()?;
        let Some(trigger_sql) = trigger_sql else {
            return Ok(None);
        };
        // AUTOINCREMENT: every row inserted from here on has an id above this one.
        let max_id_before: i64 =
            tx.query_row("SELECT COALESCE(MAX(id), 0) FROM memories", [], |row| {
                row.get(0)
            })?;
        let cache_before: i64 = tx.query_row("PRAGMA cache_size", [], |row| row.get(0))?;
        tx.pragma_update(None, "cache_size", -BULK_CACHE_KIB)?;
        tx.execute_batch(&format!("DROP TRIGGER {FTS_INSERT_TRIGGER}"))?;
        Ok(Some(DeferredFts {
            trigger_sql,
            max_id_before,
            cache_before,
        }))
    }

    /// Indexes every memory inserted since [`DeferredFts::begin`] and restores the trigger;
    /// returns how many rows were indexed.
    pub(crate) fn finish(self, tx: &Transaction<'_>) -> Result<usize> {
        let indexed = tx.execute(
            "INSERT INTO memories_fts(rowid, content) SELECT id, content FROM memories \
             WHERE id > ?1 ORDER BY id",
            [self.max_id_before],
        )?;
        tx.execute_batch(&self.trigger_sql)?;
        tx.pragma_update(None, "cache_size", self.cache_before)?;
        Ok(indexed)
    }
}

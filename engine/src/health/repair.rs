//! `fix: true`: the repairs, each in bounded transactions, each reporting what landed. FTS
//! tables that fail are rebuilt ('rebuild'); rows missing vectors are queued for the drainer
//! and up to [`FIX_EMBED_ROWS`] embedded now; queued rows out of attempts get their attempts
//! back; exact duplicate copies are removed (never the oldest, a locked or a referenced row).
//! Everything else is reported, never touched: a repair that would lose text does not run.

use rusqlite::params;

use crate::derived::drain_embedding_queue;
use crate::error::Result;
use crate::health::checks::AGENT;
use crate::health::checks::rows::REMOVABLE_COPY;
use crate::health::stages::Repair;
use crate::health::stages::vectors::FIX_EMBED_ROWS;
use crate::store::Store;
use crate::time::now_ms;

/// Rows one repair transaction writes at most.
const BATCH_ROWS: usize = 1_000;
/// Rows one `fix` run queues, resets or removes at most per check; the note says when it cut.
const RUN_ROWS: u64 = 100_000;

/// Rebuilds `fts` (one of `checks::fts::FTS_TABLES`) from its content table.
pub(crate) fn rebuild_fts(store: &Store, fts: &[&'static str]) -> Result<Repair> {
    for table in fts {
        store.write(|tx| {
            tx.execute(
                &format!("INSERT INTO {table}({table}) VALUES ('rebuild')"),
                [],
            )?;
            Ok(())
        })?;
    }
    Ok(Repair {
        action: "fts_rebuild".into(),
        rows: fts.len() as u64,
        landed: true,
        note: format!("rebuilt {} from their rows", fts.join(", ")),
    })
}

/// Queues `table`'s rows without a vector that are not queued yet.
pub(crate) fn queue_missing(store: &Store, table: &str, agent: &str) -> Result<Repair> {
    let sql = format!(
        "INSERT INTO embedding_queue(table_name, row_id, agent_id, enqueued_at_ms) \
         SELECT '{table}', t.id, t.agent_id, ?2 FROM {table} t \
         WHERE t.embedding IS NULL AND {AGENT} AND NOT EXISTS (SELECT 1 FROM embedding_queue q \
           WHERE q.table_name = '{table}' AND q.row_id = t.id) \
         ORDER BY t.id LIMIT {BATCH_ROWS}"
    );
    let queued = batches(store, |tx| {
        Ok(tx.prepare_cached(&sql)?.execute(params![agent, now_ms()])?)
    })?;
    Ok(Repair {
        action: "queued_for_embedding".into(),
        rows: queued.rows,
        landed: true,
        note: format!(
            "queued {} rows of {table} for the embedding drainer{}",
            queued.rows,
            queued.cut_note()
        ),
    })
}

/// Gives queued rows out of attempts their attempts back, so the drainer retries them.
pub(crate) fn reset_stuck(store: &Store, agent: &str) -> Result<Repair> {
    let max = store.settings.queue_max_attempts;
    let sql = format!(
        "UPDATE embedding_queue SET attempts = 0 WHERE (table_name, row_id) IN \
         (SELECT table_name, row_id FROM embedding_queue WHERE attempts >= ?2 AND {AGENT} \
          LIMIT {BATCH_ROWS})"
    );
    let reset = batches(store, |tx| {
        Ok(tx.prepare_cached(&sql)?.execute(params![agent, max])?)
    })?;
    Ok(Repair {
        action: "reset_attempts".into(),
        rows: reset.rows,
        landed: true,
        note: format!(
            "gave {} queued rows their {max} attempts back{}",
            reset.rows,
            reset.cut_note()
        ),
    })
}

/// Embeds up to [`FIX_EMBED_ROWS`] queued rows now (retrying delayed and exhausted ones).
pub(crate) fn drain_now(store: &Store) -> Result<(u64, String)> {
    let drained = drain_embedding_queue(store, FIX_EMBED_ROWS as usize, true)?;
    let mut note = format!(
        "embedded {} queued rows now, {} remain queued",
        drained.embedded, drained.remaining
    );
    if let Some(err) = &drained.last_error {
        note.push_str(&format!(" (the embedder failed: {err})"));
    }
    Ok((drained.embedded as u64, note))
}

/// Removes exact duplicate copies (see `checks::rows::REMOVABLE_COPY`).
pub(crate) fn remove_copies(store: &Store, agent: &str) -> Result<Repair> {
    let sql = format!(
        "DELETE FROM memories WHERE id IN (SELECT m.id FROM memories m \
         WHERE (?1 = '' OR m.agent_id = ?1) AND {REMOVABLE_COPY} ORDER BY m.id LIMIT {BATCH_ROWS})"
    );
    let removed = batches(store, |tx| Ok(tx.prepare_cached(&sql)?.execute([agent])?))?;
    Ok(Repair {
        action: "removed_duplicates".into(),
        rows: removed.rows,
        landed: true,
        note: format!(
            "removed {} exact copies, keeping the oldest row of each group{}",
            removed.rows,
            removed.cut_note()
        ),
    })
}

/// Rows written over the batches of one repair, and whether [`RUN_ROWS`] cut it.
struct Batched {
    rows: u64,
    cut: bool,
}

impl Batched {
    fn cut_note(&self) -> String {
        if self.cut {
            format!("; stopped at the {RUN_ROWS}-row bound of one run, run fix again for the rest")
        } else {
            String::new()
        }
    }
}

/// Runs `step` in one transaction at a time until it writes nothing or [`RUN_ROWS`] is
/// reached; each committed batch counts.
fn batches(
    store: &Store,
    mut step: impl FnMut(&rusqlite::Transaction<'_>) -> Result<usize>,
) -> Result<Batched> {
    let mut rows = 0u64;
    loop {
        let n = store.write(&mut step)? as u64;
        rows += n;
        if n == 0 {
            return Ok(Batched { rows, cut: false });
        }
        if rows >= RUN_ROWS {
            return Ok(Batched { rows, cut: true });
        }
    }
}

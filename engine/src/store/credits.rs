//! Recall credit held in memory until the next upkeep pass writes it.
//!
//! Every recall that returns memories credits them (`recall_count + 1`, `last_recalled_at_ms
//! = now`, `recall/credit.rs`). Written at once, that is one write transaction per recall,
//! and in WAL mode every commit makes each reader connection drop its page cache and its
//! memory map on its next read: at 5,882 rows the credit write cost 1-2 ms of a 9 ms recall
//! round trip (scale/RESULTS.md, session 7), most of it in the next recall's cold reads.
//!
//! So a credit is recorded here and written in one transaction by [`Store::flush_credits`]:
//! by `serve`'s upkeep every `CPERSONA_INDEX_FLUSH_MS`, before anything that reads the
//! columns from SQL (export, merge), when more than [`FLUSH_AT_ROWS`] rows wait, and when the
//! store is dropped. Within the process nothing can tell: the confidence report reads the
//! stored columns plus what waits here ([`Store::pending_credit`]), which is what it would
//! have read had each credit been written at once. What it costs: a process killed with
//! `kill -9` loses at most one flush interval of credit (counters, never a memory or an
//! acknowledged write), and a second process on the same file sees the counters up to one
//! interval late.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::params;

use crate::error::Result;
use crate::store::{Store, lock};

/// Rows with waiting credit beyond which the recall that adds more writes them at once, so a
/// process without an upkeep loop (a test, a library user) holds a bounded map.
pub(crate) const FLUSH_AT_ROWS: usize = 4_096;

/// Credit one memory row is owed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Credit {
    /// Recalls that returned the row since the last flush.
    pub(crate) recalls: u64,
    /// The latest of those recalls' clocks, which becomes `last_recalled_at_ms`.
    pub(crate) last_recalled_ms: i64,
}

/// (memory id, the recalling agent) → credit. The agent keys the UPDATE as the immediate
/// write did, so a credit can never move another agent's row.
pub(crate) type PendingCredits = HashMap<(i64, String), Credit>;

impl Store {
    /// Records that a recall by `agent_id` at `now_ms` returned the memories `ids`; writes
    /// everything waiting when the map has grown past [`FLUSH_AT_ROWS`].
    pub(crate) fn credit_later(&self, agent_id: &str, ids: &[i64], now_ms: i64) -> Result<()> {
        let waiting = {
            let mut shared = lock(&self.credits);
            // Copy-on-write: a recall reading a snapshot keeps its own.
            let pending = Arc::make_mut(&mut shared);
            for &id in ids {
                let credit = pending.entry((id, agent_id.to_owned())).or_insert(Credit {
                    recalls: 0,
                    last_recalled_ms: now_ms,
                });
                credit.recalls += 1;
                // The last recall's clock, as sequential writes would leave it.
                credit.last_recalled_ms = now_ms;
            }
            pending.len()
        };
        if waiting > FLUSH_AT_ROWS {
            self.flush_credits()?;
        }
        Ok(())
    }

    /// The credit waiting now, as a snapshot later credit does not change. Look a row up
    /// under its owner: credit recorded under another agent never lands, as the UPDATE is
    /// keyed by both.
    pub(crate) fn pending_credits(&self) -> Arc<PendingCredits> {
        Arc::clone(&lock(&self.credits))
    }

    /// Writes every waiting credit in one transaction; returns the rows credited. Rows
    /// deleted since their recall are skipped by the UPDATE. On failure the credit is put
    /// back (merged with what arrived meanwhile) for the next flush.
    pub(crate) fn flush_credits(&self) -> Result<usize> {
        let taken = Arc::unwrap_or_clone(std::mem::take(&mut *lock(&self.credits)));
        if taken.is_empty() {
            return Ok(0);
        }
        let written = self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE memories SET recall_count = recall_count + ?, \
                 last_recalled_at_ms = ? WHERE id = ? AND agent_id = ?",
            )?;
            let mut rows = 0;
            for ((id, agent_id), credit) in &taken {
                rows += stmt.execute(params![
                    credit.recalls as i64,
                    credit.last_recalled_ms,
                    id,
                    agent_id
                ])?;
            }
            Ok(rows)
        });
        if written.is_err() {
            let mut shared = lock(&self.credits);
            let pending = Arc::make_mut(&mut shared);
            for (key, older) in taken {
                let newer = pending.entry(key).or_insert(Credit {
                    recalls: 0,
                    last_recalled_ms: older.last_recalled_ms,
                });
                newer.recalls += older.recalls;
            }
        }
        written
    }
}

impl Drop for Store {
    /// The last credit lands when the store closes (a one-shot `cpersona recall`, a test). A
    /// failure here has no one to answer to and costs counters only, so it is dropped.
    fn drop(&mut self) {
        let _ = self.flush_credits();
    }
}

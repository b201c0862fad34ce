//! Keeping the index fresh without an operator: a flush turns the change log since the
//! segments' head into one small segment (rows with the store's vectors put, every other
//! changed id tombstoned), a merge folds segments the policy picks, and a rebuild starts a
//! table over. The server runs [`Store::maintain_index`] in the background; an operator runs
//! `cpersona index rebuild|flush|merge`.
//!
//! # Correctness
//! A flush writes each changed row's *current* state and moves the head to the last change it
//! read, committing only on the head it started from (compare-and-swap on the manifest), so a
//! change after that head stays in the live tail and masks whatever the segment holds. A kill
//! at any point leaves the old manifest or the new one (the index crate's crash safety), and
//! the change log still holds every change after the head either names.

use std::collections::HashSet;
use std::time::Duration;

use cpersona_index::segment::{MergePolicy, StoreHead, WriteBatch};
use cpersona_index::{Error as IndexError, Generation};
use serde::Serialize;

use crate::error::Result;
use crate::store::Store;
use crate::store::changelog::{changelog_head, purged_through};
use crate::store::generations::{
    BuildQuery, IndexTable, RebuildOutcome, RowBuf, blocks, read_record_row, record_sql,
    schema_version, stream_rows,
};

use super::needs_rebuild;

/// Most change-log entries one flush reads: a flush then holds at most this many rows'
/// vectors in memory (16,384 × 384 floats ≈ 25 MB); a longer backlog takes several flushes.
pub(crate) const FLUSH_MAX_CHANGES: usize = 16_384;

/// Leftover files younger than this are not collected (they may belong to another process's
/// write in flight).
const GARBAGE_MIN_AGE: Duration = Duration::from_secs(60);

/// What one flush did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlushOutcome {
    /// The table.
    pub table: IndexTable,
    /// Rows put into the new segment.
    pub rows: u64,
    /// Ids tombstoned (deleted, or no longer carrying the store's vector).
    pub tombstones: u64,
    /// The head the segments are complete up to now.
    pub head: u64,
    /// True when the table was rebuilt whole instead (never built, or overtaken by a purge).
    pub rebuilt: bool,
    /// True when another writer moved the manifest first: nothing landed, the next flush
    /// starts from its head.
    pub raced: bool,
}

/// What one merge did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// The table.
    pub table: IndexTable,
    /// Segments folded.
    pub segments: usize,
    /// Live rows of the merged segment.
    pub rows: u64,
    /// Leftover files removed afterwards.
    pub collected: usize,
}

/// FTS5 pages one upkeep step may write while merging a full-text index's segments.
const FTS_MERGE_PAGES: i64 = 256;

/// What one maintenance pass did, per table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MaintainOutcome {
    /// Flushes that landed or raced (a table already fresh is absent).
    pub flushed: Vec<FlushOutcome>,
    /// Merges run.
    pub merged: Vec<MergeReport>,
    /// Full-text indexes (`memories_fts`, `episodes_fts`) whose b-tree segments were merged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fts_merged: Vec<&'static str>,
    /// Memory rows whose waiting recall credit was written (`store/credits.rs`); the upkeep
    /// is where credit lands, and writing it leaves no work for another pass.
    #[serde(skip_serializing_if = "is_zero")]
    pub credited: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl MaintainOutcome {
    /// True when the pass wrote nothing.
    pub fn is_idle(&self) -> bool {
        self.flushed.is_empty() && self.merged.is_empty() && self.fts_merged.is_empty()
    }
}

/// A flush's read: the rows to put, the ids to tombstone and the head they bring the segments to.
struct FlushRead {
    rows: Vec<RowBuf>,
    deletes: Vec<i64>,
    head: u64,
    schema_version: u32,
}

impl Store {
    /// Builds `table`'s index from every row with a vector of the store's model, streamed from
    /// one read transaction, and publishes it (records: one segment replacing all; blocks: the
    /// generation file). `progress(done, total)` every 1024 rows and at the end. A build a purge
    /// overtook is reported `discarded` (its segments stay unusable until the next rebuild).
    pub fn rebuild_index(
        &self,
        table: IndexTable,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RebuildOutcome> {
        if table == IndexTable::Blocks {
            return self.rebuild_blocks(progress);
        }
        let target = self.vector_target();
        let segments = match self.segment_store(table) {
            Ok(segments) => segments,
            Err(_) => self.reset_segments(table)?,
        };
        let (count_sql, select_sql) = record_sql(table);
        let dim = target.dim;
        let (head, outcome) = self.read(|conn| {
            let tx = conn.unchecked_transaction()?;
            let head = StoreHead {
                changelog_head: changelog_head(&tx)?,
                schema_version: schema_version(&tx)?,
            };
            let outcome = segments.rebuild_streamed(head, |writer| {
                stream_rows(
                    &tx,
                    &target,
                    BuildQuery {
                        count_sql: &count_sql,
                        select_sql: &select_sql,
                    },
                    &mut |row, buf| read_record_row(row, buf, dim),
                    progress,
                    &mut |row| Ok(writer.push(row)?),
                )
                .map(|_| ())
            })?;
            tx.commit()?;
            Ok((head.changelog_head, outcome))
        })?;
        let purged = self.read(purged_through)?;
        let _ = std::fs::remove_file(self.legacy_generation_path(table));
        let _ = segments.collect_garbage(GARBAGE_MIN_AGE);
        Ok(RebuildOutcome {
            table,
            generation: outcome.seq.unwrap_or(0),
            rows: outcome.rows,
            bytes: outcome.bytes,
            changelog_head: head,
            discarded: purged > head,
            path: self.index_path(table),
        })
    }

    /// The block generation: one file, numbered past the one on disk.
    fn rebuild_blocks(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<RebuildOutcome> {
        let target = self.vector_target();
        let path = self.index_path(IndexTable::Blocks);
        let generation = Generation::open(&path).map_or(0, |g| g.generation()) + 1;
        let (head, summary) =
            self.read(|conn| blocks::build(conn, &target, &path, generation, progress))?;
        let purged = self.read(purged_through)?;
        let discarded = purged > head;
        if discarded {
            // A purge committed after the build's snapshot: its file may hold the agent.
            let _ = std::fs::remove_file(&path);
        }
        Ok(RebuildOutcome {
            table: IndexTable::Blocks,
            generation,
            rows: summary.count,
            bytes: summary.bytes,
            changelog_head: head,
            discarded,
            path,
        })
    }

    /// Brings `table`'s segments up to the change log: `None` when they already are (or the
    /// table has never held anything), else what landed. Segments never built, or overtaken by
    /// a purge, are rebuilt whole.
    pub fn flush_index(&self, table: IndexTable) -> Result<Option<FlushOutcome>> {
        let segments = match self.segment_store(table) {
            Ok(segments) => segments,
            Err(_) => self.reset_segments(table)?,
        };
        // Another process may have flushed or rebuilt: start from the manifest on disk.
        if segments.refresh().is_err() {
            self.reset_segments(table)?;
            return self.flush_index(table);
        }
        let (set, head) = segments.snapshot_with_head();
        let based_on = head.changelog_head;
        let (newest, purged) =
            self.read(|conn| Ok((changelog_head(conn)?, purged_through(conn)?)))?;
        if needs_rebuild(based_on, !set.segments().is_empty(), purged) {
            let has_rows = self.read(|conn| {
                Ok(conn.query_row(
                    &format!(
                        "SELECT EXISTS(SELECT 1 FROM {} WHERE embedding IS NOT NULL)",
                        table.name()
                    ),
                    [],
                    |row| row.get::<_, bool>(0),
                )?)
            })?;
            if newest == 0 && !has_rows {
                return Ok(None);
            }
            let rebuilt = self.rebuild_index(table, &mut |_, _| {})?;
            return Ok(Some(FlushOutcome {
                table,
                rows: rebuilt.rows,
                tombstones: 0,
                head: rebuilt.changelog_head,
                rebuilt: true,
                raced: false,
            }));
        }
        if newest <= based_on {
            return Ok(None);
        }
        let read = self.read(|conn| self.read_flush(conn, table, based_on))?;
        let Some(read) = read else {
            return Ok(None);
        };
        let batch = WriteBatch {
            based_on: Some(based_on),
            head: StoreHead {
                changelog_head: read.head,
                schema_version: read.schema_version,
            },
            rows: read.rows.iter().map(RowBuf::row).collect(),
            deletes: read.deletes.clone(),
        };
        match segments.commit(batch) {
            Ok(outcome) => Ok(Some(FlushOutcome {
                table,
                rows: outcome.rows,
                tombstones: outcome.tombstones,
                head: read.head,
                rebuilt: false,
                raced: false,
            })),
            Err(IndexError::StaleCommit { current, .. }) => Ok(Some(FlushOutcome {
                table,
                rows: 0,
                tombstones: 0,
                head: current,
                rebuilt: false,
                raced: true,
            })),
            Err(err) => Err(err.into()),
        }
    }

    /// Reads the changes after `based_on` (at most [`FLUSH_MAX_CHANGES`]) and the current
    /// state of each changed row, in one read transaction.
    fn read_flush(
        &self,
        conn: &rusqlite::Connection,
        table: IndexTable,
        based_on: u64,
    ) -> Result<Option<FlushRead>> {
        let tx = conn.unchecked_transaction()?;
        let newest = changelog_head(&tx)?;
        let mut stmt = tx.prepare_cached(
            "SELECT seq, row_id FROM change_log WHERE table_name = ? AND seq > ? \
             ORDER BY seq LIMIT ?",
        )?;
        let changes = stmt
            .query_map(
                rusqlite::params![table.name(), based_on as i64, FLUSH_MAX_CHANGES as i64],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
            )?
            .collect::<rusqlite::Result<Vec<(i64, i64)>>>()?;
        drop(stmt);
        // A full page may stop inside the log: the head is then its last entry, and the rest
        // waits for the next flush. Otherwise every change up to `newest` was read (entries of
        // other tables or purged agents between them included).
        let head = match changes.last() {
            Some(&(seq, _)) if changes.len() == FLUSH_MAX_CHANGES => seq as u64,
            _ => newest,
        };
        if head <= based_on {
            return Ok(None);
        }
        let mut ids: Vec<i64> = changes.iter().map(|&(_, id)| id).collect();
        ids.sort_unstable();
        ids.dedup();
        let target = self.vector_target();
        let (_, select_sql) = record_sql(table);
        // The same select a rebuild streams, narrowed to the changed ids.
        let by_ids = select_sql.replace(
            "ORDER BY created_at_ms DESC, id ASC",
            "AND id IN (SELECT value FROM json_each(?3)) ORDER BY created_at_ms DESC, id ASC",
        );
        // Integers only, so the JSON array needs no escaping.
        let ids_json = format!(
            "[{}]",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        );
        let mut rows = Vec::new();
        let mut found = HashSet::new();
        let mut stmt = tx.prepare(&by_ids)?;
        let mut cursor = stmt.query(rusqlite::params![
            target.model_id,
            target.dim as i64,
            ids_json
        ])?;
        while let Some(row) = cursor.next()? {
            let mut buf = RowBuf::default();
            if read_record_row(row, &mut buf, target.dim)? {
                found.insert(buf.id);
                rows.push(buf);
            }
        }
        drop(cursor);
        drop(stmt);
        let schema_version = schema_version(&tx)?;
        tx.commit()?;
        let deletes = ids.into_iter().filter(|id| !found.contains(id)).collect();
        Ok(Some(FlushRead {
            rows,
            deletes,
            head,
            schema_version,
        }))
    }

    /// Runs the merge the default policy picks for `table`, if any, then collects leftover
    /// files. `None` when the segments are in shape.
    pub fn merge_index(&self, table: IndexTable) -> Result<Option<MergeReport>> {
        let Ok(segments) = self.segment_store(table) else {
            return Ok(None);
        };
        let Some(plan) = segments.plan_merge(&MergePolicy::default()) else {
            return Ok(None);
        };
        let outcome = match segments.merge(&plan) {
            Ok(outcome) => outcome,
            // Another process changed the run first; the next pass plans again.
            Err(IndexError::StalePlan { .. }) => return Ok(None),
            Err(err) => return Err(err.into()),
        };
        let collected = segments.collect_garbage(GARBAGE_MIN_AGE)?.len();
        Ok(Some(MergeReport {
            table,
            segments: plan.seqs.len(),
            rows: outcome.rows,
            collected,
        }))
    }

    /// One maintenance pass over the record tables: flush each (rebuilding one never built
    /// or overtaken by a purge), then, when `merge`, run at most one merge per table.
    pub fn maintain_index(&self, merge: bool) -> Result<MaintainOutcome> {
        let mut outcome = MaintainOutcome {
            credited: self.flush_credits()?,
            ..MaintainOutcome::default()
        };
        for table in IndexTable::ALL {
            if let Some(flushed) = self.flush_index(table)? {
                outcome.flushed.push(flushed);
            }
            if merge && let Some(merged) = self.merge_index(table)? {
                outcome.merged.push(merged);
            }
        }
        if merge {
            outcome.fts_merged = self.merge_fts()?;
        }
        Ok(outcome)
    }

    /// Passes until one is idle; the passes run.
    pub fn maintain_index_until_idle(&self, merge: bool) -> Result<u64> {
        let mut passes = 1;
        while !self.maintain_index(merge)?.is_idle() {
            passes += 1;
        }
        Ok(passes)
    }

    /// One bounded step of FTS5's own segment merge per full-text table. Every write
    /// transaction leaves FTS5 a new b-tree segment and its automerge keeps several per level,
    /// so a store filled by many small writes (the default path) made every lexical query
    /// walk them all: the ladder's 1,000 rows imported in ten parts ranked 6x slower than the
    /// same rows imported at once (55 vs 9 ms, dev profile), and one `optimize` brought them
    /// back. A negative `merge` merges across levels down to one segment, at most
    /// [`FTS_MERGE_PAGES`] pages per step so the writer is held briefly; a step that found
    /// nothing to merge changes fewer than two rows (FTS5's documented test) and writes no page.
    /// Once a pass found nothing, passes skip the step (no write transaction every tick) until
    /// the change log moves: every write of indexed text enters it.
    fn merge_fts(&self) -> Result<Vec<&'static str>> {
        let marks = self.read(|conn| Ok((changelog_head(conn)?, purged_through(conn)?)))?;
        let mut rested = crate::store::lock(&self.fts_rested_at);
        if *rested == Some(marks) {
            return Ok(Vec::new());
        }
        let mut merged = Vec::new();
        for table in ["memories_fts", "episodes_fts"] {
            let worked = self.write(|tx| {
                let before = tx.total_changes();
                tx.execute(
                    &format!("INSERT INTO {table}({table}, rank) VALUES('merge', ?1)"),
                    [-FTS_MERGE_PAGES],
                )?;
                Ok(tx.total_changes() - before >= 2)
            })?;
            if worked {
                merged.push(table);
            }
        }
        *rested = merged.is_empty().then_some(marks);
        Ok(merged)
    }
}

//! The store's vector index: per record table (memories, episodes) a segment directory
//! `<db>.<table>.seg/` that the index crate's `SegmentStore` owns, kept fresh by flushes of
//! the change log (`maintain.rs`), and the block generation file. Recall reads a snapshot of
//! the segments and the head it is complete up to ([`IndexView`]); rows changed after that head
//! (the live tail, small between flushes) are masked and scored exactly from SQLite, so the
//! index is never wrong and, once flushed, not slower either.
//!
//! # Usable segments
//! A table's segments serve recall once they were built (a rebuild or a flush landed; head
//! above 0 or a segment listed) and when their head is at or past the purge mark (a purge
//! deletes the agent's change-log rows, so segments older than it cannot be masked row by row).
//! Otherwise recall scores every row from SQLite and says so; the next maintenance pass
//! rebuilds them.

use std::path::PathBuf;
use std::sync::Arc;

use cpersona_index::segment::{MergePolicy, MergeReason, SegmentSet, SegmentStore};
use cpersona_index::{EmbedderIdentity, Error as IndexError};

use crate::error::Result;
use crate::store::changelog::purged_through;
use crate::store::generations::{
    IndexStatus, IndexTable, PendingMerge, SegmentStatus, TableIndexStatus,
};
use crate::store::{Store, VectorTarget, lock};

pub(crate) mod cache;
mod maintain;

use cache::SegmentSlot;

pub use maintain::{FlushOutcome, MaintainOutcome, MergeReport};

/// The suffix of a record table's segment directory beside the database.
const SEGMENT_DIR_SUFFIX: &str = "seg";

/// What recall searches for one table: the segments with the change-log head they are
/// complete up to, or why there are none to search.
pub(crate) struct IndexView {
    /// The snapshot, scanned with the store's kernels; `None` when not usable.
    pub(crate) set: Option<Arc<SegmentSet>>,
    /// Every change at or before this head is in `set`.
    pub(crate) head: u64,
    /// Why `set` is `None`.
    pub(crate) note: Option<String>,
}

fn identity_of(target: &VectorTarget) -> EmbedderIdentity {
    EmbedderIdentity {
        model_id: target.model_id.clone(),
        dim: target.dim,
    }
}

/// Whether segments with this head and segment count hold a built index not overtaken by a
/// purge (see the module doc).
fn needs_rebuild(head: u64, has_segments: bool, purged: u64) -> bool {
    purged > head || (head == 0 && !has_segments)
}

impl Store {
    /// Where `table`'s index lives: the segment directory `<db>.<table>.seg` for memories
    /// and episodes, the generation file `<db>.blocks.gen` for blocks.
    pub fn index_path(&self, table: IndexTable) -> PathBuf {
        let suffix = match table {
            IndexTable::Blocks => "gen",
            IndexTable::Memories | IndexTable::Episodes => SEGMENT_DIR_SUFFIX,
        };
        let mut path = self.settings.db_path.clone().into_os_string();
        path.push(format!(".{}.{suffix}", table.name()));
        PathBuf::from(path)
    }

    /// The pre-segment generation file `<db>.<table>.gen` of a record table, which older
    /// versions wrote and this one no longer reads (a rebuild removes it).
    fn legacy_generation_path(&self, table: IndexTable) -> PathBuf {
        let mut path = self.settings.db_path.clone().into_os_string();
        path.push(format!(".{}.gen", table.name()));
        PathBuf::from(path)
    }

    /// `table`'s segment store for the store's vector target, opened on first use; `Err`
    /// says why it cannot be used (another model's manifest, an unreadable directory).
    pub(crate) fn segment_store(
        &self,
        table: IndexTable,
    ) -> std::result::Result<Arc<SegmentStore>, String> {
        let identity = identity_of(&self.vector_target());
        let mut cache = lock(&self.segments);
        if let Some(slot) = cache.get(&table)
            && slot.identity == identity
        {
            return slot.opened.clone();
        }
        let opened = SegmentStore::open(self.index_path(table), identity.clone())
            .map(Arc::new)
            .map_err(|err| match err {
                IndexError::SegmentMismatch { .. } => format!(
                    "index segments ignored: built for another embedder than {} ({} dims)",
                    identity.model_id, identity.dim
                ),
                other => format!("index segments ignored: {other}"),
            });
        cache.insert(
            table,
            SegmentSlot {
                identity,
                opened: opened.clone(),
            },
        );
        opened
    }

    /// Starts `table`'s segment directory over for the store's target (a manifest of another
    /// model or one that does not open); the rebuild that follows fills it.
    fn reset_segments(&self, table: IndexTable) -> Result<Arc<SegmentStore>> {
        let identity = identity_of(&self.vector_target());
        let store = Arc::new(SegmentStore::reset(
            self.index_path(table),
            identity.clone(),
        )?);
        lock(&self.segments).insert(
            table,
            SegmentSlot {
                identity,
                opened: Ok(store.clone()),
            },
        );
        Ok(store)
    }

    /// What recall searches for `table` now (see [`IndexView`]).
    pub(crate) fn index_view(&self, table: IndexTable) -> IndexView {
        let segments = match self.segment_store(table) {
            Ok(segments) => segments,
            Err(note) => {
                return IndexView {
                    set: None,
                    head: 0,
                    note: Some(note),
                };
            }
        };
        let (set, head) = segments.snapshot_with_head();
        let head = head.changelog_head;
        let purged = self.read(purged_through).unwrap_or(u64::MAX);
        let unusable = |note: &str| IndexView {
            set: None,
            head,
            note: Some(note.to_owned()),
        };
        if purged > head {
            return unusable("index segments predate a purge; the next flush rebuilds them");
        }
        if needs_rebuild(head, !set.segments().is_empty(), purged) {
            return unusable("index not built yet; the next flush builds it");
        }
        IndexView {
            set: Some(Arc::new((*set).clone().with_kernels(self.kernels))),
            head,
            note: None,
        }
    }

    /// The index state of each record table: segments, rows, tombstones, the live tail, the
    /// last merge and the merge pending.
    pub fn index_status(&self) -> Result<IndexStatus> {
        let mut tables = Vec::new();
        for table in IndexTable::ALL {
            tables.push(self.table_status(table)?);
        }
        Ok(IndexStatus { tables })
    }

    fn table_status(&self, table: IndexTable) -> Result<TableIndexStatus> {
        let view = self.index_view(table);
        let opened = self.segment_store(table).ok();
        let live_tail: u64 = self.read(|conn| {
            let sql = if view.set.is_some() {
                "SELECT COUNT(DISTINCT row_id) FROM change_log WHERE table_name = ?1 AND seq > ?2"
                    .to_owned()
            } else {
                format!(
                    "SELECT COUNT(*) FROM {} WHERE embedding IS NOT NULL AND ?1 = ?1 AND ?2 = ?2",
                    table.name()
                )
            };
            Ok(conn.query_row(
                &sql,
                rusqlite::params![table.name(), view.head as i64],
                |row| row.get::<_, i64>(0),
            )? as u64)
        })?;
        let mut status = TableIndexStatus {
            table,
            generation: None,
            rows: 0,
            live_tail,
            head: view.head,
            segments: Vec::new(),
            tombstones: 0,
            last_merge_ms: None,
            pending_merge: None,
            age_ms: None,
            file_bytes: None,
            stale_share: None,
            note: view.note.clone(),
        };
        let Some(segments) = opened else {
            return Ok(status);
        };
        let manifest = segments.manifest();
        let stats = segments.stats();
        status.segments = manifest
            .segments
            .iter()
            .zip(&stats)
            .map(|(entry, stat)| SegmentStatus {
                seq: entry.seq,
                origin: origin_name(entry.origin),
                rows: entry.rows,
                live_rows: stat.live_rows,
                tombstones: entry.tombstones,
                bytes: entry.bytes,
            })
            .collect();
        status.tombstones = manifest.segments.iter().map(|e| e.tombstones).sum();
        status.last_merge_ms = (manifest.last_merge_ms > 0).then_some(manifest.last_merge_ms);
        status.pending_merge = MergePolicy::default()
            .plan(&stats)
            .map(|plan| PendingMerge {
                segments: plan.seqs.len(),
                live_rows: plan.live_rows,
                reason: match plan.reason {
                    MergeReason::Level(_) => "level",
                    MergeReason::Dead => "dead",
                    MergeReason::Empty => "empty",
                },
            });
        if let Some(set) = &view.set {
            status.generation = Some(manifest.version);
            status.rows = set.live_rows() as u64;
            status.file_bytes = Some(manifest.segments.iter().map(|e| e.bytes).sum());
            status.age_ms = manifest
                .segments
                .iter()
                .map(|e| e.written_ms)
                .max()
                .map(|written| (crate::time::now_ms().max(0) as u64).saturating_sub(written));
            status.stale_share = Some(live_tail as f64 / status.rows.max(1) as f64);
        }
        Ok(status)
    }
}

fn origin_name(origin: cpersona_index::segment::SegmentOrigin) -> &'static str {
    use cpersona_index::segment::SegmentOrigin;
    match origin {
        SegmentOrigin::Flush => "flush",
        SegmentOrigin::Merge => "merge",
        SegmentOrigin::Rebuild => "rebuild",
    }
}

#[cfg(test)]
mod tests {
    use super::needs_rebuild;

    #[test]
    fn segments_serve_once_built_and_not_overtaken_by_a_purge() {
        assert!(needs_rebuild(0, false, 0), "never built");
        assert!(
            !needs_rebuild(0, true, 0),
            "built from a store with no change log"
        );
        assert!(
            !needs_rebuild(7, false, 0),
            "flushed, every row deleted since"
        );
        assert!(needs_rebuild(7, true, 8), "a purge after the head");
        assert!(!needs_rebuild(8, true, 8));
    }
}

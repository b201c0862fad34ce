//! The block generation (`<db>.blocks.gen`): every block row with int8 codes of the store's
//! model, in the same `cpersona-index` format as the record generations, so sign-bit
//! prefiltering and int8 re-ranking of blocks use the same kernels. Built by
//! `cpersona index rebuild --table blocks`; derived data, safe to delete.
//!
//! A block's row id packs `(kind, parent id, block index)` into one `i64`
//! ([`block_row_id`]); its creation time is its parent's, so rows keep the newest-first
//! order the format requires. The stored int8 codes are expanded to a unit vector and
//! quantised again by the writer (codes scaled to 127 at their maximum come back equal).
//! This module must never write to SQLite.

use std::path::Path;

use cpersona_index::WriteSummary;
use rusqlite::Connection;

use super::{BuildQuery, RowBuf, write_generation};
use crate::error::Result;
use crate::refs::{Ref, RefKind};
use crate::store::target::VectorTarget;

/// Bits of the block index inside a row id.
const BLOCK_BITS: u32 = 20;

/// The row id of block `index` of record `r`: `parent << 21 | index << 1 | (kind == mem)`.
/// `None` past the packing's range (block index ≥ 2^20 or parent ≥ 2^42).
pub fn block_row_id(r: Ref, index: usize) -> Option<i64> {
    let index = i64::try_from(index).ok().filter(|&i| i < 1 << BLOCK_BITS)?;
    let parent = Some(r.id).filter(|&p| (0..1i64 << (62 - BLOCK_BITS)).contains(&p))?;
    Some(parent << (BLOCK_BITS + 1) | index << 1 | i64::from(r.kind == RefKind::Mem))
}

/// The inverse of [`block_row_id`].
pub fn split_block_row_id(row_id: i64) -> (Ref, usize) {
    let parent = row_id >> (BLOCK_BITS + 1);
    let index = ((row_id >> 1) & ((1 << BLOCK_BITS) - 1)) as usize;
    let r = if row_id & 1 == 1 {
        Ref::mem(parent)
    } else {
        Ref::ep(parent)
    };
    (r, index)
}

/// Writes the block generation numbered `generation` to `path` from one read transaction;
/// returns the change-log head it read and what the writer wrote.
pub(crate) fn build(
    conn: &Connection,
    target: &VectorTarget,
    path: &Path,
    generation: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(u64, WriteSummary)> {
    let mut read_row = |row: &rusqlite::Row<'_>, buf: &mut RowBuf| -> rusqlite::Result<bool> {
        let kind: String = row.get(0)?;
        let parent: i64 = row.get(1)?;
        let r = if kind == "ep" {
            Ref::ep(parent)
        } else {
            Ref::mem(parent)
        };
        let Some(id) = block_row_id(r, row.get::<_, i64>(2)? as usize) else {
            return Ok(false);
        };
        let codes: Vec<u8> = row.get(6)?;
        let norm = codes
            .iter()
            .map(|&c| f64::from(c as i8).powi(2))
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            return Ok(false);
        }
        for (x, &c) in buf.vector.iter_mut().zip(&codes) {
            *x = (f64::from(c as i8) / norm) as f32;
        }
        buf.id = id;
        buf.created_at = row.get(7)?;
        buf.agent = row.get(3)?;
        buf.project = row.get(4)?;
        buf.channel = row.get(5)?;
        buf.source.clear();
        Ok(true)
    };
    write_generation(
        conn,
        target,
        path,
        generation,
        BuildQuery {
            count_sql: "SELECT COUNT(*) FROM record_blocks WHERE embedding_i8 IS NOT NULL \
                        AND embedding_model = ?1 AND length(embedding_i8) = ?2",
            select_sql: "SELECT b.parent_kind, b.parent_id, b.block_index, b.agent_id, \
                 b.project_id, b.channel, b.embedding_i8, \
                 COALESCE(m.created_at_ms, e.created_at_ms) AS at, \
                 (b.parent_id << 21) | (b.block_index << 1) | (b.parent_kind = 'mem') AS rid \
                 FROM record_blocks b \
                 LEFT JOIN memories m ON b.parent_kind = 'mem' AND m.id = b.parent_id \
                 LEFT JOIN episodes e ON b.parent_kind = 'ep' AND e.id = b.parent_id \
                 WHERE b.embedding_i8 IS NOT NULL AND b.embedding_model = ?1 \
                 AND length(b.embedding_i8) = ?2 AND at IS NOT NULL \
                 ORDER BY at DESC, rid ASC",
        },
        &mut read_row,
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ids_round_trip_and_keep_parent_order() {
        for (r, i) in [
            (Ref::mem(1), 0),
            (Ref::ep(1), 0),
            (Ref::mem(123_456_789), 1_048_575),
            (Ref::ep(7), 42),
        ] {
            let id = block_row_id(r, i).unwrap();
            assert_eq!(split_block_row_id(id), (r, i));
        }
        assert!(block_row_id(Ref::mem(1), 1 << 20).is_none());
        assert!(block_row_id(Ref::mem(1), 3).unwrap() < block_row_id(Ref::mem(2), 0).unwrap());
    }
}

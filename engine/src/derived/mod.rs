//! The derived sets of a record — its overflow nodes ([`crate::derived::nodes`]) and its blocks
//! ([`crate::derived::blocks`]) — written beside the row, read back for `get_contents` ranges and
//! block ranking.
//!
//! # When vectors are made
//! A store or update divides and embeds right after its own transaction commits (node and
//! block texts batched through the embedder, never inside the writer lock) and writes the
//! sets only if the record's text is still the one it divided (compare-and-swap). When the
//! embedder cannot serve, the offsets are written with NULL vectors; those rows are the
//! queue: [`Engine::fill_derived`] (run by every embedding-queue drain, bounded by the drain's
//! row count) divides and embeds such records again. Import writes block offsets only (no
//! model call inside its transaction) and leaves the vectors to the same drain.
//!
//! A record that fits the window has no nodes; a record of one block has no block rows (its
//! vector would be the record's own). This module never ranks anything and never reads a
//! record of another agent for a caller: [`with_ranges`] runs only on a row the caller's
//! scope already returned.

pub mod blocks;
pub mod nodes;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;

use crate::derived::blocks::{Block, BlockChoice, BlockVectors, int8_codes, segment, sign_bits};
use crate::derived::nodes::{NodeSpan, divide};
use crate::error::Result;
use crate::refs::{Ref, RefKind};
use crate::store::Store;
use crate::vector::decode;

/// What a write did to the record's derived sets (flattened into store and update
/// responses; every field is absent when there is nothing to say).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DerivedReport {
    /// Overflow nodes the text was split into (absent: it fits the window).
    #[serde(skip_serializing_if = "is_zero")]
    pub nodes: usize,
    /// Blocks the text was divided into (absent: one block, no rows).
    #[serde(skip_serializing_if = "is_zero")]
    pub blocks: usize,
    /// Why the node and block vectors are owed (they are filled by the queue drain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_queued: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A block row as read back: offsets and whatever vectors it has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBlock {
    /// Index in the record.
    pub index: usize,
    /// `[start, end)` in characters.
    pub span: (usize, usize),
    /// Sign bits.
    pub bits: Option<Vec<u8>>,
    /// int8 codes.
    pub int8: Option<Vec<i8>>,
}

impl StoredBlock {
    /// The view [`crate::derived::blocks::best_blocks`] ranks.
    pub fn vectors(&self) -> BlockVectors<'_> {
        BlockVectors {
            index: self.index,
            bits: self.bits.as_deref(),
            int8: self.int8.as_deref(),
        }
    }
}

fn kind_tag(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Mem => "mem",
        RefKind::Ep => "ep",
    }
}

/// The record's text and isolation axes, read without scope (internal use only).
fn read_parent(conn: &Connection, r: Ref) -> Result<Option<(String, [String; 3])>> {
    let sql = match r.kind {
        RefKind::Mem => "SELECT content, agent_id, project_id, channel FROM memories WHERE id = ?",
        RefKind::Ep => "SELECT summary, agent_id, project_id, channel FROM episodes WHERE id = ?",
    };
    Ok(conn
        .prepare_cached(sql)?
        .query_row([r.id], |row| {
            Ok((row.get(0)?, [row.get(1)?, row.get(2)?, row.get(3)?]))
        })
        .optional()?)
}

/// Writes block offsets with no vectors for a record just inserted inside the caller's
/// transaction (the import path), from the text and axes the caller holds (no read back);
/// nothing for a record of one block. The queue drain fills the vectors.
pub(crate) fn write_offsets(
    tx: &Transaction<'_>,
    r: Ref,
    text: &str,
    axes: [&str; 3],
) -> Result<()> {
    let blocks = segment(text, &[]);
    if blocks.len() > 1 {
        let axes = axes.map(str::to_owned);
        replace(tx, r, &axes, &[], &blocks, None)?;
    }
    Ok(())
}

/// Vectors made for one record's derived sets.
struct Made {
    model: String,
    nodes: Vec<Vec<u8>>,
    blocks: Vec<(Vec<u8>, Vec<i8>)>,
}

/// Replaces the record's node and block rows (inside `tx`).
fn replace(
    tx: &Transaction<'_>,
    r: Ref,
    axes: &[String; 3],
    nodes: &[(NodeSpan, usize)],
    blocks: &[Block],
    made: Option<&Made>,
) -> Result<()> {
    let kind = kind_tag(r.kind);
    tx.execute(
        "DELETE FROM record_nodes WHERE parent_kind = ? AND parent_id = ?",
        params![kind, r.id],
    )?;
    tx.execute(
        "DELETE FROM record_blocks WHERE parent_kind = ? AND parent_id = ?",
        params![kind, r.id],
    )?;
    let model = made.map_or("", |m| m.model.as_str());
    for (i, (node, window)) in nodes.iter().enumerate() {
        tx.prepare_cached(
            "INSERT INTO record_nodes(parent_kind, parent_id, node_index, start_char, end_char, \
             token_count, window_tokens, embedding, embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            kind,
            r.id,
            i as i64,
            node.start as i64,
            node.end as i64,
            node.token_count as i64,
            *window as i64,
            made.map(|m| &m.nodes[i]),
            model,
        ])?;
    }
    if blocks.len() < 2 {
        return Ok(());
    }
    for (i, block) in blocks.iter().enumerate() {
        let vectors = made.map(|m| &m.blocks[i]);
        tx.prepare_cached(
            "INSERT INTO record_blocks(parent_kind, parent_id, block_index, agent_id, project_id, \
             channel, start_char, end_char, forced_boundary, embedding_bits, embedding_i8, \
             embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            kind,
            r.id,
            i as i64,
            axes[0],
            axes[1],
            axes[2],
            block.start as i64,
            block.end as i64,
            block.forced,
            vectors.map(|v| &v.0),
            vectors.map(|v| v.1.iter().map(|&c| c as u8).collect::<Vec<u8>>()),
            model,
        ])?;
    }
    Ok(())
}

fn cut(chars: &[char], start: usize, end: usize) -> String {
    chars[start..end].iter().collect()
}

/// Divides record `r` into nodes and blocks, embeds them (batched) and replaces its
/// derived rows, only if its text is unchanged meanwhile. When the embedder cannot serve,
/// the offsets land with NULL vectors and `derived_queued` says why.
pub(crate) fn refresh_derived(store: &Store, r: Ref) -> Result<DerivedReport> {
    let Some((text, axes)) = store.read(|conn| read_parent(conn, r))? else {
        return Ok(DerivedReport::default());
    };
    let mut queued = None;
    let window = store.embedder.identity().window_tokens;
    let nodes = match divide(&text, |t| match store.embedder.count_tokens(&[t]) {
        Ok(Some(mut infos)) if infos.len() == 1 => Ok(infos.remove(0)),
        Ok(_) => Err(None),
        Err(err) => Err(Some(err.to_string())),
    }) {
        Ok(nodes) => nodes,
        Err(reason) => {
            // No token report: no nodes (CPersona builds them only where it can count).
            queued = reason.map(|r| format!("token count failed: {r}"));
            Vec::new()
        }
    };
    let node_ends: Vec<usize> = nodes.iter().map(|n| n.end).collect();
    let blocks = segment(&text, &node_ends);
    let n_blocks = if blocks.len() > 1 { blocks.len() } else { 0 };
    if nodes.is_empty() && n_blocks == 0 {
        // Nothing derived; clear whatever an older text left (the update trigger
        // already does, this covers a refresh after import).
        store.write(|tx| {
            if unchanged(tx, r, &text)? {
                replace(tx, r, &axes, &[], &[], None)?;
            }
            Ok(())
        })?;
        return Ok(DerivedReport {
            derived_queued: queued,
            ..Default::default()
        });
    }
    let chars: Vec<char> = text.chars().collect();
    let mut texts: Vec<String> = nodes.iter().map(|n| cut(&chars, n.start, n.end)).collect();
    if n_blocks > 0 {
        texts.extend(blocks.iter().map(|b| cut(&chars, b.start, b.end)));
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let made = match store.embed_for_store(&refs) {
        Ok(blobs) => made(store, &blobs, nodes.len()),
        Err(reason) => Err(reason),
    };
    let made = match made {
        Ok(made) => Some(made),
        Err(reason) => {
            queued = Some(reason);
            None
        }
    };
    let windowed: Vec<(NodeSpan, usize)> = nodes.iter().map(|&n| (n, window)).collect();
    store.write(|tx| {
        if unchanged(tx, r, &text)? {
            replace(tx, r, &axes, &windowed, &blocks, made.as_ref())?;
        }
        Ok(())
    })?;
    Ok(DerivedReport {
        nodes: nodes.len(),
        blocks: n_blocks,
        derived_queued: queued,
    })
}

/// [`Engine::refresh_derived`] after a committed write: a failure leaves the record
/// without derived rows (recall still serves it; quotes fall back to read-time division)
/// and is reported, never turned into a failed write.
pub(crate) fn derived_after_write(store: &Store, r: Ref) -> DerivedReport {
    refresh_derived(store, r).unwrap_or_else(|err| DerivedReport {
        derived_queued: Some(format!("derived sets not written: {err}")),
        ..Default::default()
    })
}

/// Turns stored-format blobs into node blobs and block quantisations.
fn made(store: &Store, blobs: &[Vec<u8>], n_nodes: usize) -> std::result::Result<Made, String> {
    let format = store.settings.embedding_format;
    let mut blocks = Vec::with_capacity(blobs.len().saturating_sub(n_nodes));
    for blob in &blobs[n_nodes..] {
        let v = decode(blob, format).ok_or("block vector could not be decoded")?;
        let codes = int8_codes(&v).ok_or("block vector is zero")?;
        blocks.push((sign_bits(&v), codes));
    }
    Ok(Made {
        model: store.vector_target().model_id,
        nodes: blobs[..n_nodes].to_vec(),
        blocks,
    })
}

/// Embeds up to `max_rows` queued rows (the store's embedding queue), then, when the
/// embedder answered, the records whose node or block vectors are owed (`fill_derived`).
/// `force` also retries rows inside their retry delay or out of attempts.
pub(crate) fn drain_embedding_queue(
    store: &Store,
    max_rows: usize,
    force: bool,
) -> Result<crate::store::queue::DrainOutcome> {
    let mut outcome = store.drain_queue(max_rows, force)?;
    if outcome.last_error.is_none() {
        outcome.derived_filled = fill_derived(store, max_rows)?;
    }
    Ok(outcome)
}

/// Divides and embeds again up to `max_records` records whose node or block vectors are
/// owed (rows with NULL vectors), oldest parent first; stops at the first record the
/// embedder cannot serve. Returns how many records got their vectors.
pub(crate) fn fill_derived(store: &Store, max_records: usize) -> Result<usize> {
    let owed: Vec<(String, i64)> = store.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT parent_kind, parent_id FROM record_blocks WHERE embedding_i8 IS NULL \
             UNION SELECT parent_kind, parent_id FROM record_nodes WHERE embedding IS NULL \
             ORDER BY 1, 2 LIMIT ?",
        )?;
        let rows = stmt.query_map([max_records as i64], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })?;
    let mut filled = 0;
    for (kind, id) in owed {
        let r = if kind == "ep" {
            Ref::ep(id)
        } else {
            Ref::mem(id)
        };
        if refresh_derived(store, r)?.derived_queued.is_some() {
            break;
        }
        filled += 1;
    }
    Ok(filled)
}

/// The stored blocks of record `r` (offsets and vectors), in index order; empty when it
/// has none. Callers must have checked the record is the caller's.
pub(crate) fn stored_blocks(store: &Store, r: Ref) -> Result<Vec<StoredBlock>> {
    store.read(|conn| read_blocks(conn, r))
}

fn unchanged(tx: &Transaction<'_>, r: Ref, text: &str) -> Result<bool> {
    Ok(read_parent(tx, r)?.is_some_and(|(now, _)| now == text))
}

pub(crate) fn read_blocks(conn: &Connection, r: Ref) -> Result<Vec<StoredBlock>> {
    let mut stmt = conn.prepare_cached(
        "SELECT block_index, start_char, end_char, embedding_bits, embedding_i8 FROM record_blocks \
         WHERE parent_kind = ? AND parent_id = ? ORDER BY block_index",
    )?;
    let rows = stmt.query_map(params![kind_tag(r.kind), r.id], |row| {
        Ok(StoredBlock {
            index: row.get::<_, i64>(0)? as usize,
            span: (
                row.get::<_, i64>(1)? as usize,
                row.get::<_, i64>(2)? as usize,
            ),
            bits: row.get(3)?,
            int8: row
                .get::<_, Option<Vec<u8>>>(4)?
                .map(|b| b.into_iter().map(|c| c as i8).collect()),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The stored blocks of record `r` ranked against `query` for its current `text`; `None`
/// when it has no block set that tiles `text` or no quantisation covers every block (the
/// caller then quotes by the text heuristic). Callers must have read `text` in the caller's
/// scope.
pub(crate) fn block_choice(
    conn: &Connection,
    r: Ref,
    text: &str,
    query: &[f32],
) -> Result<Option<BlockChoice>> {
    let stored = read_blocks(conn, r)?;
    if stored.len() < 2 {
        return Ok(None);
    }
    let spans: Vec<(usize, usize)> = stored.iter().map(|b| b.span).collect();
    let vectors: Vec<BlockVectors<'_>> = stored.iter().map(StoredBlock::vectors).collect();
    Ok(BlockChoice::rank(
        query,
        &spans,
        &vectors,
        text.chars().count(),
    ))
}

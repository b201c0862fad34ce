//! Index generations in the engine: builds a generation file from SQLite (streamed, bounded
//! memory), publishes it atomically, loads it on first use and reports its status. A
//! generation is derived data: it is never the source of truth, and a file that does not fit
//! the store is ignored with a note, never an error for recall.
//!
//! # Files
//! `<db_path>.<table>.gen` beside the database (safe to delete); the index crate writes it via
//! a temp file and a rename. The `source` dictionary holds `"<type>:<id>"` of the row's
//! `source` JSON (`""` for episodes or a source without both), cut to 256 bytes.
//!
//! # Change-log head
//! The head is SQLite's AUTOINCREMENT high-water mark of `change_log` (`sqlite_sequence`),
//! not `MAX(seq)`: a purge deletes the agent's log rows, which can lower `MAX(seq)` below the
//! purge mark and would make every later generation look older than the purge.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cpersona_index::{
    EmbedderIdentity, Generation, GenerationMeta, GenerationWriter, Row, Scope as IndexScope,
    SourceFingerprint, WriteSummary,
};
use rusqlite::Connection;
use serde::Serialize;

pub(crate) mod blocks;

use crate::error::Result;
use crate::store::changelog::changelog_head;
use crate::store::target::VectorTarget;
use crate::vector::{decode, format_from_tag};

/// The longest `source` code stored in a generation's dictionary.
const MAX_SOURCE_CODE_BYTES: usize = 256;

/// A table that has an index generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexTable {
    /// `memories`.
    Memories,
    /// `episodes`.
    Episodes,
    /// `record_blocks`: one row per block with int8 codes of the store's model; row ids
    /// encode `(kind, parent, block)` (see `store/generations/blocks.rs`). Not searched by recall, so not
    /// in [`IndexTable::ALL`].
    Blocks,
}

impl IndexTable {
    /// The tables recall searches, memories first.
    pub const ALL: [IndexTable; 2] = [IndexTable::Memories, IndexTable::Episodes];

    /// The SQLite table name.
    pub fn name(self) -> &'static str {
        match self {
            IndexTable::Memories => "memories",
            IndexTable::Episodes => "episodes",
            IndexTable::Blocks => "blocks",
        }
    }
}

/// What one rebuild did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RebuildOutcome {
    /// The table.
    pub table: IndexTable,
    /// The generation number written.
    pub generation: u64,
    /// Rows in the generation.
    pub rows: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// The change-log head the build read.
    pub changelog_head: u64,
    /// True when a purge committed during the build: the file was deleted, nothing published.
    pub discarded: bool,
    /// The file.
    pub path: PathBuf,
}

/// One table's index state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableIndexStatus {
    /// The table.
    pub table: IndexTable,
    /// The loaded generation's number, if one is usable.
    pub generation: Option<u64>,
    /// Rows in it.
    pub rows: u64,
    /// Distinct rows changed since its head (every row with a vector when there is none).
    pub live_tail: u64,
    /// Milliseconds since the file was written.
    pub age_ms: Option<u64>,
    /// File size in bytes.
    pub file_bytes: Option<u64>,
    /// `live_tail / rows`; `None` without a generation.
    pub stale_share: Option<f64>,
    /// Why no generation is in use, when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Index state of both tables.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IndexStatus {
    /// One entry per table, memories first.
    pub tables: Vec<TableIndexStatus>,
}

/// A published generation and its id → position map.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) generation: Generation,
    pub(crate) positions: HashMap<i64, u32>,
}

impl Loaded {
    pub(crate) fn new(generation: Generation) -> Loaded {
        let positions = generation
            .ids()
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        Loaded {
            generation,
            positions,
        }
    }

    /// The change-log head the generation was built at.
    pub(crate) fn head(&self) -> u64 {
        self.generation.source().changelog_head
    }
}

/// The cache of loaded generations: absent = not tried yet; `Some(None)` = none usable.
pub(crate) type GenerationCache = HashMap<IndexTable, (Option<Arc<Loaded>>, Option<String>)>;

fn source_code(source: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(source).ok();
    let code = parsed
        .as_ref()
        .and_then(|v| {
            let kind = v.get("type")?.as_str()?;
            let id = v.get("id")?.as_str()?;
            Some(format!("{kind}:{id}"))
        })
        .unwrap_or_default();
    let mut end = code.len().min(MAX_SOURCE_CODE_BYTES);
    while !code.is_char_boundary(end) {
        end -= 1;
    }
    code[..end].to_owned()
}

/// One row on its way into a generation, its buffers reused from row to row.
#[derive(Default)]
pub(crate) struct RowBuf {
    pub(crate) id: i64,
    pub(crate) created_at: i64,
    pub(crate) agent: String,
    pub(crate) project: String,
    pub(crate) channel: String,
    pub(crate) source: String,
    pub(crate) vector: Vec<f32>,
}

/// What a generation build reads: the rows counted for progress and the rows written, newest
/// first, each bound to `(model_id, dim)`.
pub(crate) struct BuildQuery<'a> {
    pub(crate) count_sql: &'a str,
    pub(crate) select_sql: &'a str,
}

/// Writes generation `generation` of `target`'s vectors to `path` from one read transaction:
/// `read_row` fills the buffer from one selected row (`false` skips it). `progress(done,
/// total)` is called every 1024 rows and at the end. Returns the change-log head it read.
pub(crate) fn write_generation(
    conn: &Connection,
    target: &VectorTarget,
    path: &Path,
    generation: u64,
    query: BuildQuery<'_>,
    read_row: &mut dyn FnMut(&rusqlite::Row<'_>, &mut RowBuf) -> rusqlite::Result<bool>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(u64, WriteSummary)> {
    let tx = conn.unchecked_transaction()?;
    let head = changelog_head(&tx)?;
    let schema_version: u32 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let params = rusqlite::params![target.model_id, target.dim as i64];
    let total = tx.query_row(query.count_sql, params, |row| row.get::<_, i64>(0))? as u64;
    let meta = GenerationMeta {
        generation,
        source: SourceFingerprint {
            changelog_head: head,
            schema_version,
        },
        embedder: EmbedderIdentity {
            model_id: target.model_id.clone(),
            dim: target.dim,
        },
    };
    let mut writer = GenerationWriter::create(path, meta)?;
    let mut stmt = tx.prepare(query.select_sql)?;
    let mut rows = stmt.query(params)?;
    let mut buf = RowBuf {
        vector: vec![0.0; target.dim],
        ..RowBuf::default()
    };
    let mut done = 0u64;
    while let Some(row) = rows.next()? {
        if !read_row(row, &mut buf)? {
            continue;
        }
        writer.push(&Row {
            id: buf.id,
            created_at: buf.created_at,
            scope: IndexScope {
                agent: &buf.agent,
                project: &buf.project,
                channel: &buf.channel,
                source: &buf.source,
            },
            vector: &buf.vector,
        })?;
        done += 1;
        if done.is_multiple_of(1024) {
            progress(done, total);
        }
    }
    drop(rows);
    drop(stmt);
    let summary = writer.finish()?;
    progress(done, total.max(done));
    tx.commit()?;
    Ok((head, summary))
}

/// Builds generation `generation` of a record table (`memories`, `episodes`) from every row
/// with a vector of the store's model.
pub(crate) fn build_records(
    conn: &Connection,
    table: IndexTable,
    target: &VectorTarget,
    path: &Path,
    generation: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(u64, WriteSummary)> {
    let source_col = match table {
        IndexTable::Memories => "source",
        IndexTable::Episodes | IndexTable::Blocks => "''",
    };
    let name = table.name();
    let count_sql = format!(
        "SELECT COUNT(*) FROM {name} WHERE embedding IS NOT NULL \
         AND embedding_model = ?1 AND embedding_dim = ?2"
    );
    let select_sql = format!(
        "SELECT id, created_at_ms, agent_id, project_id, channel, {source_col}, \
         embedding, embedding_format FROM {name} WHERE embedding IS NOT NULL \
         AND embedding_model = ?1 AND embedding_dim = ?2 \
         ORDER BY created_at_ms DESC, id ASC"
    );
    let dim = target.dim;
    let mut read_row = |row: &rusqlite::Row<'_>, buf: &mut RowBuf| -> rusqlite::Result<bool> {
        let blob: Vec<u8> = row.get(6)?;
        let format_tag: String = row.get(7)?;
        let Some(vector) = format_from_tag(&format_tag)
            .and_then(|f| decode(&blob, f))
            .filter(|v| v.len() == dim)
        else {
            return Ok(false);
        };
        buf.vector = vector;
        buf.id = row.get(0)?;
        buf.created_at = row.get(1)?;
        buf.agent = row.get(2)?;
        buf.project = row.get(3)?;
        buf.channel = row.get(4)?;
        buf.source = source_code(&row.get::<_, String>(5)?);
        Ok(true)
    };
    write_generation(
        conn,
        target,
        path,
        generation,
        BuildQuery {
            count_sql: &count_sql,
            select_sql: &select_sql,
        },
        &mut read_row,
        progress,
    )
}

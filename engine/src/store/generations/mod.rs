//! Index files in the engine: the SQL that streams a table's rows into the index crate's
//! writers (newest first, bounded memory), the block generation, and the status types. Index
//! files are derived data: never the source of truth, and a file that does not fit the store
//! is ignored with a note, never an error for recall.
//!
//! # Files
//! Memories and episodes live in segment directories `<db_path>.<table>.seg/` (see
//! `store/index/`); blocks in one generation file `<db_path>.blocks.gen`. The `source`
//! dictionary holds `"<type>:<id>"` of the row's `source` JSON (`""` for episodes or a source
//! without both), cut to 256 bytes.
//!
//! # Change-log head
//! The head is SQLite's AUTOINCREMENT high-water mark of `change_log` (`sqlite_sequence`),
//! not `MAX(seq)`: a purge deletes the agent's log rows, which can lower `MAX(seq)` below the
//! purge mark and would make every later generation look older than the purge.

use std::path::{Path, PathBuf};

use cpersona_index::{
    EmbedderIdentity, GenerationMeta, GenerationWriter, Row, Scope as IndexScope,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TableIndexStatus {
    /// The table.
    pub table: IndexTable,
    /// The segment manifest's version, when the segments are usable.
    pub generation: Option<u64>,
    /// Live rows in the segments.
    pub rows: u64,
    /// Distinct rows changed since the segments' head, scored exactly from SQLite until the
    /// next flush (every row with a vector when the segments are not usable).
    pub live_tail: u64,
    /// The change-log head the segments are complete up to.
    pub head: u64,
    /// The segments, oldest first.
    pub segments: Vec<SegmentStatus>,
    /// Tombstones across the segments.
    pub tombstones: u64,
    /// When the last merge was published, UTC ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_merge_ms: Option<u64>,
    /// The merge the policy would run next, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_merge: Option<PendingMerge>,
    /// Milliseconds since the newest segment was written.
    pub age_ms: Option<u64>,
    /// Bytes of the segment files.
    pub file_bytes: Option<u64>,
    /// `live_tail / rows`; `None` without usable segments.
    pub stale_share: Option<f64>,
    /// Why the segments are not in use, when they are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One segment in a table's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SegmentStatus {
    /// Its sequence number (its file is `seg-<seq>.gen`).
    pub seq: u64,
    /// `flush`, `merge` or `rebuild`.
    pub origin: &'static str,
    /// Rows in the file.
    pub rows: u64,
    /// Rows no newer segment shadows.
    pub live_rows: u64,
    /// Tombstones in the file.
    pub tombstones: u64,
    /// File size.
    pub bytes: u64,
}

/// The merge the policy would run next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PendingMerge {
    /// Segments it would fold.
    pub segments: usize,
    /// Live rows of the merged segment.
    pub live_rows: u64,
    /// `level`, `dead` or `empty`.
    pub reason: &'static str,
}

/// Index state of both tables.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IndexStatus {
    /// One entry per table, memories first.
    pub tables: Vec<TableIndexStatus>,
}

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

impl RowBuf {
    /// The buffer as a row for an index writer.
    pub(crate) fn row(&self) -> Row<'_> {
        Row {
            id: self.id,
            created_at: self.created_at,
            scope: IndexScope {
                agent: &self.agent,
                project: &self.project,
                channel: &self.channel,
                source: &self.source,
            },
            vector: &self.vector,
        }
    }
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
    let schema_version = schema_version(&tx)?;
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
    stream_rows(&tx, target, query, read_row, progress, &mut |row| {
        Ok(writer.push(row)?)
    })?;
    let summary = writer.finish()?;
    tx.commit()?;
    Ok((head, summary))
}

/// The source's schema version (`PRAGMA user_version`), recorded in every index file.
pub(crate) fn schema_version(conn: &Connection) -> Result<u32> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

/// Streams the rows `query` selects (newest first, bound to `target`'s model and dimension)
/// into `push`, reusing one buffer; `progress(done, total)` every 1024 rows and at the end.
pub(crate) fn stream_rows(
    conn: &Connection,
    target: &VectorTarget,
    query: BuildQuery<'_>,
    read_row: &mut dyn FnMut(&rusqlite::Row<'_>, &mut RowBuf) -> rusqlite::Result<bool>,
    progress: &mut dyn FnMut(u64, u64),
    push: &mut dyn FnMut(&Row<'_>) -> Result<()>,
) -> Result<u64> {
    let params = rusqlite::params![target.model_id, target.dim as i64];
    let total = conn.query_row(query.count_sql, params, |row| row.get::<_, i64>(0))? as u64;
    let mut stmt = conn.prepare(query.select_sql)?;
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
        push(&buf.row())?;
        done += 1;
        if done.is_multiple_of(1024) {
            progress(done, total);
        }
    }
    progress(done, total.max(done));
    Ok(done)
}

/// The SQL a record table's index reads: the count and the rows (newest first) with a vector
/// of `?1`'s model and `?2`'s dimension, each row's columns in [`read_record_row`]'s order.
pub(crate) fn record_sql(table: IndexTable) -> (String, String) {
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
    (count_sql, select_sql)
}

/// Fills `buf` from one row of [`record_sql`]'s select; `false` for a vector that does not
/// decode to `dim` values (skipped, as a build always did).
pub(crate) fn read_record_row(
    row: &rusqlite::Row<'_>,
    buf: &mut RowBuf,
    dim: usize,
) -> rusqlite::Result<bool> {
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
}

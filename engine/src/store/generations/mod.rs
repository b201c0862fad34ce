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
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use cpersona_index::{
    EmbedderIdentity, Generation, GenerationMeta, GenerationWriter, Row, Scope as IndexScope,
    SourceFingerprint,
};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

pub(crate) mod blocks;

use crate::error::Result;
use crate::store::{Store, lock};
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
    /// encode `(kind, parent, block)` (see `block_index.rs`). Not searched by recall, so not
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
    fn new(generation: Generation) -> Loaded {
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

/// The AUTOINCREMENT high-water mark of the change log (see the module doc).
pub(crate) fn changelog_head(conn: &Connection) -> Result<u64> {
    let head: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'change_log'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    Ok(head.unwrap_or(0).max(0) as u64)
}

/// `meta.index_purged_through_seq`, 0 when no purge happened.
pub(crate) fn purged_through(conn: &Connection) -> Result<u64> {
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'index_purged_through_seq'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    Ok(value.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
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

impl Store {
    /// The generation file of `table`: `<db_path>.<table>.gen`.
    pub fn generation_path(&self, table: IndexTable) -> PathBuf {
        let mut path = self.settings.db_path.clone().into_os_string();
        path.push(format!(".{}.gen", table.name()));
        PathBuf::from(path)
    }

    /// Builds a generation of `table` from every row with a vector of the store's model,
    /// streaming rows from one read transaction, and publishes it. `progress(done, total)`
    /// is called every 1024 rows and at the end. A build that a purge overtook (the purge
    /// mark is above the head it read) deletes its file and publishes nothing.
    pub fn rebuild_index(
        &self,
        table: IndexTable,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RebuildOutcome> {
        let target = self.vector_target();
        let path = self.generation_path(table);
        // Numbers stay monotonic even past a file that is no longer usable (purge, model).
        let previous = self
            .loaded_generation(table)
            .map_or(0, |l| l.generation.generation())
            .max(Generation::open(&path).map_or(0, |g| g.generation()));
        let built = if table == IndexTable::Blocks {
            Some(crate::store::generations::blocks::build(
                self,
                &path,
                previous + 1,
                progress,
            )?)
        } else {
            None
        };
        let (head, summary) = match built {
            Some(built) => built,
            None => self.read(|conn| {
                let tx = conn.unchecked_transaction()?;
                let head = changelog_head(&tx)?;
                let schema_version: u32 =
                    tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
                let total: u64 = tx.query_row(
                    &format!(
                        "SELECT COUNT(*) FROM {} WHERE embedding IS NOT NULL \
                     AND embedding_model = ?1 AND embedding_dim = ?2",
                        table.name()
                    ),
                    rusqlite::params![target.model_id, target.dim as i64],
                    |row| row.get::<_, i64>(0),
                )? as u64;
                let meta = GenerationMeta {
                    generation: previous + 1,
                    source: SourceFingerprint {
                        changelog_head: head,
                        schema_version,
                    },
                    embedder: EmbedderIdentity {
                        model_id: target.model_id.clone(),
                        dim: target.dim,
                    },
                };
                let mut writer = GenerationWriter::create(&path, meta)?;
                let source_col = match table {
                    IndexTable::Memories => "source",
                    IndexTable::Episodes | IndexTable::Blocks => "''",
                };
                let mut stmt = tx.prepare(&format!(
                    "SELECT id, created_at_ms, agent_id, project_id, channel, {source_col}, \
                 embedding, embedding_format FROM {} WHERE embedding IS NOT NULL \
                 AND embedding_model = ?1 AND embedding_dim = ?2 \
                 ORDER BY created_at_ms DESC, id ASC",
                    table.name()
                ))?;
                let mut rows = stmt.query(rusqlite::params![target.model_id, target.dim as i64])?;
                let mut done = 0u64;
                while let Some(row) = rows.next()? {
                    let blob: Vec<u8> = row.get(6)?;
                    let format_tag: String = row.get(7)?;
                    let Some(vector) = format_from_tag(&format_tag)
                        .and_then(|f| decode(&blob, f))
                        .filter(|v| v.len() == target.dim)
                    else {
                        continue;
                    };
                    let agent: String = row.get(2)?;
                    let project: String = row.get(3)?;
                    let channel: String = row.get(4)?;
                    let source = source_code(&row.get::<_, String>(5)?);
                    writer.push(&Row {
                        id: row.get(0)?,
                        created_at: row.get(1)?,
                        scope: IndexScope {
                            agent: &agent,
                            project: &project,
                            channel: &channel,
                            source: &source,
                        },
                        vector: &vector,
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
            })?,
        };
        let purged = self.read(purged_through)?;
        if purged > head {
            // A purge committed after the build's snapshot: its file may hold the agent.
            let _ = std::fs::remove_file(&path);
            lock(&self.generations).insert(
                table,
                (
                    None,
                    Some("generation discarded: a purge raced its build".into()),
                ),
            );
            return Ok(RebuildOutcome {
                table,
                generation: previous + 1,
                rows: summary.count,
                bytes: summary.bytes,
                changelog_head: head,
                discarded: true,
                path,
            });
        }
        let generation = Generation::open(&path)?.with_kernels(self.kernels);
        lock(&self.generations).insert(table, (Some(Arc::new(Loaded::new(generation))), None));
        Ok(RebuildOutcome {
            table,
            generation: previous + 1,
            rows: summary.count,
            bytes: summary.bytes,
            changelog_head: head,
            discarded: false,
            path,
        })
    }

    /// The published generation of `table`, loading it from disk on first use. `None` when
    /// there is no usable one (missing, unreadable, another embedder, or older than a purge).
    pub(crate) fn loaded_generation(&self, table: IndexTable) -> Option<Arc<Loaded>> {
        self.generation_with_note(table).0
    }

    fn generation_with_note(&self, table: IndexTable) -> (Option<Arc<Loaded>>, Option<String>) {
        let purged = self.read(purged_through).unwrap_or(u64::MAX);
        let mut cache = lock(&self.generations);
        let entry = cache
            .entry(table)
            .or_insert_with(|| self.load_from_disk(table));
        if let Some(loaded) = &entry.0
            && loaded.head() < purged
        {
            *entry = (
                None,
                Some("generation predates a purge; rebuild it".to_owned()),
            );
        }
        entry.clone()
    }

    fn load_from_disk(&self, table: IndexTable) -> (Option<Arc<Loaded>>, Option<String>) {
        let path = self.generation_path(table);
        if !path.exists() {
            return (None, Some("no generation file".to_owned()));
        }
        let generation = match Generation::open(&path) {
            Ok(g) => g.with_kernels(self.kernels),
            Err(err) => return (None, Some(format!("generation ignored: {err}"))),
        };
        let target = self.vector_target();
        let identity = generation.embedder();
        if identity.model_id != target.model_id || identity.dim != target.dim {
            return (
                None,
                Some(format!(
                    "generation ignored: built for {} ({} dims), store holds {} ({} dims)",
                    identity.model_id, identity.dim, target.model_id, target.dim
                )),
            );
        }
        (Some(Arc::new(Loaded::new(generation))), None)
    }

    /// Drops every cached generation (the purge hook calls it; the next use reloads and
    /// rejects files older than the purge mark).
    pub(crate) fn forget_generations(&self) {
        lock(&self.generations).clear();
    }

    /// The index state of each table (generation, rows, live tail, age, file size).
    pub fn index_status(&self) -> Result<IndexStatus> {
        let mut tables = Vec::new();
        for table in IndexTable::ALL {
            let (loaded, note) = self.generation_with_note(table);
            let path = self.generation_path(table);
            let file = std::fs::metadata(&path).ok();
            let live_tail: u64 = match &loaded {
                Some(l) => self.read(|conn| {
                    Ok(conn.query_row(
                        "SELECT COUNT(DISTINCT row_id) FROM change_log \
                         WHERE table_name = ? AND seq > ?",
                        rusqlite::params![table.name(), l.head() as i64],
                        |row| row.get::<_, i64>(0),
                    )? as u64)
                })?,
                None => self.read(|conn| {
                    Ok(conn.query_row(
                        &format!(
                            "SELECT COUNT(*) FROM {} WHERE embedding IS NOT NULL",
                            table.name()
                        ),
                        [],
                        |row| row.get::<_, i64>(0),
                    )? as u64)
                })?,
            };
            let rows = loaded.as_ref().map_or(0, |l| l.generation.len() as u64);
            tables.push(TableIndexStatus {
                table,
                generation: loaded.as_ref().map(|l| l.generation.generation()),
                rows,
                live_tail,
                age_ms: loaded.as_ref().and(file.as_ref()).and_then(|m| {
                    let modified = m.modified().ok()?;
                    SystemTime::now()
                        .duration_since(modified)
                        .ok()
                        .map(|d| d.as_millis() as u64)
                }),
                file_bytes: loaded.as_ref().and(file.as_ref()).map(|m| m.len()),
                stale_share: loaded
                    .as_ref()
                    .map(|_| live_tail as f64 / rows.max(1) as f64),
                note,
            });
        }
        Ok(IndexStatus { tables })
    }
}

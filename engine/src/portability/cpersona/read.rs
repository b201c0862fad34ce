//! The CPersona side of a conversion: opens a CPersona 2.5/2.6 SQLite file read-only
//! (`SQLITE_OPEN_READ_ONLY`, so neither the file nor its write-ahead log is ever written),
//! recognises its schema (`schema_version` 13 to 21), and reads its rows inside one read
//! transaction so every table comes from the same snapshot. It never writes anywhere.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};

use super::report::SourceStamp;
use crate::error::{Error, Result};

/// The oldest CPersona schema read: 2.5's v13 (the columns every later step adds are optional).
pub(super) const OLDEST_SCHEMA: i64 = 13;
/// The newest: 2.6.14's v21.
pub(super) const NEWEST_SCHEMA: i64 = 21;

/// An open CPersona store, inside its read transaction.
pub(super) struct Source {
    pub(super) conn: Connection,
    pub(super) schema_version: i64,
    /// Every table with its row count (FTS shadow tables excluded).
    pub(super) tables: BTreeMap<String, i64>,
    memory_columns: Vec<String>,
    episode_columns: Vec<String>,
}

/// What a CPersona file looks like without reading its rows: `inspect`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// No file, or an empty one.
    Missing,
    /// A CPersona store of this schema version.
    CPersona { schema_version: i64 },
    /// A store this server wrote.
    Ours,
    /// Some other SQLite file (or not SQLite at all), with why.
    Other { reason: String },
}

/// Recognises the file at `path` without changing it.
pub(crate) fn inspect(path: &Path) -> Result<StoreKind> {
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(StoreKind::Missing),
        Err(err) => return Err(err.into()),
        Ok(meta) if meta.len() == 0 => return Ok(StoreKind::Missing),
        Ok(_) => {}
    }
    let conn = open_read_only(path)?;
    let tables = table_names(&conn).map_err(|err| unreadable(path, &err))?;
    if tables.is_empty() {
        return Ok(StoreKind::Missing);
    }
    if tables.iter().any(|t| t == "change_log") && tables.iter().any(|t| t == "meta") {
        return Ok(StoreKind::Ours);
    }
    if !tables.iter().any(|t| t == "schema_version") || !tables.iter().any(|t| t == "memories") {
        return Ok(StoreKind::Other {
            reason: format!(
                "no CPersona schema_version and memories tables (found {})",
                tables.join(", ")
            ),
        });
    }
    let version: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .map_err(|err| unreadable(path, &err))?;
    Ok(StoreKind::CPersona {
        schema_version: version.unwrap_or(0),
    })
}

impl Source {
    /// Opens `path` read-only and checks that it is a CPersona store this build can read.
    pub(super) fn open(path: &Path) -> Result<Source> {
        let not_cpersona = |reason: String| Error::NotCPersona {
            path: path.display().to_string(),
            reason,
        };
        let schema_version = match inspect(path)? {
            StoreKind::CPersona { schema_version } => schema_version,
            StoreKind::Missing => return Err(not_cpersona("no such file, or an empty one".into())),
            StoreKind::Ours => {
                return Err(not_cpersona(
                    "it is already a cpersona-rs store; serve it as it is".into(),
                ));
            }
            StoreKind::Other { reason } => return Err(not_cpersona(reason)),
        };
        if !(OLDEST_SCHEMA..=NEWEST_SCHEMA).contains(&schema_version) {
            return Err(Error::CPersonaSchemaUnknown {
                path: path.display().to_string(),
                found: schema_version,
                oldest: OLDEST_SCHEMA,
                newest: NEWEST_SCHEMA,
            });
        }
        let conn = open_read_only(path)?;
        // One snapshot for every table: a CPersona server writing meanwhile is not seen
        // half-way.
        conn.execute_batch("BEGIN DEFERRED")
            .map_err(|err| unreadable(path, &err))?;
        let mut tables = BTreeMap::new();
        for name in table_names(&conn).map_err(|err| unreadable(path, &err))? {
            if is_fts(&name) {
                continue;
            }
            let rows: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM \"{name}\""), [], |r| {
                    r.get(0)
                })
                .map_err(|err| unreadable(path, &err))?;
            tables.insert(name, rows);
        }
        let memory_columns = columns(&conn, "memories")?;
        let episode_columns = columns(&conn, "episodes")?;
        for (table, cols, needed) in [
            (
                "memories",
                &memory_columns,
                &["id", "agent_id", "content", "timestamp"][..],
            ),
            (
                "episodes",
                &episode_columns,
                &["id", "agent_id", "summary"][..],
            ),
        ] {
            if let Some(missing) = needed.iter().find(|c| !cols.iter().any(|k| k == *c)) {
                return Err(not_cpersona(format!("{table} has no {missing} column")));
            }
        }
        Ok(Source {
            conn,
            schema_version,
            tables,
            memory_columns,
            episode_columns,
        })
    }

    /// Rows of `table`, 0 when it does not exist.
    pub(super) fn rows(&self, table: &str) -> i64 {
        self.tables.get(table).copied().unwrap_or(0)
    }

    pub(super) fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// A column of memories when this schema has it, else `default` (a SQL literal).
    fn mem_col(&self, name: &str, default: &str) -> String {
        pick(&self.memory_columns, name, default)
    }

    fn ep_col(&self, name: &str, default: &str) -> String {
        pick(&self.episode_columns, name, default)
    }

    /// Up to `limit` memories after `after` (id order).
    pub(super) fn memories(&self, after: i64, limit: usize) -> Result<Vec<MemoryRow>> {
        let sql = format!(
            "SELECT id, agent_id, {project}, {channel}, {msg_id}, content, {source}, {metadata}, \
             timestamp, {created_at}, {locked}, {recall_count}, {last_recalled}, embedding, \
             {model} FROM memories WHERE id > ?1 ORDER BY id LIMIT ?2",
            project = self.mem_col("project_id", "''"),
            channel = self.mem_col("channel", "''"),
            msg_id = self.mem_col("msg_id", "''"),
            source = self.mem_col("source", "'{}'"),
            metadata = self.mem_col("metadata", "'{}'"),
            created_at = self.mem_col("created_at", "NULL"),
            locked = self.mem_col("locked", "0"),
            recall_count = self.mem_col("recall_count", "0"),
            last_recalled = self.mem_col("last_recalled_at", "NULL"),
            model = self.mem_col("embedding_model", "''"),
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![after, limit as i64], |row| {
            Ok(MemoryRow {
                id: row.get(0)?,
                agent_id: text(row, 1)?,
                project_id: text(row, 2)?,
                channel: text(row, 3)?,
                msg_id: text(row, 4)?,
                content: text(row, 5)?,
                source: text(row, 6)?,
                metadata: text(row, 7)?,
                timestamp: text(row, 8)?,
                created_at: row.get(9)?,
                locked: row.get::<_, Option<i64>>(10)?.unwrap_or(0) != 0,
                recall_count: row.get::<_, Option<i64>>(11)?.unwrap_or(0),
                last_recalled_at: row.get(12)?,
                embedding: row.get(13)?,
                embedding_model: text(row, 14)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Up to `limit` episodes after `after` (id order).
    pub(super) fn episodes(&self, after: i64, limit: usize) -> Result<Vec<EpisodeRow>> {
        let sql = format!(
            "SELECT id, agent_id, {project}, {channel}, summary, {keywords}, {start}, {end}, \
             {resolved}, {created_at}, embedding, {model} FROM episodes WHERE id > ?1 \
             ORDER BY id LIMIT ?2",
            project = self.ep_col("project_id", "''"),
            channel = self.ep_col("channel", "''"),
            keywords = self.ep_col("keywords", "''"),
            start = self.ep_col("start_time", "NULL"),
            end = self.ep_col("end_time", "NULL"),
            resolved = self.ep_col("resolved", "0"),
            created_at = self.ep_col("created_at", "NULL"),
            model = self.ep_col("embedding_model", "''"),
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![after, limit as i64], |row| {
            Ok(EpisodeRow {
                id: row.get(0)?,
                agent_id: text(row, 1)?,
                project_id: text(row, 2)?,
                channel: text(row, 3)?,
                summary: text(row, 4)?,
                keywords: text(row, 5)?,
                start_time: row.get(6)?,
                end_time: row.get(7)?,
                resolved: row.get::<_, Option<i64>>(8)?.unwrap_or(0) != 0,
                created_at: row.get(9)?,
                embedding: row.get(10)?,
                embedding_model: text(row, 11)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every profile: `(agent, project, user, content, updated_at)`.
    pub(super) fn profiles(&self) -> Result<Vec<ProfileRow>> {
        let cols = columns(&self.conn, "profiles")?;
        let sql = format!(
            "SELECT agent_id, {}, {}, content, {} FROM profiles ORDER BY id",
            pick(&cols, "project_id", "''"),
            pick(&cols, "user_id", "''"),
            pick(&cols, "updated_at", "NULL"),
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], |row| {
            Ok((
                text(row, 0)?,
                text(row, 1)?,
                text(row, 2)?,
                text(row, 3)?,
                row.get(4)?,
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The vectors by `(table, label, byte length)`, with their row counts.
    pub(super) fn vector_groups(&self) -> Result<Vec<(&'static str, String, i64, i64)>> {
        let mut out = Vec::new();
        for (table, model) in [
            ("memories", self.mem_col("embedding_model", "''")),
            ("episodes", self.ep_col("embedding_model", "''")),
        ] {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT COALESCE({model}, ''), length(embedding), COUNT(*) FROM {table} \
                 WHERE embedding IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC"
            ))?;
            let rows = stmt.query_map([], |r| Ok((table, r.get(0)?, r.get(1)?, r.get(2)?)))?;
            out.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
        }
        Ok(out)
    }

    /// Up to `limit` `(text, vector)` of one group, for checking what produced its vectors.
    pub(super) fn vector_sample(
        &self,
        table: &str,
        label: &str,
        bytes: i64,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let (text_col, model) = if table == "memories" {
            ("content", self.mem_col("embedding_model", "''"))
        } else {
            ("summary", self.ep_col("embedding_model", "''"))
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {text_col}, embedding FROM {table} WHERE embedding IS NOT NULL \
             AND COALESCE({model}, '') = ?1 AND length(embedding) = ?2 ORDER BY id LIMIT ?3"
        ))?;
        let rows = stmt.query_map(params![label, bytes, limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Where each table's AUTOINCREMENT stands (ids of deleted rows are never handed out again).
    pub(super) fn sequences(&self) -> Result<Vec<(String, i64)>> {
        if !self.has("sqlite_sequence") {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare("SELECT name, seq FROM sqlite_sequence")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The counts a stamp compares: rows, highest ids and the recall counters' sum.
    pub(super) fn content_counts(&self) -> Result<BTreeMap<String, i64>> {
        let mut counts = BTreeMap::new();
        for table in ["memories", "episodes", "profiles", "entities", "relations"] {
            if self.has(table) {
                counts.insert(table.to_owned(), self.rows(table));
            }
        }
        let one = |sql: &str| -> Result<i64> {
            Ok(self
                .conn
                .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))?
                .unwrap_or(0))
        };
        counts.insert("max_memory_id".into(), one("SELECT MAX(id) FROM memories")?);
        counts.insert(
            "max_episode_id".into(),
            one("SELECT MAX(id) FROM episodes")?,
        );
        counts.insert(
            "recall_count_sum".into(),
            one(&format!(
                "SELECT SUM({}) FROM memories",
                self.mem_col("recall_count", "0")
            ))?,
        );
        Ok(counts)
    }
}

/// One CPersona profile: `(agent, project, user, content, updated_at)`.
pub(super) type ProfileRow = (String, String, String, String, Option<String>);

/// One CPersona memory as stored.
pub(super) struct MemoryRow {
    pub(super) id: i64,
    pub(super) agent_id: String,
    pub(super) project_id: String,
    pub(super) channel: String,
    pub(super) msg_id: String,
    pub(super) content: String,
    pub(super) source: String,
    pub(super) metadata: String,
    pub(super) timestamp: String,
    pub(super) created_at: Option<String>,
    pub(super) locked: bool,
    pub(super) recall_count: i64,
    pub(super) last_recalled_at: Option<String>,
    pub(super) embedding: Option<Vec<u8>>,
    pub(super) embedding_model: String,
}

/// One CPersona episode as stored.
pub(super) struct EpisodeRow {
    pub(super) id: i64,
    pub(super) agent_id: String,
    pub(super) project_id: String,
    pub(super) channel: String,
    pub(super) summary: String,
    pub(super) keywords: String,
    pub(super) start_time: Option<String>,
    pub(super) end_time: Option<String>,
    pub(super) resolved: bool,
    pub(super) created_at: Option<String>,
    pub(super) embedding: Option<Vec<u8>>,
    pub(super) embedding_model: String,
}

/// The file's identity as a later start compares it: size and modification time of the file
/// and its write-ahead log, plus the content counts.
pub(super) fn stamp(path: &Path, source: &Source) -> Result<SourceStamp> {
    let canonical = std::fs::canonicalize(path)?;
    let (size, mtime_ms) = file_facts(path)?;
    let wal_size = file_facts(&sidecar(path, "-wal")).map(|f| f.0).unwrap_or(0);
    Ok(SourceStamp {
        path: canonical.display().to_string(),
        size,
        mtime_ms,
        wal_size,
        schema_version: source.schema_version,
        counts: source.content_counts()?,
    })
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`).
pub(super) fn sidecar(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    std::path::PathBuf::from(name)
}

fn file_facts(path: &Path) -> Result<(u64, i64)> {
    let meta = std::fs::metadata(path)?;
    let mtime_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Ok((meta.len(), mtime_ms))
}

/// Opens `path` read-only. Without a write-ahead log beside it (no CPersona server holds it
/// open: a WAL-mode writer keeps its `-wal` while it runs) the file is opened `immutable`, so
/// SQLite does not even create the `-wal` / `-shm` companions a WAL-mode file would get;
/// with one, its committed rows are read through it, and the companions are left as found.
fn open_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = if sidecar(path, "-wal").exists() {
        Connection::open_with_flags(path, flags)
    } else {
        let absolute = std::fs::canonicalize(path)?;
        Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_path(&absolute)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )
    };
    let conn = opened.map_err(|err| unreadable(path, &err))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// `path` percent-encoded for an SQLite URI (every byte but unreserved ones and `/`).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%' \
         ORDER BY name",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// The FTS5 tables and their shadow tables: derived, rebuilt by this store's triggers.
pub(super) fn is_fts(name: &str) -> bool {
    name.starts_with("memories_fts") || name.starts_with("episodes_fts")
}

fn columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn pick(columns: &[String], name: &str, default: &str) -> String {
    if columns.iter().any(|c| c == name) {
        name.to_owned()
    } else {
        default.to_owned()
    }
}

/// A text column that may hold NULL or a number in a hand-edited file.
fn text(row: &Row<'_>, idx: usize) -> rusqlite::Result<String> {
    use rusqlite::types::ValueRef;
    Ok(match row.get_ref(idx)? {
        ValueRef::Null => String::new(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    })
}

/// A file SQLite cannot read: locked by a writer, corrupt, or not a database.
fn unreadable(path: &Path, err: &rusqlite::Error) -> Error {
    let reason = match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "it is locked by another process (a CPersona server writing?); stop it and retry"
                .to_owned()
        }
        Some(rusqlite::ErrorCode::NotADatabase) => "it is not an SQLite database".to_owned(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => format!("it is corrupt ({err})"),
        _ => err.to_string(),
    };
    Error::CPersonaUnreadable {
        path: path.display().to_string(),
        reason,
    }
}

/// Reads one optional key of our `meta` table (the recorded source stamp).
pub(super) fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?", [key], |r| r.get(0))
        .optional()?)
}

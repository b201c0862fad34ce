//! Store statistics: schema version, SQLite's own integrity check, row counts, the queue's
//! size and the file's size, read in one reader connection. `check_health` and `cpersona
//! check` report them.

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::Result;
use crate::store::Store;

/// Row counts and file facts of a store.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct StoreStats {
    pub schema_version: u32,
    pub supported_schema_version: u32,
    pub db_size_bytes: u64,
    pub memories: i64,
    pub episodes: i64,
    pub profiles: i64,
    pub pending_tasks: i64,
    pub memories_without_vector: i64,
    /// `"ok"` or SQLite's first complaints (`PRAGMA quick_check`, at most 10 lines).
    pub integrity: Vec<String>,
}

impl Store {
    /// The store's [`StoreStats`], counting one agent's rows (`""` = every agent).
    pub(crate) fn store_stats(&self, agent_id: &str) -> Result<StoreStats> {
        self.read(|conn| stats_of(conn, &self.settings.db_path, agent_id))
    }
}

fn stats_of(conn: &Connection, db_path: &Path, agent_id: &str) -> Result<StoreStats> {
    let count = |table: &str, extra: &str| -> rusqlite::Result<i64> {
        let filter = if agent_id.is_empty() {
            String::new()
        } else {
            " AND agent_id = ?1".to_owned()
        };
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE 1 = 1{extra}{filter}");
        if agent_id.is_empty() {
            conn.query_row(&sql, [], |row| row.get(0))
        } else {
            conn.query_row(&sql, [agent_id], |row| row.get(0))
        }
    };
    let mut integrity = Vec::new();
    let mut stmt = conn.prepare("PRAGMA quick_check(10)")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        integrity.push(row.get::<_, String>(0)?);
    }
    Ok(StoreStats {
        schema_version: conn.pragma_query_value(None, "user_version", |row| row.get(0))?,
        supported_schema_version: crate::store::db::migrate::supported_version(),
        db_size_bytes: std::fs::metadata(db_path).map(|m| m.len()).unwrap_or(0),
        memories: count("memories", "")?,
        episodes: count("episodes", "")?,
        profiles: count("profiles", "")?,
        pending_tasks: count("embedding_queue", "")?,
        memories_without_vector: count("memories", " AND embedding IS NULL")?,
        integrity,
    })
}

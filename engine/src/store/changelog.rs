//! The change log's marks that index generations are judged by: the AUTOINCREMENT high-water
//! mark (a generation's head) and the purge mark (a generation built before it is not used).

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;

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

//! `store`'s duplicate probes (CPersona's dedup contract: skip, never upsert). Texts are
//! compared whole, never a prefix, and a probe answers the stored row it matched, so a
//! `skipped` answer can name it. Imports nothing from `memories` (tidy: no import cycle).

use rusqlite::OptionalExtension;

use crate::error::Result;
use crate::scope::Scope;

/// A stored memory a new one duplicates, and on what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Duplicate {
    /// The stored memory.
    pub(super) id: i64,
    /// `msg_id` or `content`.
    pub(super) on: &'static str,
}

impl Duplicate {
    /// `duplicate content of memory 7`.
    pub(super) fn reason(self) -> String {
        format!("duplicate {} of memory {}", self.on, self.id)
    }
}

/// The bucket a new memory lands in, as the unique indexes key it.
pub(super) struct Bucket<'a> {
    pub(super) agent_id: &'a str,
    pub(super) project_id: &'a str,
    pub(super) channel: &'a str,
    pub(super) msg_id: &'a str,
}

/// CPersona's dedup probes in the write-visible scope: msg_id first (channels ignored), then
/// identical content.
pub(super) fn probe_duplicate(
    conn: &rusqlite::Connection,
    scope: &Scope,
    msg_id: &str,
    content: &str,
) -> Result<Option<Duplicate>> {
    if !msg_id.is_empty() {
        let (pred, mut values) = scope.without_channel().predicate("");
        values.push(rusqlite::types::Value::Text(msg_id.to_owned()));
        let sql =
            format!("SELECT id FROM memories WHERE {pred} AND msg_id = ? ORDER BY id LIMIT 1");
        let hit: Option<i64> = conn
            .prepare_cached(&sql)?
            .query_row(rusqlite::params_from_iter(values), |row| row.get(0))
            .optional()?;
        if let Some(id) = hit {
            return Ok(Some(Duplicate { id, on: "msg_id" }));
        }
    }
    let (pred, mut values) = scope.predicate("");
    values.push(rusqlite::types::Value::Text(content.to_owned()));
    let sql = format!("SELECT id FROM memories WHERE {pred} AND content = ? ORDER BY id LIMIT 1");
    let hit: Option<i64> = conn
        .prepare_cached(&sql)?
        .query_row(rusqlite::params_from_iter(values), |row| row.get(0))
        .optional()?;
    Ok(hit.map(|id| Duplicate { id, on: "content" }))
}

/// The row a unique index refused the insert for (same bucket and msg_id, or same bucket and
/// whole content). The probes inside the write transaction see these rows first, so this is
/// a belt to their braces; it still names the row it matched when it finds one.
pub(super) fn unique_index_twin(
    tx: &rusqlite::Connection,
    bucket: &Bucket<'_>,
    content: &str,
) -> Result<Option<Duplicate>> {
    let twin = |sql: &str, key: &str| -> Result<Option<i64>> {
        Ok(tx
            .query_row(
                sql,
                rusqlite::params![bucket.agent_id, bucket.project_id, bucket.channel, key],
                |row| row.get(0),
            )
            .optional()?)
    };
    if !bucket.msg_id.is_empty()
        && let Some(id) = twin(
            "SELECT id FROM memories WHERE agent_id = ?1 AND project_id = ?2 AND msg_id = ?4",
            bucket.msg_id,
        )?
    {
        return Ok(Some(Duplicate { id, on: "msg_id" }));
    }
    let by_content = twin(
        "SELECT id FROM memories WHERE agent_id = ?1 AND project_id = ?2 \
         AND channel = ?3 AND content = ?4",
        content,
    )?;
    Ok(by_content.map(|id| Duplicate { id, on: "content" }))
}

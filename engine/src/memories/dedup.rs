//! `store`'s duplicate probes (CPersona's dedup contract: skip, never upsert). Texts are
//! compared whole, never a prefix, and a `skipped` answer names the stored row it matched in
//! both `id` and `reason`, so a caller can see which memory already holds its text.

use rusqlite::OptionalExtension;

use super::{StoreId, StoreOutcome, StoreRequest, StoreResult};
use crate::error::Result;
use crate::scope::Scope;

/// CPersona's dedup probes in the write-visible scope: msg_id first (channels ignored), then
/// identical content.
pub(super) fn probe_duplicate(
    conn: &rusqlite::Connection,
    scope: &Scope,
    msg_id: &str,
    content: &str,
) -> Result<Option<StoreOutcome>> {
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
            return Ok(Some(skipped("msg_id", id)));
        }
    }
    let (pred, mut values) = scope.predicate("");
    values.push(rusqlite::types::Value::Text(content.to_owned()));
    let sql = format!("SELECT id FROM memories WHERE {pred} AND content = ? ORDER BY id LIMIT 1");
    let hit: Option<i64> = conn
        .prepare_cached(&sql)?
        .query_row(rusqlite::params_from_iter(values), |row| row.get(0))
        .optional()?;
    Ok(hit.map(|id| skipped("content", id)))
}

/// The row a unique index refused the insert for (same bucket and msg_id, or same bucket and
/// whole content). The probes inside the write transaction see these rows first, so this is
/// a belt to their braces; it still names the row it matched.
pub(super) fn unique_index_twin(
    tx: &rusqlite::Connection,
    req: &StoreRequest,
    content: &str,
) -> Result<StoreOutcome> {
    let twin = |sql: &str, key: &str| -> Result<Option<i64>> {
        Ok(tx
            .query_row(
                sql,
                rusqlite::params![req.agent_id, req.project_id, req.channel, key],
                |row| row.get(0),
            )
            .optional()?)
    };
    let by_msg_id = if req.msg_id.is_empty() {
        None
    } else {
        twin(
            "SELECT id FROM memories WHERE agent_id = ?1 AND project_id = ?2 AND msg_id = ?4",
            &req.msg_id,
        )?
    };
    if let Some(id) = by_msg_id {
        return Ok(skipped("msg_id", id));
    }
    let by_content = twin(
        "SELECT id FROM memories WHERE agent_id = ?1 AND project_id = ?2 \
         AND channel = ?3 AND content = ?4",
        content,
    )?;
    Ok(match by_content {
        Some(id) => skipped("content", id),
        None => outcome("duplicate (unique index)".to_owned(), None),
    })
}

/// `skipped` as a duplicate of memory `id`, on `what` (`msg_id` or `content`).
fn skipped(what: &str, id: i64) -> StoreOutcome {
    outcome(format!("duplicate {what} of memory {id}"), Some(id))
}

fn outcome(reason: String, id: Option<i64>) -> StoreOutcome {
    StoreOutcome {
        ok: true,
        result: StoreResult::Skipped,
        id: id.map(StoreId::Row),
        embedded: None,
        reason: Some(reason),
        locked: None,
        timestamp_ahead_of_clock: None,
        persisted: None,
        dry_run: None,
        derived: Default::default(),
    }
}

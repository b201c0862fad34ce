//! Reads for CPersona's row checks: duplicate rows, rows over the content cap, timestamps
//! ahead of the clock and JSON columns that do not parse.

use rusqlite::{Connection, params};

use crate::error::Result;
use crate::health::checks::AGENT;
use crate::health::stages::facts::{DuplicateFacts, FutureFacts, JsonFacts, OversizeFacts};
use crate::store::Store;

/// Ids a person is shown per malformed column.
const SAMPLE_IDS: i64 = 5;

/// The predicate (over `memories m`) of a copy a repair may remove: an older identical row
/// exists (same agent, project, channel, text, source and metadata), the copy is not locked,
/// and no declared mention or relation names it. The oldest row of a group is never one.
pub(crate) const REMOVABLE_COPY: &str = "m.locked = 0 \
    AND EXISTS (SELECT 1 FROM memories o WHERE o.agent_id = m.agent_id \
      AND o.project_id = m.project_id AND o.channel = m.channel AND o.content = m.content \
      AND o.source = m.source AND o.metadata = m.metadata AND o.id < m.id) \
    AND NOT EXISTS (SELECT 1 FROM entity_mentions WHERE ref = 'mem:' || m.id) \
    AND NOT EXISTS (SELECT 1 FROM relations WHERE (subject_kind = 'mem' AND subject_id = m.id) \
      OR (object_kind = 'mem' AND object_id = m.id))";

/// One agent's (or every agent's) identical rows.
pub(crate) fn duplicates(store: &Store, agent: &str) -> Result<DuplicateFacts> {
    store.read(|conn| {
        let pair = |sql: &str| -> Result<(u64, u64)> {
            let (a, b): (i64, i64) =
                conn.query_row(sql, [agent], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok((a.max(0) as u64, b.max(0) as u64))
        };
        let (exact_groups, exact_copies) = pair(&format!(
            "SELECT COUNT(*), COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) AS n FROM memories \
             WHERE {AGENT} GROUP BY agent_id, project_id, channel, content, source, metadata \
             HAVING n > 1)"
        ))?;
        let (near_groups, _) = pair(&format!(
            "SELECT COUNT(*), 0 FROM (SELECT COUNT(*) AS n, \
               COUNT(DISTINCT source || char(31) || metadata) AS d FROM memories \
             WHERE {AGENT} GROUP BY agent_id, project_id, channel, content HAVING n > 1 AND d > 1)"
        ))?;
        let (cross_scope_groups, cross_scope_rows) = pair(&format!(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n, \
               COUNT(DISTINCT project_id || char(31) || channel) AS s FROM memories \
             WHERE {AGENT} GROUP BY agent_id, content HAVING s > 1)"
        ))?;
        let removable: i64 = conn.query_row(
            &format!(
                "SELECT COUNT(*) FROM memories m WHERE (?1 = '' OR m.agent_id = ?1) \
                 AND {REMOVABLE_COPY}"
            ),
            [agent],
            |row| row.get(0),
        )?;
        let exact_removable = removable.max(0) as u64;
        Ok(DuplicateFacts {
            exact_groups,
            exact_removable,
            exact_kept: exact_copies.saturating_sub(exact_removable),
            near_groups,
            cross_scope_groups,
            cross_scope_rows,
        })
    })
}

/// Memories and episodes longer than `cap` characters.
pub(crate) fn oversize(store: &Store, agent: &str, cap: usize) -> Result<Vec<OversizeFacts>> {
    store.read(|conn| {
        [("memories", "content"), ("episodes", "summary")]
            .into_iter()
            .map(|(table, column)| {
                let (rows, longest): (i64, Option<i64>) = conn.query_row(
                    &format!(
                        "SELECT COUNT(*), MAX(length({column})) FROM {table} \
                         WHERE length({column}) > ?2 AND {AGENT}"
                    ),
                    params![agent, cap as i64],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )?;
                Ok(OversizeFacts {
                    table,
                    rows: rows.max(0) as u64,
                    cap: cap as u64,
                    longest: longest.map(|n| n.max(0) as u64),
                })
            })
            .collect()
    })
}

/// Rows whose timestamps lie after `after_ms`.
pub(crate) fn future(store: &Store, agent: &str, after_ms: i64) -> Result<Vec<FutureFacts>> {
    store.read(|conn| {
        [
            ("memories", "created_at_ms", "memories.created_at_ms"),
            ("memories", "timestamp_ms", "memories.timestamp_ms"),
            ("episodes", "created_at_ms", "episodes.created_at_ms"),
        ]
        .into_iter()
        .map(|(table, column, name)| {
            let (rows, latest_ms): (i64, Option<i64>) = conn.query_row(
                &format!(
                    "SELECT COUNT(*), MAX({column}) FROM {table} WHERE {column} > ?2 AND {AGENT}"
                ),
                params![agent, after_ms],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            Ok(FutureFacts {
                column: name,
                rows: rows.max(0) as u64,
                latest_ms,
            })
        })
        .collect()
    })
}

/// Memories whose `source` or `metadata` is not valid JSON.
pub(crate) fn json(store: &Store, agent: &str) -> Result<Vec<JsonFacts>> {
    store.read(|conn| {
        [
            ("source", "memories.source"),
            ("metadata", "memories.metadata"),
        ]
        .into_iter()
        .map(|(column, name)| json_column(conn, agent, column, name))
        .collect()
    })
}

fn json_column(
    conn: &Connection,
    agent: &str,
    column: &str,
    name: &'static str,
) -> Result<JsonFacts> {
    let filter = format!("json_valid({column}) = 0 AND {AGENT}");
    let rows: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM memories WHERE {filter}"),
        [agent],
        |row| row.get(0),
    )?;
    let mut stmt = conn.prepare(&format!(
        "SELECT id FROM memories WHERE {filter} ORDER BY id LIMIT {SAMPLE_IDS}"
    ))?;
    let sample_ids = stmt
        .query_map([agent], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(JsonFacts {
        column: name,
        rows: rows.max(0) as u64,
        sample_ids,
    })
}

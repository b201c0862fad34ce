//! The names a store holds — agent ids and project ids — for a client's completion of a
//! prompt argument (MCP `completion/complete`). Reads only; the caller decides which agents
//! it may show (in ACL mode, the ones it may read).

use rusqlite::params;

use crate::error::Result;
use crate::store::Store;

/// The most names one answer carries (MCP's completion limit).
pub(crate) const MAX_NAMES: usize = 100;

/// Agent ids holding any memory, episode or profile that start with `prefix`, in order, at most
/// `limit` (≤ [`MAX_NAMES`]).
pub(crate) fn agent_ids(store: &Store, prefix: &str, limit: usize) -> Result<Vec<String>> {
    store.read(|conn| {
        let mut stmt = conn.prepare_cached(
            "SELECT agent_id FROM (SELECT agent_id FROM memories UNION \
             SELECT agent_id FROM episodes UNION SELECT agent_id FROM profiles) \
             WHERE agent_id <> '' AND substr(agent_id, 1, length(?1)) = ?1 \
             ORDER BY agent_id LIMIT ?2",
        )?;
        let names = stmt
            .query_map(params![prefix, limit.min(MAX_NAMES) as i64], |row| {
                row.get(0)
            })?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(names)
    })
}

/// `(agent_id, project_id)` pairs of memories and episodes whose project starts with `prefix`,
/// of `agent_id` only when given, in order, at most `limit` (≤ [`MAX_NAMES`]).
pub(crate) fn project_ids(
    store: &Store,
    agent_id: Option<&str>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<(String, String)>> {
    store.read(|conn| {
        let mut stmt = conn.prepare_cached(
            "SELECT agent_id, project_id FROM (SELECT agent_id, project_id FROM memories UNION \
             SELECT agent_id, project_id FROM episodes) \
             WHERE project_id <> '' AND (?1 IS NULL OR agent_id = ?1) \
             AND substr(project_id, 1, length(?2)) = ?2 \
             ORDER BY project_id, agent_id LIMIT ?3",
        )?;
        let pairs = stmt
            .query_map(
                params![agent_id, prefix, limit.min(MAX_NAMES) as i64],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<Vec<(String, String)>>>()?;
        Ok(pairs)
    })
}

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

/// Milliseconds in a week: the histogram's bucket.
pub const WEEK_MS: i64 = 7 * 24 * 3600 * 1000;

/// What one agent holds, counted in SQL (no listing, no integrity check): for an overview.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgentSummary {
    /// Memories.
    pub memories: usize,
    /// Episodes.
    pub episodes: usize,
    /// Whether the agent has a profile.
    pub profile: bool,
    /// Memories stored per week, `(week, count)` ascending, weeks without one left out; a
    /// week is `created_at_ms.div_euclid(WEEK_MS)`.
    pub weekly: Vec<(i64, usize)>,
}

/// `agent_id`'s [`AgentSummary`], read in one snapshot.
pub(crate) fn agent_summary(store: &Store, agent_id: &str) -> Result<AgentSummary> {
    let (pred, values) = crate::scope::Scope::read(Some(agent_id), None, None).predicate("");
    store.read(|conn| {
        let count = |table: &str| -> Result<usize> {
            let n: i64 = conn.query_row(
                &format!("SELECT count(*) FROM {table} WHERE {pred}"),
                rusqlite::params_from_iter(values.iter()),
                |row| row.get(0),
            )?;
            Ok(usize::try_from(n).unwrap_or(0))
        };
        let memories = count("memories")?;
        let episodes = count("episodes")?;
        let profile = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM profiles WHERE agent_id = ?1 AND user_id = '')",
            params![agent_id],
            |row| row.get(0),
        )?;
        let mut stmt = conn.prepare(&format!(
            "SELECT created_at_ms / {WEEK_MS} - (created_at_ms < 0 AND created_at_ms % {WEEK_MS} <> 0) AS week, \
             count(*) FROM memories WHERE {pred} GROUP BY week ORDER BY week"
        ))?;
        let weekly = stmt
            .query_map(rusqlite::params_from_iter(values.iter()), |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
            })?
            .map(|r| r.map(|(week, n)| (week, usize::try_from(n).unwrap_or(0))))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(AgentSummary {
            memories,
            episodes,
            profile,
            weekly,
        })
    })
}

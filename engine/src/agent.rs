//! `delete_agent_data`: purges one agent's rows, FTS postings, change-log entries, queued
//! work, derived rows and calibration in one transaction. It must never touch another
//! agent's rows.

use serde::Serialize;

use crate::error::Result;
use crate::store::Store;
use crate::store::changelog::{changelog_head, purged_through};
use crate::store::pauses::NoPersist;
use crate::text::check_agent;

/// `delete_agent_data`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DeleteAgentDataOutcome {
    /// True.
    pub ok: bool,
    /// The agent purged.
    pub agent_id: String,
    /// Memories deleted.
    pub deleted_memories: usize,
    /// Profiles deleted.
    pub deleted_profiles: usize,
    /// Episodes deleted.
    pub deleted_episodes: usize,
    /// Queued embedding work dropped.
    pub deleted_pending_tasks: usize,
    /// The change-log head after the purge: generations built before it may hold the
    /// agent's rows and must be dropped (see [`Engine::delete_agent_data`]).
    pub purged_through_seq: i64,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// `delete_agent_data`.
///
/// Index-generation hook: the agent's change-log entries are purged with its rows (no
/// trace of the agent stays in the store), so a generation built before this call can no
/// longer be masked row by row. The purge therefore records `meta.index_purged_through_seq`
/// = the log head; whoever opens generations (the recall code) must drop or rebuild any
/// generation whose `built_seq` is below it, and should do so right after this call
/// returns (it is the place to unlink generation files, as CPersona 2.6 does).
pub(crate) fn delete_agent_data(
    store: &Store,
    agent_id: &str,
    session_key: &str,
) -> Result<DeleteAgentDataOutcome> {
    check_agent(agent_id)?;
    if let Some(no_persist) = store.no_persist("delete_agent_data", session_key) {
        return Ok(DeleteAgentDataOutcome {
            ok: true,
            agent_id: agent_id.to_owned(),
            deleted_memories: 0,
            deleted_profiles: 0,
            deleted_episodes: 0,
            deleted_pending_tasks: 0,
            purged_through_seq: 0,
            no_persist: Some(no_persist),
        });
    }
    let outcome = store.write(|tx| {
        // Counted before the row deletes, whose triggers drop the queue entries too.
        let deleted_pending_tasks =
            tx.execute("DELETE FROM embedding_queue WHERE agent_id = ?", [agent_id])?;
        let deleted_memories = tx.execute("DELETE FROM memories WHERE agent_id = ?", [agent_id])?;
        let deleted_episodes = tx.execute("DELETE FROM episodes WHERE agent_id = ?", [agent_id])?;
        let deleted_profiles = tx.execute("DELETE FROM profiles WHERE agent_id = ?", [agent_id])?;
        tx.execute("DELETE FROM record_blocks WHERE agent_id = ?", [agent_id])?;
        tx.execute("DELETE FROM relations WHERE agent_id = ?", [agent_id])?;
        tx.execute("DELETE FROM entities WHERE agent_id = ?", [agent_id])?;
        tx.execute("DELETE FROM calibration WHERE agent_id = ?", [agent_id])?;
        tx.execute(
            "DELETE FROM meta WHERE key = ?",
            [format!("recall_beta:{agent_id}")],
        )?;
        // The AUTOINCREMENT high-water mark, never below an earlier purge's: MAX(seq) would
        // read lower on a second purge once the first had deleted the newest entries (its
        // own rows' delete entries), moving the mark back below segments that still hold the
        // purged rows (tests/it/index_fresh.rs found it: store, flush, purge twice).
        let head = changelog_head(tx)?.max(purged_through(tx)?) as i64;
        tx.execute("DELETE FROM change_log WHERE agent_id = ?", [agent_id])?;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('index_purged_through_seq', ?) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [head.to_string()],
        )?;
        Ok(DeleteAgentDataOutcome {
            ok: true,
            agent_id: agent_id.to_owned(),
            deleted_memories,
            deleted_profiles,
            deleted_episodes,
            deleted_pending_tasks,
            purged_through_seq: head,
            no_persist: None,
        })
    })?;
    // Segments older than the mark are now unusable (`store/index/`): recall scores from
    // SQLite until the next maintenance pass rebuilds them.
    Ok(outcome)
}

//! `merge_memories`: copies (or moves) one agent's memories, episodes and profile to another
//! in one transaction, skipping duplicates in the target's exact bucket. A move never deletes
//! a locked source memory: locks protect against merge.
//!
//! Declared associations travel with the rows (`merge/carry.rs`): every source row has one
//! survivor in the target (its copy, or the duplicate it was skipped for), and the source's
//! entities, aliases, mentions and relations are re-pointed at those survivors, deduplicated by
//! the tables' unique keys, so `traverse` in the target answers as it did in the source. This
//! module must never write an association into an agent other than the target.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::scope::Scope;
use crate::store::Store;
use crate::store::pauses::NoPersist;
use crate::text::check_agent;

mod carry;

/// Rows between two progress reports (and cancellation checks).
const PROGRESS_EVERY: usize = 500;

/// Copy or move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MergeMode {
    /// Leave the source rows in place.
    #[default]
    Copy,
    /// Delete the merged source rows (locked memories stay).
    Move,
}

/// `merge_memories`' arguments.
#[derive(Clone, Debug, Default)]
pub struct MergeRequest {
    /// From.
    pub source_agent_id: String,
    /// To (must differ).
    pub target_agent_id: String,
    /// Only `"skip"` (duplicates are skipped, never overwritten).
    pub strategy: String,
    /// Copy or move.
    pub mode: MergeMode,
    /// Count, write nothing.
    pub dry_run: bool,
    /// Pause bucket.
    pub session_key: String,
}

/// `merge_memories`' response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default, schemars::JsonSchema)]
pub struct MergeOutcome {
    /// True.
    pub ok: bool,
    /// Echo.
    pub source_agent_id: String,
    /// Echo.
    pub target_agent_id: String,
    /// Echo.
    pub mode: MergeMode,
    /// Echo.
    pub dry_run: bool,
    /// Memories copied.
    pub merged_memories: usize,
    /// Memories already in the target's bucket.
    pub skipped_memories: usize,
    /// Episodes copied.
    pub merged_episodes: usize,
    /// Episodes already in the target's bucket.
    pub skipped_episodes: usize,
    /// Whether the profile was copied (only when the target has none).
    pub profile_copied: bool,
    /// Whether a source profile was left because the target has one.
    pub skipped_profile: bool,
    /// Entities new in the target (found ones are reused by name).
    pub merged_entities: usize,
    /// Mentions new in the target, re-pointed at the surviving rows.
    pub merged_mentions: usize,
    /// Relations new in the target, re-pointed at the surviving rows and entities.
    pub merged_relations: usize,
    /// Aliases left out because another target entity in the scope already answers to them.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_aliases: usize,
    /// Mentions or relations naming a row with no survivor (never expected); dropped.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_associations: usize,
    /// Move only: source rows deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_deleted: Option<usize>,
    /// Move only: source rows left (skipped duplicates and locked memories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_at_source: Option<usize>,
    /// Move only: source entities deleted because no row left at the source mentions them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_entities_deleted: Option<usize>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

const MEMORY_COLUMNS: &str = "project_id, channel, msg_id, content, source, metadata, timestamp, \
    timestamp_ms, created_at_ms, locked, recall_count, last_recalled_at_ms, embedding, \
    embedding_model, embedding_dim, embedding_format";
const EPISODE_COLUMNS: &str = "project_id, channel, summary, keywords, start_time, end_time, \
    start_ms, end_ms, resolved, created_at_ms, embedding, embedding_model, embedding_dim, \
    embedding_format";

/// `merge_memories`.
/// The merge runs in one transaction: a cancel seen by `progress` rolls it back whole.
pub(crate) fn merge_memories(
    store: &Store,
    req: &MergeRequest,
    progress: &Progress<'_>,
) -> Result<MergeOutcome> {
    let mut outcome = MergeOutcome {
        ok: true,
        source_agent_id: req.source_agent_id.clone(),
        target_agent_id: req.target_agent_id.clone(),
        mode: req.mode,
        dry_run: req.dry_run,
        ..Default::default()
    };
    if let Some(no_persist) = store.no_persist("merge_memories", &req.session_key) {
        outcome.dry_run = true;
        outcome.no_persist = Some(no_persist);
        return Ok(outcome);
    }
    check_agent(&req.source_agent_id)?;
    check_agent(&req.target_agent_id)?;
    if req.source_agent_id == req.target_agent_id {
        return Err(Error::invalid(
            "target_agent_id",
            "must differ from source_agent_id",
        ));
    }
    if !req.strategy.is_empty() && req.strategy != "skip" {
        return Err(Error::invalid(
            "strategy",
            format!("{:?} is not supported; only \"skip\"", req.strategy),
        ));
    }
    // The merge copies recall counters: the credit still waiting in memory goes in first.
    store.flush_credits()?;
    // The last check runs inside the transaction, before its commit.
    let run = |tx: &Transaction<'_>| {
        merge(tx, req, &mut outcome, progress)?;
        progress.check("merge_memories")
    };
    if req.dry_run {
        store.write_dry(run)?
    } else {
        store.write(run)?
    };
    Ok(outcome)
}

fn merge(
    tx: &Transaction<'_>,
    req: &MergeRequest,
    outcome: &mut MergeOutcome,
    progress: &Progress<'_>,
) -> Result<()> {
    let (source, target) = (req.source_agent_id.as_str(), req.target_agent_id.as_str());
    let moving = req.mode == MergeMode::Move;
    let (pred, values) = Scope::read(Some(source), None, None).predicate("");
    let (mut deleted, mut left) = (0usize, 0usize);
    let mut survivors = carry::Survivors::default();
    let (mut gone_memories, mut gone_episodes) = (Vec::new(), Vec::new());

    let memories: Vec<(i64, bool)> = {
        let mut stmt = tx.prepare(&format!(
            "SELECT id, locked FROM memories WHERE {pred} ORDER BY id"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values.iter()), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let total = memories.len() as u64;
    for (done, (id, locked)) in memories.into_iter().enumerate() {
        if done % PROGRESS_EVERY == 0 {
            progress.check("merge_memories")?;
            progress.report(done as u64, Some(total), "copying memories");
        }
        let n = tx
            .prepare_cached(&format!(
                "INSERT OR IGNORE INTO memories(agent_id, {MEMORY_COLUMNS}) \
                 SELECT ?, {MEMORY_COLUMNS} FROM memories WHERE id = ?"
            ))?
            .execute(params![target, id])?;
        if n == 0 {
            if let Some(dup) = carry::duplicate_memory(tx, target, id)? {
                survivors.memories.insert(id, dup);
            }
            outcome.skipped_memories += 1;
            left += 1;
            continue;
        }
        survivors.memories.insert(id, tx.last_insert_rowid());
        outcome.merged_memories += 1;
        queue_if_unembedded(tx, "memories", target)?;
        if moving && !locked {
            gone_memories.push(id);
        } else {
            left += 1;
        }
    }

    let episodes: Vec<i64> = {
        let mut stmt = tx.prepare(&format!("SELECT id FROM episodes WHERE {pred} ORDER BY id"))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values.iter()), |row| row.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for id in episodes {
        let existing: Option<i64> = tx
            .query_row(
                "SELECT t.id FROM episodes t JOIN episodes s ON s.id = ?2 \
                 WHERE t.agent_id = ?1 AND t.project_id = s.project_id AND t.channel = s.channel \
                 AND t.summary = s.summary ORDER BY t.id LIMIT 1",
                params![target, id],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(dup) = existing {
            survivors.episodes.insert(id, dup);
            outcome.skipped_episodes += 1;
            left += 1;
            continue;
        }
        tx.execute(
            &format!(
                "INSERT INTO episodes(agent_id, {EPISODE_COLUMNS}) \
                 SELECT ?, {EPISODE_COLUMNS} FROM episodes WHERE id = ?"
            ),
            params![target, id],
        )?;
        survivors.episodes.insert(id, tx.last_insert_rowid());
        outcome.merged_episodes += 1;
        queue_if_unembedded(tx, "episodes", target)?;
        if moving {
            gone_episodes.push(id);
        }
    }

    // Associations first: deleting a moved row drops its mentions and relations (triggers).
    carry::carry(tx, source, target, &survivors, outcome)?;
    for id in gone_memories {
        deleted += tx.execute("DELETE FROM memories WHERE id = ?", [id])?;
    }
    for id in gone_episodes {
        deleted += tx.execute("DELETE FROM episodes WHERE id = ?", [id])?;
    }
    if moving {
        outcome.source_entities_deleted = Some(carry::drop_orphans(tx, source)?);
    }

    let has = |agent: &str| -> Result<bool> {
        Ok(tx.query_row(
            "SELECT EXISTS(SELECT 1 FROM profiles WHERE agent_id = ? AND user_id = '')",
            [agent],
            |row| row.get(0),
        )?)
    };
    if has(source)? {
        if has(target)? {
            outcome.skipped_profile = true;
            left += 1;
        } else {
            tx.execute(
                "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at_ms) \
                 SELECT ?, project_id, user_id, content, updated_at_ms FROM profiles \
                 WHERE agent_id = ? AND user_id = ''",
                params![target, source],
            )?;
            outcome.profile_copied = true;
            if moving {
                deleted += tx.execute(
                    "DELETE FROM profiles WHERE agent_id = ? AND user_id = ''",
                    [source],
                )?;
            }
        }
    }
    if moving {
        outcome.source_deleted = Some(deleted);
        outcome.left_at_source = Some(left);
    }
    Ok(())
}

/// A copied row without a vector is owed one, like any other.
fn queue_if_unembedded(tx: &Transaction<'_>, table: &str, agent_id: &str) -> Result<()> {
    let id = tx.last_insert_rowid();
    let unembedded: bool = tx.query_row(
        &format!("SELECT embedding IS NULL FROM {table} WHERE id = ?"),
        [id],
        |row| row.get(0),
    )?;
    if unembedded {
        crate::store::queue::enqueue(tx, table, id, agent_id, "copied without an embedding")?;
    }
    Ok(())
}

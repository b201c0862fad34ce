//! `merge_memories`' association carry: the source agent's entities, aliases, mentions and
//! relations re-pointed at the target's surviving rows, inside the merge's transaction.
//!
//! Each source row has one survivor in the target: the copy the merge wrote, or the duplicate
//! it was skipped for. An entity is found in the target by its name or an alias in the same
//! (project, channel), else created; an alias another target entity answers to is skipped
//! (as `declare_associations` drops it). Every insert is keyed by the tables' unique keys, so
//! carrying twice adds nothing. This module must never write outside the target agent, and
//! must run before a move deletes the source rows (their delete triggers drop the links).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use super::MergeOutcome;
use crate::error::Result;

/// Source row id → the target row that survives it.
#[derive(Debug, Default)]
pub(super) struct Survivors {
    pub(super) memories: HashMap<i64, i64>,
    pub(super) episodes: HashMap<i64, i64>,
}

impl Survivors {
    /// A `mem:`/`ep:`/`entity:` end re-pointed at the target, `None` when it has no survivor.
    fn end(&self, entities: &HashMap<i64, i64>, kind: &str, id: i64) -> Option<i64> {
        match kind {
            "mem" => self.memories.get(&id).copied(),
            "ep" => self.episodes.get(&id).copied(),
            "entity" => entities.get(&id).copied(),
            _ => None,
        }
    }

    /// A stored `kind:id` ref (mention or anchor) re-pointed; `""` stays `""`.
    fn reference(&self, text: &str) -> Option<String> {
        if text.is_empty() {
            return Some(String::new());
        }
        let (kind, id) = text.split_once(':')?;
        let id: i64 = id.parse().ok()?;
        let to = self.end(&HashMap::new(), kind, id)?;
        Some(format!("{kind}:{to}"))
    }
}

/// The target's memory that source memory `id` duplicates (the exact bucket, or the msg_id).
pub(super) fn duplicate_memory(tx: &Transaction<'_>, target: &str, id: i64) -> Result<Option<i64>> {
    Ok(tx
        .prepare_cached(
            "SELECT t.id FROM memories t JOIN memories s ON s.id = ?2 \
             WHERE t.agent_id = ?1 AND t.project_id = s.project_id AND \
             ((t.channel = s.channel AND t.content = s.content) OR \
              (s.msg_id != '' AND t.msg_id = s.msg_id)) ORDER BY t.id LIMIT 1",
        )?
        .query_row(params![target, id], |r| r.get(0))
        .optional()?)
}

/// The target entity answering to `normalized` (name or alias) in one exact scope.
fn target_entity(
    tx: &Transaction<'_>,
    axes: (&str, &str, &str),
    normalized: &str,
) -> Result<Option<i64>> {
    Ok(tx
        .prepare_cached(
            "SELECT e.id FROM entities e WHERE e.agent_id = ?1 AND e.project_id = ?2 \
             AND e.channel = ?3 AND (e.normalized = ?4 OR EXISTS (SELECT 1 FROM entity_aliases a \
             WHERE a.entity_id = e.id AND a.normalized = ?4)) ORDER BY e.id LIMIT 1",
        )?
        .query_row(params![axes.0, axes.1, axes.2, normalized], |r| r.get(0))
        .optional()?)
}

/// Carries every association of `source` to `target` through `survivors`.
pub(super) fn carry(
    tx: &Transaction<'_>,
    source: &str,
    target: &str,
    survivors: &Survivors,
    outcome: &mut MergeOutcome,
) -> Result<()> {
    type EntityRow = (i64, String, String, String, String, String, i64);
    let sources: Vec<EntityRow> = {
        let mut stmt = tx.prepare(
            "SELECT id, project_id, channel, name, normalized, declared_by, created_at_ms \
             FROM entities WHERE agent_id = ? ORDER BY id",
        )?;
        let rows = stmt.query_map([source], |r| r.try_into())?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut entities: HashMap<i64, i64> = HashMap::new();
    for (old, project, channel, name, normalized, by, at) in &sources {
        let axes = (target, project.as_str(), channel.as_str());
        let id = match target_entity(tx, axes, normalized)? {
            Some(id) => id,
            None => {
                tx.prepare_cached(
                    "INSERT INTO entities(agent_id, project_id, channel, name, normalized, \
                     declared_by, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                )?
                .execute(params![target, project, channel, name, normalized, by, at])?;
                outcome.merged_entities += 1;
                tx.last_insert_rowid()
            }
        };
        entities.insert(*old, id);
        let aliases: Vec<(String, String)> = tx
            .prepare_cached("SELECT alias, normalized FROM entity_aliases WHERE entity_id = ?")?
            .query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (alias, folded) in aliases {
            match target_entity(tx, axes, &folded)? {
                Some(owner) if owner != id => outcome.skipped_aliases += 1,
                Some(_) => {}
                None => {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO entity_aliases(entity_id, alias, normalized) \
                         VALUES (?, ?, ?)",
                    )?
                    .execute(params![id, alias, folded])?;
                }
            }
        }
        let mentions: Vec<(String, String, i64)> = tx
            .prepare_cached(
                "SELECT ref, declared_by, created_at_ms FROM entity_mentions WHERE entity_id = ?",
            )?
            .query_map([old], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (reference, by, at) in mentions {
            let Some(to) = survivors.reference(&reference).filter(|r| !r.is_empty()) else {
                outcome.dropped_associations += 1;
                continue;
            };
            outcome.merged_mentions += tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO entity_mentions(entity_id, ref, declared_by, \
                     created_at_ms) VALUES (?, ?, ?, ?)",
                )?
                .execute(params![id, to, by, at])?;
        }
    }
    carry_relations(tx, source, target, survivors, &entities, outcome)
}

fn carry_relations(
    tx: &Transaction<'_>,
    source: &str,
    target: &str,
    survivors: &Survivors,
    entities: &HashMap<i64, i64>,
    outcome: &mut MergeOutcome,
) -> Result<()> {
    type RelationRow = (
        String,
        String,
        String,
        i64,
        String,
        String,
        i64,
        String,
        String,
        i64,
    );
    let relations: Vec<RelationRow> = {
        let mut stmt = tx.prepare(
            "SELECT project_id, channel, subject_kind, subject_id, predicate, object_kind, \
             object_id, anchor_ref, declared_by, declared_at_ms FROM relations \
             WHERE agent_id = ? ORDER BY id",
        )?;
        let rows = stmt.query_map([source], |r| r.try_into())?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (project, channel, s_kind, s_id, predicate, o_kind, o_id, anchor, by, at) in relations {
        let subject = survivors.end(entities, &s_kind, s_id);
        let object = survivors.end(entities, &o_kind, o_id);
        let anchor = survivors.reference(&anchor);
        let (Some(subject), Some(object), Some(anchor)) = (subject, object, anchor) else {
            outcome.dropped_associations += 1;
            continue;
        };
        outcome.merged_relations += tx
            .prepare_cached(
                "INSERT OR IGNORE INTO relations(agent_id, project_id, channel, subject_kind, \
                 subject_id, predicate, object_kind, object_id, anchor_ref, declared_by, \
                 declared_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                target, project, channel, s_kind, subject, predicate, o_kind, object, anchor, by,
                at
            ])?;
    }
    Ok(())
}

/// After a move: deletes the source's entities that no remaining row mentions and no
/// remaining record relation names, with the relations between such entities. Returns how
/// many entities went.
pub(super) fn drop_orphans(tx: &Transaction<'_>, source: &str) -> Result<usize> {
    let orphan = "SELECT e.id FROM entities e WHERE e.agent_id = ?1 \
        AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id) \
        AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.agent_id = ?1 AND \
          ((r.subject_kind = 'entity' AND r.subject_id = e.id AND r.object_kind != 'entity') OR \
           (r.object_kind = 'entity' AND r.object_id = e.id AND r.subject_kind != 'entity')))";
    tx.execute(
        &format!(
            "DELETE FROM relations WHERE agent_id = ?1 AND \
             ((subject_kind = 'entity' AND subject_id IN ({orphan})) OR \
              (object_kind = 'entity' AND object_id IN ({orphan})))"
        ),
        [source],
    )?;
    Ok(tx.execute(
        &format!("DELETE FROM entities WHERE id IN ({orphan})"),
        [source],
    )?)
}

//! CPersona's declared associations (schema v15: entities, aliases, mentions, relations),
//! copied with their ids, since the conversion keeps every memory's and episode's id and
//! refs (`mem:<id>`, `ep:<id>`, `entity:<id>`) therefore mean the same rows here. Names are
//! normalised again with this store's rule. A mention or relation naming a row that was not
//! carried is dropped and listed, never pointed elsewhere.

use std::collections::HashSet;

use rusqlite::{Transaction, params};

use super::read::Source;
use super::report::{ConvertOutcome, instant_or};
use crate::associations::normalize;
use crate::error::Result;

/// Copies every association within `tx`; counts land in `outcome.carried`.
pub(super) fn copy(
    source: &Source,
    tx: &Transaction<'_>,
    outcome: &mut ConvertOutcome,
) -> Result<()> {
    if !source.has("entities") {
        return Ok(());
    }
    let conn = &source.conn;
    let mut entities = HashSet::new();
    let mut stmt = conn.prepare(
        "SELECT id, agent_id, project_id, channel, name, declared_by, created_at FROM entities \
         ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<String>>(6)?,
        ))
    })?;
    for row in rows {
        let (id, agent, project, channel, name, by, created_at) = row?;
        let normalized = normalize(&name);
        let created_at_ms = instant_or(created_at.as_deref(), outcome, "entity created_at");
        // A name that normalises to nothing is never written: the report says it was not
        // carried, and the store must agree.
        let n = if normalized.is_empty() {
            0
        } else {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO entities(id, agent_id, project_id, channel, name, \
                 normalized, declared_by, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                id,
                agent,
                project,
                channel,
                name,
                normalized,
                by,
                created_at_ms
            ])?
        };
        if n == 1 {
            entities.insert(id);
            outcome.carried.entities += 1;
        } else {
            outcome.refuse(format!(
                "entity:{id} ({name:?}) not carried: its name normalises to one another entity \
                 of the same scope already has, or to nothing; its aliases, mentions and \
                 relations go with it"
            ));
        }
    }
    let mut stmt =
        conn.prepare("SELECT entity_id, alias FROM entity_aliases ORDER BY entity_id")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (entity, alias) = row?;
        let folded = normalize(&alias);
        if !entities.contains(&entity) || folded.is_empty() {
            outcome.dropped_associations += 1;
            continue;
        }
        outcome.carried.aliases += tx
            .prepare_cached(
                "INSERT OR IGNORE INTO entity_aliases(entity_id, alias, normalized) VALUES (?, ?, ?)",
            )?
            .execute(params![entity, alias, folded])?;
    }
    let mut stmt = conn.prepare(
        "SELECT entity_id, ref, declared_by, created_at FROM entity_mentions ORDER BY entity_id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })?;
    for row in rows {
        let (entity, reference, by, created_at) = row?;
        if !entities.contains(&entity) || !row_exists(tx, &reference)? {
            outcome.dropped_associations += 1;
            outcome.refuse(format!(
                "mention of entity:{entity} by {reference} not carried: that row or entity was \
                 not carried"
            ));
            continue;
        }
        let at = instant_or(created_at.as_deref(), outcome, "mention created_at");
        outcome.carried.mentions += tx
            .prepare_cached(
                "INSERT OR IGNORE INTO entity_mentions(entity_id, ref, declared_by, created_at_ms) \
                 VALUES (?, ?, ?, ?)",
            )?
            .execute(params![entity, reference, by, at])?;
    }
    if !source.has("relations") {
        return Ok(());
    }
    let mut stmt = conn.prepare(
        "SELECT id, agent_id, project_id, channel, subject_kind, subject_id, predicate, \
         object_kind, object_id, anchor_ref, declared_by, declared_at FROM relations ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            (
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ),
            (r.get::<_, String>(4)?, r.get::<_, i64>(5)?),
            r.get::<_, String>(6)?,
            (r.get::<_, String>(7)?, r.get::<_, i64>(8)?),
            r.get::<_, String>(9)?,
            r.get::<_, String>(10)?,
            r.get::<_, Option<String>>(11)?,
        ))
    })?;
    for row in rows {
        let ((id, agent, project, channel), subject, predicate, object, anchor, by, at) = row?;
        let subject_ref = format!("{}:{}", subject.0, subject.1);
        let object_ref = format!("{}:{}", object.0, object.1);
        let present = |r: &str| -> Result<bool> {
            match r.split_once(':') {
                Some(("entity", n)) => Ok(n.parse::<i64>().is_ok_and(|n| entities.contains(&n))),
                _ => row_exists(tx, r),
            }
        };
        let ends_present = present(&subject_ref)?
            && present(&object_ref)?
            && (anchor.is_empty() || row_exists(tx, &anchor)?);
        if !ends_present {
            outcome.dropped_associations += 1;
            outcome.refuse(format!(
                "relation {id} ({subject_ref} {predicate} {object_ref}) not carried: an end or \
                 its anchor was not carried"
            ));
            continue;
        }
        let at = instant_or(at.as_deref(), outcome, "relation declared_at");
        outcome.carried.relations += tx
            .prepare_cached(
                "INSERT OR IGNORE INTO relations(id, agent_id, project_id, channel, subject_kind, \
                 subject_id, predicate, object_kind, object_id, anchor_ref, declared_by, \
                 declared_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                id,
                agent,
                project,
                channel,
                subject.0,
                subject.1,
                normalize(&predicate),
                object.0,
                object.1,
                anchor,
                by,
                at
            ])?;
    }
    Ok(())
}

/// Whether `mem:<id>` / `ep:<id>` names a row written here.
fn row_exists(tx: &Transaction<'_>, reference: &str) -> Result<bool> {
    let (table, id) = match reference.split_once(':') {
        Some(("mem", id)) => ("memories", id),
        Some(("ep", id)) => ("episodes", id),
        _ => return Ok(false),
    };
    let Ok(id) = id.parse::<i64>() else {
        return Ok(false);
    };
    Ok(tx
        .prepare_cached(&format!(
            "SELECT EXISTS(SELECT 1 FROM {table} WHERE id = ?)"
        ))?
        .query_row([id], |r| r.get(0))?)
}

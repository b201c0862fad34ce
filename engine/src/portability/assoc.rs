//! Declared associations in the JSONL export: one `{"_type":"entity"}` line per entity (its
//! aliases and mentions inline) and one `{"_type":"relation"}` line per relation, written
//! after the profiles. CPersona's importers dispatch on `_type` and pass over kinds they do
//! not know, so a file with these lines still imports there (without the associations).
//!
//! On import the refs inside these lines (`mem:<id>`, `ep:<id>`, `entity:<id>`) name the
//! *exported* rows; they are mapped to the rows the import wrote or found as duplicates, and
//! a ref that maps to nothing is dropped and reported, never guessed. Re-importing a file
//! adds nothing (every insert is keyed by the tables' unique keys). This module must never
//! write an association outside the (remapped) agent of its line.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::{Map, Value, json};

use super::fields::{axes_of, note};
use super::record::{ImportOutcome, Record};
use crate::associations::normalize;
use crate::error::{Error, Result};
use crate::time::{format_ms, now_ms, parse_iso8601_ms};

/// The `declared_by` an imported association carries when its line names none.
const IMPORTED_BY: &str = "import_memories";

/// The export lines of every entity and relation the predicate selects (`pred` over
/// `agent_id`, no alias), in id order; returns `(entities, relations, lines)`.
pub(super) fn export_lines(
    conn: &Connection,
    pred: &str,
    values: &[SqlValue],
) -> Result<(usize, usize, Vec<Value>)> {
    let mut lines = Vec::new();
    let mut aliases =
        conn.prepare("SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY normalized")?;
    let mut mentions = conn.prepare(
        "SELECT ref, declared_by, created_at_ms FROM entity_mentions WHERE entity_id = ? \
         ORDER BY ref",
    )?;
    let mut stmt = conn.prepare(&format!(
        "SELECT id, agent_id, project_id, channel, name, declared_by, created_at_ms \
         FROM entities WHERE {pred} ORDER BY id"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut n_entities = 0;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let alias_list = aliases
            .query_map([id], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mention_list = mentions
            .query_map([id], |r| {
                Ok(json!({
                    "ref": r.get::<_, String>(0)?,
                    "declared_by": r.get::<_, String>(1)?,
                    "created_at": format_ms(r.get(2)?),
                }))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        lines.push(json!({
            "_type": "entity",
            "id": id,
            "agent_id": row.get::<_, String>(1)?,
            "project_id": row.get::<_, String>(2)?,
            "channel": row.get::<_, String>(3)?,
            "name": row.get::<_, String>(4)?,
            "declared_by": row.get::<_, String>(5)?,
            "created_at": format_ms(row.get(6)?),
            "aliases": alias_list,
            "mentions": mention_list,
        }));
        n_entities += 1;
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT agent_id, project_id, channel, subject_kind, subject_id, predicate, object_kind, \
         object_id, anchor_ref, declared_by, declared_at_ms FROM relations WHERE {pred} ORDER BY id"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut n_relations = 0;
    while let Some(row) = rows.next()? {
        lines.push(json!({
            "_type": "relation",
            "agent_id": row.get::<_, String>(0)?,
            "project_id": row.get::<_, String>(1)?,
            "channel": row.get::<_, String>(2)?,
            "subject": format!("{}:{}", row.get::<_, String>(3)?, row.get::<_, i64>(4)?),
            "predicate": row.get::<_, String>(5)?,
            "object": format!("{}:{}", row.get::<_, String>(6)?, row.get::<_, i64>(7)?),
            "anchor_ref": row.get::<_, String>(8)?,
            "declared_by": row.get::<_, String>(9)?,
            "declared_at": format_ms(row.get(10)?),
        }));
        n_relations += 1;
    }
    Ok((n_entities, n_relations, lines))
}

/// One end of a relation, or a mention, as the file names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Entity(i64),
    Mem(i64),
    Ep(i64),
}

impl End {
    fn parse(text: &str) -> Option<End> {
        let (kind, id) = text.split_once(':')?;
        let id: i64 = id.parse().ok().filter(|id| *id > 0)?;
        match kind {
            "entity" => Some(End::Entity(id)),
            "mem" => Some(End::Mem(id)),
            "ep" => Some(End::Ep(id)),
            _ => None,
        }
    }
}

/// An entity line, validated.
#[derive(Clone, Debug)]
pub(super) struct EntityLine {
    line: usize,
    old_id: i64,
    axes: (String, String, String),
    name: String,
    declared_by: String,
    created_at_ms: i64,
    aliases: Vec<String>,
    mentions: Vec<(End, String, i64)>,
}

/// A relation line, validated.
#[derive(Clone, Debug)]
pub(super) struct RelationLine {
    line: usize,
    axes: (String, String, String),
    subject: End,
    predicate: String,
    object: End,
    anchor: Option<End>,
    declared_by: String,
    declared_at_ms: i64,
}

/// What an import carries besides rows: the association lines and, for each exported row id,
/// the index of its record (so its current id can be found after the rows are written).
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) entities: Vec<EntityLine>,
    pub(super) relations: Vec<RelationLine>,
    pub(super) memory_records: HashMap<i64, usize>,
    pub(super) episode_records: HashMap<i64, usize>,
}

impl Pending {
    /// Nothing to write.
    pub(super) fn is_empty(&self) -> bool {
        self.entities.is_empty() && self.relations.is_empty()
    }
}

fn text(obj: &Map<String, Value>, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn instant(obj: &Map<String, Value>, key: &str) -> Result<i64> {
    match obj.get(key).and_then(Value::as_str) {
        None | Some("") => Ok(now_ms()),
        Some(s) => parse_iso8601_ms(s),
    }
}

fn bad(field: &'static str, reason: &str) -> Error {
    Error::invalid(field, reason.to_owned())
}

/// Reads an `entity` line (`target_agent` remaps as for rows).
pub(super) fn entity_line(
    obj: &Map<String, Value>,
    line: usize,
    target_agent: &str,
) -> Result<EntityLine> {
    let axes = axes_of(obj, target_agent)?;
    let name = text(obj, "name");
    if normalize(&name).is_empty() {
        return Err(bad("name", "an entity needs a name"));
    }
    let old_id = obj
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("id", "an entity line needs its exported id"))?;
    let aliases = match obj.get("aliases") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let mut mentions = Vec::new();
    if let Some(Value::Array(items)) = obj.get("mentions") {
        for item in items {
            let Some(m) = item.as_object() else {
                return Err(bad("mentions", "each mention must be an object"));
            };
            let end = End::parse(&text(m, "ref"))
                .filter(|e| !matches!(e, End::Entity(_)))
                .ok_or_else(|| bad("mentions", "a mention's ref must be mem:<id> or ep:<id>"))?;
            mentions.push((end, text(m, "declared_by"), instant(m, "created_at")?));
        }
    }
    Ok(EntityLine {
        line,
        old_id,
        axes,
        name,
        declared_by: text(obj, "declared_by"),
        created_at_ms: instant(obj, "created_at")?,
        aliases,
        mentions,
    })
}

/// Reads a `relation` line.
pub(super) fn relation_line(
    obj: &Map<String, Value>,
    line: usize,
    target_agent: &str,
) -> Result<RelationLine> {
    let end = |key: &'static str| {
        End::parse(&text(obj, key)).ok_or_else(|| bad(key, "must be entity:, mem: or ep:<id>"))
    };
    let predicate = text(obj, "predicate");
    if normalize(&predicate).is_empty() {
        return Err(bad("predicate", "a relation needs a predicate"));
    }
    let anchor = match text(obj, "anchor_ref").as_str() {
        "" => None,
        other => Some(
            End::parse(other)
                .filter(|e| !matches!(e, End::Entity(_)))
                .ok_or_else(|| bad("anchor_ref", "must be mem:<id> or ep:<id>"))?,
        ),
    };
    Ok(RelationLine {
        line,
        axes: axes_of(obj, target_agent)?,
        subject: end("subject")?,
        predicate,
        object: end("object")?,
        anchor,
        declared_by: text(obj, "declared_by"),
        declared_at_ms: instant(obj, "declared_at")?,
    })
}

/// The current id of the row an exported `mem:`/`ep:` id named: the row this import wrote,
/// or the stored duplicate it was skipped for; `None` when the file holds no such row or it
/// belongs to another agent than `agent` (an association never crosses agents).
fn current_row(
    tx: &Transaction<'_>,
    pending: &Pending,
    records: &[Record],
    agent: &str,
    end: End,
) -> Result<Option<(&'static str, i64)>> {
    let (kind, found) = match end {
        End::Mem(old) => ("mem", pending.memory_records.get(&old)),
        End::Ep(old) => ("ep", pending.episode_records.get(&old)),
        End::Entity(_) => return Ok(None),
    };
    let Some(record) = found.and_then(|&i| records.get(i)) else {
        return Ok(None);
    };
    let record_agent = match record {
        Record::Memory { axes, .. } | Record::Episode { axes, .. } => axes.agent_id.as_str(),
        Record::Profile { agent_id, .. } => agent_id.as_str(),
    };
    if record_agent != agent {
        return Ok(None);
    }
    let id = match record {
        Record::Memory {
            axes,
            msg_id,
            content,
            ..
        } => super::apply::memory_twin(tx, axes, content, msg_id)?,
        Record::Episode { axes, summary, .. } => tx
            .prepare_cached(
                "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = ? \
                 AND summary = ? ORDER BY id LIMIT 1",
            )?
            .query_row(
                params![axes.agent_id, axes.project_id, axes.channel, summary],
                |r| r.get::<_, i64>(0),
            )
            .optional()?,
        Record::Profile { .. } => None,
    };
    Ok(id.map(|id| (kind, id)))
}

fn declared_by(text: &str) -> &str {
    if text.is_empty() { IMPORTED_BY } else { text }
}

/// Writes the pending associations within `tx` after the rows: entities (found or inserted
/// by their unique key), aliases, mentions, then relations. Counts what was new.
pub(super) fn apply(
    tx: &Transaction<'_>,
    pending: &Pending,
    records: &[Record],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let mut entity_ids: HashMap<i64, i64> = HashMap::new();
    for e in &pending.entities {
        let (agent, project, channel) = &e.axes;
        let normalized = normalize(&e.name);
        let inserted = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO entities(agent_id, project_id, channel, name, normalized, \
                 declared_by, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                agent,
                project,
                channel,
                e.name,
                normalized,
                declared_by(&e.declared_by),
                e.created_at_ms
            ])?;
        outcome.imported_entities += inserted;
        let id: i64 = tx
            .prepare_cached(
                "SELECT id FROM entities WHERE agent_id = ? AND project_id = ? AND channel = ? \
                 AND normalized = ?",
            )?
            .query_row(params![agent, project, channel, normalized], |r| r.get(0))?;
        entity_ids.insert(e.old_id, id);
        for alias in &e.aliases {
            let folded = normalize(alias);
            if folded.is_empty() {
                continue;
            }
            tx.prepare_cached(
                "INSERT OR IGNORE INTO entity_aliases(entity_id, alias, normalized) VALUES (?, ?, ?)",
            )?
            .execute(params![id, alias, folded])?;
        }
        for (end, by, at) in &e.mentions {
            let Some((kind, row)) = current_row(tx, pending, records, &e.axes.0, *end)? else {
                outcome.dropped_associations += 1;
                note(
                    outcome,
                    format!(
                        "line {}: a mention names a row this file does not hold; dropped",
                        e.line
                    ),
                );
                continue;
            };
            tx.prepare_cached(
                "INSERT OR IGNORE INTO entity_mentions(entity_id, ref, declared_by, created_at_ms) \
                 VALUES (?, ?, ?, ?)",
            )?
            .execute(params![id, format!("{kind}:{row}"), declared_by(by), at])?;
        }
    }
    for r in &pending.relations {
        let resolve = |end: End| -> Result<Option<(&'static str, i64)>> {
            match end {
                End::Entity(old) => Ok(entity_ids.get(&old).map(|&id| ("entity", id))),
                other => current_row(tx, pending, records, &r.axes.0, other),
            }
        };
        let subject = resolve(r.subject)?;
        let object = resolve(r.object)?;
        let anchor = match r.anchor {
            None => Some(String::new()),
            Some(end) => resolve(end)?.map(|(k, id)| format!("{k}:{id}")),
        };
        let (Some(subject), Some(object), Some(anchor)) = (subject, object, anchor) else {
            outcome.dropped_associations += 1;
            note(
                outcome,
                format!(
                    "line {}: a relation names a row or entity this file does not hold; dropped",
                    r.line
                ),
            );
            continue;
        };
        let (agent, project, channel) = &r.axes;
        outcome.imported_relations += tx
            .prepare_cached(
                "INSERT OR IGNORE INTO relations(agent_id, project_id, channel, subject_kind, \
                 subject_id, predicate, object_kind, object_id, anchor_ref, declared_by, \
                 declared_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                agent,
                project,
                channel,
                subject.0,
                subject.1,
                normalize(&r.predicate),
                object.0,
                object.1,
                anchor,
                declared_by(&r.declared_by),
                r.declared_at_ms
            ])?;
    }
    Ok(())
}

//! `traverse`: a breadth-first walk over declared entity–entity relations from one entity,
//! bounded by hops (0–5), by the entities listed (1–100) and by the entities expanded (256).
//! Every entity, relation and mention read stays inside the caller's scope; each bound that
//! cut something is named in `bounds.omitted`.

use std::collections::{HashMap, HashSet};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use super::{Node, normalize, record_in_scope, resolve_entity};
use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::Store;
use crate::text::{check_agent, check_key};

/// The most hops a walk may take (CPersona's `TRAVERSE_MAX_HOPS`).
pub const MAX_HOPS: usize = 5;
/// The most entities a walk may list (CPersona's `TRAVERSE_MAX_LIMIT`).
pub const MAX_LIMIT: usize = 100;
/// The most entities a walk expands (CPersona's `NEIGHBOURHOOD_MAX_ENTITIES`).
pub const MAX_EXPANDED: usize = 256;
/// Mentions listed per entity, newest first.
pub const MENTIONS_PER_ENTITY: usize = 10;

/// `traverse` as the engine takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraverseRequest {
    /// The agent (required).
    pub agent_id: String,
    /// `None` = no project filter, `""` = global pool, `X` = X plus the global pool.
    pub project_id: Option<String>,
    /// `None`/`""` = no channel filter, `X` = X plus channel-less rows.
    pub channel: Option<String>,
    /// The entity's name or alias.
    pub entity: String,
    /// Hops to walk (0–5).
    pub max_hops: usize,
    /// Entities to list (1–100).
    pub limit: usize,
    /// Only mentions by memories whose `source.id` is this (CPersona's `source_id`); episodes
    /// then only with a `channel`, as recall returns them. Empty: no source filter.
    pub source_id: String,
}

/// One entity reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TraverseEntity {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Hops from the start.
    pub hops: usize,
    /// Its aliases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Records of the scope that mention it, newest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
    /// Mentions past [`MENTIONS_PER_ENTITY`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mentions_omitted: Option<usize>,
}

/// One relation between listed entities (or a listed entity and a record).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TraverseRelation {
    /// Its id (what `retract.relations` takes).
    pub id: i64,
    /// The subject's name or ref.
    pub subject: String,
    /// The predicate (normalized).
    pub predicate: String,
    /// The object's name or ref.
    pub object: String,
    /// Who declared it.
    pub declared_by: String,
    /// When, ISO-8601 UTC.
    pub declared_at: String,
    /// The record it was declared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_ref: Option<String>,
}

/// Which bounds cut the walk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TraverseBounds {
    /// `max_hops`, `limit`, `max_expanded`.
    pub omitted: Vec<&'static str>,
}

/// `traverse`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TraverseOutcome {
    /// The entity as asked.
    pub entity: String,
    /// Hops walked at most.
    pub max_hops: usize,
    /// Entities listed at most.
    pub limit: usize,
    /// Entities by hops, then most recent relation reaching them, then id.
    pub entities: Vec<TraverseEntity>,
    /// Relations among them, newest first.
    pub relations: Vec<TraverseRelation>,
    /// Entities reached but not listed (`limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entities_omitted: Option<usize>,
    /// Bounds that cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<TraverseBounds>,
    /// `no_such_entity` when the name resolves to nothing in scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// A relation row in scope.
#[derive(Clone, Debug)]
pub(crate) struct RelationRow {
    pub(crate) id: i64,
    pub(crate) subject: Node,
    pub(crate) predicate: String,
    pub(crate) object: Node,
    pub(crate) anchor_ref: String,
    pub(crate) declared_by: String,
    pub(crate) declared_at_ms: i64,
}

/// Relations in `scope` touching entity `id`, newest first.
pub(crate) fn relations_of(conn: &Connection, scope: &Scope, id: i64) -> Result<Vec<RelationRow>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(id));
    params.push(Value::Integer(id));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, subject_kind, subject_id, predicate, object_kind, object_id, anchor_ref, \
         declared_by, declared_at_ms FROM relations WHERE {pred} AND \
         ((subject_kind = 'entity' AND subject_id = ?) OR (object_kind = 'entity' AND object_id = ?)) \
         ORDER BY declared_at_ms DESC, id DESC"
    ))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, String>(4)?,
            row.get::<_, i64>(5)?,
            row.get::<_, String>(6)?,
            row.get::<_, String>(7)?,
            row.get::<_, i64>(8)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, sk, si, predicate, ok, oi, anchor_ref, declared_by, declared_at_ms) = row?;
        if let (Some(subject), Some(object)) = (Node::from_row(&sk, si), Node::from_row(&ok, oi)) {
            out.push(RelationRow {
                id,
                subject,
                predicate,
                object,
                anchor_ref,
                declared_by,
                declared_at_ms,
            });
        }
    }
    Ok(out)
}

/// The name of entity `id` if it lies in `scope`.
pub(crate) fn entity_name(conn: &Connection, scope: &Scope, id: i64) -> Result<Option<String>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(id));
    Ok(conn
        .prepare_cached(&format!(
            "SELECT name FROM entities WHERE {pred} AND id = ?"
        ))?
        .query_row(rusqlite::params_from_iter(params), |row| row.get(0))
        .optional()?)
}

/// Which mentioning records a caller may list beyond its scope: those of one source.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MentionSource<'a> {
    /// Memories only where `source.id` is this; `None`, any.
    pub(crate) source_id: Option<&'a str>,
    /// Whether episodes are listed (CPersona lists them under a source filter only when the
    /// call names a channel, where recall would return them).
    pub(crate) episodes: bool,
}

impl MentionSource<'_> {
    /// No filter: every record of the scope.
    pub(crate) const ANY: MentionSource<'static> = MentionSource {
        source_id: None,
        episodes: true,
    };
}

/// Refs of `scope` (and of `source`) that mention entity `id`, newest mention first.
pub(crate) fn mentions_of(
    conn: &Connection,
    scope: &Scope,
    source: MentionSource<'_>,
    id: i64,
) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT ref FROM entity_mentions WHERE entity_id = ? ORDER BY created_at_ms DESC, ref",
    )?;
    let refs = stmt
        .query_map([id], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut out = Vec::new();
    for text in refs {
        if let Ok(r) = text.parse()
            && record_in_scope(conn, scope, r)?
            && of_source(conn, source, r)?
        {
            out.push(text);
        }
    }
    Ok(out)
}

/// Whether record `r` passes `source` (a memory's `source.id`, read as recall's filter
/// reads it: text, or an integer as its digits).
fn of_source(conn: &Connection, source: MentionSource<'_>, r: Ref) -> Result<bool> {
    match (r.kind, source.source_id) {
        (RefKind::Ep, _) => Ok(source.episodes),
        (RefKind::Mem, None) => Ok(true),
        (RefKind::Mem, Some(wanted)) => {
            let id: Option<String> = conn
                .prepare_cached(
                    "SELECT CAST(json_extract(CASE WHEN json_valid(source) THEN source END, \
                     '$.id') AS TEXT) FROM memories WHERE id = ?",
                )?
                .query_row([r.id], |row| row.get(0))
                .optional()?
                .flatten();
            Ok(crate::source::source_id_matches(id.as_deref(), wanted))
        }
    }
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// `traverse`: resolves `entity` in the caller's scope, walks entity–entity relations
/// breadth first up to `max_hops`, and lists up to `limit` entities with their aliases
/// and mentions plus the relations among them.
pub(crate) fn traverse(
    store: &Store,
    config: &EngineConfig,
    req: &TraverseRequest,
) -> Result<TraverseOutcome> {
    crate::associations::associations_on(config)?;
    check_agent(&req.agent_id)?;
    if let Some(project) = &req.project_id {
        check_key("project_id", project)?;
    }
    if let Some(channel) = &req.channel {
        check_key("channel", channel)?;
    }
    if req.max_hops > MAX_HOPS {
        return Err(Error::invalid("max_hops", format!("at most {MAX_HOPS}")));
    }
    if req.limit == 0 || req.limit > MAX_LIMIT {
        return Err(Error::invalid(
            "limit",
            format!("between 1 and {MAX_LIMIT}"),
        ));
    }
    let scope = Scope::read(
        Some(&req.agent_id),
        req.project_id.as_deref(),
        req.channel.as_deref(),
    );
    let source = MentionSource {
        source_id: (!req.source_id.is_empty()).then_some(req.source_id.as_str()),
        episodes: req.source_id.is_empty() || req.channel.as_deref().is_some_and(|c| !c.is_empty()),
    };
    let mut outcome = TraverseOutcome {
        entity: req.entity.clone(),
        max_hops: req.max_hops,
        limit: req.limit,
        entities: Vec::new(),
        relations: Vec::new(),
        entities_omitted: None,
        bounds: None,
        reason: None,
    };
    store.read(|conn| {
        let Some((start, start_name)) = resolve_entity(conn, &scope, &normalize(&req.entity))?
        else {
            outcome.reason = Some("no_such_entity");
            return Ok(());
        };
        let mut omitted = Vec::new();
        // (id, name, hops, newest relation reaching it)
        let mut reached: Vec<(i64, String, usize, i64)> = vec![(start, start_name, 0, i64::MAX)];
        let mut seen: HashSet<i64> = HashSet::from([start]);
        let mut relations: HashMap<i64, RelationRow> = HashMap::new();
        let mut frontier = vec![start];
        let mut hop = 0;
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for id in &frontier {
                for rel in relations_of(conn, &scope, *id)? {
                    let other = if rel.subject == Node::Entity(*id) {
                        rel.object
                    } else {
                        rel.subject
                    };
                    match other {
                        Node::Record(r) => {
                            if record_in_scope(conn, &scope, r)? {
                                relations.entry(rel.id).or_insert(rel);
                            }
                        }
                        Node::Entity(other) if seen.contains(&other) => {
                            relations.entry(rel.id).or_insert(rel);
                        }
                        Node::Entity(other) => {
                            if hop >= req.max_hops {
                                if !omitted.contains(&"max_hops")
                                    && entity_name(conn, &scope, other)?.is_some()
                                {
                                    omitted.push("max_hops");
                                }
                                continue;
                            }
                            if seen.len() >= MAX_EXPANDED {
                                if !omitted.contains(&"max_expanded") {
                                    omitted.push("max_expanded");
                                }
                                continue;
                            }
                            let Some(name) = entity_name(conn, &scope, other)? else {
                                continue;
                            };
                            seen.insert(other);
                            reached.push((other, name, hop + 1, rel.declared_at_ms));
                            relations.entry(rel.id).or_insert(rel);
                            next.push(other);
                        }
                    }
                }
            }
            frontier = next;
            hop += 1;
        }
        reached.sort_by(|a, b| a.2.cmp(&b.2).then(b.3.cmp(&a.3)).then(a.0.cmp(&b.0)));
        if reached.len() > req.limit {
            outcome.entities_omitted = Some(reached.len() - req.limit);
            omitted.push("limit");
            reached.truncate(req.limit);
        }
        let listed: HashMap<i64, String> = reached
            .iter()
            .map(|(id, name, ..)| (*id, name.clone()))
            .collect();
        for (id, name, hops, _) in reached {
            let aliases = conn
                .prepare_cached(
                    "SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY normalized",
                )?
                .query_map([id], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut mentions = mentions_of(conn, &scope, source, id)?;
            let extra = mentions.len().saturating_sub(MENTIONS_PER_ENTITY);
            mentions.truncate(MENTIONS_PER_ENTITY);
            outcome.entities.push(TraverseEntity {
                id,
                name,
                hops,
                aliases,
                mentions,
                mentions_omitted: (extra > 0).then_some(extra),
            });
        }
        let label = |node: Node| match node {
            Node::Entity(id) => listed.get(&id).cloned(),
            Node::Record(r) => Some(r.to_string()),
        };
        let mut rows: Vec<RelationRow> = relations.into_values().collect();
        rows.sort_by(|a, b| {
            b.declared_at_ms
                .cmp(&a.declared_at_ms)
                .then(b.id.cmp(&a.id))
        });
        for rel in rows {
            let (Some(subject), Some(object)) = (label(rel.subject), label(rel.object)) else {
                continue;
            };
            outcome.relations.push(TraverseRelation {
                id: rel.id,
                subject,
                predicate: rel.predicate,
                object,
                declared_by: rel.declared_by,
                declared_at: iso(rel.declared_at_ms),
                anchor_ref: (!rel.anchor_ref.is_empty()).then_some(rel.anchor_ref),
            });
        }
        if !omitted.is_empty() {
            outcome.bounds = Some(TraverseBounds { omitted });
        }
        Ok(())
    })?;
    Ok(outcome)
}

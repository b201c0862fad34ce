//! Declared associations: entities (a name plus aliases), mentions of an entity by a record,
//! and subject–predicate–object relations between entities and records, as CPersona 2.6's
//! `declare_associations` and `traverse` keep them. Matching is exact after one
//! normalisation (NFKC, lower case, whitespace collapsed); nothing here guesses, embeds or
//! extracts entities from text.
//!
//! Every read and write stays inside the caller's [`Scope`]: an entity, mention or relation of
//! another agent is never resolved, listed or retracted. The feature is off by default
//! (`EngineConfig::associations_enabled`); when off every entry point refuses with a reason
//! that names the setting, and recall never reads these tables.

pub mod traverse;

pub use traverse::{
    TraverseBounds, TraverseEntity, TraverseOutcome, TraverseRelation, TraverseRequest,
};

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Transaction};
use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::Store;
use crate::store::pauses::NoPersist;
use crate::text::{check_agent, check_key};

/// Items (entities plus relations) one `declare_associations` call may carry (CPersona 2.6).
pub const MAX_ITEMS: usize = 64;
/// Aliases one entity may carry per call (CPersona 2.6).
pub const MAX_ALIASES: usize = 32;
/// Characters of one name, alias, predicate or relation end (CPersona 2.6).
pub const MAX_TEXT_CHARS: usize = 256;
/// Retractions one call may carry (relations plus mentions).
pub const MAX_RETRACTIONS: usize = 128;
/// The `declared_by` this server writes.
const DECLARED_BY: &str = "declare_associations";

/// What a refused call says, naming the setting that enables the feature.
pub const DISABLED_MESSAGE: &str = "associations are off on this server; set \
CPERSONA_ASSOCIATIONS_ENABLED=true to declare, traverse and cue recall with them";

/// Normalises a name, alias or predicate for exact matching: NFKC, lower case, runs of
/// whitespace collapsed to one space, trimmed.
pub fn normalize(text: &str) -> String {
    let folded: String = text.nfkc().flat_map(char::to_lowercase).collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An entity to declare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityInput {
    /// The name.
    pub name: String,
    /// Other names.
    pub aliases: Vec<String>,
}

/// A relation to declare: each end an entity name (or alias) or a `mem:<id>` / `ep:<id>` ref.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelationInput {
    /// The subject.
    pub subject: String,
    /// The predicate.
    pub predicate: String,
    /// The object.
    pub object: String,
}

/// `declare_associations` as the engine takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeclareRequest {
    /// The agent (required).
    pub agent_id: String,
    /// The project the declarations live in (`""` = global pool).
    pub project_id: String,
    /// The channel they live in (`""` = channel-less).
    pub channel: String,
    /// Entities to declare.
    pub entities: Vec<EntityInput>,
    /// Relations to declare.
    pub relations: Vec<RelationInput>,
    /// `mem:<id>` / `ep:<id>` each declared entity is mentioned by; `""` for none.
    pub anchor_ref: String,
    /// Relation ids to retract.
    pub retract_relations: Vec<i64>,
    /// `(entity id, ref)` mentions to retract.
    pub retract_mentions: Vec<(i64, String)>,
    /// Pause partition.
    pub session_key: String,
}

/// One declared (or found) entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DeclaredEntity {
    /// Its id.
    pub id: i64,
    /// Its name as first declared.
    pub name: String,
    /// True when this call created it.
    pub created: bool,
}

/// An item the call did not apply, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Dropped {
    /// The item as given (an entity name, alias or `subject predicate object`).
    pub item: String,
    /// Why (`empty`, `alias_taken`, `unknown_ref`, `self_relation`).
    pub reason: &'static str,
}

/// What a retraction removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Retracted {
    /// Relations removed.
    pub relations: usize,
    /// Mentions removed.
    pub mentions: usize,
}

/// `declare_associations`' response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DeclareOutcome {
    /// True.
    pub ok: bool,
    /// `declared`, or `skipped` when nothing was applied.
    pub result: &'static str,
    /// Entities declared or found, in request order.
    pub entities: Vec<DeclaredEntity>,
    /// Mentions added.
    pub mentions: usize,
    /// Relation ids declared (new or already present).
    pub relations: Vec<i64>,
    /// Items not applied.
    pub dropped: Vec<Dropped>,
    /// What `retract` removed, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retracted: Option<Retracted>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// One end of a relation, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Entity(i64),
    Record(Ref),
}

impl Node {
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Node::Entity(_) => "entity",
            Node::Record(r) => r.kind.prefix(),
        }
    }

    pub(crate) fn id(self) -> i64 {
        match self {
            Node::Entity(id) => id,
            Node::Record(r) => r.id,
        }
    }

    pub(crate) fn from_row(kind: &str, id: i64) -> Option<Node> {
        match kind {
            "entity" => Some(Node::Entity(id)),
            "mem" => Some(Node::Record(Ref::mem(id))),
            "ep" => Some(Node::Record(Ref::ep(id))),
            _ => None,
        }
    }
}

fn check_text(field: &'static str, text: &str) -> Result<()> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::invalid(
            field,
            format!("longer than {MAX_TEXT_CHARS} characters"),
        ));
    }
    Ok(())
}

/// Is `r` a row of `scope`?
pub(crate) fn record_in_scope(conn: &rusqlite::Connection, scope: &Scope, r: Ref) -> Result<bool> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(r.id));
    let table = match r.kind {
        RefKind::Mem => "memories",
        RefKind::Ep => "episodes",
    };
    let found = conn
        .prepare_cached(&format!("SELECT 1 FROM {table} WHERE {pred} AND id = ?"))?
        .query_row(rusqlite::params_from_iter(params), |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}

/// The entity `normalized` (a name, else an alias) resolves to within `scope`: a name match
/// first, then the lowest id, so one spelling always resolves to one entity.
pub(crate) fn resolve_entity(
    conn: &rusqlite::Connection,
    scope: &Scope,
    normalized: &str,
) -> Result<Option<(i64, String)>> {
    let (pred, scope_params) = scope.predicate("e");
    // Positional parameters number in text order: the select list's comes first.
    let mut params = vec![Value::Text(normalized.to_owned())];
    params.extend(scope_params);
    params.push(Value::Text(normalized.to_owned()));
    params.push(Value::Text(normalized.to_owned()));
    let found = conn
        .prepare_cached(&format!(
            "SELECT e.id, e.name, e.normalized = ? AS by_name FROM entities e WHERE {pred} AND \
             (e.normalized = ? OR EXISTS (SELECT 1 FROM entity_aliases a \
              WHERE a.entity_id = e.id AND a.normalized = ?)) \
             ORDER BY by_name DESC, e.id ASC LIMIT 1"
        ))?
        .query_row(rusqlite::params_from_iter(params), |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .optional()?;
    Ok(found)
}

/// Refuses when the feature is off.
pub(crate) fn associations_on(config: &EngineConfig) -> Result<()> {
    if config.associations_enabled {
        Ok(())
    } else {
        Err(Error::invalid("associations", DISABLED_MESSAGE))
    }
}

/// `declare_associations`: declares entities (with aliases), mentions of them by
/// `anchor_ref`, and relations, then applies `retract`, in one transaction. A bound
/// broken or an `anchor_ref` outside the caller's scope refuses the whole call (nothing
/// written); an item that cannot be applied is listed under `dropped`.
pub(crate) fn declare_associations(
    store: &Store,
    config: &EngineConfig,
    req: &DeclareRequest,
) -> Result<DeclareOutcome> {
    associations_on(config)?;
    check_agent(&req.agent_id)?;
    check_key("project_id", &req.project_id)?;
    check_key("channel", &req.channel)?;
    if req.entities.len() + req.relations.len() > MAX_ITEMS {
        return Err(Error::invalid(
            "associations",
            format!("at most {MAX_ITEMS} entities and relations per call"),
        ));
    }
    if req.retract_relations.len() + req.retract_mentions.len() > MAX_RETRACTIONS {
        return Err(Error::invalid(
            "retract",
            format!("at most {MAX_RETRACTIONS} retractions per call"),
        ));
    }
    for entity in &req.entities {
        check_text("associations.entities.name", &entity.name)?;
        if entity.aliases.len() > MAX_ALIASES {
            return Err(Error::invalid(
                "associations.entities.aliases",
                format!("at most {MAX_ALIASES} aliases per entity"),
            ));
        }
        for alias in &entity.aliases {
            check_text("associations.entities.aliases", alias)?;
        }
    }
    for rel in &req.relations {
        check_text("associations.relations.subject", &rel.subject)?;
        check_text("associations.relations.predicate", &rel.predicate)?;
        check_text("associations.relations.object", &rel.object)?;
    }
    let anchor = if req.anchor_ref.is_empty() {
        None
    } else {
        Some(
            req.anchor_ref
                .parse::<Ref>()
                .map_err(|err| Error::invalid("anchor_ref", err.to_string()))?,
        )
    };
    let mut retract_mentions = Vec::with_capacity(req.retract_mentions.len());
    for (entity, text) in &req.retract_mentions {
        let r = text
            .parse::<Ref>()
            .map_err(|err| Error::invalid("retract.mentions.ref", err.to_string()))?;
        retract_mentions.push((*entity, r));
    }
    if let Some(no_persist) = store.no_persist("declare_associations", &req.session_key) {
        return Ok(DeclareOutcome {
            ok: true,
            result: "skipped",
            entities: Vec::new(),
            mentions: 0,
            relations: Vec::new(),
            dropped: Vec::new(),
            retracted: None,
            no_persist: Some(no_persist),
        });
    }
    let visible = Scope::write_visible(&req.agent_id, &req.project_id, &req.channel);
    let now = chrono::Utc::now().timestamp_millis();
    store.write(|tx| {
        if let Some(anchor) = anchor
            && !record_in_scope(tx, &visible, anchor)?
        {
            return Err(Error::invalid(
                "anchor_ref",
                format!("{anchor} is not a record of this agent in this scope"),
            ));
        }
        let mut w = Writer {
            tx,
            req,
            visible: &visible,
            now,
            dropped: Vec::new(),
        };
        let mut entities = Vec::new();
        let mut mentions = 0;
        for entity in &req.entities {
            let Some(declared) = w.entity(entity)? else {
                continue;
            };
            if let Some(anchor) = anchor {
                mentions += w.mention(declared.id, anchor)?;
            }
            entities.push(declared);
        }
        let mut relations = Vec::new();
        for rel in &req.relations {
            if let Some(id) = w.relation(rel, anchor)? {
                relations.push(id);
            }
        }
        let retracted = if req.retract_relations.is_empty() && retract_mentions.is_empty() {
            None
        } else {
            Some(w.retract(&retract_mentions)?)
        };
        let applied = !entities.is_empty()
            || !relations.is_empty()
            || retracted
                .as_ref()
                .is_some_and(|r| r.relations + r.mentions > 0);
        Ok(DeclareOutcome {
            ok: true,
            result: if applied { "declared" } else { "skipped" },
            entities,
            mentions,
            relations,
            dropped: w.dropped,
            retracted,
            no_persist: None,
        })
    })
}

/// The write half of one declare call.
struct Writer<'a, 'c> {
    tx: &'a Transaction<'c>,
    req: &'a DeclareRequest,
    visible: &'a Scope,
    now: i64,
    dropped: Vec<Dropped>,
}

impl Writer<'_, '_> {
    fn drop_item(&mut self, item: &str, reason: &'static str) {
        self.dropped.push(Dropped {
            item: item.chars().take(MAX_TEXT_CHARS).collect(),
            reason,
        });
    }

    /// Finds the entity in the call's exact (agent, project, channel) by name or alias, or
    /// creates it; adds the aliases no other entity of the visible scope holds.
    fn entity(&mut self, input: &EntityInput) -> Result<Option<DeclaredEntity>> {
        let normalized = normalize(&input.name);
        if normalized.is_empty() {
            self.drop_item(&input.name, "empty");
            return Ok(None);
        }
        let found = resolve_entity(self.tx, self.visible, &normalized)?;
        let declared = match found {
            Some((id, name)) => DeclaredEntity {
                id,
                name,
                created: false,
            },
            None => {
                self.tx.execute(
                    "INSERT INTO entities(agent_id, project_id, channel, name, normalized, \
                     declared_by, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    rusqlite::params![
                        self.req.agent_id,
                        self.req.project_id,
                        self.req.channel,
                        input.name.trim(),
                        normalized,
                        DECLARED_BY,
                        self.now
                    ],
                )?;
                DeclaredEntity {
                    id: self.tx.last_insert_rowid(),
                    name: input.name.trim().to_owned(),
                    created: true,
                }
            }
        };
        for alias in &input.aliases {
            let norm = normalize(alias);
            if norm.is_empty() {
                self.drop_item(alias, "empty");
                continue;
            }
            if norm == normalized {
                continue;
            }
            match resolve_entity(self.tx, self.visible, &norm)? {
                Some((owner, _)) if owner != declared.id => self.drop_item(alias, "alias_taken"),
                _ => {
                    self.tx.execute(
                        "INSERT OR IGNORE INTO entity_aliases(entity_id, alias, normalized) \
                         VALUES (?1, ?2, ?3)",
                        rusqlite::params![declared.id, alias.trim(), norm],
                    )?;
                }
            }
        }
        Ok(Some(declared))
    }

    fn mention(&mut self, entity: i64, r: Ref) -> Result<usize> {
        Ok(self.tx.execute(
            "INSERT OR IGNORE INTO entity_mentions(entity_id, ref, declared_by, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![entity, r.to_string(), DECLARED_BY, self.now],
        )?)
    }

    /// A relation end: a record ref of the visible scope, or an entity name (declared here
    /// when new).
    fn node(&mut self, text: &str) -> Result<Option<Node>> {
        if text.starts_with("mem:") || text.starts_with("ep:") {
            return match text.parse::<Ref>() {
                Ok(r) if record_in_scope(self.tx, self.visible, r)? => Ok(Some(Node::Record(r))),
                _ => Ok(None),
            };
        }
        let entity = self.entity(&EntityInput {
            name: text.to_owned(),
            aliases: Vec::new(),
        })?;
        Ok(entity.map(|e| Node::Entity(e.id)))
    }

    fn relation(&mut self, rel: &RelationInput, anchor: Option<Ref>) -> Result<Option<i64>> {
        let label = format!("{} {} {}", rel.subject, rel.predicate, rel.object);
        let predicate = normalize(&rel.predicate);
        if predicate.is_empty() {
            self.drop_item(&label, "empty");
            return Ok(None);
        }
        let (Some(subject), Some(object)) = (self.node(&rel.subject)?, self.node(&rel.object)?)
        else {
            self.drop_item(&label, "unknown_ref");
            return Ok(None);
        };
        if subject == object {
            self.drop_item(&label, "self_relation");
            return Ok(None);
        }
        let anchor_text = anchor.map(|r| r.to_string()).unwrap_or_default();
        self.tx.execute(
            "INSERT OR IGNORE INTO relations(agent_id, project_id, channel, subject_kind, \
             subject_id, predicate, object_kind, object_id, anchor_ref, declared_by, \
             declared_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            rusqlite::params![
                self.req.agent_id,
                self.req.project_id,
                self.req.channel,
                subject.kind(),
                subject.id(),
                predicate,
                object.kind(),
                object.id(),
                anchor_text,
                DECLARED_BY,
                self.now
            ],
        )?;
        let id: i64 = self.tx.query_row(
            "SELECT id FROM relations WHERE agent_id = ?1 AND project_id = ?2 AND channel = ?3 \
             AND subject_kind = ?4 AND subject_id = ?5 AND predicate = ?6 AND object_kind = ?7 \
             AND object_id = ?8 AND anchor_ref = ?9",
            rusqlite::params![
                self.req.agent_id,
                self.req.project_id,
                self.req.channel,
                subject.kind(),
                subject.id(),
                predicate,
                object.kind(),
                object.id(),
                anchor_text
            ],
            |row| row.get(0),
        )?;
        Ok(Some(id))
    }

    /// Removes the relations and mentions named, each only when it lies in the visible
    /// scope (another agent's id removes nothing).
    fn retract(&mut self, mentions: &[(i64, Ref)]) -> Result<Retracted> {
        let mut out = Retracted::default();
        for id in &self.req.retract_relations {
            let (pred, mut params) = self.visible.predicate("");
            params.push(Value::Integer(*id));
            out.relations += self.tx.execute(
                &format!("DELETE FROM relations WHERE {pred} AND id = ?"),
                rusqlite::params_from_iter(params),
            )?;
        }
        for (entity, r) in mentions {
            let (pred, mut params) = self.visible.predicate("");
            params.push(Value::Integer(*entity));
            params.push(Value::Text(r.to_string()));
            out.mentions += self.tx.execute(
                &format!(
                    "DELETE FROM entity_mentions WHERE entity_id IN \
                     (SELECT id FROM entities WHERE {pred} AND id = ?) AND ref = ?"
                ),
                rusqlite::params_from_iter(params),
            )?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

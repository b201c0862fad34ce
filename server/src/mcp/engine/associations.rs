//! The engine backend's association tools: `declare_associations` and `traverse` wire
//! arguments become the engine's requests, and `store`'s `associations` become a declaration
//! anchored to the stored row. No logic beyond the mapping.

use cpersona_engine::{DeclareRequest, Engine, EntityInput, RelationInput, TraverseRequest};

use crate::mcp::backend::ToolResult;
use crate::mcp::engine::convert::body;
use crate::mcp::wire;

fn request(
    agent_id: String,
    project_id: String,
    channel: String,
    associations: wire::Associations,
    anchor_ref: String,
    session_key: String,
) -> DeclareRequest {
    DeclareRequest {
        agent_id,
        project_id,
        channel,
        entities: associations
            .entities
            .into_iter()
            .map(|e| EntityInput {
                name: e.name,
                aliases: e.aliases,
            })
            .collect(),
        relations: associations
            .relations
            .into_iter()
            .map(|r| RelationInput {
                subject: r.subject,
                predicate: r.predicate,
                object: r.object,
            })
            .collect(),
        anchor_ref,
        retract_relations: Vec::new(),
        retract_mentions: Vec::new(),
        session_key,
    }
}

/// `declare_associations`.
pub(crate) fn declare(engine: &Engine, args: wire::DeclareAssociationsArgs) -> ToolResult {
    let mut req = request(
        args.agent_id,
        args.project_id,
        args.channel,
        args.associations,
        args.anchor_ref,
        args.session_key,
    );
    if let Some(retract) = args.retract {
        req.retract_relations = retract.relations;
        req.retract_mentions = retract
            .mentions
            .into_iter()
            .map(|m| (m.entity, m.reference))
            .collect();
    }
    body(engine.declare_associations(&req))
}

/// `traverse`.
pub(crate) fn traverse(engine: &Engine, args: wire::TraverseArgs) -> ToolResult {
    let req = TraverseRequest {
        agent_id: args.agent_id,
        project_id: args.project_id,
        channel: (!args.channel.is_empty()).then_some(args.channel),
        entity: args.entity,
        max_hops: args.max_hops as usize,
        limit: args.limit as usize,
        source_id: args.source_id,
    };
    body(engine.traverse(&req))
}

/// Declares `store`'s associations anchored to the stored row and adds CPersona's
/// `associations: {entities, mentions, relations, dropped}` to the store body. The memory is
/// stored whatever becomes of its associations: when they cannot be declared (the feature
/// switched off, a bound broken) the body says so under `dropped` and the store stands, so
/// an agent never retries a store that landed.
pub(crate) fn after_store(
    engine: &Engine,
    id: i64,
    scope: (String, String, String, String),
    associations: wire::Associations,
) -> wire::StoreAssociations {
    let (agent_id, project_id, channel, session_key) = scope;
    let req = request(
        agent_id,
        project_id,
        channel,
        associations,
        format!("mem:{id}"),
        session_key,
    );
    match engine.declare_associations(&req) {
        Ok(outcome) => wire::StoreAssociations {
            entities: outcome.entities.len(),
            mentions: outcome.mentions,
            relations: outcome.relations.len(),
            dropped: outcome
                .dropped
                .into_iter()
                .map(|d| wire::DroppedItem {
                    item: d.item,
                    reason: d.reason.to_owned(),
                })
                .collect(),
        },
        Err(err) => wire::StoreAssociations {
            entities: 0,
            mentions: 0,
            relations: 0,
            dropped: vec![wire::DroppedItem {
                item: "associations".to_owned(),
                reason: err.to_string(),
            }],
        },
    }
}

//! Every tool's `outputSchema`: the JSON Schema of the type that serialises its successful
//! body (schemars, serialize contract), so the schema a client validates `structuredContent`
//! against and the bytes it receives come from one type. Engine outcomes derive it in the
//! engine; what the server composes itself lives in `wire/answers.rs`. A refusal
//! (`{ok: false, error}`) is sent with `isError: true`, which MCP clients do not validate
//! against the output schema, so it is not part of it.

use std::sync::Arc;

use cpersona_engine as engine;
use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::mcp::wire;

/// What the ACL guard adds to every answer in ACL mode (`McpServer::call_tool`).
#[derive(JsonSchema)]
#[allow(dead_code)] // only its schema is used; the guard inserts the field itself
struct GuardAdded {
    /// The agent the call ran as, when the grant resolved it (ACL mode).
    resolved_agent_id: String,
}

/// What the operating context's gate adds to a gated tool's answer (`mcp/context_gate.rs`).
#[derive(JsonSchema)]
#[allow(dead_code)] // only its schema is used; the gate inserts the fields itself
struct GateAdded {
    /// Why the project id given is questionable (not in the registry, `@auto` unmapped).
    operating_context_warning: String,
    /// What `@auto` resolved to.
    resolved_project_id: String,
}

/// Sets the output schema of every tool in `router` that has one.
pub fn apply<S>(router: &mut ToolRouter<S>) {
    for (name, route) in router.map.iter_mut() {
        if let Some(schema) = schema(name) {
            route.attr.output_schema = Some(schema);
        }
    }
}

/// The output schema of `tool`, or `None` for a name this server does not serve.
pub fn schema(tool: &str) -> Option<Arc<JsonObject>> {
    let schema = match tool {
        "store" => of::<wire::StoreBody<'static>>(),
        "update_memory" => of::<engine::UpdateMemoryOutcome>(),
        "delete_memory" => of::<engine::DeleteMemoryOutcome>(),
        "lock_memory" => of::<engine::LockMemoryOutcome>(),
        "unlock_memory" => of::<engine::UnlockMemoryOutcome>(),
        "list_memories" => of::<engine::ListMemoriesOutcome>(),
        "get_contents" => of::<engine::ContentsResponse>(),
        "recall" => recall(),
        "recall_with_context" => recall_with_context(),
        "reconstruct" => of::<engine::ReconstructBody<'static>>(),
        "archive_episode" => of::<engine::ArchiveEpisodeOutcome>(),
        "list_episodes" => of::<engine::ListEpisodesOutcome>(),
        "delete_episode" => of::<engine::DeleteEpisodeOutcome>(),
        "get_profile" => of::<engine::GetProfileOutcome>(),
        "update_profile" => of::<engine::UpdateProfileOutcome>(),
        "delete_agent_data" => of::<engine::DeleteAgentDataOutcome>(),
        "export_memories" => of::<engine::ExportOutcome>(),
        "import_memories" => of::<engine::ImportOutcome>(),
        "merge_memories" => of::<engine::MergeOutcome>(),
        "calibrate_threshold" => of::<wire::CalibrateAnswer>(),
        "set_recall_precision" => of::<wire::SetPrecisionAnswer>(),
        "get_recall_precision" => of::<wire::PrecisionAnswer>(),
        "check_health" => of::<engine::HealthReport>(),
        "get_queue_status" => of::<engine::QueueStatus>(),
        "get_session_findings" => of::<wire::FindingsAnswer>(),
        "deep_check" => of::<engine::DeepOutcome>(),
        "migrate_channel_axis" => of::<engine::ChannelAxisOutcome>(),
        "get_operating_context" => of::<crate::operating::ContextAnswer>(),
        "check_update" => of::<wire::UpdateAnswer>(),
        "pause_persistence" => of::<engine::PauseOutcome>(),
        "resume_persistence" => of::<engine::ResumeOutcome>(),
        "persistence_status" => of::<engine::PersistenceStatus>(),
        "declare_associations" => of::<engine::DeclareOutcome>(),
        "traverse" => of::<engine::TraverseOutcome>(),
        _ => return None,
    };
    let schema = with_properties_of::<GuardAdded>(schema);
    Some(Arc::new(
        if crate::operating::GATED.iter().any(|(t, _)| *t == tool) {
            with_properties_of::<GateAdded>(schema)
        } else {
            schema
        },
    ))
}

fn of<T: JsonSchema + 'static>() -> JsonObject {
    (*schema_for_output::<T>()).clone()
}

/// `schema` with the properties of `T` added as optional ones.
fn with_properties_of<T: JsonSchema + 'static>(mut schema: JsonObject) -> JsonObject {
    let mut added = of::<T>();
    merge_defs(&mut schema, &mut added);
    if let (Some(Value::Object(properties)), Some(Value::Object(new))) =
        (schema.get_mut("properties"), added.get("properties"))
    {
        for (name, property) in new {
            properties
                .entry(name.clone())
                .or_insert_with(|| property.clone());
        }
    }
    schema
}

/// Moves `other`'s `$defs` into `schema`'s, so `other`'s references resolve at the root.
fn merge_defs(schema: &mut JsonObject, other: &mut JsonObject) {
    let Some(Value::Object(other_defs)) = other.remove("$defs") else {
        return;
    };
    let defs = schema
        .entry("$defs")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(defs) = defs {
        for (name, def) in other_defs {
            defs.entry(name).or_insert(def);
        }
    }
}

/// `recall`'s schema, whose `messages` also hold the agent's profile row
/// (`engine::recall::ProfileRow`).
fn recall() -> JsonObject {
    messages_may_hold::<engine::recall::ProfileRow>(of::<wire::RecallBody<'static>>())
}

/// `recall`'s schema, whose `messages` also hold the caller's conversation turns
/// (`wire::ConversationTurn`), plus `context_filter_only`.
fn recall_with_context() -> JsonObject {
    messages_may_hold::<wire::ConversationTurn>(with_properties_of::<WithContextAdded>(recall()))
}

/// `schema` with its `messages` items widened to also admit a `T`.
fn messages_may_hold<T: JsonSchema + 'static>(mut schema: JsonObject) -> JsonObject {
    let mut other = of::<T>();
    merge_defs(&mut schema, &mut other);
    other.remove("$schema");
    if let Some(items) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("messages"))
        .and_then(|m| m.get_mut("items"))
    {
        let before = items.take();
        *items = json!({"anyOf": [before, Value::Object(other)]});
    }
    schema
}

/// What `recall_with_context` adds to a recall body.
#[derive(JsonSchema)]
#[allow(dead_code)] // only its schema is used; `recall_with_context` inserts the field
struct WithContextAdded {
    /// The roles that filtered the recall but are not shown.
    context_filter_only: wire::ContextFilterOnly,
}

#[cfg(test)]
mod tests;

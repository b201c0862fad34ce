//! Every tool's `outputSchema`: the JSON Schema of the type that serialises its successful
//! body (schemars, serialize contract), so the schema a client validates `structuredContent`
//! against and the bytes it receives come from one type. Engine outcomes derive it in the
//! engine; what the server composes itself lives in `wire/answers.rs`. A refusal
//! (`{ok: false, error}`) is sent with `isError: true`, which MCP clients do not validate
//! against the output schema, so it is not part of it.

use std::sync::Arc;

use cpersona_engine as engine;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
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

/// The output schema of `T` in JSON Schema draft-07 (serialize contract, root title and
/// description dropped as rmcp drops them). Draft-07, not 2020-12: a client that validates
/// every `structuredContent` checks the schema against its dialect's metaschema each time
/// (the Python `mcp` SDK calls `jsonschema.validate`), and the 2020-12 metaschema's dynamic
/// references made that check cost 86 ms per recall there against 1.2 ms for draft-07; the
/// schemas use nothing draft-07 lacks (`scale/RESULTS.md`, issue 16).
fn of<T: JsonSchema + 'static>() -> JsonObject {
    let generator = SchemaSettings::draft07().for_serialize().into_generator();
    let Value::Object(mut schema) = generator.into_root_schema_for::<T>().to_value() else {
        unreachable!("the root schema of a JsonSchema type is an object")
    };
    schema.remove("title");
    schema.remove("description");
    let mut value = Value::Object(schema);
    cheapen(&mut value);
    match value {
        Value::Object(schema) => schema,
        _ => unreachable!("cheapen keeps an object an object"),
    }
}

/// Rewrites `schema` into an equivalent one that costs a validating client less per answer
/// (the Python `mcp` SDK runs every `structuredContent` through `jsonschema`, whose cost is
/// the number of subschemas it descends): a `oneOf`/`anyOf` whose branches each name one
/// value (`const`, a one-word `enum`: schemars writes a documented enum that way, and `oneOf`
/// must try every branch) becomes one `enum`, the branches' descriptions joined; and an
/// `allOf` holding a lone `$ref` (draft-07's way to keep a description beside a reference)
/// becomes the `$ref` itself, its siblings then annotations draft-07 ignores. What validates
/// is unchanged.
fn cheapen(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for value in object.values_mut() {
                cheapen(value);
            }
            for key in ["oneOf", "anyOf"] {
                if let Some(words) = object.get(key).and_then(one_value_branches) {
                    let described: Vec<String> = object[key]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|branch| {
                            let word = branch.get("const").or_else(|| branch["enum"].get(0))?;
                            let about = branch.get("description")?.as_str()?;
                            Some(format!("{word}: {about}"))
                        })
                        .collect();
                    object.remove(key);
                    object.insert("enum".to_owned(), Value::Array(words));
                    if !described.is_empty() && !object.contains_key("description") {
                        object.insert("description".to_owned(), json!(described.join("; ")));
                    }
                }
            }
            let lone_ref = match object.get("allOf") {
                Some(Value::Array(all)) if all.len() == 1 => all[0]
                    .as_object()
                    .filter(|only| only.len() == 1)
                    .and_then(|only| only.get("$ref"))
                    .cloned(),
                _ => None,
            };
            if let Some(reference) = lone_ref {
                object.remove("allOf");
                object.insert("$ref".to_owned(), reference);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(cheapen),
        _ => {}
    }
}

/// The values of `branches` when each branch names exactly one (`const`, or an `enum` of one)
/// and says nothing else but its type and description; `None` otherwise.
fn one_value_branches(branches: &Value) -> Option<Vec<Value>> {
    let branches = branches.as_array()?;
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(|branch| {
            let object = branch.as_object()?;
            let extra = object
                .keys()
                .any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description"));
            if extra {
                return None;
            }
            match (object.get("const"), object.get("enum")) {
                (Some(word), None) => Some(word.clone()),
                (None, Some(Value::Array(words))) if words.len() == 1 => Some(words[0].clone()),
                _ => None,
            }
        })
        .collect()
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

/// Moves `other`'s `definitions` into `schema`'s, so `other`'s references resolve at the root.
fn merge_defs(schema: &mut JsonObject, other: &mut JsonObject) {
    let Some(Value::Object(other_defs)) = other.remove("definitions") else {
        return;
    };
    let defs = schema
        .entry("definitions")
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

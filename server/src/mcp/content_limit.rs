//! The one content limit (issue 18): every argument whose text is stored as a memory or an
//! episode advertises `maxLength` equal to the engine's `max_content_chars`
//! (`CPERSONA_MAX_CONTENT_LENGTH`), and arguments are checked against that served schema, so
//! the schema, the check and the engine's refusal are the same number. Nothing here cuts text.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use serde_json::Value;

/// The limit the static wire schema carries: the engine's default, so `tools/list` of a
/// server on defaults equals the snapshot of the wire types.
pub const DEFAULT_CONTENT_CHARS: usize = cpersona_engine::config::DEFAULT_MAX_CONTENT_CHARS;

/// Where each tool takes text it stores: the tool and a JSON pointer into its input schema.
pub const STORED_TEXT: &[(&str, &str)] = &[
    ("store", "/properties/content"),
    ("store", "/$defs/LegacyMessage/properties/content"),
    ("update_memory", "/properties/content"),
    ("archive_episode", "/properties/summary"),
    ("archive_episode", "/properties/keywords"),
];

/// Sets `maxLength` of every stored text argument in `router` to `limit` characters.
pub fn apply<S>(router: &mut ToolRouter<S>, limit: usize) {
    for (tool, pointer) in STORED_TEXT {
        let Some(route) = router.map.get_mut(*tool) else {
            continue;
        };
        let mut schema = Value::Object((*route.attr.input_schema).clone());
        if let Some(Value::Object(property)) = schema.pointer_mut(pointer) {
            property.insert("maxLength".to_owned(), Value::from(limit));
        }
        if let Value::Object(schema) = schema {
            route.attr.input_schema = Arc::new(schema);
        }
    }
}

#[cfg(test)]
mod tests;

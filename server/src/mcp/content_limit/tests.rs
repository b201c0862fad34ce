//! Every stored text argument carries the one limit, on defaults and when configured.

use serde_json::Value;

use super::*;
use crate::mcp::McpServer;

fn max_length(router: &ToolRouter<McpServer>, tool: &str, pointer: &str) -> Option<u64> {
    let schema = Value::Object((*router.get(tool)?.input_schema).clone());
    schema.pointer(pointer)?.get("maxLength")?.as_u64()
}

// See: issue 18. The schema advertised 1,000,000 characters while the engine cut at 16,000.
#[test]
fn r18_the_wire_schema_carries_the_default_limit() {
    let router = McpServer::all_tools();
    for (tool, pointer) in STORED_TEXT {
        assert_eq!(
            max_length(&router, tool, pointer),
            Some(DEFAULT_CONTENT_CHARS as u64),
            "{tool} {pointer}"
        );
    }
}

#[test]
fn r18_a_configured_limit_is_what_every_stored_text_advertises() {
    let mut router = McpServer::all_tools();
    apply(&mut router, 50_000);
    for (tool, pointer) in STORED_TEXT {
        assert_eq!(
            max_length(&router, tool, pointer),
            Some(50_000),
            "{tool} {pointer}"
        );
    }
    // Text that is not stored keeps its own bound.
    assert_eq!(
        max_length(&router, "recall", "/properties/query"),
        Some(16_000)
    );
}

//! Every served tool declares an object output schema, and `recall_with_context`'s merges the
//! conversation turn into its messages with every reference resolving.

use super::*;
use crate::mcp::McpServer;

#[test]
fn every_served_tool_declares_an_object_output_schema() {
    let mut router = McpServer::all_tools();
    apply(&mut router);
    let tools = router.list_all();
    assert!(tools.len() >= 29, "{}", tools.len());
    for tool in tools {
        let schema = tool
            .output_schema
            .unwrap_or_else(|| panic!("{} declares no output schema", tool.name));
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
        assert!(
            schema.get("properties").is_some_and(Value::is_object),
            "{} has no properties",
            tool.name
        );
    }
    assert!(schema("no_such_tool").is_none());
}

#[test]
fn recall_with_context_messages_admit_conversation_turns() {
    let schema = Value::Object((*schema("recall_with_context").unwrap()).clone());
    let items = &schema["properties"]["messages"]["items"]["anyOf"];
    assert_eq!(items.as_array().map(Vec::len), Some(2), "{schema}");
    assert!(schema["properties"]["context_filter_only"].is_object());
    // Every reference resolves at the root.
    let text = schema.to_string();
    for name in text.split("#/$defs/").skip(1) {
        let name: String = name.chars().take_while(|c| *c != '"').collect();
        assert!(
            schema["$defs"][&name].is_object(),
            "unresolved $defs/{name}"
        );
    }
}

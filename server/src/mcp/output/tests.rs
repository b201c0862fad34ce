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
    for name in text.split("#/definitions/").skip(1) {
        let name: String = name.chars().take_while(|c| *c != '"').collect();
        assert!(
            schema["definitions"][&name].is_object(),
            "unresolved definitions/{name}"
        );
    }
}

/// `cheapen` accepts and refuses exactly what the schema it rewrote did, on instances that
/// take each branch; and no served schema keeps a one-value-per-branch `oneOf`.
#[test]
fn cheapened_schemas_validate_alike_and_every_served_one_is_cheapened() {
    let original = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "arm": {"oneOf": [
                {"type": "string", "const": "vector", "description": "the vector arm"},
                {"type": "string", "enum": ["lexical"], "description": "FTS5"}
            ]},
            "kind": {"allOf": [{"$ref": "#/definitions/Kind"}], "description": "its kind"},
            "mixed": {"anyOf": [{"type": "string"}, {"const": 3}]}
        },
        "definitions": {"Kind": {"type": "string", "enum": ["a", "b"]}}
    });
    let mut cheap = original.clone();
    cheapen(&mut cheap);
    assert_eq!(
        cheap["properties"]["arm"]["enum"],
        json!(["vector", "lexical"])
    );
    assert_eq!(
        cheap["properties"]["arm"]["description"],
        json!("\"vector\": the vector arm; \"lexical\": FTS5")
    );
    assert_eq!(cheap["properties"]["kind"]["$ref"], "#/definitions/Kind");
    assert!(
        cheap["properties"]["mixed"]["anyOf"].is_array(),
        "not one value per branch"
    );
    let (before, after) = (
        jsonschema::validator_for(&original).unwrap(),
        jsonschema::validator_for(&cheap).unwrap(),
    );
    for instance in [
        json!({"arm": "vector"}),
        json!({"arm": "lexical"}),
        json!({"arm": "other"}),
        json!({"arm": 1}),
        json!({"kind": "a"}),
        json!({"kind": "c"}),
        json!({"mixed": "x"}),
        json!({"mixed": 3}),
        json!({"mixed": 4}),
    ] {
        assert_eq!(
            before.is_valid(&instance),
            after.is_valid(&instance),
            "{instance}"
        );
    }
    let mut router = McpServer::all_tools();
    apply(&mut router);
    for tool in router.list_all() {
        let served = Value::Object((*tool.output_schema.unwrap()).clone());
        let mut again = served.clone();
        cheapen(&mut again);
        assert_eq!(served, again, "{} is not cheapened", tool.name);
        assert_eq!(
            served["$schema"], "http://json-schema.org/draft-07/schema#",
            "{}",
            tool.name
        );
    }
}

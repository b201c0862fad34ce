//! CPersona's `source` normalisation: a canonical `{type, id, name}` object from the shapes
//! agents send. It must never fail: anything it does not recognise is stored verbatim.

use serde_json::{Map, Value, json};

/// Normalises `source` as CPersona 2.5 §4.1 step 2 does; `None` (argument omitted) gives the
/// 2.6 default `{type: "Agent", id: <agent_id>, name: ""}`.
pub fn normalise(source: Option<&Value>, agent_id: &str) -> Value {
    let Some(source) = source else {
        return json!({"type": "Agent", "id": agent_id, "name": ""});
    };
    match source {
        Value::Null => Value::Object(Map::new()),
        Value::String(text) => match canonical_type(text) {
            Some(kind) if matches!(text.to_lowercase().as_str(), "user" | "assistant" | "ai") => {
                json!({"type": kind})
            }
            _ => source.clone(),
        },
        Value::Object(map) => {
            if let Some(Value::String(kind)) = map.get("type") {
                let mut out = map.clone();
                if let Some(canon) = canonical_type(kind) {
                    out.insert("type".into(), Value::String(canon.into()));
                }
                return Value::Object(out);
            }
            // Serde's externally tagged form: {"User": "u1"}.
            if let (1, Some((key, Value::String(id)))) = (map.len(), map.iter().next())
                && let Some(kind) = canonical_type(key)
            {
                return if kind == "System" {
                    json!({"type": kind, "id": id})
                } else {
                    json!({"type": kind, "id": id, "name": id})
                };
            }
            source.clone()
        }
        _ => source.clone(),
    }
}

fn canonical_type(kind: &str) -> Option<&'static str> {
    match kind.to_lowercase().as_str() {
        "user" => Some("User"),
        "agent" | "assistant" | "ai" => Some("Agent"),
        "system" | "session" => Some("System"),
        _ => None,
    }
}

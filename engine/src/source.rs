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

/// Whether a row whose `source.id` reads `value` (as text; a JSON number as its digits)
/// passes a `source_id` filter of `wanted`, by CPersona 2.6.14's rule (its bug-336): a value
/// ending in a letter or digit names one id and is compared whole, so `user:1` never admits
/// `user:10`; one ending in anything else (`discord:`, `docs/`, `user-`) names a namespace and
/// is a prefix. Compared byte for byte: `discord:Alice` is not `discord:alice`. An empty
/// `wanted` is no filter; a row without an id passes none.
pub fn source_id_matches(value: Option<&str>, wanted: &str) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let Some(value) = value else {
        return false;
    };
    let namespace = wanted.chars().last().is_some_and(|c| !c.is_alphanumeric());
    if namespace {
        value.starts_with(wanted)
    } else {
        value == wanted
    }
}

#[cfg(test)]
mod tests {
    use super::source_id_matches;

    #[test]
    fn one_id_is_compared_whole_and_a_namespace_is_a_prefix() {
        assert!(source_id_matches(Some("user:1"), "user:1"));
        assert!(!source_id_matches(Some("user:10"), "user:1"));
        assert!(!source_id_matches(Some("discord:alice"), "discord:Alice"));
        assert!(source_id_matches(Some("discord:12345"), "discord:"));
        assert!(source_id_matches(Some("docs/a.md"), "docs/"));
        assert!(!source_id_matches(Some("slack:1"), "discord:"));
        assert!(!source_id_matches(None, "user:1"));
        assert!(source_id_matches(None, ""));
        assert!(source_id_matches(Some("名前"), "名前"));
        assert!(!source_id_matches(Some("名前前"), "名前"));
    }
}

//! Field readers of the import: one JSONL line's axes, flags, JSON-as-text fields and
//! instants, and the per-row error list. They only read and validate; they never write.

use serde_json::{Map, Value};

use super::record::{Axes, ImportOutcome, MAX_LISTED_ERRORS};
use crate::error::Result;
use crate::text::check_key;
use crate::time::parse_iso8601_ms;

pub(super) fn note(outcome: &mut ImportOutcome, message: String) {
    if outcome.errors.len() < MAX_LISTED_ERRORS {
        outcome.errors.push(message);
    } else {
        outcome.errors_omitted += 1;
    }
}

pub(super) fn string(obj: &Map<String, Value>, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The axes of an association line, as `(agent, project, channel)`.
pub(super) fn axes_of(
    obj: &Map<String, Value>,
    target_agent: &str,
) -> Result<(String, String, String)> {
    let a = axes(obj, target_agent)?;
    Ok((a.agent_id, a.project_id, a.channel))
}

pub(super) fn axes(obj: &Map<String, Value>, target_agent: &str) -> Result<Axes> {
    let agent_id = if target_agent.is_empty() {
        string(obj, "agent_id")
    } else {
        target_agent.to_owned()
    };
    crate::text::check_agent(&agent_id)?;
    let project_id = string(obj, "project_id");
    check_key("project_id", &project_id)?;
    let channel = string(obj, "channel");
    check_key("channel", &channel)?;
    Ok(Axes {
        agent_id,
        project_id,
        channel,
    })
}

/// CPersona writes flags as booleans or 0/1 integers.
pub(super) fn flag(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_i64().is_some_and(|n| n != 0),
        _ => false,
    }
}

/// `source` / `metadata` arrive as objects or as JSON text; stored as JSON text.
pub(super) fn json_text(value: Option<&Value>, default: &str) -> String {
    match value {
        None | Some(Value::Null) => default.to_owned(),
        Some(Value::String(text)) if serde_json::from_str::<Value>(text).is_ok() => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// An optional timestamp field (CPersona's `created_at` is naive UTC text).
pub(super) fn optional_instant(obj: &Map<String, Value>, key: &str) -> Result<Option<i64>> {
    match obj.get(key).and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Ok(Some(parse_iso8601_ms(text)?)),
        _ => Ok(None),
    }
}

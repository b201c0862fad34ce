//! Argument checking before any backend call: the raw JSON is checked against the very
//! schema `tools/list` advertises (types, bounds, lengths, enums, unknown fields), then for
//! NUL bytes, then decoded, then cross-field rules. Every refusal names the argument; nothing
//! here ever reaches the store.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::mcp::wire;

/// The input schema of a wire type, as advertised by `tools/list`.
pub(crate) fn input_schema<T: JsonSchema + 'static>() -> std::sync::Arc<Map<String, Value>> {
    // The wire types are all structs, so the schema is an object; a failure here is a bug in
    // `wire.rs` caught by the schema snapshot test, not input.
    rmcp::handler::server::common::schema_for_input::<T>().unwrap_or_else(|e| {
        panic!(
            "wire type {} has no object schema: {e}",
            std::any::type_name::<T>()
        )
    })
}

/// Check `args` against the schema the tool is served with (`T`'s own when `None`), decode
/// it, and apply `T`'s cross-field rules.
pub(crate) fn decode<T>(
    args: Map<String, Value>,
    served: Option<std::sync::Arc<Map<String, Value>>>,
) -> Result<T, String>
where
    T: JsonSchema + DeserializeOwned + CrossCheck + 'static,
{
    let schema = served.unwrap_or_else(input_schema::<T>);
    let root = Value::Object((*schema).clone());
    let value = Value::Object(args);
    check(&value, &root, &root, "")?;
    check_strings(&value, "")?;
    let decoded: T =
        serde_json::from_value(value).map_err(|e| format!("invalid arguments: {e}"))?;
    decoded.cross_check()?;
    Ok(decoded)
}

fn name(path: &str) -> String {
    if path.is_empty() {
        "arguments".to_owned()
    } else {
        format!("`{path}`")
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
        && let Some(def) = reference.strip_prefix("#/$defs/")
        && let Some(target) = root.get("$defs").and_then(|d| d.get(def))
    {
        return target;
    }
    schema
}

/// A small JSON Schema check over the keywords schemars emits for the wire types.
fn check(value: &Value, schema: &Value, root: &Value, path: &str) -> Result<(), String> {
    let schema = resolve(schema, root);
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let mut first_error = None;
            let mut fitting_error = None;
            for branch in branches {
                let branch = resolve(branch, root);
                // A `null` branch says "optional": report the other branch's reason.
                let is_null = branch.get("type").and_then(Value::as_str) == Some("null");
                // A branch of the value's own type failed on something inside it: that is
                // the reason to report (`refs[0].block` too large, not "must be a string").
                let fits = branch
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|ty| has_type(value, ty));
                match check(value, branch, root, path) {
                    Ok(()) => return Ok(()),
                    Err(e) if fits && fitting_error.is_none() => fitting_error = Some(e),
                    Err(e) if !is_null && first_error.is_none() => first_error = Some(e),
                    Err(_) => {}
                }
            }
            if let Some(e) = fitting_error {
                return Err(e);
            }
            // With two forms (or one real form and `null`) the first real form's reason is
            // the actionable one; with more, no single reason is.
            let has_null = branches
                .iter()
                .any(|b| b.get("type") == Some(&"null".into()));
            if let Some(e) = first_error
                && (branches.len() == 2 || has_null)
            {
                return Err(e);
            }
            return Err(format!("{} does not match any accepted form", name(path)));
        }
    }
    if let Some(expected) = schema.get("const")
        && value != expected
    {
        return Err(format!("{} must be {expected}", name(path)));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(format!(
            "{} must be one of {}; got {value}",
            name(path),
            list.join(", ")
        ));
    }
    match schema.get("type") {
        Some(Value::String(ty)) if !has_type(value, ty) => {
            return Err(format!(
                "{} must be {} {ty}, got {}",
                name(path),
                if ty == "integer" || ty == "array" || ty == "object" {
                    "an"
                } else {
                    "a"
                },
                type_name(value)
            ));
        }
        Some(Value::Array(types))
            if !types
                .iter()
                .filter_map(Value::as_str)
                .any(|t| has_type(value, t)) =>
        {
            let list: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            return Err(format!(
                "{} must be {}, got {}",
                name(path),
                list.join(" or "),
                type_name(value)
            ));
        }
        _ => {}
    }
    match value {
        Value::Number(n) => check_number(n, schema, path)?,
        Value::String(s) => check_length(s.chars().count(), schema, path, "characters")?,
        Value::Array(items) => {
            check_length(items.len(), schema, path, "items")?;
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, root, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::Object(map) => check_object(map, schema, root, path)?,
        _ => {}
    }
    Ok(())
}

/// The values a schemars `format` holds, for the integer formats (`uint32`, `int64`, ...).
fn format_range(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        _ => return None,
    })
}

fn check_number(n: &serde_json::Number, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(v) = n.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && v < min
        {
            return Err(format!("{} is {n}, below the minimum {min}", name(path)));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && v > max
        {
            return Err(format!("{} is {n}, above the maximum {max}", name(path)));
        }
    }
    // A number beyond what the argument's type holds is refused by name here; the decoder
    // would refuse it too, but with serde's "invalid value: integer ..." naming nothing.
    let exact = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
    if let (Some(v), Some((lo, hi))) = (
        exact,
        schema
            .get("format")
            .and_then(Value::as_str)
            .and_then(format_range),
    ) {
        if v > hi {
            return Err(format!(
                "{} is {n}, above the largest value it can hold ({hi})",
                name(path)
            ));
        }
        if v < lo {
            return Err(format!(
                "{} is {n}, below the smallest value it can hold ({lo})",
                name(path)
            ));
        }
    }
    Ok(())
}

fn check_length(len: usize, schema: &Value, path: &str, unit: &str) -> Result<(), String> {
    let (min_key, max_key) = if unit == "items" {
        ("minItems", "maxItems")
    } else {
        ("minLength", "maxLength")
    };
    if let Some(min) = schema.get(min_key).and_then(Value::as_u64)
        && (len as u64) < min
    {
        return Err(if min == 1 {
            format!("{} must not be empty", name(path))
        } else {
            format!(
                "{} has {len} {unit}, fewer than the minimum {min}",
                name(path)
            )
        });
    }
    if let Some(max) = schema.get(max_key).and_then(Value::as_u64)
        && (len as u64) > max
    {
        return Err(format!(
            "{} has {len} {unit}, more than the maximum {max}",
            name(path)
        ));
    }
    Ok(())
}

fn check_object(
    map: &Map<String, Value>,
    schema: &Value,
    root: &Value,
    path: &str,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                return Err(format!("missing required argument `{}`", join(path, key)));
            }
        }
    }
    for (key, value) in map {
        match properties.and_then(|p| p.get(key)) {
            Some(prop) => check(value, prop, root, &join(path, key))?,
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                let mut known: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                known.sort_unstable();
                return Err(format!(
                    "unknown argument `{}`; expected one of: {}",
                    join(path, key),
                    known.join(", ")
                ));
            }
            None => {}
        }
    }
    Ok(())
}

/// Refuse NUL bytes anywhere (SQLite text and FTS5 would cut or reject them later).
/// Lone UTF-16 surrogates cannot reach here: the JSON parser refuses them with the message.
fn check_strings(value: &Value, path: &str) -> Result<(), String> {
    match value {
        Value::String(s) if s.contains('\0') => {
            Err(format!("{} contains a NUL character (U+0000)", name(path)))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_strings(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            if k.contains('\0') {
                return Err(format!(
                    "an argument name under {} contains a NUL character",
                    name(path)
                ));
            }
            check_strings(v, &join(path, k))
        }),
        _ => Ok(()),
    }
}

/// Rules that span several fields of one tool's arguments.
pub(crate) trait CrossCheck {
    fn cross_check(&self) -> Result<(), String> {
        Ok(())
    }
}

macro_rules! no_cross_check {
    ($($ty:ty),* $(,)?) => { $(impl CrossCheck for $ty {})* };
}

no_cross_check!(
    wire::RecallArgs,
    wire::RecallWithContextArgs,
    wire::ArchiveEpisodeArgs,
    wire::UpdateMemoryArgs,
    wire::MemoryIdArgs,
    wire::EpisodeIdArgs,
    wire::AgentArgs,
    wire::DeleteAgentDataArgs,
    wire::UpdateProfileArgs,
    wire::ListMemoriesArgs,
    wire::ListEpisodesArgs,
    wire::ExportArgs,
    wire::ImportArgs,
    wire::CalibrateArgs,
    wire::SetPrecisionArgs,
    wire::CheckHealthArgs,
    wire::CheckUpdateArgs,
    wire::FindingsArgs,
    wire::DeepCheckArgs,
    wire::ChannelAxisArgs,
    wire::OperatingContextArgs,
    wire::NoArgs,
    wire::PauseArgs,
    wire::SessionArgs,
    wire::DeclareAssociationsArgs,
    wire::TraverseArgs,
);

impl CrossCheck for wire::StoreArgs {
    fn cross_check(&self) -> Result<(), String> {
        let top_level = self.content.is_some()
            || self.id.is_some()
            || self.source.is_some()
            || self.timestamp.is_some()
            || self.metadata.is_some();
        match (&self.message, top_level) {
            (Some(_), true) => Err("give either `content` (with `id`, `source`, `timestamp`, \
                 `metadata` beside it) or the legacy `message` object, not both"
                .to_owned()),
            (None, _) if self.content.is_none() => {
                Err("missing required argument `content` (the text to remember)".to_owned())
            }
            _ => Ok(()),
        }
    }
}

impl CrossCheck for wire::GetContentsArgs {
    fn cross_check(&self) -> Result<(), String> {
        for (i, r) in self.refs.iter().enumerate() {
            if let wire::RefArg::Ranged(r) = r {
                let ranges = [r.node.is_some(), r.block.is_some(), r.span.is_some()];
                if ranges.iter().filter(|x| **x).count() > 1 {
                    return Err(format!(
                        "`refs[{i}]` may carry at most one of `node`, `block`, `span`"
                    ));
                }
                if let Some([start, end]) = r.span
                    && start > end
                {
                    return Err(format!(
                        "`refs[{i}].span` starts after it ends ({start} > {end})"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl CrossCheck for wire::MergeArgs {
    fn cross_check(&self) -> Result<(), String> {
        if self.source_agent_id == self.target_agent_id {
            return Err("`source_agent_id` and `target_agent_id` must differ".to_owned());
        }
        Ok(())
    }
}

impl CrossCheck for wire::ReconstructArgs {
    fn cross_check(&self) -> Result<(), String> {
        if self.mode.is_some() && self.lite.is_some() {
            return Err("give `mode` or the legacy `lite`, not both".to_owned());
        }
        Ok(())
    }
}

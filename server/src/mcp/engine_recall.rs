//! `recall`, `recall_with_context`, `get_contents` and `calibrate_threshold` over the engine:
//! wire arguments become a `RecallQuery`, the engine's response body is sent as is, plus the
//! embedder advisory, the engine's notices and the trace when asked. No ranking happens here;
//! the only filters applied are CPersona's `exclude_contents` and `source_id`, which drop rows
//! the engine returned and say how many.

use std::collections::HashSet;

use cpersona_engine::recall::Ref;
use cpersona_engine::{RecallQuery, RecallResult};
use serde_json::{Value, json};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine_backend::{EngineBackend, engine_error};
use crate::mcp::wire;

/// One recall's inputs beyond the engine's query.
pub(crate) struct Filters {
    pub(crate) exclude_contents: Vec<String>,
    pub(crate) source_id: String,
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|err| ToolError::internal(format!("cannot encode the response: {err}")))
}

/// Runs one recall and shapes its body.
pub(crate) fn recall(
    backend: &EngineBackend,
    query: RecallQuery,
    filters: &Filters,
    time_cue: Option<&wire::TimeCue>,
) -> ToolResult {
    let trace = query.trace;
    let result = backend.engine().recall(&query).map_err(engine_error)?;
    let mut body = to_value(&result.response)?;
    let dropped = filter_messages(&mut body, filters);
    let Some(object) = body.as_object_mut() else {
        return Err(ToolError::internal("recall response is not an object"));
    };
    if dropped > 0 {
        object.insert("excluded".to_owned(), json!(dropped));
    }
    if let Some(advisory) = backend.advisory() {
        object.insert("advisory".to_owned(), advisory);
    }
    if !result.advisories.is_empty() {
        object.insert("notices".to_owned(), json!(result.advisories));
    }
    if time_cue.is_some() {
        object.insert(
            "time_cue".to_owned(),
            json!({"policy": "none", "ignored": "unsupported",
                   "hint": "this build does not read time cues yet; the recall ran without one"}),
        );
    }
    if trace {
        let trace = trace_of(&result, object.get("messages"))?;
        object.insert("trace".to_owned(), trace);
    }
    Ok(body)
}

/// The engine's versioned recall trace (`cpersona_engine::trace`), with the rows this
/// server's filters dropped after the engine marked `filtered`. `kept` is the response's
/// `messages` after those filters. The trace replays offline (`cpersona replay`).
fn trace_of(result: &RecallResult, kept: Option<&Value>) -> ToolResult {
    let Some(mut trace) = result.trace() else {
        return Err(ToolError::internal("recall ran without its trace capture"));
    };
    let kept: HashSet<&str> = kept
        .and_then(Value::as_array)
        .map(|rows| rows.iter().filter_map(|m| m["ref"].as_str()).collect())
        .unwrap_or_default();
    let filtered: Vec<Ref> = result
        .response
        .messages
        .iter()
        .map(|m| m.r#ref)
        .filter(|r| !kept.contains(r.to_string().as_str()))
        .collect();
    trace.mark_filtered(&filtered);
    to_value(&trace)
}

/// Drops messages whose content starts with an excluded text, or whose `source.id` does not
/// start with `source_id`; returns how many were dropped.
fn filter_messages(body: &mut Value, filters: &Filters) -> usize {
    if filters.exclude_contents.is_empty() && filters.source_id.is_empty() {
        return 0;
    }
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return 0;
    };
    let before = messages.len();
    messages.retain(|m| {
        let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
        let excluded = filters
            .exclude_contents
            .iter()
            .any(|x| !x.is_empty() && (content.starts_with(x.as_str()) || x.starts_with(content)));
        let source_ok = filters.source_id.is_empty()
            || m.pointer("/source/id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.starts_with(filters.source_id.as_str()));
        !excluded && source_ok
    });
    before - messages.len()
}

/// `recall`.
pub(crate) fn recall_args(backend: &EngineBackend, args: wire::RecallArgs) -> ToolResult {
    let query = RecallQuery {
        agent_id: args.agent_id,
        project_id: args.project_id,
        channel: (!args.channel.is_empty()).then_some(args.channel),
        query: args.query,
        limit: args.limit as usize,
        deep: args.deep,
        full_content: args.full_content,
        trace: args.trace,
    };
    let filters = Filters {
        exclude_contents: args.exclude_contents,
        source_id: args.source_id,
    };
    recall(backend, query, &filters, args.time_cue.as_ref())
}

/// `recall_with_context`: the recall of `query`; the external context is reported unused.
pub(crate) fn recall_with_context(
    backend: &EngineBackend,
    args: wire::RecallWithContextArgs,
) -> ToolResult {
    let context_entries = args.external_context.len();
    let query = RecallQuery {
        agent_id: args.agent_id,
        project_id: args.project_id,
        channel: (!args.channel.is_empty()).then_some(args.channel),
        query: args.query,
        limit: args.limit as usize,
        deep: args.deep,
        full_content: args.full_content,
        trace: false,
    };
    let filters = Filters {
        exclude_contents: Vec::new(),
        source_id: args.source_id,
    };
    let mut body = recall(backend, query, &filters, None)?;
    if context_entries > 0
        && let Some(object) = body.as_object_mut()
    {
        object.insert(
            "external_context".to_owned(),
            json!({"entries": context_entries, "used": false,
                   "reason": "this build recalls on `query` alone; the context is not merged yet"}),
        );
    }
    Ok(body)
}

/// `get_contents`.
pub(crate) fn get_contents(backend: &EngineBackend, args: wire::GetContentsArgs) -> ToolResult {
    let refs = args
        .refs
        .iter()
        .map(to_value)
        .collect::<Result<Vec<Value>, ToolError>>()?;
    let contents = backend
        .engine()
        .get_contents(&args.agent_id, None, None, &refs)
        .map_err(engine_error)?;
    to_value(&contents)
}

/// `calibrate_threshold`: the engine's calibration of the agent (method and sample size are
/// the engine's; the arguments that ask for others are reported back as not applied).
pub(crate) fn calibrate_threshold(
    backend: &EngineBackend,
    args: wire::CalibrateArgs,
) -> ToolResult {
    let outcome = backend
        .engine()
        .calibrate_threshold(&args.agent_id)
        .map_err(engine_error)?;
    let scope = if args.agent_id.is_empty() {
        "global"
    } else {
        "agent"
    };
    Ok(json!({
        "ok": true,
        "scope": scope,
        "agent_id": outcome.agent_id,
        "new_threshold": outcome.calibration.threshold,
        "calibration": to_value(&outcome.calibration)?,
        "requested": {"method": to_value(&args.method)?, "sample_size": args.sample_size,
                      "applied": false},
    }))
}

#[cfg(test)]
mod tests;

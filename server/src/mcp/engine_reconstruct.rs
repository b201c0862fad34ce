//! `reconstruct` over the engine: wire arguments become a `ReconstructRequest` (the time cue
//! parsed exactly as `recall` parses it, `source_id` and `mode` passed down), the engine's
//! response body is sent as is, plus the embedder advisory, recall's notices, the candidate
//! recall's `time_cue` block and what the `mode` did (its token cap is reported not applied:
//! it never pretends to have applied one). No ranking, bundling or budgeting happens here.

use cpersona_engine::{ReconstructMode, ReconstructRequest};
use serde_json::{Value, json};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine_backend::{EngineBackend, engine_error};
use crate::mcp::wire;

/// `reconstruct`.
pub(crate) fn reconstruct(backend: &EngineBackend, args: wire::ReconstructArgs) -> ToolResult {
    let time_cue = crate::mcp::engine_recall::engine_cue(args.time_cue.as_ref())?;
    let mode = match (args.mode, args.lite) {
        (Some(_), Some(_)) => {
            return Err(ToolError::user(
                "`lite` is the legacy alias of `mode: \"lite\"`; give one of them, not both",
            ));
        }
        (Some(wire::ReconstructMode::Lite), None) | (None, Some(true)) => {
            Some(ReconstructMode::Lite)
        }
        (Some(wire::ReconstructMode::Pro), None) => Some(ReconstructMode::Pro),
        (None, _) => None,
    };
    let request = ReconstructRequest {
        agent_id: args.agent_id,
        project_id: args.project_id,
        channel: (!args.channel.is_empty()).then_some(args.channel),
        query: args.query,
        count: args.count.map(|c| c as usize),
        top_k: args.top_k.map(|c| c as usize),
        max_hops: args.max_hops.map(|c| c as usize),
        max_evidence: args.max_evidence.map(|c| c as usize),
        budget: args.budget.map(|c| c as usize),
        deep: args.deep,
        trace: args.trace,
        time_cue,
        source_id: args.source_id,
        mode,
        now_ms: None,
    };
    let result = backend
        .engine()
        .reconstruct(&request)
        .map_err(engine_error)?;
    let mut body = serde_json::to_value(&result.response)
        .map_err(|err| ToolError::internal(format!("cannot encode the response: {err}")))?;
    let Some(object) = body.as_object_mut() else {
        return Err(ToolError::internal("reconstruct response is not an object"));
    };
    if let Some(advisory) = backend.advisory() {
        object.insert("advisory".to_owned(), advisory);
    }
    let notices: Vec<Value> = result.advisories.into_iter().map(Value::from).collect();
    if !notices.is_empty() {
        object.insert("notices".to_owned(), Value::Array(notices));
    }
    if let Some(cue) = &result.time_cue {
        object.insert("time_cue".to_owned(), to_json(cue)?);
    }
    if let Some(mode) = &result.mode {
        object.insert("mode".to_owned(), to_json(mode)?);
    }
    if args.trace
        && let Some(trace) = object.get_mut("trace").and_then(Value::as_object_mut)
    {
        trace.insert(
            "timings_ms".to_owned(),
            json!({"recall": result.recall_ms, "assemble": result.assemble_ms}),
        );
    }
    Ok(body)
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|err| ToolError::internal(format!("cannot encode the response: {err}")))
}

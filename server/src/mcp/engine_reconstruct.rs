//! `reconstruct` over the engine: wire arguments become a `ReconstructRequest`, the engine's
//! response body is sent as is, plus the embedder advisory, recall's notices and a note for
//! each argument this build accepts but does not apply (it never pretends to have applied
//! one). No ranking, bundling or budgeting happens here.

use cpersona_engine::ReconstructRequest;
use serde_json::{Value, json};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine_backend::{EngineBackend, engine_error};
use crate::mcp::wire;

/// `reconstruct`.
pub(crate) fn reconstruct(backend: &EngineBackend, args: wire::ReconstructArgs) -> ToolResult {
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
    let mut notices: Vec<Value> = result.advisories.into_iter().map(Value::from).collect();
    if !args.source_id.is_empty() {
        notices.push(json!(
            "source_id is not applied by reconstruct in this build; candidates were not filtered by source"
        ));
    }
    if args.mode.is_some() || args.lite == Some(true) {
        notices.push(json!(
            "mode/lite token caps are not implemented in this build; the default shape and character budget applied"
        ));
    }
    if !notices.is_empty() {
        object.insert("notices".to_owned(), Value::Array(notices));
    }
    if args.time_cue.is_some() {
        object.insert(
            "time_cue".to_owned(),
            json!({"policy": "none", "ignored": "unsupported",
                   "hint": "this build does not read time cues yet; the reconstruct ran without one"}),
        );
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

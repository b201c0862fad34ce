//! `reconstruct` over the engine: wire arguments become a `ReconstructRequest` (the time cue
//! parsed exactly as `recall` parses it, `source_id` and `mode` passed down, the embedder
//! advisory handed over so a mode's token cap counts it), and the engine's body is sent as is:
//! the response, the advisory, recall's notices, the candidate recall's `time_cue` block and
//! what the `mode` did. No ranking, bundling, budgeting or token counting happens here.

use cpersona_engine::{ReconstructMode, ReconstructRequest};
use serde_json::{Value, json};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::{encode, engine_error};
use crate::mcp::wire;

/// `reconstruct`.
pub(crate) fn reconstruct(
    backend: &EngineBackend,
    args: wire::ReconstructArgs,
    progress: &cpersona_engine::progress::Progress<'_>,
) -> ToolResult {
    let time_cue = crate::mcp::engine::convert::engine_cue(args.time_cue.as_ref())?;
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
        wire_advisory: backend.advisory().map(|a| encode(&a)).transpose()?,
    };
    let result = backend
        .engine()
        .reconstruct_with(&request, progress)
        .map_err(engine_error)?;
    // The engine builds the body it counted under a mode's token cap; only the trace's
    // timings are added here (the cap never applies under `trace`).
    let mut body = result.wire_body();
    if args.trace
        && let Some(trace) = body.get_mut("trace").and_then(Value::as_object_mut)
    {
        trace.insert(
            "timings_ms".to_owned(),
            json!({"recall": result.recall_ms, "assemble": result.assemble_ms}),
        );
    }
    Ok(body)
}

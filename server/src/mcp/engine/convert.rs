//! The one place wire values become engine values and engine outcomes become tool bodies:
//! error mapping (the caller's fault sent as is, ours logged), encoding, the embedder
//! advisory, the time cue and the recall query every recall-shaped tool builds.

use cpersona_engine::embed::Embedder;
use cpersona_engine::{RecallQuery, TimeCue};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::wire;

/// CPersona's degraded advisory (`{degraded, severity, reason, evidence, runbook}`), when the
/// embedder reports itself degraded (hash fallback, failing remote).
pub fn embedder_advisory(embedder: &dyn Embedder) -> Option<wire::Advisory> {
    match embedder.health() {
        cpersona_engine::embed::EmbedHealth::Healthy => None,
        cpersona_engine::embed::EmbedHealth::Degraded {
            severity,
            reason,
            evidence,
            advisory,
        } => Some(wire::Advisory {
            degraded: true,
            severity: severity.as_str(),
            reason,
            evidence,
            runbook: advisory,
        }),
    }
}

/// Maps an engine failure: the caller's fault is sent as is, ours is logged in full.
pub(crate) fn engine_error(err: cpersona_engine::Error) -> ToolError {
    if err.is_user_error() {
        ToolError::user(err.to_string())
    } else {
        ToolError::internal(err.to_string())
    }
}

/// Serialises an engine outcome as the tool's body.
pub(crate) fn body<T: Serialize>(outcome: cpersona_engine::Result<T>) -> ToolResult {
    encode(&outcome.map_err(engine_error)?)
}

pub(crate) fn object(map: Option<Map<String, Value>>) -> Option<Value> {
    map.map(Value::Object)
}

pub(crate) fn source(source: Option<wire::Source>) -> Result<Option<Value>, ToolError> {
    source
        .map(|s| serde_json::to_value(s).map_err(|err| ToolError::internal(err.to_string())))
        .transpose()
}

/// Encodes an engine value as a tool body.
pub(crate) fn encode<T: Serialize>(value: &T) -> ToolResult {
    serde_json::to_value(value)
        .map_err(|err| ToolError::internal(format!("cannot encode the response: {err}")))
}

/// The engine's time cue from the wire's: every check (after < before, unit, whole value,
/// dates in range) is the engine's `TimeCue::from_json`, so `recall` and `reconstruct` refuse
/// the same cues with the same words. Public to the crate for `reconstruct`.
pub(crate) fn engine_cue(cue: Option<&wire::TimeCue>) -> Result<Option<TimeCue>, ToolError> {
    cue.map(|c| TimeCue::from_json(&encode(c)?).map_err(engine_error))
        .transpose()
}

/// The arguments `recall` and `recall_with_context` share.
pub(crate) struct RecallCommon {
    pub(crate) agent_id: String,
    pub(crate) project_id: Option<String>,
    pub(crate) channel: String,
    pub(crate) query: String,
    pub(crate) limit: u32,
    pub(crate) deep: bool,
    pub(crate) full_content: bool,
    pub(crate) source_id: String,
    pub(crate) session_key: String,
}

/// The recall every recall-shaped tool (`recall`, `recall_with_context`) asks, from the
/// arguments they share; the caller adds its own (`trace`, `time_cue`, ...).
pub(crate) fn recall_query(common: RecallCommon) -> RecallQuery {
    RecallQuery {
        agent_id: common.agent_id,
        project_id: common.project_id,
        channel: (!common.channel.is_empty()).then_some(common.channel),
        query: common.query,
        limit: common.limit as usize,
        deep: common.deep,
        full_content: common.full_content,
        source_id: common.source_id,
        session_key: common.session_key,
        ..RecallQuery::default()
    }
}

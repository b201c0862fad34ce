//! `recall`, `recall_with_context`, `get_contents` and `calibrate_threshold` over the engine:
//! wire arguments become a `RecallQuery`, the engine's response body is sent as is, plus the
//! embedder advisory, the engine's notices and the trace when asked. No ranking or filtering
//! happens here: `exclude_contents` and `source_id` travel in the `RecallQuery` and the engine
//! applies them before its count cut (the body says how many hits they removed, `excluded`).

use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{CalibrateRequest, RecallQuery, RecallResult, ThresholdMethod};
use serde_json::Value;

use crate::config::CalibrateMethod;
use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::{RecallCommon, encode, engine_cue, engine_error, recall_query};
use crate::mcp::wire;

/// Runs one recall and shapes its body.
pub(crate) fn recall(backend: &EngineBackend, query: RecallQuery) -> ToolResult {
    let trace = query.trace;
    let result = backend.engine().recall(&query).map_err(engine_error)?;
    let dropped = result.filtered.total();
    let mut body = encode(&wire::RecallBody {
        response: &result.response,
        excluded: (dropped > 0).then_some(dropped),
        advisory: backend.advisory(),
        notices: &result.advisories,
        trace: if trace {
            Some(trace_of(&result)?)
        } else {
            None
        },
    })?;
    // CPersona's place for the profile row: after every ranked row, so first in a
    // last-is-best list.
    if let Some(profile) = &result.profile
        && let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut)
    {
        messages.insert(0, encode(profile)?);
    }
    Ok(body)
}

/// The engine's versioned recall trace (`cpersona_engine::trace`); it replays offline
/// (`cpersona replay`).
fn trace_of(result: &RecallResult) -> Result<RecallTrace, ToolError> {
    result
        .trace()
        .ok_or_else(|| ToolError::internal("recall ran without its trace capture"))
}

/// `recall`.
pub(crate) fn recall_args(backend: &EngineBackend, args: wire::RecallArgs) -> ToolResult {
    let query = RecallQuery {
        trace: args.trace,
        time_cue: engine_cue(args.time_cue.as_ref())?,
        exclude_contents: args.exclude_contents,
        ..recall_query(RecallCommon {
            agent_id: args.agent_id,
            project_id: args.project_id,
            channel: args.channel,
            query: args.query,
            limit: args.limit,
            deep: args.deep,
            full_content: args.full_content,
            source_id: args.source_id,
            session_key: args.session_key,
        })
    };
    recall(backend, query)
}

/// `recall_with_context`: the recall of `query`; the external context is reported unused.
pub(crate) fn recall_with_context(
    backend: &EngineBackend,
    args: wire::RecallWithContextArgs,
) -> ToolResult {
    let mut query = recall_query(RecallCommon {
        agent_id: args.agent_id,
        project_id: args.project_id,
        channel: args.channel,
        query: args.query,
        limit: args.limit,
        deep: args.deep,
        full_content: args.full_content,
        source_id: args.source_id,
        session_key: args.session_key,
    });
    // The caller already holds its conversation: every entry's text filters the recall,
    // whatever its role (CPersona's merge).
    query.exclude_contents = args
        .external_context
        .iter()
        .filter(|entry| !entry.content.is_empty())
        .map(|entry| entry.content.clone())
        .collect();
    let mut body = recall(backend, query)?;
    merge_context(&mut body, &args.external_context)?;
    Ok(body)
}

/// CPersona's merge of `external_context` into a recall body: `user` and `assistant` turns
/// join `messages` (`context_type: "conversation"`, a user's source `discord:<user_id or
/// name>`, an assistant's `{type: Agent, id: self}`), then every message is ordered by time
/// (undated rows first, ties kept in order); turns of other roles filtered the recall but
/// are not shown, which `context_filter_only` says.
fn merge_context(body: &mut Value, context: &[wire::ContextEntry]) -> Result<(), ToolError> {
    let Some(object) = body.as_object_mut() else {
        return Err(ToolError::internal("recall response is not an object"));
    };
    let mut messages = match object.remove("messages") {
        Some(Value::Array(messages)) => messages,
        _ => Vec::new(),
    };
    let mut filter_only = std::collections::BTreeSet::new();
    for entry in context.iter().filter(|entry| !entry.content.is_empty()) {
        let source = match entry.role.as_str() {
            "assistant" => wire::TurnSource {
                kind: "Agent",
                id: "self".to_owned(),
                name: None,
            },
            "user" => {
                let name = entry.name.clone().unwrap_or_else(|| "User".to_owned());
                let id = match entry.user_id.as_deref() {
                    Some(user_id) if !user_id.is_empty() => format!("discord:{user_id}"),
                    _ => format!("discord:{name}"),
                };
                wire::TurnSource {
                    kind: "User",
                    id,
                    name: Some(name),
                }
            }
            "" => {
                filter_only.insert("(unset)".to_owned());
                continue;
            }
            other => {
                filter_only.insert(other.to_owned());
                continue;
            }
        };
        messages.push(encode(&wire::ConversationTurn {
            content: entry.content.clone(),
            source,
            timestamp: entry.timestamp.clone().unwrap_or_default(),
            context_type: "conversation",
        })?);
    }
    // A stable sort: undated first (CPersona's anchor), then by instant.
    messages.sort_by_key(|message| {
        message["timestamp"]
            .as_str()
            .and_then(|t| cpersona_engine::time::parse_iso8601_ms(t).ok())
            .map_or((false, 0), |ms| (true, ms))
    });
    object.insert("messages".to_owned(), Value::Array(messages));
    if !filter_only.is_empty() {
        let filter_only = wire::ContextFilterOnly {
            roles: filter_only.into_iter().collect(),
            note: "entries with these roles filtered recall but are not shown in messages",
        };
        object.insert("context_filter_only".to_owned(), encode(&filter_only)?);
    }
    Ok(())
}

/// `get_contents`.
pub(crate) fn get_contents(backend: &EngineBackend, args: wire::GetContentsArgs) -> ToolResult {
    let refs = args
        .refs
        .iter()
        .map(encode)
        .collect::<Result<Vec<Value>, ToolError>>()?;
    let contents = backend
        .engine()
        .get_contents(&args.agent_id, None, None, &refs)
        .map_err(engine_error)?;
    encode(&contents)
}

/// `calibrate_threshold`: CPersona's arguments become the engine's request; the body is
/// CPersona's keys plus the whole calibration.
pub(crate) fn calibrate_threshold(
    backend: &EngineBackend,
    args: wire::CalibrateArgs,
) -> ToolResult {
    // What the call leaves out, the operator's CPERSONA_CALIBRATE_* settings fill.
    let defaults = backend.recall_settings().calibrate;
    let z_factor = args.z_factor.unwrap_or(defaults.z_factor);
    let percentile = args.percentile.unwrap_or(defaults.percentile);
    // CPersona reads a percentile above 1 as a percent (95 is 0.95).
    let percentile = if percentile > 1.0 {
        percentile / 100.0
    } else {
        percentile
    };
    let method = args.method.unwrap_or(match defaults.method {
        CalibrateMethod::Separation => wire::CalibrationMethod::Separation,
        CalibrateMethod::Percentile => wire::CalibrationMethod::Percentile,
        CalibrateMethod::Zscore => wire::CalibrationMethod::Zscore,
    });
    let method = match method {
        wire::CalibrationMethod::Separation => ThresholdMethod::Separation,
        wire::CalibrationMethod::Percentile => ThresholdMethod::Percentile(percentile),
        wire::CalibrationMethod::Zscore => ThresholdMethod::ZScore(z_factor),
    };
    let request = CalibrateRequest {
        agent_id: &args.agent_id,
        method,
        sample_size: Some(args.sample_size.unwrap_or(defaults.sample_size) as usize),
        session_key: &args.session_key,
    };
    let outcome = backend
        .engine()
        .calibrate_threshold(&request)
        .map_err(engine_error)?;
    let scope = if args.agent_id.is_empty() {
        "global"
    } else {
        "agent"
    };
    let calibration = &outcome.calibration;
    encode(&wire::CalibrateAnswer {
        ok: true,
        scope,
        agent_id: outcome.agent_id,
        method: calibration.method,
        z_factor,
        percentile,
        sampled_embeddings: calibration.sampled_rows,
        num_pairs: calibration.null_pairs,
        null_admit_rate: calibration.null_admit_rate,
        new_threshold: calibration.threshold,
        calibration: calibration.clone(),
        no_persist: outcome.no_persist.clone(),
    })
}

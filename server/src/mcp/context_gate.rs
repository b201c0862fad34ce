//! The operating context's hard layer at the MCP boundary (CPersona's `*_boundary`
//! wrappers): a gated tool's explicit `project_id` is checked against the registry and
//! `"@auto"` resolved before the tool runs; a refused write answers `{ok: false, error,
//! operating_context_revision}` and writes nothing; a pass adds `operating_context_warning`
//! when there is one and `resolved_project_id` when `@auto` was given. Omitted or `""`
//! project ids pass untouched, and a dormant context changes nothing.

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use serde_json::Value;

use crate::operating::{AUTO, GATED, Gate, Loader};

/// What the gate did to a call.
pub(crate) enum Gated {
    /// Nothing to add to the answer.
    Untouched,
    /// Run with the rewritten arguments, then add these fields to the answer.
    Annotate(Vec<(&'static str, Value)>),
    /// Refused: this answer, nothing run.
    Refused(CallToolResult),
}

/// Gates `request` by the current operating context.
pub(crate) fn check(loader: &Loader, request: &mut CallToolRequestParams) -> Gated {
    let Some(&(_, write)) = GATED.iter().find(|(tool, _)| *tool == request.name) else {
        return Gated::Untouched;
    };
    let Some(args) = request.arguments.as_mut() else {
        return Gated::Untouched;
    };
    let given = match args.get("project_id") {
        Some(Value::String(p)) if !p.is_empty() => p.clone(),
        _ => return Gated::Untouched,
    };
    let Ok(context) = loader.current() else {
        return Gated::Untouched;
    };
    let agent = args
        .get("agent_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match context.gate(&given, &agent, write) {
        Gate::Refuse { error, revision } => {
            let mut body = super::refusal_body(&request.name, &error);
            body["operating_context_revision"] = Value::from(revision);
            Gated::Refused(CallToolResult::error(vec![ContentBlock::text(
                body.to_string(),
            )]))
        }
        Gate::Pass {
            project_id,
            warning,
        } => {
            let mut added = Vec::new();
            if let Some(warning) = warning {
                added.push(("operating_context_warning", Value::from(warning)));
            }
            if given == AUTO {
                added.push(("resolved_project_id", Value::from(project_id.clone())));
            }
            args.insert("project_id".to_owned(), Value::from(project_id));
            Gated::Annotate(added)
        }
    }
}

//! `completion/complete` (issue 21): a prompt's or resource template's `agent_id` and
//! `project_id` arguments are completed from the store's own names. In ACL mode only the
//! agents the caller may read, and their projects, are offered, so completion names no agent
//! a caller could not read through the tools.

use rmcp::ErrorData;
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo};

use crate::mcp::backend::{ToolBackend, ToolError};

/// The most values one completion carries (MCP's limit; the backend asks for no more).
const MAX_VALUES: usize = 100;

/// The completion of `request`: names for `agent_id` and `project_id`, nothing for any other
/// argument.
pub(crate) fn complete(
    backend: &dyn ToolBackend,
    request: &CompleteRequestParams,
    may_read: impl Fn(&str) -> bool,
) -> Result<CompleteResult, ErrorData> {
    let prefix = request.argument.value.as_str();
    let chosen_agent = request
        .context
        .as_ref()
        .and_then(|c| c.arguments.as_ref())
        .and_then(|a| a.get("agent_id"))
        .map(String::as_str)
        .filter(|a| !a.is_empty());
    let names = match request.argument.name.as_str() {
        "agent_id" => backend.names(false, None, prefix),
        "project_id" => backend.names(true, chosen_agent, prefix),
        _ => Ok(Vec::new()),
    }
    .map_err(ToolError::into_error_data)?;
    // The backend answers at most MCP's 100; a full answer may have left names out.
    let more = names.len() >= MAX_VALUES;
    let mut values: Vec<String> = names
        .into_iter()
        .filter(|(agent, _)| may_read(agent))
        .map(|(_, name)| name)
        .collect();
    values.dedup();
    let info = CompletionInfo::with_pagination(values, None, more)
        .map_err(|message| ErrorData::internal_error(message, None))?;
    Ok(CompleteResult::new(info))
}

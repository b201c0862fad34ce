//! The seam between the MCP layer and whatever answers the tools: one synchronous method per
//! tool, taking the decoded and validated wire arguments and returning the tool's JSON body.
//! The MCP layer calls it on a blocking thread; a backend never sees raw or invalid input.

use cpersona_engine::progress::Progress;
use serde_json::Value;

use crate::mcp::wire;

/// Why a tool call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The caller can fix it (unknown id, locked row, bad path…). Sent as is.
    #[error("{message}")]
    User { message: String },
    /// Our fault (SQLite, I/O, a bug). Logged in full; the caller gets a short message.
    #[error("internal error: {message}")]
    Internal { message: String },
}

impl ToolError {
    /// The JSON-RPC error a non-tool method (resources, completion) answers with.
    pub(crate) fn into_error_data(self) -> rmcp::ErrorData {
        match self {
            ToolError::User { message } => rmcp::ErrorData::invalid_params(message, None),
            ToolError::Internal { message } => rmcp::ErrorData::internal_error(message, None),
        }
    }

    /// A failure the caller can fix.
    pub fn user(message: impl Into<String>) -> ToolError {
        ToolError::User {
            message: message.into(),
        }
    }

    /// A failure on our side.
    pub fn internal(message: impl Into<String>) -> ToolError {
        ToolError::Internal {
            message: message.into(),
        }
    }
}

/// The kinds of row served as MCP resources (`mcp/resources.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    Memory,
    Episode,
    Profile,
}

/// One listed resource: its row and a short title (the text's start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceEntry {
    pub agent_id: String,
    pub kind: ResourceKind,
    /// The row id (`None` for a profile, one per agent).
    pub id: Option<i64>,
    pub title: String,
}

/// A read resource: the full stored text and what is known about it (ref, times, source...).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceBody {
    pub text: String,
    pub meta: Value,
}

/// What a tool returns: its JSON body (CPersona's shape, e.g. `{"ok": true, "result": "stored",
/// "id": 7, ...}` or `{"messages": [...]}`), or a failure the layer encodes as
/// `{"ok": false, "error": "..."}`.
pub type ToolResult = Result<Value, ToolError>;

/// Answers every tool. Methods are blocking: the MCP layer runs them in
/// `tokio::task::spawn_blocking`.
pub trait ToolBackend: Send + Sync + 'static {
    fn store(&self, args: wire::StoreArgs) -> ToolResult;
    fn recall(&self, args: wire::RecallArgs) -> ToolResult;
    fn recall_with_context(&self, args: wire::RecallWithContextArgs) -> ToolResult;
    fn get_contents(&self, args: wire::GetContentsArgs) -> ToolResult;
    fn archive_episode(&self, args: wire::ArchiveEpisodeArgs) -> ToolResult;
    fn update_memory(&self, args: wire::UpdateMemoryArgs) -> ToolResult;
    fn delete_memory(&self, args: wire::MemoryIdArgs) -> ToolResult;
    fn delete_episode(&self, args: wire::EpisodeIdArgs) -> ToolResult;
    fn lock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult;
    fn unlock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult;
    fn get_profile(&self, args: wire::AgentArgs) -> ToolResult;
    fn update_profile(&self, args: wire::UpdateProfileArgs) -> ToolResult;
    fn list_memories(&self, args: wire::ListMemoriesArgs) -> ToolResult;
    fn list_episodes(&self, args: wire::ListEpisodesArgs) -> ToolResult;
    fn delete_agent_data(&self, args: wire::DeleteAgentDataArgs) -> ToolResult;
    // The long calls report to and are cancelled through `progress` (`mcp/progress.rs`).
    fn export_memories(&self, args: wire::ExportArgs, progress: &Progress<'_>) -> ToolResult;
    fn import_memories(&self, args: wire::ImportArgs, progress: &Progress<'_>) -> ToolResult;
    fn merge_memories(&self, args: wire::MergeArgs, progress: &Progress<'_>) -> ToolResult;
    fn calibrate_threshold(&self, args: wire::CalibrateArgs) -> ToolResult;
    fn set_recall_precision(&self, args: wire::SetPrecisionArgs) -> ToolResult;
    fn get_recall_precision(&self, args: wire::AgentArgs) -> ToolResult;
    fn check_health(&self, args: wire::CheckHealthArgs, progress: &Progress<'_>) -> ToolResult;
    /// Rows of every agent as resources, `kind` (memories or episodes), newest first, `limit`
    /// from `offset`; fewer than `limit` means the last page. Backends that serve none say so.
    fn resource_page(
        &self,
        kind: ResourceKind,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<ResourceEntry>, ToolError> {
        let _ = (kind, offset, limit);
        Err(ToolError::user("this server serves no resources"))
    }

    /// One resource's full text, or `Ok(None)` when there is no such row of that agent.
    fn read_resource(
        &self,
        agent_id: &str,
        kind: ResourceKind,
        id: Option<i64>,
    ) -> Result<Option<ResourceBody>, ToolError> {
        let _ = (agent_id, kind, id);
        Err(ToolError::user("this server serves no resources"))
    }

    /// Names the store holds for a client's completion (`mcp/completion.rs`): agent ids
    /// starting with `prefix` as `(agent, agent)`, or projects starting with it as
    /// `(agent, project)` (of `agent` when given). Backends without a store have none.
    fn names(
        &self,
        projects: bool,
        agent: Option<&str>,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, ToolError> {
        let _ = (projects, agent, prefix);
        Ok(Vec::new())
    }

    /// CPersona's `check_update`, answered the same by every backend: this server does not
    /// update itself (`mcp/update.rs`).
    fn check_update(&self, args: wire::CheckUpdateArgs) -> ToolResult {
        let answer = crate::mcp::update::check_update(&args).map_err(ToolError::user)?;
        serde_json::to_value(answer).map_err(|err| ToolError::internal(err.to_string()))
    }
    fn get_queue_status(&self, args: wire::NoArgs) -> ToolResult;
    /// `migrate_channel_axis`.
    fn migrate_channel_axis(&self, _args: wire::ChannelAxisArgs) -> ToolResult {
        Err(ToolError::user(
            "migrate_channel_axis is not served by this backend",
        ))
    }
    /// `deep_check`.
    fn deep_check(&self, _args: wire::DeepCheckArgs) -> ToolResult {
        Err(ToolError::user("deep_check is not served by this backend"))
    }
    /// `get_session_findings`; `shared` when the caller is on a shared transport without a
    /// `session_key`.
    fn get_session_findings(&self, _args: wire::FindingsArgs, _shared: bool) -> ToolResult {
        Err(ToolError::user(
            "get_session_findings is not served by this backend",
        ))
    }
    fn pause_persistence(&self, args: wire::PauseArgs) -> ToolResult;
    fn resume_persistence(&self, args: wire::SessionArgs) -> ToolResult;
    fn persistence_status(&self, args: wire::SessionArgs) -> ToolResult;

    /// The most characters a stored memory or episode text may hold (the engine's
    /// `max_content_chars`): the served schema advertises it as `maxLength`.
    fn content_limit(&self) -> usize {
        crate::mcp::content_limit::DEFAULT_CONTENT_CHARS
    }

    /// `reconstruct`; not registered until its issue lands.
    fn reconstruct(&self, _args: wire::ReconstructArgs, _progress: &Progress<'_>) -> ToolResult {
        Err(ToolError::user(
            "reconstruct is not available in this build",
        ))
    }
    /// `declare_associations`; not registered until its issue lands.
    fn declare_associations(&self, _args: wire::DeclareAssociationsArgs) -> ToolResult {
        Err(ToolError::user(
            "declare_associations is not available in this build",
        ))
    }
    /// `traverse`; not registered until its issue lands.
    fn traverse(&self, _args: wire::TraverseArgs) -> ToolResult {
        Err(ToolError::user("traverse is not available in this build"))
    }
}

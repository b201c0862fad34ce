//! The backend the binary runs until the engine is wired in: every tool answers a clear
//! "not available in this build" failure. It stores nothing and must never pretend to.

use crate::mcp::backend::{ToolBackend, ToolError, ToolResult};
use crate::mcp::wire;

/// Answers every tool with `{"ok": false, "error": "... not available in this build ..."}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unwired;

fn unavailable(tool: &str) -> ToolResult {
    Err(ToolError::user(format!(
        "{tool} is not available in this build: the storage engine is not wired into the \
         server yet"
    )))
}

macro_rules! unwired {
    ($($tool:ident: $args:ty),* $(,)?) => {
        impl ToolBackend for Unwired {
            $(fn $tool(&self, _args: $args) -> ToolResult { unavailable(stringify!($tool)) })*
        }
    };
}

unwired!(
    store: wire::StoreArgs,
    recall: wire::RecallArgs,
    recall_with_context: wire::RecallWithContextArgs,
    get_contents: wire::GetContentsArgs,
    archive_episode: wire::ArchiveEpisodeArgs,
    update_memory: wire::UpdateMemoryArgs,
    delete_memory: wire::MemoryIdArgs,
    delete_episode: wire::EpisodeIdArgs,
    lock_memory: wire::MemoryIdArgs,
    unlock_memory: wire::MemoryIdArgs,
    get_profile: wire::AgentArgs,
    update_profile: wire::UpdateProfileArgs,
    list_memories: wire::ListMemoriesArgs,
    list_episodes: wire::ListEpisodesArgs,
    delete_agent_data: wire::DeleteAgentDataArgs,
    export_memories: wire::ExportArgs,
    import_memories: wire::ImportArgs,
    merge_memories: wire::MergeArgs,
    calibrate_threshold: wire::CalibrateArgs,
    set_recall_precision: wire::SetPrecisionArgs,
    get_recall_precision: wire::AgentArgs,
    check_health: wire::CheckHealthArgs,
    get_queue_status: wire::NoArgs,
    pause_persistence: wire::PauseArgs,
    resume_persistence: wire::SessionArgs,
    persistence_status: wire::SessionArgs,
);

//! Episode tools: archive_episode, list_episodes, delete_episode. Handlers only route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, always_load, wire};

const ARCHIVE_EPISODE: &str = "At the end of a session, store a summary you wrote of what \
happened (`summary`), with `keywords` for lexical search, `resolved: true` if the matter is \
settled, and optionally the session's `history` (only its timestamps are read, for the \
episode's time span). A `summary` or `keywords` over its maxLength is refused, never cut. \
Returns {ok, episode_id}.";
const LIST_EPISODES: &str = "List an agent's episodes newest first (`limit` ≤ 200; \
`agent_id` \"\" lists every agent). Returns {episodes: [...], count}.";
const DELETE_EPISODE: &str = "Delete episode `episode_id` (the number in `ep:<id>`) owned by \
`agent_id`. Returns {ok, deleted_id}.";

#[tool_router(router = episode_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "archive_episode",
        description = ARCHIVE_EPISODE,
        input_schema = input_schema::<wire::ArchiveEpisodeArgs>(),
        meta = always_load(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn archive_episode(&self, args: JsonObject) -> CallToolResult {
        self.call("archive_episode", args, |b, a| b.archive_episode(a))
            .await
    }

    #[tool(
        name = "list_episodes",
        description = LIST_EPISODES,
        input_schema = input_schema::<wire::ListEpisodesArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_episodes(&self, args: JsonObject) -> CallToolResult {
        self.call("list_episodes", args, |b, a| b.list_episodes(a))
            .await
    }

    #[tool(
        name = "delete_episode",
        description = DELETE_EPISODE,
        input_schema = input_schema::<wire::EpisodeIdArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn delete_episode(&self, args: JsonObject) -> CallToolResult {
        self.call("delete_episode", args, |b, a| b.delete_episode(a))
            .await
    }
}

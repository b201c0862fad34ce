//! Portability tools: export_memories, import_memories, merge_memories, delete_agent_data.
//! Handlers only route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const EXPORT: &str = "Write an agent's memories, episodes and profile (`agent_id` \"\" = every \
agent) to a JSONL file at `output_path`, inside the export folder (CPERSONA_EXPORT_DIR, else \
`exports/` beside the database; relative paths resolve in it; `..` refused), optionally with \
embeddings. An existing file is replaced only with `overwrite: true`. Returns {ok, path, \
memories, episodes, profiles}.";
const IMPORT: &str = "Read a JSONL file written by `export_memories` (`input_path`, inside the \
export folder), optionally \
under `target_agent_id`; duplicates are skipped; `dry_run: true` only counts. One transaction: \
all or nothing. Returns {ok, dry_run, imported_memories, skipped_memories, imported_episodes, \
skipped_episodes, profile_updated}.";
const MERGE: &str = "Copy (or with `mode: \"move\"`, move) every row of `source_agent_id` into \
`target_agent_id`, skipping duplicates; `dry_run: true` only counts. Atomic.";
const DELETE_AGENT_DATA: &str = "Erase every memory, episode, profile and pending task of \
`agent_id`, in one transaction. Irreversible: only when the user asks for it. Returns {ok, \
agent_id, deleted_memories, deleted_profiles, deleted_episodes, deleted_pending_tasks}.";

#[tool_router(router = portability_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "export_memories",
        description = EXPORT,
        input_schema = input_schema::<wire::ExportArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn export_memories(
        &self,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call_watched("export_memories", args, &context, |b, a, p| {
            b.export_memories(a, p)
        })
        .await
    }

    #[tool(
        name = "import_memories",
        description = IMPORT,
        input_schema = input_schema::<wire::ImportArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn import_memories(
        &self,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call_watched("import_memories", args, &context, |b, a, p| {
            b.import_memories(a, p)
        })
        .await
    }

    #[tool(
        name = "merge_memories",
        description = MERGE,
        input_schema = input_schema::<wire::MergeArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn merge_memories(
        &self,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call_watched("merge_memories", args, &context, |b, a, p| {
            b.merge_memories(a, p)
        })
        .await
    }

    #[tool(
        name = "delete_agent_data",
        description = DELETE_AGENT_DATA,
        input_schema = input_schema::<wire::DeleteAgentDataArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn delete_agent_data(&self, args: JsonObject) -> CallToolResult {
        self.call("delete_agent_data", args, |b, a| b.delete_agent_data(a))
            .await
    }
}

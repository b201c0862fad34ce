//! Memory tools: store, update_memory, delete_memory, lock_memory, unlock_memory,
//! list_memories, get_contents. Handlers only route; they hold no logic.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, always_load, wire};

const STORE: &str = "Remember one message for an agent: a durable fact, decision, preference or \
commitment worth having in a later session. Give `content` (one self-contained statement) and \
optionally `id` (your message id: storing the same id again is skipped), `source`, `timestamp` \
(ISO-8601 with offset), `metadata`, `channel`, `project_id` (\"\" = the global pool every project \
reads) and `lock: true` to protect it. A text over `content`'s maxLength is rejected, never cut. \
Returns {ok, result: \"stored\"|\"skipped\"|\"rejected\", id, embedded, reason?}; a duplicate is \
skipped with the id of the memory it matched (`reason` names it too).";
const UPDATE_MEMORY: &str = "Replace the content of memory `memory_id` (the number in \
`mem:<id>`) owned by `agent_id`, e.g. to correct a fact. Refused while the memory is locked, \
and for a text over `content`'s maxLength. Returns {ok, updated_id}.";
const DELETE_MEMORY: &str = "Delete memory `memory_id` owned by `agent_id` (when the user asks \
to forget something). Refused while locked. Returns {ok, deleted_id}.";
const LOCK_MEMORY: &str = "Protect memory `memory_id` from edit and delete (not a ranking \
boost). Returns {ok, locked_id}.";
const UNLOCK_MEMORY: &str = "Remove the protection of `lock_memory`. Returns {ok, unlocked_id}.";
const LIST_MEMORIES: &str = "List an agent's memories newest first (`limit` ≤ 500; \
`agent_id` \"\" lists every agent; `project_id` reads that project plus the global pool). For \
browsing, not search: use `recall` to find something. Returns {memories: [...], count}.";
const GET_CONTENTS: &str = "Expand refs from `recall` (`mem:<id>` / `ep:<id>`, at most 20) into \
whole rows owned by `agent_id`. A ref may be an object {ref, span: [start, end] | node | block, \
revision} for part of a long row. Returns {items, missing, count, deferred?}: refs past the \
40,000-character budget come back in `deferred` to ask for again.";

#[tool_router(router = memory_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "store",
        description = STORE,
        input_schema = input_schema::<wire::StoreArgs>(),
        meta = always_load(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn store(&self, args: JsonObject) -> CallToolResult {
        self.call("store", args, |b, a| b.store(a)).await
    }

    #[tool(
        name = "update_memory",
        description = UPDATE_MEMORY,
        input_schema = input_schema::<wire::UpdateMemoryArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn update_memory(&self, args: JsonObject) -> CallToolResult {
        self.call("update_memory", args, |b, a| b.update_memory(a))
            .await
    }

    #[tool(
        name = "delete_memory",
        description = DELETE_MEMORY,
        input_schema = input_schema::<wire::MemoryIdArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn delete_memory(&self, args: JsonObject) -> CallToolResult {
        self.call("delete_memory", args, |b, a| b.delete_memory(a))
            .await
    }

    #[tool(
        name = "lock_memory",
        description = LOCK_MEMORY,
        input_schema = input_schema::<wire::MemoryIdArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn lock_memory(&self, args: JsonObject) -> CallToolResult {
        self.call("lock_memory", args, |b, a| b.lock_memory(a))
            .await
    }

    #[tool(
        name = "unlock_memory",
        description = UNLOCK_MEMORY,
        input_schema = input_schema::<wire::MemoryIdArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn unlock_memory(&self, args: JsonObject) -> CallToolResult {
        self.call("unlock_memory", args, |b, a| b.unlock_memory(a))
            .await
    }

    #[tool(
        name = "list_memories",
        description = LIST_MEMORIES,
        input_schema = input_schema::<wire::ListMemoriesArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_memories(&self, args: JsonObject) -> CallToolResult {
        self.call("list_memories", args, |b, a| b.list_memories(a))
            .await
    }

    #[tool(
        name = "get_contents",
        description = GET_CONTENTS,
        input_schema = input_schema::<wire::GetContentsArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_contents(&self, args: JsonObject) -> CallToolResult {
        self.call("get_contents", args, |b, a| b.get_contents(a))
            .await
    }
}

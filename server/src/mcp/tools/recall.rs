//! Recall tools: recall and recall_with_context. Handlers only route; they hold no logic.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const RECALL: &str = "Search an agent's memories and episodes (hybrid: vector + full-text + \
keywords). Call it at session start and whenever the user refers to something from before. \
`query` is what you need (blank lists the most recent rows); `limit` (0-100, default 10) rows \
come back in ASCENDING relevance: the LAST message is the best. Rows longer than 500 characters \
are cut to a preview with `content_truncated` and a `ref`: pass the ref to `get_contents`, or set \
`full_content: true`. Filters: `channel` (that channel plus channel-less rows), `project_id` \
(that project plus the global pool), `source_id` (one source.id, or a namespace ending in a delimiter such as `discord:`), `exclude_contents`. \
`time_cue` {after?, before?} or {ago: {unit: days|weeks|months, value} | \"long_ago\"}, with \
`confidence` sure|likely|vague, says when it happened: a prior that re-orders and may hold up to 3 places, \
never a filter. Returns {messages, advisory?, gate_fallback?, time_cue?, ...}.";
const RECALL_WITH_CONTEXT: &str = "Like `recall`, then merge your own recent conversation \
(`external_context`: [{role, content, name?, user_id?, timestamp?}]) into the result in time \
order; rows already in that context are left out. Returns {messages, ...}.";

#[tool_router(router = recall_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "recall",
        description = RECALL,
        input_schema = input_schema::<wire::RecallArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn recall(&self, args: JsonObject) -> CallToolResult {
        self.call("recall", args, |b, a| b.recall(a)).await
    }

    #[tool(
        name = "recall_with_context",
        description = RECALL_WITH_CONTEXT,
        input_schema = input_schema::<wire::RecallWithContextArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn recall_with_context(&self, args: JsonObject) -> CallToolResult {
        self.call("recall_with_context", args, |b, a| b.recall_with_context(a))
            .await
    }
}

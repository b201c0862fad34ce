//! The reconstruct tool: recall's evidence bundled into items with provenance. The handler
//! only routes; bundling, quoting and budgeting live in the engine (`reconstruct/`).

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, always_load, wire};

const RECONSTRUCT: &str = "Reconstruct what is known about `query` from an agent's memory: \
evidence bundled into items with provenance (`head_ref`, `claims` with refs and dates), quoted, \
never composed. Call at session start and for questions about earlier sessions. `count` items \
(default from the server), `budget` characters of quotes, `mode` lite|pro. Returns {items, \
effective_count, returned_count, shortfall_reason?, ...}.";

#[tool_router(router = reconstruct_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "reconstruct",
        description = RECONSTRUCT,
        input_schema = input_schema::<wire::ReconstructArgs>(),
        meta = always_load(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn reconstruct(
        &self,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call_watched("reconstruct", args, &context, |b, a, p| b.reconstruct(a, p))
            .await
    }
}

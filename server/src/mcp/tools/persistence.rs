//! Session controls: pause_persistence, resume_persistence, persistence_status. Handlers only
//! route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const PAUSE: &str = "Stop writing for `ttl_seconds` (1-86400, default 1800): every write tool \
answers `persisted: false` instead (e.g. while the user shares something off the record). \
Returns {paused: true, expires_at, ttl_seconds, scope}.";
const RESUME: &str = "End a `pause_persistence` early. Returns {paused: false, was_active, scope}.";
const STATUS: &str = "Whether writes are paused, and for how long. Returns {paused, expires_at, \
ttl_remaining_seconds, scope}.";

#[tool_router(router = persistence_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "pause_persistence",
        description = PAUSE,
        input_schema = input_schema::<wire::PauseArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pause_persistence(&self, args: JsonObject) -> CallToolResult {
        self.call("pause_persistence", args, |b, a| b.pause_persistence(a))
            .await
    }

    #[tool(
        name = "resume_persistence",
        description = RESUME,
        input_schema = input_schema::<wire::SessionArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn resume_persistence(&self, args: JsonObject) -> CallToolResult {
        self.call("resume_persistence", args, |b, a| b.resume_persistence(a))
            .await
    }

    #[tool(
        name = "persistence_status",
        description = STATUS,
        input_schema = input_schema::<wire::SessionArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn persistence_status(&self, args: JsonObject) -> CallToolResult {
        self.call("persistence_status", args, |b, a| b.persistence_status(a))
            .await
    }
}

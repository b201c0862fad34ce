//! Profile tools: get_profile, update_profile. Handlers only route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const GET_PROFILE: &str = "Read an agent's profile: a short standing description of the user \
and how to work with them. Returns {profile} (\"\" when none).";
const UPDATE_PROFILE: &str = "Replace an agent's profile with `profile` (the whole text, cut to \
2,000 characters by default). Returns {ok, profiles_updated, truncated?}.";

#[tool_router(router = profile_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "get_profile",
        description = GET_PROFILE,
        input_schema = input_schema::<wire::AgentArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_profile(&self, args: JsonObject) -> CallToolResult {
        self.call("get_profile", args, |b, a| b.get_profile(a))
            .await
    }

    #[tool(
        name = "update_profile",
        description = UPDATE_PROFILE,
        input_schema = input_schema::<wire::UpdateProfileArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn update_profile(&self, args: JsonObject) -> CallToolResult {
        self.call("update_profile", args, |b, a| b.update_profile(a))
            .await
    }
}

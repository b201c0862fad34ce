//! Tools whose engine part has not landed: declare_associations, traverse. Their
//! router is built but not summed into the server until their issues land
//! (`McpServer::pending_router`); the schema test snapshots them already.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const DECLARE: &str = "Declare entities and relations (`associations`) an agent's records \
mention, optionally anchored to a record (`anchor_ref`), or `retract` earlier ones. Returns \
{ok, result, entities, mentions, relations, dropped}.";
const TRAVERSE: &str = "Walk declared relations from `entity` up to `max_hops` (0-5) and list \
the entities and relations reached (`limit` 1-100). Returns {entity, entities, relations, \
bounds?}.";

#[tool_router(router = pending_router, vis = "pub")]
impl McpServer {
    #[tool(
        name = "declare_associations",
        description = DECLARE,
        input_schema = input_schema::<wire::DeclareAssociationsArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn declare_associations(&self, args: JsonObject) -> CallToolResult {
        self.call("declare_associations", args, |b, a| {
            b.declare_associations(a)
        })
        .await
    }

    #[tool(
        name = "traverse",
        description = TRAVERSE,
        input_schema = input_schema::<wire::TraverseArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn traverse(&self, args: JsonObject) -> CallToolResult {
        self.call("traverse", args, |b, a| b.traverse(a)).await
    }
}

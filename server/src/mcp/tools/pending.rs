//! Tools whose engine part has not landed: reconstruct, declare_associations, traverse. Their
//! router is built but not summed into the server until their issues land
//! (`McpServer::pending_router`); the schema test snapshots them already.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, always_load, wire};

const RECONSTRUCT: &str = "Reconstruct what is known about `query` from an agent's memory: \
evidence bundled into items with provenance (`head_ref`, `claims` with refs and dates), quoted, \
never composed. Call at session start and for questions about earlier sessions. `count` items \
(default from the server), `budget` characters of quotes, `mode` lite|pro. Returns {items, \
effective_count, returned_count, shortfall_reason?, ...}.";
const DECLARE: &str = "Declare entities and relations (`associations`) an agent's records \
mention, optionally anchored to a record (`anchor_ref`), or `retract` earlier ones. Returns \
{ok, result, entities, mentions, relations, dropped}.";
const TRAVERSE: &str = "Walk declared relations from `entity` up to `max_hops` (0-5) and list \
the entities and relations reached (`limit` 1-100). Returns {entity, entities, relations, \
bounds?}.";

#[tool_router(router = pending_router, vis = "pub")]
impl McpServer {
    #[tool(
        name = "reconstruct",
        description = RECONSTRUCT,
        input_schema = input_schema::<wire::ReconstructArgs>(),
        meta = always_load(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn reconstruct(&self, args: JsonObject) -> CallToolResult {
        self.call("reconstruct", args, |b, a| b.reconstruct(a))
            .await
    }

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

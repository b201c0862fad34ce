//! `declare_associations` and `traverse`: declared entities, aliases, mentions and relations
//! (CPersona 2.6 §1.3). On by default, as CPersona ships them; a server started with
//! `CPERSONA_ASSOCIATIONS_ENABLED=false` refuses each call with `{"ok": false, "error": ...}`
//! naming that setting. No logic lives here.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const DECLARE: &str = "Declare entities (a name plus aliases) and relations (subject, \
predicate, object: entity names or mem:<id>/ep:<id>) an agent's records mention, optionally \
anchored to a record (`anchor_ref`, which then mentions each entity), or `retract` earlier \
ones by id. Names match exactly after normalisation (NFKC, case, spaces). Refused when the \
server sets CPERSONA_ASSOCIATIONS_ENABLED=false. Returns {ok, result, entities, mentions, \
relations, dropped, retracted?}.";
const TRAVERSE: &str = "Walk declared relations from `entity` (a name or alias) up to \
`max_hops` (0-5) and list the entities reached (`limit` 1-100) with their aliases and \
mentioning records, and the relations among them. Refused when the server sets \
CPERSONA_ASSOCIATIONS_ENABLED=false. Returns {entity, entities, relations, entities_omitted?, \
bounds?, reason?}.";

#[tool_router(router = associations_router, vis = "pub")]
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

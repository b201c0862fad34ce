//! Retrieval-quality tools: calibrate_threshold, set_recall_precision, get_recall_precision.
//! Handlers only route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const CALIBRATE: &str = "Recompute the similarity threshold of `agent_id` (\"\" = global) from a \
random sample of its embeddings (`sample_size` 1-2000), by `method` separation (default), \
percentile or zscore. Run after a large import or an embedder change. Returns {ok, scope, \
old_threshold, new_threshold, distribution, ...}.";
const SET_PRECISION: &str = "Set how strict recall's quality gate is for `agent_id`: \
`precision` strict (fewer, surer rows), balanced or lenient (more rows), or a raw `beta` > 0; \
\"\" with beta 0 clears the override. Recalibrates at once. Returns {ok, precision, beta, ...}.";
const GET_PRECISION: &str = "Read the recall precision in force for `agent_id` and the global \
default. Returns {ok, agent_id, precision, beta, overridden, global_precision, global_beta}.";

#[tool_router(router = quality_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "calibrate_threshold",
        description = CALIBRATE,
        input_schema = input_schema::<wire::CalibrateArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn calibrate_threshold(&self, args: JsonObject) -> CallToolResult {
        self.call("calibrate_threshold", args, |b, a| b.calibrate_threshold(a))
            .await
    }

    #[tool(
        name = "set_recall_precision",
        description = SET_PRECISION,
        input_schema = input_schema::<wire::SetPrecisionArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn set_recall_precision(&self, args: JsonObject) -> CallToolResult {
        self.call("set_recall_precision", args, |b, a| {
            b.set_recall_precision(a)
        })
        .await
    }

    #[tool(
        name = "get_recall_precision",
        description = GET_PRECISION,
        input_schema = input_schema::<wire::AgentArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_recall_precision(&self, args: JsonObject) -> CallToolResult {
        self.call("get_recall_precision", args, |b, a| {
            b.get_recall_precision(a)
        })
        .await
    }
}

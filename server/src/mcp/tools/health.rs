//! Health tools: check_health, get_queue_status, check_update. Handlers only route.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::mcp::backend::ToolError;
use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};
use crate::operating::Loader;

const CHECK_HEALTH: &str = "Check the store for problems (`agent_id` \"\" = all agents; `checks` \
to run only some); `fix: true` repairs what can be repaired. Returns {status: \
healthy|degraded|unhealthy, issues: [{type, check, severity, hint?, ...}], stats, ...}.";
const CHECK_UPDATE: &str = "CPersona's update check. cpersona-rs never checks for or installs \
updates itself: it is updated by whatever installed it (cargo install, a release archive, a \
package manager), so it reaches no network and `state` is always `disabled`; `running` is this \
build's version and `install` says how to update. `apply: true` is refused. Returns {enabled, \
state, kind, running, available, reason, checked_at, refreshed, install, message}.";
const DEEP_CHECK: &str = "Deep data-quality checks of one agent's memories (CPersona's \
deep_check; `checks` picks some, unknown names are refused): anonymous_source (user rows \
without a speaker that a `[name] ` prefix can name), short_content (trivial rows of at most 5 \
characters, a CJK character counting 3), stale_profile (not updated for 30 days), \
orphaned_episodes (no memory inside the episode's span), calibration_staleness, \
near_duplicate (pairs above cosine 0.97 among the newest 5,000 embedded rows), \
unnormalized_content (text not in Unicode NFC), embedding_norm (stored vectors not of unit \
length). `fix: true` repairs only anonymous_source (names the speaker) and short_content \
(deletes the rows); locked rows are never touched; the others report. Returns {agent_id, \
checks_run, results: {check: {...}}, fixed, repairs_skipped?}.";
const OPERATING_CONTEXT: &str = "Read the operating context the operator serves to every \
client (CPersona 2.5.1): without arguments the preview (context_revision, \
instructions_summary, the project_id registry and its enforce mode, the @auto defaults, the \
doctrine section names); `section` fetches one section's full body. Read-only: the operator \
edits ~/.cpersona/operating-context.toml (or CPERSONA_OPERATING_CONTEXT_PATH), never MCP. \
Dormant (no file, switched off, or a file that does not parse): {ok: false, enabled: false, \
error}.";
const CHANNEL_AXIS: &str = "One-time repair of Discord bridge rows (CPersona's \
migrate_channel_axis): memories filed under channel 'discord' get their concrete channel back \
from metadata.session_id (\"{channel_id}:{user_id}:{chunk}\"). `dry_run` (default true) only \
reports; `globalize_unrecoverable` moves the rows without a recoverable id to the global \
channel \"\". Only `channel` changes. A row a declared association names is left in place \
(`left_with_associations`). Returns {agent_id, dry_run, recoverable_total, \
recoverable_by_channel, unrecoverable_total, invalid_metadata_total, invalid_metadata_ids, \
globalize_unrecoverable, migrated, globalized, left_with_associations, samples, \
repairs_skipped?}.";
const SESSION_FINDINGS: &str = "Pull the store's integrity findings (SuperAuditor v1.1, as \
CPersona serves them): check_health's whole registry over the WHOLE store, never repairing, \
not filtered by agent or project (that would hide the forgotten rows; scope a repair with \
check_health(agent_id=...)). Each finding carries `kind` (the check, or `<check>_critical` / \
`<check>_info` for an instance graded above or below a warning), a static per-kind `severity` \
(critical|warn|info), check_health's own verdict as `health_severity`, and `check`: \
check_health(checks=[check]) re-runs it. At most `per_kind_limit` findings per kind \
(`capped_kinds` names the kinds that had more); `total` and the counts describe what is \
returned. Not free: it runs the whole-store checks (FTS integrity, quick_check). Returns \
{findings, total, counts_by_kind, counts_by_severity, capped_kinds, per_kind_limit, summary?, \
identity_shared?, _meta}.";
const QUEUE_STATUS: &str = "How many embeddings are waiting to be computed (rows stored while \
the embedder was unreachable). Returns {enabled, pending, ...}.";

#[tool_router(router = health_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "check_health",
        description = CHECK_HEALTH,
        input_schema = input_schema::<wire::CheckHealthArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn check_health(
        &self,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call_watched("check_health", args, &context, |b, a, p| {
            b.check_health(a, p)
        })
        .await
    }

    #[tool(
        name = "check_update",
        description = CHECK_UPDATE,
        input_schema = input_schema::<wire::CheckUpdateArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn check_update(&self, args: JsonObject) -> CallToolResult {
        self.call("check_update", args, |b, a| b.check_update(a))
            .await
    }

    #[tool(
        name = "get_operating_context",
        description = OPERATING_CONTEXT,
        input_schema = input_schema::<wire::OperatingContextArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_operating_context(&self, args: JsonObject) -> CallToolResult {
        let loader = self.operating.clone();
        self.call(
            "get_operating_context",
            args,
            move |_, a: wire::OperatingContextArgs| {
                let answer = match loader.as_deref() {
                    Some(loader) => loader.answer(&a.section),
                    None => Loader::new(None).answer(&a.section),
                };
                serde_json::to_value(answer).map_err(|e| ToolError::internal(e.to_string()))
            },
        )
        .await
    }

    #[tool(
        name = "migrate_channel_axis",
        description = CHANNEL_AXIS,
        input_schema = input_schema::<wire::ChannelAxisArgs>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn migrate_channel_axis(&self, args: JsonObject) -> CallToolResult {
        self.call("migrate_channel_axis", args, |b, a| {
            b.migrate_channel_axis(a)
        })
        .await
    }

    #[tool(
        name = "deep_check",
        description = DEEP_CHECK,
        input_schema = input_schema::<wire::DeepCheckArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn deep_check(&self, args: JsonObject) -> CallToolResult {
        self.call("deep_check", args, |b, a| b.deep_check(a)).await
    }

    #[tool(
        name = "get_session_findings",
        description = SESSION_FINDINGS,
        input_schema = input_schema::<wire::FindingsArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_session_findings(&self, args: JsonObject) -> CallToolResult {
        let over_http = self.over_http;
        self.call(
            "get_session_findings",
            args,
            move |b, a: wire::FindingsArgs| {
                let shared = over_http && a.session_key.trim().is_empty();
                b.get_session_findings(a, shared)
            },
        )
        .await
    }

    #[tool(
        name = "get_queue_status",
        description = QUEUE_STATUS,
        input_schema = input_schema::<wire::NoArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_queue_status(&self, args: JsonObject) -> CallToolResult {
        self.call("get_queue_status", args, |b, a| b.get_queue_status(a))
            .await
    }
}

//! Session controls: pause_persistence, resume_persistence, persistence_status. Handlers only
//! route, with one transport rule: over HTTP a pause must carry a `session_key`.
//!
//! A pause is scoped to its `session_key` (engine `store/pauses.rs`); a keyless one to the
//! process, CPersona's `scope: "process"`. Over stdio the process serves one client, so that is
//! the caller's session. Over HTTP the process serves every client and each request stands
//! alone (the transport is stateless: no MCP session id ties one client's calls together), so
//! a keyless pause would make every other client's writes answer skipped (issue 19): it is
//! refused, and a keyed pause skips only the writes that carry the same key. Keyless writes
//! over HTTP are therefore never paused, and `persistence_status` without a key says so.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use crate::mcp::backend::ToolError;
use crate::mcp::validate::input_schema;
use crate::mcp::{McpServer, wire};

const PAUSE: &str = "Stop writing for `ttl_seconds` (1-86400, default 1800): every write tool \
answers `persisted: false` instead (e.g. while the user shares something off the record). \
With a `session_key` only writes carrying the same key are skipped; over HTTP the key is \
required. Returns {paused: true, expires_at, ttl_seconds, scope}.";

/// Why a keyless pause is refused over HTTP.
const KEYLESS_OVER_HTTP: &str = "session_key is required over HTTP: this server answers \
many clients and ties no request to another, so a pause without a key would skip every \
client's writes; pass the same session_key to pause_persistence and to the writes it should \
skip";
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
        let key_required = self.over_http;
        self.call("pause_persistence", args, move |b, a: wire::PauseArgs| {
            if key_required && a.session_key.is_empty() {
                return Err(ToolError::user(KEYLESS_OVER_HTTP));
            }
            b.pause_persistence(a)
        })
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
